#!/bin/bash
# The laptop's ddpjob as a system that is not Linux builds it (issue 73): configured with
# -Dlaptop_posix=true, it is ddpjob alone built through the POSIX paths of ddp_portable.h, and
# it calls no function that Linux or glibc alone has (the list below: what macOS lacks or spells
# otherwise). Then it runs here: its version, a spec validated and rendered, its templates found
# from argv[0] as typed and as found on PATH (POSIX says nothing of /proc/self/exe). What this
# cannot show: a compile against macOS's own headers (_NSGetExecutablePath, SO_NOSIGPIPE).
. "$SRCDIR/tests/lib/tap.sh"
B=$T/build
if ! meson setup "$B" "$SRCDIR" -Dlaptop_posix=true -Dcluster_build=disabled >"$T/setup.log" 2>&1 ||
    ! ninja -C "$B" cli/ddpjob >"$T/build.log" 2>&1; then
    fail "the laptop's build (-Dlaptop_posix=true)" "$(tail -n 20 "$T/setup.log" "$T/build.log")"
    exit 1
fi
pass "the laptop's build (-Dlaptop_posix=true): ddpjob alone"
expect_no_file "$B/agent/ddpjob-agent" "... no agent, which needs Linux"

linux_only='pipe2 accept4 dup3 signalfd sigtimedwait sigwaitinfo epoll_create epoll_create1 epoll_ctl
epoll_wait epoll_pwait inotify_init inotify_init1 inotify_add_watch prctl getrandom memfd_create
sendfile splice tee vmsplice eventfd timerfd_create timerfd_settime qsort_r clone unshare setns
mremap sched_getaffinity sched_setaffinity getauxval get_nprocs secure_getenv
canonicalize_file_name strchrnul memrchr mempcpy euidaccess eaccess ppoll posix_fallocate
fallocate syncfs renameat2 statx close_range copy_file_range gettid tgkill sched_getcpu
clock_nanosleep timer_create sem_timedwait pthread_mutex_timedlock pthread_timedjoin_np
pthread_tryjoin_np pthread_getattr_np error error_at_line'
called=$(nm -u "$B/cli/ddpjob" | awk '{print $2}' | sed 's/@.*//' | sort -u)
found=$(comm -12 <(printf '%s\n' $linux_only | sort -u) <(printf '%s\n' "$called"))
expect_eq "$found" "" "the laptop's ddpjob calls no function of Linux's or glibc's alone"
expect_lacks "$(strings "$B/cli/ddpjob" | grep '^/proc/' | sort -u)" "/proc/self/exe" \
    "... nor reads /proc/self/exe"

run "$B/cli/ddpjob" --version
expect_eq "$RC:$OUT" "0:ddpjob $(meson introspect --projectinfo "$B" | sed 's/.*"version": "\([^"]*\)".*/\1/')" \
    "it starts: ddpjob --version"
cd "$T" || exit 1
cp "$SRCDIR/share/examples/slurm-2x8.yaml" job.yaml
run "$B/cli/ddpjob" validate job.yaml
expect_eq "$RC" 0 "validate: an example spec"
run "$B/cli/ddpjob" render job.yaml
expect_eq "$RC" 0 "render: its templates found from argv[0] as typed ($B/cli/ddpjob)"
expect_contains "$OUT" "#SBATCH --nodes=2" "... the script rendered"
typed=$OUT
run env PATH="$B/cli:$PATH" ddpjob render job.yaml
expect_eq "$RC:$OUT" "0:$typed" "... and from argv[0] found on PATH (ddpjob)"
run env -C "$B" cli/ddpjob render "$T/job.yaml"
expect_eq "$RC:$OUT" "0:$typed" "... and from a relative argv[0] (cli/ddpjob)"
