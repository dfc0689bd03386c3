# Shared by the GPU suites: skipped, with the reason, where the build has no CUDA toolkit or the
# machine no GPU; else GPUS is the probe's line ("N CUDA device(s)") and the agents' helpers are
# loaded. tests/gpu/standalone.sh builds and runs them on a GPU machine with the toolkit alone.
if [ -z "${GPU_CHECK:-}" ]; then
    echo "1..0 # SKIP built without the CUDA toolkit (meson option cuda / gpu_toolkit)"
    exit 0
fi
if ! GPUS=$("$GPU_CHECK" probe 2>&1); then
    echo "1..0 # SKIP no GPU on this machine: $GPUS"
    exit 0
fi
# shellcheck source=../lib/agents.sh
. "$SRCDIR/tests/lib/agents.sh"
: "${TRAIN:?run through meson test}"
echo "# $GPUS"
PY=${TORCH_PYTHON:-/usr/bin/python3}
