#!/bin/bash
# The GPU checks on a machine that has the CUDA toolkit and nothing else (no Debian packages):
# the project's one meson build, configured there (without libyaml and libssh2 the CLI is left
# out, without OpenBLAS the CPU layers take a plain GEMM), then its gpu suite. NCCL and cuDNN
# are the toolkit's, or the Python wheels' where PyTorch installed them (meson.build finds them).
#   tests/gpu/standalone.sh [BUILD_DIR]   (default /tmp/ddpjob-gpu; BUILD_DIR/gpu.log: the suite)
# meson and ninja are the machine's, else the copies tests/gpu/tools.sh put in .tools/ (carried to
# the GPU machine with the working tree: the device tool's carry: [".tools"]).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-/tmp/ddpjob-gpu}
meson=(meson)
if ! command -v meson >/dev/null || ! command -v ninja >/dev/null; then
    [ -e .tools/meson.py ] || {
        echo "standalone: no meson and ninja here, and no .tools/ (run tests/gpu/tools.sh where they are, and carry .tools)" >&2
        exit 1
    }
    meson=("${TORCH_PYTHON:-python3}" "$PWD/.tools/meson.py")
    export PATH=$PWD/.tools/bin:$PATH
fi
setup=(setup)
[ -d "$build/meson-info" ] && setup+=(--wipe)
"${meson[@]}" "${setup[@]}" "$build" -Dcuda=enabled -Dgpu_toolkit="${CUDA_HOME:-/usr/local/cuda}"
"${meson[@]}" compile -C "$build"
set +e
# One at a time: a case of gpu-agent takes all of the GPU's memory.
"${meson[@]}" test -C "$build" --suite gpu --no-rebuild --print-errorlogs --num-processes 1
status=$?
cp "$build/meson-logs/testlog.txt" "$build/gpu.log"
exit "$status"
