#!/bin/bash
# NCCL all_reduce on one GPU: ddp-train bench --backend nccl (libddp's process group) against
# PyTorch's dist.all_reduce on the same GPU, float32 sum, 8 B to 128 MiB. World size 1 is a copy
# inside the GPU (busbw is 0 by nccl-tests' factor), so the table shows algbw as the sanity line
# and, at the small sizes, each process group's cost per call.
#   bench/allreduce_gpu.sh [DDP_TRAIN] [PYTHON]   (defaults: build/runtime/train/ddp-train, python3)
set -euo pipefail
cd "$(dirname "$0")/.."
train=${1:-build/runtime/train/ddp-train}
py=${2:-python3}
iters=${ITERS:-200}
warmup=${WARMUP:-20}
max=$((128 << 20))

ours=$("$train" bench --backend nccl --op all_reduce --min-bytes 8 --max-bytes "$max" \
    --step-factor 4 --iters "$iters" --warmup "$warmup")
theirs=$("$py" bench/allreduce_torch_gpu.py 8 "$max" 4 "$iters" "$warmup" $((29500 + $$ % 1000)))
echo "== all_reduce, float32 sum, one GPU (world size 1), nccl: us per call and algbw =="
printf '%12s %12s %12s %10s %10s %8s\n' bytes "ddp us" "torch us" "ddp GB/s" "torch GB/s" "us ratio"
awk 'NR == FNR {us[$1] = $2; bw[$1] = $3; next}
     /^ +[0-9]/ && ($1 in us) {printf "%12d %12.2f %12.2f %10.3f %10.3f %7.2fx\n", $1, $6, us[$1], $7, bw[$1], us[$1] / $6}' \
    <(echo "$theirs") <(echo "$ours")
echo "us ratio: PyTorch's time per call over ddp-train's (above 1: ours is faster)."
