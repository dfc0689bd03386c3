#!/bin/bash
# ddp-train on one GPU (--backend nccl, world size 1; float32, --tf32, --bf16) against PyTorch on the
# same GPU, eager and torch.compile (PyTorch's defaults: cuDNN convolutions in TF32): ResNet-20 at
# batch 256 (the issue's anchor) and 1024, samples/s (median of REPS runs) and the GPU memory the
# run held at its peak (nvidia-smi's memory.used sampled every 50 ms, less what was in use before
# it started).
#   bench/train_gpu.sh [DDP_TRAIN] [PYTHON]   (defaults: build/runtime/train/ddp-train, python3)
# SYSTEMS (default all seven) names the rows to run; pytorch-eager is the first ratio's anchor and
# pytorch-eager-bf16-autocast (mixed precision's) the second's; ddp-train--tf32--no-cuda-graph
# launches each step kernel by kernel (what the graph saves).
# On a GPU machine without meson, build first with tests/gpu/standalone.sh and pass
# /tmp/ddpjob-gpu/ddp-train. ddp-train's figure is its second epoch of STEPS steps (data made on
# the host and copied each step, as in training); PyTorch's inputs stay on the GPU.
# Targets (issue 37) at batch 256: ddp-train --tf32 >= 1.5x PyTorch eager, in no more GPU memory;
# ddp-train --bf16 >= 1.2x PyTorch eager under autocast to bfloat16.
set -euo pipefail
cd "$(dirname "$0")/.."
train=${1:-build/runtime/train/ddp-train}
py=${2:-python3}
reps=${REPS:-3}
steps=${STEPS:-50}
batches=${BATCHES:-256 1024}
systems=" ${SYSTEMS:-pytorch-eager pytorch-compile pytorch-eager-bf16-autocast ddp-train ddp-train--tf32 ddp-train--tf32--no-cuda-graph ddp-train--bf16} "

# shellcheck source=lib.sh
. bench/lib.sh
TMPDIR_RUN=$(mktemp -d)
trap 'rm -rf "$TMPDIR_RUN"' EXIT

gpu_used_mib() { nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -n 1; }

# peak_run FILE CMD...: runs CMD, its stdout into FILE; prints the peak GPU memory it added (MiB).
peak_run() {
    local file=$1 base samples rc=0
    shift
    base=$(gpu_used_mib)
    samples=$(mktemp)
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 >"$samples" &
    local poll=$!
    "$@" >"$file" 2>&1 || rc=$?
    kill "$poll"
    wait "$poll" 2>/dev/null || true
    sort -n "$samples" | tail -n 1 | awk -v b="$base" '{print $1 - b}'
    rm -f "$samples"
    [ "$rc" = 0 ] || { echo "bench: $* failed (exit $rc):" >&2; tail -n 20 "$file" >&2; }
}

# run_system NAME CMD...: REPS runs; prints "NAME median-samples/s peak-MiB-of-the-last".
run_system() {
    local name=$1 rates=() mib=0
    shift
    [[ $systems == *" $name "* ]] || return 0
    for ((i = 0; i < reps; i++)); do
        mib=$(peak_run "$TMPDIR_RUN/log" "$@")
        rates+=("$(sed -n -e 's/.*epoch 2\/2 .*samples\/s \([0-9.]*\).*/\1/p' -e 's/^samples\/s //p' \
            "$TMPDIR_RUN/log")")
    done
    echo "$name $(printf '%s\n' "${rates[@]}" | median) $mib"
}

printf '%-6s %-31s %12s %9s %9s %12s\n' batch system samples/s MiB "vs eager" "vs autocast"
for batch in $batches; do
    ours=("$train" train --backend nccl --model resnet --depth 20 --batch-size "$batch"
          --synthetic-size "$((steps * batch)),$batch" --epochs 2)
    torch=("$py" bench/train_torch_gpu.py 20 "$batch" "$steps")
    {
        run_system pytorch-eager "${torch[@]}"
        run_system pytorch-compile "${torch[@]}" compile
        run_system pytorch-eager-bf16-autocast "${torch[@]}" bf16
        run_system ddp-train "${ours[@]}"
        run_system ddp-train--tf32 "${ours[@]}" --tf32
        run_system ddp-train--tf32--no-cuda-graph "${ours[@]}" --tf32 --no-cuda-graph
        run_system ddp-train--bf16 "${ours[@]}" --bf16
    } | awk -v b="$batch" '{name[NR] = $1; rate[NR] = $2; mib[NR] = $3}
        $1 == "pytorch-eager" {eager = $2}
        $1 == "pytorch-eager-bf16-autocast" {autocast = $2}
        function ratio(x, anchor) {return anchor > 0 ? sprintf("%.2fx", x / anchor) : "-"}
        END {for (i = 1; i <= NR; i++)
            printf "%-6d %-31s %12.1f %9d %9s %12s\n", b, name[i], rate[i], mib[i],
                ratio(rate[i], eager), ratio(rate[i], autocast)}'
done
echo "ResNet-20, one GPU, samples/s (median of $reps runs of $steps steps) and peak MiB of the last run."
echo "Targets at batch 256: ddp-train--tf32 >= 1.5x pytorch-eager, its MiB <= pytorch-eager's;"
echo "ddp-train--bf16 >= 1.2x pytorch-eager-bf16-autocast."
# The physical view: ResNet-20's convolutions are 3 x the forward's multiply-adds per sample
# (forward, data gradient, weight gradient); at a row's samples/s that is the rate they ran at.
awk 'BEGIN {
    n = 3; hw = 1024; c = 16; f = 2 * 3 * 16 * 9 * hw
    for (s = 0; s < 3; s++) {
        o = 16 * 2 ^ s
        if (s == 0) f += 2 * n * 2 * c * c * 9 * hw
        else { hw /= 4; f += 2 * c * o * 9 * hw + 2 * c * o * hw + (2 * n - 1) * 2 * o * o * 9 * hw }
        c = o
    }
    printf "Convolution work: %.1f MFLOP per sample per step (3 x %.1f forward); at 10^4 samples/s\n", 3 * f / 1e6, f / 1e6
    printf "that is %.2f TFLOP/s: %.2f%% of an H100 SXM'"'"'s dense TF32 rate (494.7) and %.2f%% of its FP32 (66.9).\n",
        3 * f * 1e4 / 1e12, 3 * f * 1e4 / 1e12 / 494.7 * 100, 3 * f * 1e4 / 1e12 / 66.9 * 100 }'

