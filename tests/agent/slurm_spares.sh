#!/bin/bash
# Spare nodes on a real Slurm (tests/cluster/slurm.sh, three nodes n1-n3, SlurmdTimeout 10 s so
# that a silent node is marked down within the case): `ddpjob submit` of a spec with `nodes: 2`
# and `spares: 1` whose ddp-train run loses node 1 (n2) mid-training in four ways: its agent
# killed, its slurmd killed, its link cut, the whole node frozen (every process on it stopped). Each time the job must complete (COMPLETED 0:0) with the
# final checkpoint an uninterrupted run's: with the spare on n3 in node 1's place where node 1 was
# lost to the job (its agent, its link, the node); a dead slurmd loses the job nothing. What Slurm itself did
# to the node and the job is printed as TAP comments (README: what each scheduler does). Then the
# same job without a spare loses node 1's link: Slurm requeues it, and status says so, before and
# after Slurm forgets it.
. "$SRCDIR/tests/lib/agents.sh"
. "$SRCDIR/tests/cluster/slurm.sh"
at_exit 'cluster_down'
cd "$T" || exit 1
if ! SLURM_EXTRA_CONF="SlurmdTimeout=10" cluster_up 3 >"$T/cluster.log" 2>&1; then
    fail "a 3-node Slurm cluster starts" "$(tail -n 20 "$T/cluster.log")" \
        "$(tail -n 5 "$CLUSTER"/log/*.log 2>/dev/null)"
    exit 1
fi
pass "a 3-node Slurm cluster (SlurmdTimeout 10 s) runs in network namespaces"

REFERENCE_HOSTS=("$(cluster_ns n1)" "$(cluster_ns n2)")
REFERENCE_MASTER=10.77.0.11

# The pid of node 1's agent on n2 (its namespace's ddpjob-agent with --spares).
n2_agent() {
    local pid
    for pid in $(ip netns pids "$(cluster_ns n2)"); do
        grep -qa -- '--spares' "/proc/$pid/cmdline" 2>/dev/null &&
            [ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)")" = ddpjob-agent ] && echo "$pid" && return
    done
}

# The node back in service after a case: slurmd running, the link up, the node resumed.
restore_n2() {
    ip -n "$(cluster_ns head)" link set v2 up
    kill -0 "$(cat "$CLUSTER/run/slurmd-n2.pid" 2>/dev/null)" 2>/dev/null ||
        DDPJ_TESTCLUSTER=$CLUSTER cluster_in n2 slurmd -f "$SLURM_CONF" -N n2
    local deadline=$((SECONDS + 60))
    while [ "$(cluster_in head sinfo -h -n n2 -o '%t' 2>/dev/null)" != idle ] && [ "$SECONDS" -lt "$deadline" ]; do
        cluster_in head scontrol update nodename=n2 state=resume >/dev/null 2>&1
        sleep 1
    done
}

for loss in "agent killed" "slurmd killed" "link cut" "node frozen"; do
    ckpt=$T/ckpt-${loss// /-}
    # slurmd killed: long enough for Slurm to find the node not responding (SlurmdTimeout) and
    # mark it down while the job runs, to see what that does to the job.
    CHAIN_EPOCHS=6
    [ "$loss" != "slurmd killed" ] || CHAIN_EPOCHS=30
    spares_spec slurm "$ckpt" 1 >spares.yaml
    run env DDPJ_TESTMARK="$MARK" XDG_STATE_HOME="$T/state" bash -c '. "$0/tests/cluster/slurm.sh"; cluster_in head "$@"' \
        "$SRCDIR" "$DDPJOB" submit spares.yaml
    JOB=$(grep -o '[0-9][0-9]*' <<<"$OUT" | tail -n 1)
    wait_for "epoch 2/" "$T/spares-$JOB.out" || { restore_n2; continue; }
    case $loss in
    "agent killed") kill -9 "$(n2_agent)" ;;
    "slurmd killed") kill -9 "$(cat "$CLUSTER/run/slurmd-n2.pid")" ;;
    "link cut") ip -n "$(cluster_ns head)" link set v2 down ;;
    "node frozen")
        frozen=$(ip netns pids "$(cluster_ns n2)")
        # shellcheck disable=SC2086
        kill -STOP $frozen
        ;;
    esac
    deadline=$((SECONDS + 180))
    while [ -n "$(cluster_in head squeue -h -j "$JOB" 2>/dev/null)" ] && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.5
    done
    ip -n "$(cluster_ns head)" link set v2 up
    # shellcheck disable=SC2086
    [ "$loss" != "node frozen" ] || kill -CONT $frozen
    OUT=$(cat "$T/spares-$JOB.out" 2>/dev/null)
    state=$(cluster_in head scontrol -o show job "$JOB" 2>/dev/null | grep -o 'JobState=[A-Z_]*\|ExitCode=[0-9:]*' | tr '\n' ' ')
    # What Slurm made of it, for the record (share/doc/ddpjob/spares.md).
    echo "# $loss: job $state; n2 $(cluster_in head sinfo -h -n n2 -o '%t %E' 2>/dev/null)"
    grep -h "JobId=$JOB\|n2" "$CLUSTER/log/slurmctld.log" 2>/dev/null | grep -iv "debug" | tail -n 4 | sed 's/^/#   /'
    expect_eq "$state" "JobState=COMPLETED ExitCode=0:0 " "$loss: the job completes on the spare" "$OUT"
    expect_contains "$OUT" "ddpjob: job $JOB: 2 node(s) and 1 spare(s)" "$loss: the script asked for the spare"
    if [ "$loss" = "slurmd killed" ]; then
        # Found: the job's tasks outlive their node's slurmd, and Slurm marking the node down
        # (--no-kill) ends none of them: the job goes on on n2, nothing to replace.
        expect_contains "$(cat "$CLUSTER/log/slurmctld.log")" "Nodes n2 not responding, setting DOWN" \
            "$loss: Slurm set n2 down while the job ran"
        expect_lacks "$OUT" "takes the place of" "$loss: the job's tasks on n2 went on: nothing was replaced"
    else
        expect_contains "$OUT" "node rank 1: n3 (slot 2) takes the place of n2 (slot 1)" "$loss: n3 took node 1's place"
        expect_contains "$OUT" "resuming from $ckpt/checkpoint.ddpt" "$loss: training resumed from its checkpoint"
    fi
    expect_same_as_uninterrupted "$ckpt/checkpoint.ddpt" "$loss: the final checkpoint equals an uninterrupted run's"
    run cluster_ddpjob "$T" status "$JOB"
    if [ "$loss" = "slurmd killed" ]; then
        expect_lacks "$OUT" "took node" "$loss: status names no replacement"
    else
        expect_contains "$OUT" "attempt 1: n3 took node 1's place from n2, after: node 1 (host n2): agent lost" \
            "$loss: status says, from the record, which host was lost, why, and which spare took its place"
    fi
    restore_n2
    expect_no_leftovers "$loss: nothing of the job left running"
done

# A node lost without a spare (its link cut, Slurm told within SlurmdTimeout): found here, srun
# waits for the lost node's task after the agents have ended, so Slurm itself ends the job when it
# sets the node down (NODE_FAIL) and, as its JobRequeue lets it, queues it again: the next link
# runs on n1 and n3 and completes. status says so while Slurm knows the job and after it forgets.
spares_spec slurm "$T/ckpt-nospare" 0 | sed 's/^name: spares/name: nospare/; s/^max_restarts: 2/max_restarts: 0/' >nospare.yaml
run env DDPJ_TESTMARK="$MARK" XDG_STATE_HOME="$T/state" bash -c '. "$0/tests/cluster/slurm.sh"; cluster_in head "$@"' \
    "$SRCDIR" "$DDPJOB" submit nospare.yaml
JOB=$(grep -o '[0-9][0-9]*' <<<"$OUT" | tail -n 1)
wait_for "epoch 2/" "$T/nospare-$JOB.out"
ip -n "$(cluster_ns head)" link set v2 down
known=
deadline=$((SECONDS + 240))
while [ "$SECONDS" -lt "$deadline" ]; do
    run cluster_ddpjob "$T" status "$JOB"
    known=$(grep -oE "\(slurm job $JOB\): (failed|node failure|completed|cancelled)[^(]*\((squeue|sacct|record)[^)]*" <<<"$OUT")
    [ -z "$known" ] || break
    sleep 0.5
done
echo "# node lost, no spare: while Slurm knew it: $known"
grep -h "JobId=$JOB" "$CLUSTER/log/slurmctld.log" 2>/dev/null | grep -i "requeue\|NODE_FAIL\|n2" | tail -n 3 | sed 's/^/#   /'
expect_contains "$known" "(slurm job $JOB): completed" "node lost without a spare: Slurm requeued the job, which completed (status while Slurm knows it)" "$OUT"
expect_contains "$OUT" "link 2 of 2, nodes n[1,3]" "... its second link on n1 and n3"
deadline=$((SECONDS + 180))
while [ -n "$(cluster_in head squeue -h -j "$JOB" 2>/dev/null)" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.5; done
restore_n2
run cluster_ddpjob "$T" status "$JOB"
expect_contains "$OUT" "(slurm job $JOB): completed" "... and completed still once Slurm has forgotten it" "$OUT"
expect_no_leftovers "node lost, no spare: nothing of the job left running"
