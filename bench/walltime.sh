#!/bin/bash
# Work lost per walltime link, with and without the spec's checkpoint: (the agent's
# --checkpoint-signal), for ddp-train on 2 ranks under ddpjob-agent --standalone:
#   bench/walltime.sh [BUILD_DIR]   (default build)
# One link is LINK seconds (default 20) of a long run whose epoch takes several seconds. With
# checkpoint: {signal: USR1, before: 3}, the workers checkpoint mid-epoch on the signal and the
# next link resumes at that very step. Without, the scheduler's kill at the limit (PBS's SIGKILL
# after kill_delay, or SIGTERM to a script that has no handler) leaves the last epoch's checkpoint,
# and the next link redoes every step since. Steps done by the kill are estimated from the step
# rate the run printed (its epoch lines).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
agent=$build/agent/ddpjob-agent
train=$build/runtime/train/ddp-train
link=${LINK:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export DDPJOB_TOKEN=bench
args=(train --synthetic --synthetic-size "49152,512" --epochs 1000 --batch-size 32 --seed 1)

position() { "$train" inspect "$1/checkpoint.ddpt" | sed -n 's/.*step \([0-9]*\).*/\1/p'; }

# With the checkpoint signal: the run stops on it; what it saved is all it did.
"$agent" --standalone --nproc-per-node 2 --deadline "+$link" --checkpoint-signal USR1 \
    --checkpoint-before 3 "$train" "${args[@]}" --checkpoint-dir "$work/with" >"$work/with.log" 2>&1 || true
with_saved=$(position "$work/with")

# Without: the scheduler kills the run at the limit.
(exec "$agent" --standalone --nproc-per-node 2 "$train" "${args[@]}" --checkpoint-dir "$work/without" \
    >"$work/without.log" 2>&1) &
pid=$!
sleep "$link"
pkill -KILL -P "$pid" 2>/dev/null || true
kill -KILL "$pid" 2>/dev/null || true
{ wait "$pid"; } 2>/dev/null || true
without_saved=$(position "$work/without" 2>/dev/null || echo 0)
# Steps per second from the epoch lines: samples/s over (2 ranks x batch 32).
rate=$(sed -n 's/.*samples\/s \([0-9]*\).*/\1/p' "$work/without.log" | awk '{s += $1; n++} END {printf "%.1f", n ? s / n / 64 : 0}')
without_done=$(awk -v r="$rate" -v l="$link" 'BEGIN {printf "%d", r * (l - 1)}')

echo "== work lost per ${link} s walltime link: ddp-train mlp, 2 ranks, 768 steps an epoch =="
printf '%-26s %16s %18s %14s\n' "" "steps done" "last checkpoint" "steps redone"
printf '%-26s %16s %18s %14s\n' "checkpoint: {signal: USR1}" "$with_saved" "step $with_saved" 0
printf '%-26s %16s %18s %14s\n' "no checkpoint:, killed" "~$without_done" "step $without_saved" "~$((without_done - without_saved))"
echo "(steps done without: estimated at ${rate} steps/s over the link less 1 s of start-up; with the"
echo " signal 3 s before the end, those 3 s of the link go unused instead)"
