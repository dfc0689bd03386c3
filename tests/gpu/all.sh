#!/bin/bash
# Everything GPU in one call on a lent GPU machine (the CUDA toolkit and PyTorch, no Debian
# packages): the machine's facts, tests/gpu/standalone.sh (the meson build + the GPU checks),
# then the GPU benchmarks. Each part has its own deadline and log, so one that fails or hangs
# still leaves the others' results. Run tests/gpu/tools.sh here first and carry .tools.
# TRAIN_BENCH=0 stops after the checks; ALLREDUCE=0 leaves the all_reduce bench out.
#   tests/gpu/all.sh OUT_DIR   (OUT_DIR gets facts.txt, build.log, gpu.log, train_gpu.txt,
#                               allreduce_gpu.txt)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
out=${1:?usage: tests/gpu/all.sh OUT_DIR}
build=/tmp/ddpjob-gpu
py=${TORCH_PYTHON:-python3}
mkdir -p "$out"

{
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
    "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc" --version | tail -n 2
    "$py" - <<'PY'
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl",
      ".".join(map(str, torch.cuda.nccl.version())), "cudnn", torch.backends.cudnn.version())
p = torch.cuda.get_device_properties(0)
print("device", p.name, "SMs", p.multi_processor_count, "memory MiB", p.total_memory >> 20)
PY
    echo "cpu: $(nproc) x $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)"
} >"$out/facts.txt" 2>&1
cat "$out/facts.txt"

[ -x .tools/bin/ddpjob-agent-static ] && export STATIC_AGENT=$PWD/.tools/bin/ddpjob-agent-static
TORCH_PYTHON=$py timeout 420 bash tests/gpu/standalone.sh "$build" >"$out/build.log" 2>&1
echo "standalone.sh: exit $?"
cp "$build/gpu.log" "$out/gpu.log" 2>/dev/null
grep -E '^(not )?ok|^1\.\.' "$out/gpu.log"

[ "${TRAIN_BENCH:-1}" = 1 ] || exit 0
REPS=${REPS:-3} timeout 420 bash bench/train_gpu.sh "$build/runtime/train/ddp-train" "$py" >"$out/train_gpu.txt" 2>&1
echo "train_gpu.sh: exit $?"
cat "$out/train_gpu.txt"
if [ "${ALLREDUCE:-1}" = 1 ]; then
    timeout 60 bash bench/allreduce_gpu.sh "$build/runtime/train/ddp-train" "$py" >"$out/allreduce_gpu.txt" 2>&1
    echo "allreduce_gpu.sh: exit $?"
    cat "$out/allreduce_gpu.txt"
fi
