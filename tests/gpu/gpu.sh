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

: "${DEVICE_CHECK:?built with GPU_CHECK}"
out=$(timeout 300 "$DEVICE_CHECK" 2>&1)
rc=$?
if [ "$rc" = 0 ] && ! grep -q '^not ok' <<<"$out"; then
    pass "every layer, and a training step of mlp and resnet-8, on the GPU equal the CPU's ($(grep -c '^ok' <<<"$out") checks)"
else
    fail "every layer and a training step on the GPU equal the CPU's (exit $rc)" "$(grep -v '^ok' <<<"$out")"
fi
while IFS= read -r line; do echo "# $line"; done <<<"$out"

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

# Training on the GPU: one step equals the CPU's (same data, weights and SGD), and a short run
# over the nccl process group learns.
"$TRAIN" make-data "$T/data" --size 256,64 >/dev/null
step=(--data "$T/data" --no-augment --no-shuffle --batch-size 16 --max-steps 1 --schedule constant)
for model in "mlp --widths 64,32" "resnet --depth 8 --width 1"; do
    # shellcheck disable=SC2086 # the model's options are words
    "$TRAIN" train --model $model "${step[@]}" --checkpoint-dir "$T/cpu" >"$T/cpu.log" 2>&1
    # shellcheck disable=SC2086
    timeout 300 "$TRAIN" train --model $model "${step[@]}" --backend nccl --checkpoint-dir "$T/gpu" \
        >"$T/gpu.log" 2>&1
    if diff=$("$TRAIN" diff "$T/cpu/checkpoint.ddpt" "$T/gpu/checkpoint.ddpt" --tolerance 1e-4); then
        pass "one ${model%% *} step on the GPU equals the CPU's ($(tail -n 1 <<<"$diff"))"
    else
        fail "one ${model%% *} step on the GPU equals the CPU's" "$(cat "$T/gpu.log")" "$diff"
    fi
done
out=$(timeout 300 "$TRAIN" train --backend nccl --model resnet --depth 8 --synthetic-size 4096,1024 \
    --epochs 2 --batch-size 128 2>&1)
acc=$(sed -n 's/.*trained after 2 of 2 epochs.*test-acc \([0-9.]*\).*/\1/p' <<<"$out")
if awk -v a="${acc:-0}" 'BEGIN {exit !(a >= 0.5)}'; then
    pass "resnet-8 on the GPU over nccl learns the synthetic set (test-acc $acc after 2 epochs)"
else
    fail "resnet-8 on the GPU over nccl learns" "$out"
fi
while IFS= read -r line; do echo "# $line"; done <<<"$out"

gpus=$("$GPU_CHECK" probe | awk '{print $1}')
if [ "${gpus:-1}" -ge 2 ]; then
    out=$(timeout 120 "$AGENT" --standalone --nproc-per-node 2 "$TRAIN" collectives --backend nccl 2>&1)
    expect_eq "$?" 0 "two GPUs under the agent: ddp-train collectives --backend nccl"
    out=$(timeout 300 "$AGENT" --standalone --nproc-per-node 2 "$TRAIN" train --backend nccl --epochs 2 2>&1)
    expect_contains "$out" "trained after 2 of 2 epochs" "two GPUs under the agent: ddp-train train --backend nccl"
fi
expect_no_leftovers "nothing left running"
