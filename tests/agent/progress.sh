#!/bin/bash
# How far each rank has got, and who is slow or stalled: two real agents as node 0 and node 1,
# one worker each, running ddp-train (which reports its steps itself) and a real PyTorch gloo
# script with the one line the README gives; node 1's worker really slowed by a CPU quota on the
# cgroup its agent runs in (cgroup v1's cpu controller here, else v2's).
. "$SRCDIR/tests/lib/agents.sh"
# shellcheck source=../lib/cgroup.sh
. "$SRCDIR/tests/lib/cgroup.sh"
require_torch
export DDPJOB_TOKEN=progress-test-$$
in_cgroup_script "$T/in_cgroup"
# Every job's agents run in one group that goes first within one CPU's quota (other suites keep
# the rest): a rank held up by those suites would be as slow, or stalled, in truth as one held by
# a quota. Node 1's agent runs in STEADY, or in SLOW, held to 20% of a CPU.
group=ddpjob-progress-$$
if ! cpu_cgroup_make "$group" 100 first; then
    fail "a cgroup with a CPU quota to run the ranks in" "$CGROUP_WHY"
    exit 1
fi
at_exit "cgroup_remove $CGROUP"
STEADY='' SLOW=''
cpu_cgroup_make "$group/steady" 100 && STEADY=$CGROUP && at_exit "cgroup_remove $STEADY"
cpu_cgroup_make "$group/slow" 20 && SLOW=$CGROUP && at_exit "cgroup_remove $SLOW"
if [ -z "$STEADY" ] || [ -z "$SLOW" ]; then
    fail "cgroups for node 1's agent inside $group" "${CGROUP_WHY:-cannot make them}"
    exit 1
fi
TRAIN_JOB=("$TRAIN" train --synthetic --synthetic-size 4096,512 --epochs 1000 --batch-size 32)
TORCH_JOB=("$PY" "$SRCDIR/tests/agent/py/progress_loop.py")
# Factor 2, not the default 1.5: the slowed rank here is 5x.
common() {
    next_port
    COMMON=(--nnodes 2 --master-addr 127.0.0.1 --master-port "$PORT" --nproc-per-node 1
            --heartbeat 0.5 --slow-window 4 --slow-factor 2)
}

# slow_job slowed|plain PROGRAM...: node 0, and node 1 (inside the CPU quota when slowed), until
# node 0 names a slow rank or 20 s pass (90 s for the slowed rank, whose PyTorch takes a while to
# start at 20% of a CPU), and HOLD seconds more; then both are told to stop. NAMED_AFTER: seconds.
# JOB_ENV: more VAR=VALUE for both agents' workers.
JOB_ENV=() HOLD=0
slow_job() {
    local slowed=$1 start deadline=20
    shift
    common
    local group1=$STEADY
    [ "$slowed" != slowed ] || { group1=$SLOW; deadline=90; }
    AGENT=$T/in_cgroup start_agent n0 OMP_NUM_THREADS=1 "${JOB_ENV[@]}" -- "$STEADY" "$AGENT" "${COMMON[@]}" --node-rank 0 "$@"
    AGENT=$T/in_cgroup start_agent n1 OMP_NUM_THREADS=1 "${JOB_ENV[@]}" -- "$group1" "$AGENT" "${COMMON[@]}" --node-rank 1 "$@"
    start=$SECONDS
    while [ $((SECONDS - start)) -lt $deadline ] && ! grep -q " is slow: " "$T/n0.err"; do sleep 0.2; done
    NAMED_AFTER=$((SECONDS - start))
    sleep "$HOLD"
    kill -TERM "$(agent_pid n0)" "$(agent_pid n1)" 2>/dev/null
    wait_agent n0
    ERR0=$ERR
    wait_agent n1
}

host=$(hostname)
for workload in ddp-train torch; do
    if [ "$workload" = torch ]; then job=("${TORCH_JOB[@]}"); else job=("${TRAIN_JOB[@]}"); fi
    slow_job slowed "${job[@]}"
    expect_contains "$ERR0" "rank 1 (node 1, host $host, local rank 0) is slow: busy " \
        "$workload: node 0 names the rank held to 20% of a CPU as slow (after $NAMED_AFTER s; window 4 s)"
    expect_lacks "$ERR0" "rank 0 (node 0, host $host, local rank 0) is slow" "$workload: and not the rank waiting for it"
    slow_job plain "${job[@]}"
    expect_lacks "$ERR0" " is slow: " "$workload: the same job without the quota: no rank named in 20 s"
    expect_no_leftovers "$workload: nothing left running"
done

# Slowed by waiting, not computing: before each step's all_reduce rank 1 sleeps 150 ms, or reads
# the line a writer puts into a FIFO every 150 ms (a slow file system's data), idle meanwhile, so
# its busy time per step is no more than rank 0's. When it reaches each step names it; it stays
# named, not "no longer slow" back and forth, for 10 s more.
mkfifo "$T/data.fifo"
for how in sleep fifo; do
    feeder=
    if [ "$how" = sleep ]; then
        JOB_ENV=(WAIT_RANK=1 WAIT_MS=150)
    else
        JOB_ENV=(WAIT_RANK=1 "WAIT_FIFO=$T/data.fifo")
        (exec 3<>"$T/data.fifo"; while :; do echo >&3; sleep 0.15; done) &
        feeder=$!
    fi
    HOLD=10 slow_job plain "${TORCH_JOB[@]}"
    [ -z "$feeder" ] || kill "$feeder" 2>/dev/null
    expect_contains "$ERR0" "rank 1 (node 1, host $host, local rank 0) is slow: reaches each step " \
        "$how: node 0 names the rank that waits 150 ms before each step by when it reaches the step (after $NAMED_AFTER s)"
    expect_contains "$ERR0" ": not computing but waiting, on I/O, a lock or a sleep" "$how: and says it is waiting, not computing"
    expect_lacks "$ERR0" "is no longer slow" "$how: it stays named for 10 s more"
    expect_lacks "$ERR0" "rank 0 (node 0, host $host, local rank 0) is slow" "$how: and the rank waiting for it is not named"
    expect_no_leftovers "$how: nothing left running"
done
JOB_ENV=()

# Stalled: rank 1 stops before it reports step 50; rank 0 waits in the all_reduce of step 50.
# Node 0 names rank 1, not the idle rank 0 that the output/CPU heuristic would pick.
common
NODE0_ARGS=("$STEADY" "$AGENT" --node-rank 0)
NODE1_ARGS=("$STEADY" "$AGENT" --node-rank 1)
AGENT=$T/in_cgroup two_agents STALL_RANK=1 OMP_NUM_THREADS=1 -- "${COMMON[@]}" --hang-timeout 3 "${TORCH_JOB[@]}"
expect_eq "$RC0/$RC1" 1/1 "a stalled rank fails the job on both nodes"
expect_contains "$ERR0" "job failed (exit 1): rank 1 (node 1, host $host, local rank 0) stalled: at step 49 while the others wait at step 50" \
    "node 0 names the stalled rank, its step and the others'"
expect_contains "$ERR1" "job failed (exit 1): rank 1 (node 1, host $host, local rank 0) stalled" "so does node 1"
expect_lacks "$ERR0$ERR1" "hung: no output" "the waiting rank is not called hung"
expect_no_leftovers "nothing left after the stall"
