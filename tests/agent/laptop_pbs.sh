#!/bin/bash
# From the laptop on OpenPBS (issue 56): a real OpenPBS (2 nodes in network namespaces) whose
# head's login runs in a Debian 11 root with its own sshd and its own OpenPBS client (issue 73), and a laptop namespace on its bridge whose scheduler commands are traps
# (tests/cluster/laptop.sh). The laptop's installed ddpjob submits a 2-node job with --on (this
# version installed there first, the folder uploaded), waits for it, reads its logs and status,
# fetches its checkpoints; a failed rank is named from the laptop, and a job cancelled from the
# laptop leaves nothing running.
. "$SRCDIR/tests/lib/tap.sh"
PBS_USER=ddpjlpbs
. "$SRCDIR/tests/cluster/pbs.sh"
. "$SRCDIR/tests/cluster/laptop.sh"
. "$SRCDIR/tests/cluster/oldroot.sh"
at_exit 'laptop_down'
pbs_suite_up 2 2 0 "a 2-node OpenPBS cluster runs in network namespaces" || exit 1
home=$PBS_CLUSTER/home/$PBS_USER
R=$LAPTOP_DIR
# A login shell on the head finds PBS, as a site's profile puts it on PATH.
printf 'export PATH=%s/bin:$PATH\n' "$PBS_EXEC" >"$home/.bash_profile"
chown "$PBS_USER:" "$home/.bash_profile"
LAPNS=$(pbs_ns laptop)
# The head's login runs in a Debian 11 root (tests/cluster/oldroot.sh): its sshd, C library and
# OpenPBS commands are its own, the server and the nodes this machine's.
if oldroot_make >"$T/oldroot.log" 2>&1; then pass "a Debian 11 root for the login node, OpenPBS built inside (cached in $OLDROOT)"; else
    fail "a Debian 11 root for the login node" "$(tail -n 20 "$T/oldroot.log")"; exit 1; fi
export OLDROOT_BINDS=$LAPTOP_DIR:$PBS_CLUSTER
login() { pbs_in pbshead "$SRCDIR/tests/cluster/oldroot-enter.sh" "$@"; }
laptop_suite_up pbshead 10.78.0.1 "$PBS_USER" "$LAPNS" "$(pbs_ns pbshead)" 10.78.0.200 login || exit 1
expect_contains "$(login ldd --version 2>&1 | head -n 1)" "GLIBC 2.31" "the login node's C library is Debian 11's glibc 2.31"
expect_contains "$(login ldd "$PBS_EXEC/bin/qsub" 2>&1)" "/lib/x86_64-linux-gnu/libc.so.6" "... its qsub built there, against it"
expect_contains "$(login runuser -u "$PBS_USER" -- "$PBS_EXEC/bin/qstat" -B 2>&1)" "pbshead" \
    "... and it reaches this machine's OpenPBS server"
run login "$LAPTOP_DDPJOB" --version
expect_eq "$RC" 1 "the laptop's own ddpjob does not start there"
expect_contains "$ERR" "version \`GLIBC_2.34' not found" "... its C library is older than the laptop's"
laptop() { laptop_in "$LAPNS" "$PBS_CLUSTER/etc/hosts" "$@"; }

laptop_job
spec() { laptop_spec pbs "$@"; }
spec lappbs '[sh, job.sh]'
spec lapfail '[sh, job.sh]' 'FAIL_RANK: "1"'
spec lapsleep '[sleep, "300"]'

laptop cluster add pbs --host pbshead --remote-dir '~/jobs'
expect_rc 0 "cluster add pbs (the head's sshd)"
laptop cluster check pbs
expect_contains "$OUT" "scheduler: PBS, qsub at $PBS_EXEC/bin/qsub" "cluster check finds OpenPBS there" "$ERR"

laptop submit --on pbs lappbs.yaml
expect_rc 0 "submit --on pbs: a 2-node job submitted from the laptop"
JOB=$(tail -n 1 <<<"$OUT")
expect_contains "$ERR" "pbs: installed ddpjob $LAPTOP_VERSION" "... this version installed there first"
expect_contains "$ERR" "pbs: uploaded 4 files" "... the folder uploaded"
expect_contains "$JOB" ".pbshead" "... OpenPBS's job id: $JOB"
laptop wait "$JOB" --timeout 240
expect_rc 0 "wait from the laptop: the job completed"
laptop logs lappbs
expect_contains "$OUT" "rank 0 of 2 on n" "logs from the laptop: rank 0's line" "$ERR"
expect_contains "$OUT" "rank 1 of 2 on n" "... and rank 1's"
laptop status "$JOB"
expect_contains "$OUT" "completed" "status from the laptop: completed" "$ERR"
laptop fetch lappbs
expect_rc 0 "fetch from the laptop"
expect_contains "$(cat "$R/proj/checkpoints/rank0.ckpt" 2>/dev/null)" "step 10 of rank 0" "... its checkpoints"

laptop submit --on pbs lapfail.yaml
FAILED=$(tail -n 1 <<<"$OUT")
laptop wait "$FAILED" --timeout 240
expect_rc 3 "wait: the failed job's own status (3)"
laptop status lapfail
expect_contains "$OUT" "failed" "status from the laptop: failed" "$ERR"
expect_contains "$OUT" "rank 1" "... naming rank 1"

laptop submit --on pbs lapsleep.yaml
run_until 90 "running" laptop status lapsleep
expect_contains "$OUT" "running" "status from the laptop: running"
laptop cancel lapsleep
expect_rc 0 "cancel from the laptop"
expect_within 60 "nothing of the cancelled job left running on the nodes" \
    sh -c '! pgrep -u "$1" -x sleep >/dev/null' _ "$PBS_USER"
expect_eq "$(cat "$R/trap.log" 2>/dev/null)" "" "the laptop never ran a scheduler command"
