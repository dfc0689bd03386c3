#!/bin/bash
# GPU checks: the nccl backend and ddp-train on a real device (tests/gpu/lib.sh: where they skip).
set -u
# shellcheck source=lib.sh
. "$SRCDIR/tests/gpu/lib.sh"

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
# The step recorded as a CUDA graph and replayed against the step launched kernel by kernel:
# the same training (the learning rate changes every step, the last batch of each epoch is short
# and runs unrecorded, evaluations run between epochs) gives the same losses. Not the same bits:
# each process measures and picks its own cuDNN algorithms. On the CPU the first step's rate kept
# for all 12 steps moves the losses by 4e-3 to 3e-2.
graph_run=(--model resnet --depth 8 --width 1 --data "$T/data" --no-augment --batch-size 48
           --epochs 2 --backend nccl)
timeout 300 "$TRAIN" train "${graph_run[@]}" >"$T/graph.log" 2>&1
timeout 300 "$TRAIN" train "${graph_run[@]}" --no-cuda-graph >"$T/launched.log" 2>&1
losses() { sed -n 's/^epoch .* loss \([0-9.]*\) .* test-loss \([0-9.]*\) .*/\1 \2/p' "$1"; }
if grep -q "each step a CUDA graph" "$T/graph.log" && ! grep -q "CUDA graph" "$T/launched.log" &&
    [ "$(losses "$T/graph.log" | wc -w)" = 4 ] &&
    paste <(losses "$T/graph.log") <(losses "$T/launched.log") |
    awk '{for (i = 1; i <= 2; i++) if ($i - $(i + 2) > 1e-3 || $(i + 2) - $i > 1e-3) exit 1}'; then
    pass "12 steps recorded as a CUDA graph train as the same steps launched kernel by kernel (losses $(losses "$T/graph.log" | tr '\n' ' '))"
else
    fail "steps recorded as a CUDA graph train as the same steps launched kernel by kernel" \
        "$(cat "$T/graph.log" "$T/launched.log")"
fi

# Mixed precision (--bf16) trains as float32 does: the same run's losses within 0.05 (bfloat16
# feature maps move a gradient at initialisation by 10-30% of its norm: tests/train/device_check).
timeout 300 "$TRAIN" train "${graph_run[@]}" --bf16 >"$T/bf16.log" 2>&1
if grep -q "on cuda-bf16 (each step a CUDA graph)" "$T/bf16.log" &&
    [ "$(losses "$T/bf16.log" | wc -w)" = 4 ] &&
    paste <(losses "$T/graph.log") <(losses "$T/bf16.log") |
    awk '{for (i = 1; i <= 2; i++) if ($i - $(i + 2) > 0.05 || $(i + 2) - $i > 0.05) exit 1}'; then
    pass "12 steps in mixed precision (--bf16) train as float32's (losses $(losses "$T/bf16.log" | tr '\n' ' ')against $(losses "$T/graph.log" | tr '\n' ' '))"
else
    fail "12 steps in mixed precision (--bf16) train as float32's" "$(cat "$T/bf16.log" "$T/graph.log")"
fi

# ResNet-20 as a user runs it: one worker per GPU under the agent, a few epochs over nccl.
out=$(DDPJ_TESTMARK="$MARK" timeout 300 "$AGENT" --standalone --nproc-per-node gpu "$TRAIN" train \
    --backend nccl --model resnet --depth 20 --synthetic-size 4096,1024 --epochs 5 --batch-size 32 2>&1)
acc=$(sed -n 's/.*trained after 5 of 5 epochs.*test-acc \([0-9.]*\).*/\1/p' <<<"$out")
if awk -v a="${acc:-0}" 'BEGIN {exit !(a >= 0.5)}'; then
    pass "ResNet-20 under ddpjob-agent --nproc-per-node gpu learns the synthetic set over nccl (test-acc $acc after 5 epochs)"
else
    fail "ResNet-20 under ddpjob-agent --nproc-per-node gpu learns over nccl (test-acc ${acc:-none})" "$out"
fi
while IFS= read -r line; do echo "# $line"; done <<<"$out"

# The PyTorch user path: the tutorials' ResNet DDP program (nccl) under the agent, one worker per
# GPU; then the same program crashing on the GPU, which the agent's summary must name.
if ! "$PY" -c 'import torch, torchvision; assert torch.cuda.is_available()' 2>"$T/torch.err"; then
    fail "PyTorch with CUDA and torchvision is importable by $PY (TORCH_PYTHON)" "$(cat "$T/torch.err")"
else
    resnet=("$SRCDIR/tests/gpu/py/resnet_ddp.py" "$T/resnet.pt")
    out=$(DDPJ_TESTMARK="$MARK" timeout 300 "$AGENT" --standalone --nproc-per-node gpu --grace 5 \
        "$PY" "${resnet[@]}" 2>&1)
    rc=$?
    if [ "$rc" = 0 ] && grep -q 'rank 0 epoch 1 loss' <<<"$out"; then
        pass "torchvision resnet18 DDP over nccl under ddpjob-agent --nproc-per-node gpu"
    else
        fail "torchvision resnet18 DDP over nccl under the agent (exit $rc)" "$(tail -n 30 <<<"$out")"
    fi
    while IFS= read -r line; do echo "# $line"; done <<<"$(grep -v '^\[rank [0-9]*\] *$' <<<"$out" | tail -n 8)"
    saved=$("$PY" -c 'import sys, torch; c = torch.load(sys.argv[1]); print(c["epoch"], len(c["model"]))' \
        "$T/resnet.pt" 2>&1)
    expect_eq "$saved" "1 122" "rank 0's checkpoint holds the last epoch and resnet18's 122 tensors"

    out=$(DDPJ_TESTMARK="$MARK" timeout 300 "$AGENT" --standalone --nproc-per-node gpu --grace 5 \
        --error-file "$T/error.json" "$PY" "${resnet[@]}" --crash-at-step 3 2>&1)
    rc=$?
    # Python's exception (exit 1) or, when PyTorch's NCCL watchdog sees the CUDA error first, its
    # std::terminate (SIGABRT): either way the job fails and the summary says why.
    summary=$(grep '^ddpjob-agent: ' <<<"$out")
    if [ "$rc" = 1 ] || [ "$rc" = 134 ]; then pass "a worker that crashes on the GPU fails the job (exit $rc)"; else
        fail "a worker that crashes on the GPU fails the job with its status (exit $rc)" "$summary"; fi
    expect_contains "$summary" "job failed (exit $rc): rank 0 (node 0, host $(hostname), local rank 0)" \
        "the summary names the failed rank"
    expect_contains "$(grep '|' <<<"$summary")" "device-side assert triggered" \
        "and its stderr excerpt shows the CUDA error"
    expect_contains "$(cat "$T/error.json" 2>&1)" "device-side assert triggered" "--error-file holds it too"
    while IFS= read -r line; do echo "# $line"; done <<<"$(grep 'ddpjob-agent' <<<"$out" | tail -n 12)"
fi

gpus=$(awk '{print $1}' <<<"$GPUS")
if [ "${gpus:-1}" -ge 2 ]; then
    out=$(timeout 120 "$AGENT" --standalone --nproc-per-node 2 "$TRAIN" collectives --backend nccl 2>&1)
    expect_eq "$?" 0 "two GPUs under the agent: ddp-train collectives --backend nccl"
    out=$(timeout 300 "$AGENT" --standalone --nproc-per-node 2 "$TRAIN" train --backend nccl --epochs 2 2>&1)
    expect_contains "$out" "trained after 2 of 2 epochs" "two GPUs under the agent: ddp-train train --backend nccl"
fi
expect_no_leftovers "nothing left running"
