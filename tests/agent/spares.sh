#!/bin/bash
# Spare nodes and elastic worlds: real agents as three hosts n1-n3 (network namespaces behind a
# bridge, each with its own hostname; node 0 in n1). With `--nnodes 2 --spares 1`, ddp-train on
# two nodes of two workers loses node 1 in each way the fault matrix has (its agent killed, its
# link cut, the whole node frozen): the standby on n3 takes node rank 1, training resumes from
# its last checkpoint and ends with exactly the checkpoint of an uninterrupted run; a second loss
# with no standby left ends the job naming the host. With `--nnodes 2:3` (c10d), a real PyTorch
# gloo job sees the world grow, shrink, and end below its minimum.
. "$SRCDIR/tests/lib/agents.sh"
# shellcheck source=../cluster/netns.sh
. "$SRCDIR/tests/cluster/netns.sh"
require_torch
NET=10.82.0
spares_ns() { echo "ddpjs$$-$1"; }
mkdir -p "$T/etc"
if ! netns_make "$T" spares_ns "$NET" head 3; then
    fail "three hosts as network namespaces"
    netns_remove "$T" spares_ns head 3
    exit 1
fi
at_exit "netns_remove $T spares_ns head 3"
NS=("$(spares_ns n1)" "$(spares_ns n2)" "$(spares_ns n3)")
MASTER=$NET.11
export DDPJOB_TOKEN=spares-test-$$

# on_host NAME HOST_INDEX [ENV=VALUE...] -- AGENT_ARGS...: agent NAME on host n<INDEX+1>, under
# that hostname.
on_host() {
    local name=$1 i=$2
    shift 2
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    local agent=$AGENT
    # shellcheck disable=SC2016 # expanded by that shell
    AGENT=ip start_agent "$name" GLOO_SOCKET_IFNAME=eth0 OMP_NUM_THREADS=1 "${envs[@]}" -- \
        netns exec "${NS[$i]}" unshare --uts sh -c 'hostname "$0" && exec "$@"' "n$((i + 1))" \
        "$agent" "$@"
}

# --- spares: ddp-train resumes on the standby -----------------------------------------------
CHAIN_EPOCHS=6
REFERENCE_HOSTS=("${NS[0]}" "${NS[1]}")
REFERENCE_MASTER=$MASTER
# ddp-train resumes by itself from the checkpoint it finds when its agent restarts it.
train_job() {
    TRAIN_JOB=("$TRAIN" train --synthetic --synthetic-size "4096,512" --epochs "$CHAIN_EPOCHS" --batch-size 32
        --seed 7 --min-step-ms 40 --checkpoint-dir "$1")
}

# spare_job NAME_PREFIX PROGRAM...: three agents, node ranks 0-2, of a job of 2 nodes + 1 spare.
spare_job() {
    local prefix=$1 i
    shift
    next_port
    for i in 0 1 2; do
        on_host "$prefix$i" "$i" OPENBLAS_CORETYPE=Haswell -- --nnodes 2 --spares 1 \
            --node-rank "$i" --nproc-per-node 2 --master-addr "$MASTER" --master-port "$PORT" \
            --heartbeat 0.5 --grace 3 --max-restarts 2 --rdzv-timeout 60 \
            --error-file "$T/$prefix-error%n.json" --no-python "$@"
    done
}

for loss in "agent killed" "link cut" "node frozen"; do
    CKPT=$T/ckpt-${loss// /-}
    mkdir -p "$CKPT"
    train_job "$CKPT"
    spare_job s "${TRAIN_JOB[@]}"
    wait_for "epoch 2/" "$T/s0.out" || continue
    frozen=
    case $loss in
    "agent killed") kill -9 "$(agent_pid s1)" ;;
    "link cut") ip -n "$(spares_ns head)" link set v2 down ;;
    "node frozen")
        frozen=$(ip netns pids "${NS[1]}")
        # shellcheck disable=SC2086
        kill -STOP $frozen
        ;;
    esac
    wait_agent s0
    rc0=$RC err0=$ERR out0=$OUT
    wait_agent s2
    rc2=$RC err2=$ERR
    # shellcheck disable=SC2086
    [ -z "$frozen" ] || kill -CONT $frozen
    ip -n "$(spares_ns head)" link set v2 up
    wait_agent s1
    expect_eq "$rc0 $rc2" "0 0" "$loss: node 0 and the spare finish the job" "$err0" "$err2"
    expect_contains "$err0" "attempt 0 failed: node 1 (host n2): agent lost" "$loss: node 0 names the lost host"
    expect_contains "$err0" "node rank 1: n3 (slot 2) takes the place of n2 (slot 1)" \
        "$loss: and the spare that took its place"
    expect_contains "$err2" "node rank 2 (n3) stands by in attempt 0" "$loss: the spare stood by first"
    expect_contains "$err2" "node 1 of 2 (n3): ranks 2-3 of 4" "$loss: then ran node rank 1's workers"
    expect_contains "$out0" "resuming from $CKPT/checkpoint.ddpt" "$loss: training resumed from its checkpoint"
    expect_same_as_uninterrupted "$CKPT/checkpoint.ddpt" \
        "$loss: the final checkpoint equals an uninterrupted run's, tolerance 0" "$out0"
    expect_no_leftovers "$loss: nothing of the job left running"
done

# A second loss with no standby left ends the job, as without spares.
worker sleeper 'exec sleep 300'
spare_job n "$T/sleeper"
wait_for "node 1 of 2 (n2)" "$T/n1.err" && kill -9 "$(agent_pid n1)"
wait_for "node 1 of 2 (n3)" "$T/n2.err" && kill -9 "$(agent_pid n2)"
wait_agent n0
expect_eq "$RC" 1 "a second loss with no standby left: the job fails" "$ERR"
expect_contains "$ERR" "1 node(s) can run workers, and the job needs 2 (no standby left to take a lost node's place)" \
    "saying no standby is left"
expect_contains "$ERR" "job failed (exit 1): node 1 (host n3): agent lost" "naming the host lost last"
expect_contains "$(cat "$T/n-error0.json" 2>/dev/null)" '{"attempt": 1, "node": 1, "host": "n3", "in_place_of": "n2", "after": "node 1 (host n2): agent lost' \
    "node 0's error file says which spare took the lost host's place, and after what"
wait_agent n1
wait_agent n2
expect_no_leftovers "no standby left: nothing of the job left running"

# --- an elastic world, 2:3, on PyTorch --------------------------------------------------------
mkdir -p "$T/world"
next_port
elastic_node() { # NAME HOST_INDEX
    on_host "$1" "$2" WORLD_LOG="$T/world" -- --nnodes 2:3 --nproc-per-node 1 --rdzv-backend c10d \
        --rdzv-endpoint "$MASTER:$PORT" --rdzv-conf last_call_timeout=2 --heartbeat 0.5 --grace 3 \
        --max-restarts 5 --rdzv-timeout 60 --python "$PY" "$SRCDIR/tests/agent/py/elastic_world.py"
}
# world_is ATTEMPT WORLD DESCRIPTION: every rank of the attempt saw WORLD ranks, summing 0..WORLD-1.
world_is() {
    local attempt=$1 world=$2 r want got=
    for r in $(seq 0 $((world - 1))); do
        wait_for_file "$T/world/attempt$attempt.rank$r" || break
        got+="$(cat "$T/world/attempt$attempt.rank$r")"$'\n'
    done
    want=
    for r in $(seq 0 $((world - 1))); do
        want+="rank $r world $world env $r/$world group $r/$world sum $((world * (world - 1) / 2))"$'\n'
    done
    expect_eq "$got" "$want" "$3"
}
wait_for_file() { # FILE: 60 s at most
    local i
    for i in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.1; done
    return 1
}
elastic_node e0 0
elastic_node e1 1
world_is 0 2 "2:3: two nodes start once the last call has passed"
elastic_node e2 2
world_is 1 3 "a third node joins: the world grows to 3 at a restart"
expect_contains "$(cat "$T/e0.err")" "1 node(s) wait to join a world of 2 (at most 3)" "node 0 says why it restarts"
kill -9 "$(agent_pid e2)"
world_is 2 2 "the third node lost: the world shrinks to 2"
kill -9 "$(agent_pid e1)"
wait_agent e0
expect_eq "$RC" 1 "one node left of 2:3: the job fails" "$ERR"
expect_contains "$ERR" "1 node(s) can run workers, and the job needs 2" "saying the world fell below its minimum"
expect_contains "$ERR" "job failed (exit 1): node 1 (host n2): agent lost" "naming the node lost"
wait_agent e1
wait_agent e2
expect_no_leftovers "elastic: nothing of the job left running"
