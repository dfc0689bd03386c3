#!/bin/bash
# GPU checks: the nccl backend and ddp-train on a real device. Skipped, with the reason, where
# the build has no CUDA toolkit or the machine no GPU; tests/gpu/standalone.sh builds and runs
# the same checks on a GPU machine that has nothing but the CUDA toolkit.
set -u
if [ -z "${GPU_CHECK:-}" ]; then
    echo "1..0 # SKIP built without the CUDA toolkit (meson option cuda / gpu_toolkit)"
    exit 0
fi
if ! reason=$("$GPU_CHECK" probe 2>&1); then
    echo "1..0 # SKIP no GPU on this machine: $reason"
    exit 0
fi
. "$SRCDIR/tests/agent/lib.sh"
: "${TRAIN:?run through meson test}"
echo "# $reason"

out=$("$GPU_CHECK" ops 2>&1)
rc=$?
if [ "$rc" = 0 ]; then
    pass "nccl, world of 1: every collective, type (float16, bfloat16 included) and reduction"
else
    fail "nccl, world of 1: every collective, type and reduction (exit $rc)" "$out"
fi

out=$(timeout 120 "$TRAIN" hello --backend nccl 2>&1)
expect_eq "$?" 0 "ddp-train hello --backend nccl exits 0"
expect_contains "$out" "Rank 0" "ddp-train hello --backend nccl speaks"

out=$(timeout 300 "$TRAIN" bench --backend nccl --op all --check --max-bytes 64M 2>&1)
rc=$?
wrong=$(awk '/^ +[0-9]/ && $NF != 0' <<<"$out")
if [ "$rc" = 0 ] && [ -z "$wrong" ] && grep -q 'Avg bus bandwidth' <<<"$out"; then
    pass "ddp-train bench --backend nccl --op all --check: no wrong element"
else
    fail "ddp-train bench --backend nccl --op all --check (exit $rc)" "$wrong" "$(tail -n 5 <<<"$out")"
fi
while IFS= read -r line; do echo "# $line"; done <<<"$out"

gpus=$("$GPU_CHECK" probe | awk '{print $1}')
if [ "${gpus:-1}" -ge 2 ]; then
    out=$(timeout 120 "$AGENT" --standalone --nproc-per-node 2 "$TRAIN" collectives --backend nccl 2>&1)
    expect_eq "$?" 0 "two GPUs under the agent: ddp-train collectives --backend nccl"
fi
expect_no_leftovers "nothing left running"
