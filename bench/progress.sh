#!/bin/bash
# What progress reporting costs and what it buys (ddpjob-agent(1) PROGRESS). One run, side by side:
# 1. ddp-train's steps per second, 2 ranks under ddpjob-agent (default 1 s heartbeat), with its
#    step reports (the default) and without (DDPJOB_PROGRESS_FILE unset for the workers: neither
#    the writes nor the agent's sampling happen), and with the reports and node 0's history of
#    them (--history-file, as a submitted job's record keeps it); RUNS alternating runs each, the
#    median.
# 2. From a rank's stall to its being named: tests/agent/py/progress_loop.py (PyTorch gloo, 2
#    ranks; rank 1 stops before its step 50) under ddpjob-agent --hang-timeout 3, and under
#    torchrun (Debian's torch 1.13) on the same script, which names nothing (stopped at CAP s).
#   bench/progress.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
AGENT=$PWD/$build/agent/ddpjob-agent TRAIN=$PWD/$build/runtime/train/ddp-train PY=/usr/bin/python3
RUNS=${RUNS:-7} CAP=${CAP:-60}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# steps_per_s with|without|history: one ddp-train run of 60 epochs x 64 steps (the default MLP): the
# mean of its epochs' training rates (samples/s over 64 samples a step: 2 ranks x batch 32).
steps_per_s() {
    local unset=() history=()
    [ "$1" = without ] && unset=(env -u DDPJOB_PROGRESS_FILE)
    [ "$1" = history ] && history=(--progress-file "$T/progress.json" --history-file "$T/history.jsonl")
    OMP_NUM_THREADS=1 "$AGENT" --standalone --nproc-per-node 2 "${history[@]}" "${unset[@]}" "$TRAIN" train --synthetic \
        --synthetic-size 4096,512 --epochs 60 --batch-size 32 >"$T/train.log" 2>&1 || { cat "$T/train.log" >&2; exit 1; }
    awk '/samples\/s/ { for (i = 1; i < NF; i++) if ($i == "samples/s") { sum += $(i + 1); n++ } }
        END { printf "%.0f", sum / n / 64 }' "$T/train.log"
}
median() { tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

with=() without=() history=()
for _ in $(seq "$RUNS"); do
    with+=("$(steps_per_s with)")
    without+=("$(steps_per_s without)")
    history+=("$(steps_per_s history)")
done
w=$(median <<<"${with[*]}") wo=$(median <<<"${without[*]}") hi=$(median <<<"${history[*]}")
samples=$(grep -c '"steps"' "$T/history.jsonl" 2>/dev/null)

# stall_to_named LAUNCHER: ms from rank 1's "stalling" line to a line naming it as stalled.
stall_to_named() {
    local launch start=0 named=
    if [ "$1" = agent ]; then
        launch=("$AGENT" --standalone --nproc-per-node 2 --hang-timeout 3 "$PY")
    else
        launch=("$PY" -m torch.distributed.run --standalone --nproc_per_node 2)
    fi
    STALL_RANK=1 OMP_NUM_THREADS=1 timeout -s KILL "$CAP" "${launch[@]}" tests/agent/py/progress_loop.py \
        >"$T/stall.out" 2>"$T/stall.err" &
    local pid=$! deadline=$(($(now_ms) + CAP * 1000))
    while [ "$(now_ms)" -lt "$deadline" ] && kill -0 "$pid" 2>/dev/null; do
        if [ "$start" = 0 ] && grep -q "stalling before step" "$T/stall.out"; then start=$(now_ms); fi
        if [ "$start" != 0 ] && grep -q "rank 1 .*stalled" "$T/stall.err"; then named=$(($(now_ms) - start)); break; fi
        sleep 0.02
    done
    kill -9 "$pid" 2>/dev/null
    pkill -9 -f progress_loop.py 2>/dev/null
    wait "$pid" 2>/dev/null
    echo "${named:-never (stopped after $CAP s)}"
}
agent_named=$(stall_to_named agent)
torchrun_named=$(stall_to_named torchrun)

cat <<TABLE
progress reporting, $(nproc) CPU(s): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
ddp-train train (MLP, 2 ranks, 60 x 64 steps) under ddpjob-agent, median of $RUNS runs each:
  with step reports     $w steps/s   (runs: ${with[*]})
  without               $wo steps/s   (runs: ${without[*]})
  with the history      $hi steps/s   (runs: ${history[*]}; $samples samples, $(stat -c %s "$T/history.jsonl" 2>/dev/null) bytes)
  ratio with/without    $(awk -v a="$w" -v b="$wo" 'BEGIN { printf "%.3f", a / b }')
  ratio history/without $(awk -v a="$hi" -v b="$wo" 'BEGIN { printf "%.3f", a / b }')
rank 1 stalls before step 50 (PyTorch gloo, 2 ranks): time from the stall until a launcher names it
  ddpjob-agent --hang-timeout 3   ${agent_named} ms
  torchrun (torch $($PY -c 'import torch; print(torch.__version__)' 2>/dev/null))          ${torchrun_named}
TABLE
