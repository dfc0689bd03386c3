# `ddpjob dev` on a real scheduler's cluster, sourced by a suite that has started one with at
# least 2 nodes free (sweep_slurm.sh, sweep_pbs.sh). It needs from the suite: dj (ddpjob ARGS on
# the login node, from $T: RC, OUT, ERR), dev_ddpjob (the same, its output and status its own;
# it is written into a program of its own with the suite's functions and variables, for script),
# on_login CMD... (CMD where dj runs ddpjob, the login node), in_queue ID (the scheduler still
# lists the job, not ended), DEV_SCHED (the spec's scheduler:)
# and DEV_SPEC_EXTRA (more spec lines, may be empty); it runs in the folder dj submits from.
# DEV_WALLTIME=1 adds an allocation that its walltime ends (2 minutes).
# An allocation held for 2 nodes: runs in it one after another (the workdir's current files run),
# a failing run that leaves it held, a run cancelled, runs that cannot go, a shell on a node (a
# command; a real terminal under script(1): its size, Ctrl-C), a node's port forwarded to the
# login node, release when idle and by `dev stop`; with DEV_IMAGE, a run and a shell in the
# spec's container.

dev_spec() { # NAME COMMAND-WORDS
    cat <<SPEC
name: $1
scheduler: $DEV_SCHED
nodes: 2
procs_per_node: 2
walltime: "00:10:00"
env: {DEV_MARK: held}
${DEV_SPEC_EXTRA:-}
command: $2
SPEC
}
# Each rank says where it runs and what the workdir's msg.txt says now.
dev_spec hold '[/bin/sh, -c, "echo rank=$RANK world=$WORLD_SIZE host=$(hostname) says=$(cat msg.txt)"]' >hold.yaml
dev_spec holdfail '[/bin/sh, -c, "[ $RANK != 3 ] || exit 7; sleep 1"]' >holdfail.yaml
# A sleep of its own, to find its processes by.
dev_sleep=299.$$
dev_spec holdlong "[/bin/sh, -c, \"echo started \$RANK; sleep $dev_sleep\"]" >holdlong.yaml
echo first >msg.txt
DEV_DJ=$PWD/dev-ddpjob
{
    echo '#!/bin/bash'
    declare -p | grep -Ev '^declare -[a-zA-Z]*r'
    declare -f
    echo 'dev_ddpjob "$@"'
} >"$DEV_DJ"
chmod +x "$DEV_DJ"

dj dev hold.yaml --idle 25s --wait-for 180s
DEV_JOB=$(grep -o 'job [0-9][0-9.a-z]*' <<<"$OUT" | head -n 1 | cut -d' ' -f2)
expect_eq "$RC" 0 "dev: the spec's 2 nodes held, once they are (exit 0)" "$ERR"
expect_contains "$OUT" "hold: job $DEV_JOB holds 2 node(s):" "dev prints the allocation's name, job and nodes"
if in_queue "$DEV_JOB"; then pass "the allocation is a job in the queue, running"; else fail "the allocation is a job in the queue, running" "$(dj status hold)"; fi
if msg=$(shellcheck .ddpjob/jobs/hold.*/script 2>&1); then pass "shellcheck accepts the allocation's script"; else fail "shellcheck accepts the allocation's script" "$msg"; fi

dj run --in hold
expect_eq "$RC" 0 "run --in hold: the held spec's workload across the held nodes exits 0" "$ERR"
for r in 0 1 2 3; do
    expect_contains "$OUT" "rank=$r world=4 " "run 1: rank $r of 4 ran and its line came back"
done
expect_contains "$OUT" "says=first" "run 1 ran the workdir's files"
expect_contains "$ERR" "hold-run1: completed; hold stays held" "run 1 is named and COMPLETED; the allocation stays"
if in_queue "$DEV_JOB"; then pass "the allocation still runs after run 1"; else fail "the allocation still runs after run 1"; fi

echo second >msg.txt
dj run --in hold
expect_contains "$OUT" "says=second" "run 2, after an edit, runs the edited files (no new submit)"
expect_eq "$RC" 0 "run 2 exits 0"

dj run --in hold holdfail.yaml
expect_eq "$RC" 7 "a run whose rank 3 exits 7: run --in exits 7" "$ERR"
expect_contains "$ERR" "hold-run3: failed; hold stays held" "the run failed, the allocation stays"
expect_contains "$ERR" "rank 3 (node 1, host" "and its cause names rank 3"
dj status hold-run3
expect_contains "$OUT" "hold-run3 ($DEV_SCHED job $DEV_JOB): failed, exit 7 (from its record: a run in the allocation held by" \
    "status of the run (hold-run3): failed, from its own record, in the allocation"
expect_eq "$(grep -c 'exited with code 7' <<<"$OUT")" 1 "its cause is said once"
dj status hold
expect_contains "$OUT" "hold ($DEV_SCHED job $DEV_JOB): running" "the allocation runs on after the failed run"
# The holder notes a run's end a moment after the run's record does.
for _ in $(seq 100); do
    [[ $OUT == *"held for runs (ddpjob run --in hold): idle for"* ]] && break
    sleep 0.2
    dj status hold
done
expect_contains "$OUT" "held for runs (ddpjob run --in hold): idle for" "status says it is held, and idle"
dj list
expect_contains "$OUT" "held for runs (ddpjob run --in hold): idle for" "list shows the held allocation with its idle time"

# A run of 1 node of the 2 held: its agents start on the first held node alone.
dj run --in hold --set nodes=1
expect_eq "$RC" 0 "run --in of 1 node of the 2 held exits 0" "$ERR"
expect_eq "$(grep -c 'world=2 ' <<<"$OUT")" 2 "its 2 ranks ran, a world of 2" "$OUT"
expect_eq "$(grep -o 'host=[^ ]*' <<<"$OUT" | sort -u | wc -l)" 1 "... on one node" "$OUT"
if msg=$(shellcheck .ddpjob/jobs/hold-run4.*/script 2>&1); then pass "shellcheck accepts a run's script"; else fail "shellcheck accepts a run's script" "$msg"; fi
dj run --in hold --set nodes=3
expect_eq "$RC" 2 "a run asking 3 nodes of 2 held: usage error" "$ERR"
expect_contains "$ERR" "asks for 3 node(s); hold holds 2" "the error says what was asked and what is held"
dj run --in nosuchdev
expect_eq "$RC" 1 "run --in a name nothing has: exit 1"
dj run --in hold-run1
expect_contains "$ERR" "is a batch job, not an allocation" "run --in a job that is no held allocation: refused"
# An allocation still queued (hold has the nodes): said, with why; waited for only when asked.
dev_spec queued '[/bin/true]' >queued.yaml
dj dev queued.yaml --wait-for 3s
expect_eq "$RC" 124 "dev of an allocation that cannot start yet: exit 124 after --wait-for, left queued" "$ERR"
dj run --in queued
expect_eq "$RC" 1 "run --in an allocation still queued: exit 1"
expect_contains "$ERR" "its nodes are not held yet: " "... saying so, with the pending reason"
expect_contains "$ERR" "(--wait waits for them)" "... and how to wait for it"
dj shell queued --wait=3s -- true
expect_eq "$RC" 124 "shell --wait=3s on it: exit 124, still queued after 3 s" "$ERR"
dj dev stop queued
expect_eq "$RC" 0 "dev stop withdraws the queued allocation" "$ERR"

# A shell on node 1: a command, its status, the job's environment and workdir, a terminal.
node1=$(cat .ddpjob/jobs/hold.*/ready | awk '{print $3}')
dj shell hold --node 1 -- sh -c 'echo "host=$(hostname) mark=$DEV_MARK pwd=$(pwd -P) tty=$(tty)"; exit 5'
expect_eq "$RC" 5 "shell --node 1 -- COMMAND: exits with the command's status" "$ERR"
expect_contains "$OUT" "host=$node1 mark=held pwd=$(pwd -P) tty=/dev/pts/" \
    "it ran on node 1 ($node1), with the spec's env, in the workdir, on a terminal"
dj shell hold --node 2
expect_eq "$RC" 2 "shell --node 2 of 2 held nodes: usage error"
expect_contains "$ERR" "holds nodes 0 to 1" "it says which nodes there are"

# An interactive shell under a real terminal (script): its window's size, and Ctrl-C reaching
# the program inside while the shell goes on.
dev_nap=288.$$
rm -f shell.in && mkfifo shell.in
script -qec "stty rows 41 cols 117; $DEV_DJ shell hold --node 1" /dev/null <shell.in >shell.out 2>&1 &
shell_pid=$!
exec 7>shell.in
# Each write in a subshell: one to a terminal that has gone is a SIGPIPE for it alone.
(printf 'stty size; sleep %s\n' "$dev_nap" >&7)
for _ in $(seq 300); do
    pgrep -f "sleep $dev_nap" >/dev/null && break
    sleep 0.2
done
if pgrep -f "sleep $dev_nap" >/dev/null; then pass "the interactive shell runs a command typed into it"; else
    fail "the interactive shell runs a command typed into it" "$(cat shell.out)" "$(dj logs hold --batch; tail -n 20 <<<"$OUT")"; fi
(printf '\003' >&7)
for _ in $(seq 150); do
    pgrep -f "sleep $dev_nap" >/dev/null || break
    sleep 0.2
done
expect_eq "$(pgrep -f "sleep $dev_nap")" "" "Ctrl-C reached the program inside (it ended)"
(printf 'echo after-$((2 * 3))\nexit 4\n' >&7)
# Its input stays open until it has ended: the end of input would reach the shell as Ctrl-D.
for _ in $(seq 300); do
    kill -0 "$shell_pid" 2>/dev/null || break
    sleep 0.2
done
exec 7>&-
wait "$shell_pid"
expect_eq "$?" 4 "the shell's exit status came back through script" "$(cat shell.out)"
expect_contains "$(cat shell.out)" "41 117" "the remote terminal has the local window's size (41 x 117)"
expect_contains "$(cat shell.out)" "after-6" "the shell went on after Ctrl-C"

# A port of node 1 forwarded to the login node: a web server there, on that node's loopback alone.
next_port
web_port=$PORT
echo "served from node 1" >page.txt
"$DEV_DJ" shell hold --node 1 -- /usr/bin/python3 -m http.server --bind 127.0.0.1 "$web_port" >web.out 2>&1 &
web_pid=$!
"$DEV_DJ" dev hold --port "$web_port:1" >fwd.out 2>fwd.err &
fwd_pid=$!
fetch_page() {
    on_login /usr/bin/python3 -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(), end="")' "http://127.0.0.1:$web_port/page.txt" 2>/dev/null
}
page=
for _ in $(seq 300); do
    page=$(fetch_page) && [ -n "$page" ] && break
    sleep 0.2
done
expect_eq "$page" "served from node 1" "localhost:$web_port on the login node is port $web_port of node 1 (dev --port $web_port:1)" \
    "$(cat fwd.err web.out)"
expect_contains "$(cat fwd.err)" "localhost:$web_port is port $web_port of node 1 ($node1) of hold; Ctrl-C stops" "dev --port says what it forwards"
expect_eq "$(fetch_page)" "served from node 1" "a second connection through it"
dj dev hold --port "$web_port:1"
expect_eq "$RC" 1 "a second forward of a port in use here: exit 1"
expect_contains "$ERR" "that port is in use on this machine" "and it says so"
# The signals go to ddpjob itself (its command line starts with its path), past the suite's
# wrappers around it (runuser, nsenter), whose command lines hold its words too.
pkill -INT -f "^[^ ]*/ddpjob dev .*hold --port $web_port:1"
for _ in $(seq 150); do
    kill -0 "$fwd_pid" 2>/dev/null || break
    sleep 0.2
done
kill -KILL "$fwd_pid" 2>/dev/null
wait "$fwd_pid"
expect_eq "$?" 0 "Ctrl-C ends the forward (exit 0)"
expect_eq "$(fetch_page)" "" "nothing listens on the login node's port after it"
pkill -TERM -f "^[^ ]*/ddpjob shell .*hold --node 1 -- /usr/bin/python3 -m http.server"
wait "$web_pid" 2>/dev/null
gone=
for _ in $(seq 150); do
    pgrep -f "http.server --bind 127.0.0.1 $web_port" >/dev/null || { gone=1; break; }
    sleep 0.2
done
expect_eq "$gone" 1 "the shell's client ended: its program on the node is gone too"

# A run cancelled while it runs: it ends, alone.
"$DEV_DJ" run --in hold holdlong.yaml >long.out 2>long.err &
run_pid=$!
for _ in $(seq 300); do
    grep -rqs "started 0" .ddpjob/jobs/hold-run*/link-0/logs && break
    sleep 0.2
done
long=$(basename "$(ls -td .ddpjob/jobs/hold-run*.* | head -n 1)" | cut -d. -f1)
dj cancel "$long"
expect_eq "$RC" 0 "cancel of the running run $long exits 0" "$ERR"
expect_contains "$OUT" "$long (a run in job $DEV_JOB, which goes on): cancelled" "it is cancelled, alone"
wait "$run_pid"
expect_eq "$?" 1 "run --in of the cancelled run exits 1" "$(cat long.err)"
expect_eq "$(pgrep -f "sleep $dev_sleep")" "" "none of its workers is left on any node"
if in_queue "$DEV_JOB"; then pass "the allocation outlives the cancelled run"; else fail "the allocation outlives the cancelled run"; fi
dj status hold
expect_contains "$OUT" "hold ($DEV_SCHED job $DEV_JOB): running" "status of the allocation: running"

# Idle: nothing runs for --idle 25s, and the allocation goes.
gone=
for _ in $(seq 120); do
    in_queue "$DEV_JOB" || { gone=1; break; }
    sleep 1
done
expect_eq "$gone" 1 "with no run for 25 s the allocation is released (gone from the queue)"
expect_contains "$(cat .ddpjob/jobs/hold.*/released 2>/dev/null)" " idle" "its record says it was released idle"
dj run --in hold
expect_eq "$RC" 1 "run --in a released allocation: exit 1"
expect_contains "$ERR" "released (idle)" "and says it was released for being idle"

# dev stop: the allocation goes at once.
dev_spec hold2 '[/bin/true]' >hold2.yaml
dj dev hold2.yaml --wait-for 180s
DEV_JOB2=$(grep -o 'job [0-9][0-9.a-z]*' <<<"$OUT" | head -n 1 | cut -d' ' -f2)
expect_eq "$RC" 0 "a second allocation is held" "$ERR"
dj dev stop hold2
expect_eq "$RC" 0 "dev stop exits 0" "$ERR"
if in_queue "$DEV_JOB2"; then fail "after dev stop the allocation is gone from the queue"; else pass "after dev stop the allocation is gone from the queue"; fi
dj dev stop hold-run1
expect_contains "$ERR" "is a batch job, not an allocation" "dev stop of a job that is no held allocation: refused"

if [ -n "${DEV_IMAGE:-}" ]; then
    # In the job's container (DEV_IMAGE: a container: block): a run's workers and a shell are
    # inside the image.
    { dev_spec holdimg '[/bin/sh, -c, "cat /etc/ddpjob-image"]'; printf '%s\n' "$DEV_IMAGE"; } >holdimg.yaml
    dj dev holdimg.yaml --wait-for 180s
    expect_eq "$RC" 0 "an allocation for a spec with a container is held" "$ERR"
    dj run --in holdimg
    expect_eq "$RC" 0 "run --in it completes" "$ERR"
    expect_eq "$(grep -c "inside the test's image" <<<"$OUT")" 4 "all 4 ranks of the run ran inside the image" "$OUT"
    dj shell holdimg --node 1 -- /bin/sh -c 'cat /etc/ddpjob-image; echo "mark=$DEV_MARK host=$(hostname)"; [ -t 0 ] && echo on-a-terminal'
    expect_eq "$RC" 0 "shell --node 1 -- COMMAND in it exits 0" "$ERR"
    expect_contains "$OUT" "inside the test's image" "the shell's command ran inside the image"
    expect_contains "$OUT" "mark=held host=$node1" "... with the spec's env, on node 1"
    expect_contains "$OUT" "on-a-terminal" "... on a terminal"
    dj dev stop holdimg
    expect_eq "$RC" 0 "dev stop of the allocation with a container" "$ERR"
fi

if [ "${DEV_WALLTIME:-0}" = 1 ]; then
    # An allocation that its walltime ends: an open shell is told (10 and 1 minutes before: the
    # first at once, 2 minutes being all), and it is let go shortly before, not killed at it.
    sed 's/^name: hold2/name: short/; s/walltime: "00:10:00"/walltime: "00:02:00"/' hold2.yaml >short.yaml
    dj dev short.yaml --idle off --wait-for 180s
    expect_eq "$RC" 0 "a 2-minute allocation is held" "$ERR"
    "$DEV_DJ" shell short -- sleep 290 >short.out 2>&1 &
    short_pid=$!
    for _ in $(seq 900); do
        kill -0 "$short_pid" 2>/dev/null || break
        sleep 0.2
    done
    if grep -Eq 'ddpjob: this allocation ends at its walltime in (1 min [3-5][0-9]|2 min 00) s' short.out; then
        pass "the open shell was told at once that the walltime comes in 2 minutes"
    else fail "the open shell was told at once that the walltime comes in 2 minutes" "$(cat short.out)"; fi
    expect_eq "$(grep -c 'ddpjob: this allocation ends at its walltime in' short.out)" 2 \
        "and again in its last minute" "$(cat short.out)"
    expect_eq "$(kill -0 "$short_pid" 2>/dev/null && echo open)" "" "the shell ended with the allocation, before its walltime"
    # The holder writes it as it lets go, which the shell may see end first.
    for _ in $(seq 300); do
        grep -q " walltime" .ddpjob/jobs/short.*/released 2>/dev/null && break
        sleep 0.2
    done
    expect_contains "$(cat .ddpjob/jobs/short.*/released 2>/dev/null)" " walltime" "the record says it was let go for the walltime"
    dj status short
    expect_contains "$OUT" "completed" "the allocation completed: let go before the scheduler's limit, not killed at it"
fi
