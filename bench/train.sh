#!/bin/bash
# ddp-train's training throughput against PyTorch DDP on this machine's CPU: the same model,
# per-rank batch and world size, tcp against gloo, one BLAS thread per rank.
#   bench/train.sh [BUILD_DIR]   (needs /usr/bin/python3 with torch)
# ddp-train's figure is its last epoch's samples/s (an epoch of the model's steps on synthetic
# data); PyTorch's is timed over the same steps after 3 warm-up steps. ResNet-20 runs STEPS steps
# (20), the MLP MLP_STEPS (200): 20 of its 4 ms steps are a 0.09 s window, where one hiccup of a
# shared VM's CPU moves the figure by a quarter. Each is the median of REPS runs,
# interleaved. ddp-train runs with oneDNN's convolutions on activations kept in its blocked layout
# (the default), with the same convolutions on NCHW activations (--cpu-conv onednn-nchw: reorders
# around each), and with im2col's (--cpu-conv im2col).
# Targets: ResNet-20 >= 1.5x PyTorch at both batch sizes, the MLP >= 3x (ratio: the default's).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
agent=$build/agent/ddpjob-agent
train=$build/runtime/train/ddp-train
reps=${REPS:-3}
resnet_steps=${STEPS:-20}
mlp_steps=${MLP_STEPS:-200}
ranks=2

# shellcheck source=lib.sh
. bench/lib.sh

ours() { # KIND BATCH ARG CONV STEPS
    local batch=$2 samples shape=--widths
    samples=$(($5 * batch * ranks))
    [ "$1" = resnet ] && shape=--depth
    "$agent" --standalone --nproc-per-node "$ranks" "$train" train --model "$1" "$shape" "$3" --batch-size "$batch" \
        --cpu-conv "$4" --synthetic-size "$samples,$((batch * ranks))" --epochs 2 2>&1 |
        sed -n 's/.*epoch 2\/2 .*samples\/s \([0-9.]*\).*/\1/p'
}

theirs() { # KIND BATCH ARG STEPS
    "$agent" --standalone --nproc-per-node "$ranks" /usr/bin/python3 bench/train_torch.py "$1" "$2" \
        "$4" "$3" 2>&1 | sed -n 's/.*samples\/s \([0-9.]*\).*/\1/p'
}

echo "== training throughput, $ranks ranks on CPU (tcp vs gloo), samples/s, median of $reps =="
printf '%-12s %6s %10s %10s %10s %10s %8s %8s %8s\n' model batch ddp-train nchw im2col pytorch \
    ratio nchw im2col
while read -r name kind arg batch; do
    steps=$resnet_steps
    [ "$kind" = mlp ] && steps=$mlp_steps
    o=() n=() c=() t=()
    for ((i = 0; i < reps; i++)); do
        o+=("$(ours "$kind" "$batch" "$arg" onednn "$steps")")
        n+=("$(ours "$kind" "$batch" "$arg" onednn-nchw "$steps")")
        c+=("$(ours "$kind" "$batch" "$arg" im2col "$steps")")
        t+=("$(theirs "$kind" "$batch" "$arg" "$steps")")
    done
    mo=$(printf '%s\n' "${o[@]}" | median)
    mn=$(printf '%s\n' "${n[@]}" | median)
    mc=$(printf '%s\n' "${c[@]}" | median)
    mt=$(printf '%s\n' "${t[@]}" | median)
    awk -v m="$name" -v b="$batch" -v o="$mo" -v n="$mn" -v c="$mc" -v t="$mt" 'BEGIN {
        printf "%-12s %6d %10.1f %10.1f %10.1f %10.1f %7.2fx %7.2fx %7.2fx\n", m, b, o, n, c, t,
            o / t, n / t, c / t }'
done <<'MODELS'
mlp-256 mlp 256 64
resnet-20 resnet 20 64
resnet-20 resnet 20 256
MODELS
echo "ratio: ddp-train (blocked layout) / pytorch; nchw, im2col: those columns / pytorch."
echo "Targets: ResNet-20 ddp-train >= 1.5x PyTorch at batch 64 and 256; the MLP >= 3x."
