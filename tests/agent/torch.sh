#!/bin/bash
# Real PyTorch workers (Debian's python3-torch, gloo) under two real agents on this machine as
# node 0 and node 1: the tutorial programs ddpjob-agent replaces torchrun for, and a worker
# killed in the middle of a collective.
. "$SRCDIR/tests/lib/agents.sh"
require_torch
export DDPJOB_TOKEN=torch-test-$$

two_nodes() { # SCRIPT [ENV=VALUE...]: node 0 and node 1, two workers each (SCRIPT: a path,
    # or a name in tests/agent/py)
    local script=$1
    [[ $script == */* ]] || script=$SRCDIR/tests/agent/py/$script
    shift
    next_port
    two_agents "$@" -- --nnodes 2 --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "$PORT" \
        --grace 3 --rdzv-timeout 60 "$PY" "$script"
}

two_nodes p2p.py
expect_eq "$RC0/$RC1" 0/0 "point-to-point: both agents exit 0"
all="$OUT0
$OUT1"
for r in 1 2 3; do
    expect_contains "$all" "[rank $r] Rank $r has received data from rank 0: 1.0" "rank $r received rank 0's tensor"
done
expect_contains "$OUT1" "[rank 3] rank 3 of 4: local 1 node 1" "ranks are node-major across the two agents"
expect_no_leftovers "nothing left after the point-to-point program"

# The example the README runs: the PyTorch tutorial's ToyModel.
two_nodes "$SRCDIR/share/examples/toy_ddp.py"
expect_eq "$RC0/$RC1" 0/0 "ToyModel DDP steps (share/examples/toy_ddp.py): both agents exit 0"
all="$OUT0
$OUT1"
expect_eq "$(grep -c 'rank [0-3] of 4 step 4 loss' <<<"$all")" 4 "all 4 ranks took the DDP steps"
expect_eq "$(grep -o 'checksum [0-9.-]*' <<<"$all" | sort -u | wc -l)" 1 "and hold identical parameters afterwards"
expect_no_leftovers "nothing left after the DDP program"

# The root cause on three nodes: rank 1 closes its gloo connections a second before it exits 3,
# so rank 0 and rank 2 fail first, of the lost peer; every node names rank 1. (Rank 1 cannot wait
# longer: node 0 holds its own rank's failure, a consequence, 3 s for the cause.)
next_port
mkdir -p "$T/fault"
for node in 2 1 0; do
    start_agent "n$node" FAULT=exit_late FAULT_RANK=1 EXIT_DELAY=1 FAULT_DIR="$T/fault" -- \
        --nnodes 3 --node-rank "$node" --nproc-per-node 1 --master-addr 127.0.0.1 \
        --master-port "$PORT" --grace 3 --rdzv-timeout 60 "$PY" "$SRCDIR/tests/faults/py/loop.py"
done
for node in 0 1 2; do
    wait_agent "n$node"
    expect_eq "$RC" 3 "three nodes, rank 1 exits 3 after its peers failed: node $node exits 3"
    expect_contains "$ERR" "job failed (exit 3): rank 1 (node 1, host $(hostname), local rank 0) exited with code 3" \
        "and names rank 1 as the cause"
    [ "$node" = 1 ] && continue
    # Node 2's rank may still be unwinding its Python when rank 1's exit ends the job (found on a
    # busy machine): then it is listed as stopped by the agent, which is as true.
    own="rank $node (node $node, host $(hostname), local rank 0)"
    if [ "$node" = 2 ] && [[ $ERR == *"$own stopped by the agent"* ]]; then
        pass "node 2 lists its own rank: stopped by the agent while it was still exiting"
    else
        expect_contains "$ERR" "$own exited with code 1 at" "node $node lists its own rank's failure"
        expect_contains "$ERR" "a consequence, not the cause" "as a consequence"
    fi
done
expect_no_leftovers "nothing left after the three-node failure"

start=$(date +%s)
two_nodes allreduce_crash.py CRASH_RANK=3
took=$(($(date +%s) - start))
expect_eq "$RC0/$RC1" 137/137 "a rank killed mid-collective fails the job on both agents (128+SIGKILL)"
expect_contains "$ERR0" "job failed (exit 137): rank 3 (node 1, host $(hostname), local rank 1) killed by SIGKILL" \
    "node 0 names the failing rank"
expect_contains "$ERR1" "rank 3 (node 1, host $(hostname), local rank 1) killed by SIGKILL" "so does node 1"
if [ "$took" -lt 40 ]; then pass "the job ended promptly (${took} s)"; else fail "the job took ${took} s to end"; fi
expect_no_leftovers "every process is gone after the crash"
