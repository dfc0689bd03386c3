#!/bin/bash
# ddp-train on one GPU (--backend nccl, world size 1) against PyTorch eager on the same GPU:
# ResNet-20, batch 256 (the issue's anchor), samples/s, median of REPS runs.
#   bench/train_gpu.sh [DDP_TRAIN] [PYTHON]   (defaults: build/runtime/train/ddp-train, python3)
# On a GPU machine without meson, build first with tests/gpu/standalone.sh and pass
# /tmp/ddpjob-gpu/ddp-train. ddp-train's figure is its second epoch of STEPS steps (data made on
# the host and copied each step, as in training); PyTorch's inputs stay on the GPU.
# Target: ddp-train >= PyTorch eager (ratio >= 1).
set -euo pipefail
cd "$(dirname "$0")/.."
train=${1:-build/runtime/train/ddp-train}
py=${2:-python3}
reps=${REPS:-3}
steps=${STEPS:-50}
batch=256

# shellcheck source=lib.sh
. bench/lib.sh

o=() t=()
for ((i = 0; i < reps; i++)); do
    o+=("$("$train" train --backend nccl --model resnet --depth 20 --batch-size "$batch" \
        --synthetic-size "$((steps * batch)),$batch" --epochs 2 2>&1 |
        sed -n 's/.*epoch 2\/2 .*samples\/s \([0-9.]*\).*/\1/p')")
    t+=("$("$py" bench/train_torch_gpu.py 20 "$batch" "$steps" | sed -n 's/samples\/s //p')")
done
mo=$(printf '%s\n' "${o[@]}" | median)
mt=$(printf '%s\n' "${t[@]}" | median)
echo "== ResNet-20, batch $batch, one GPU: samples/s (median of $reps) =="
awk -v o="$mo" -v t="$mt" 'BEGIN {
    printf "%-12s %12s %12s %8s\n%-12s %12.1f %12.1f %7.2fx\n", "model", "ddp-train", "pytorch", "ratio",
        "resnet-20", o, t, o / t }'
echo "Target: ddp-train >= PyTorch eager's throughput (ratio >= 1)."
