#!/bin/bash
# ddp-train train with real ranks under ddpjob-agent: DDP equivalence (4 and 3 ranks against one
# rank with the combined batch), learning on synthetic data, resume after an epoch and after a
# SIGTERM mid-epoch (against an uninterrupted run), checkpoint and data errors, inspect/diff.
. "$SRCDIR/tests/lib/agents.sh"
: "${TRAIN:?run through meson test}"

# ranks NAME N ARGS...: ddp-train train ARGS on N ranks under one agent; RC, OUT (stdout and
# stderr together).
ranks() {
    local name=$1 n=$2
    shift 2
    start_agent "$name" -- --standalone --nproc-per-node "$n" "$TRAIN" train "$@"
    wait_agent "$name"
    OUT="$OUT$ERR"
}

small=(--synthetic-size '2048,512' --batch-size 16)
# For the runs a signal stops mid-epoch: each step at least 20 ms (1.3 s an epoch), so the signal
# sent at epoch 1's line lands in epoch 2 on a machine of any speed.
paced=(--min-step-ms 20)

# --- DDP equivalence ------------------------------------------------------------------------------
# Step k over W ranks of batch B covers the same samples as one rank's batch W*B, and DDP averages
# the ranks' mean gradients, so both end at the same parameters (summation order aside). The
# model is the linear one (--widths none): with a ReLU layer, a summation-order difference in the
# last bit (the BLAS kernel differs by CPU and batch size, e.g. with AVX-512) can flip a unit
# whose input is within rounding of zero, and the runs part for a reason that is not DDP's.
for w in 4 3; do
    ranks "ddp$w" "$w" --widths none --batch-size 8 --max-steps 12 --checkpoint-dir "$T/ddp$w" --seed 3
    ddp_rc=$RC ddp_out=$OUT
    ranks "one$w" 1 --widths none --batch-size $((8 * w)) --max-steps 12 --checkpoint-dir "$T/one$w" --seed 3
    if [ "$ddp_rc/$RC" = 0/0 ] && diff=$("$TRAIN" diff "$T/ddp$w/checkpoint.ddpt" "$T/one$w/checkpoint.ddpt" --tolerance 1e-4); then
        pass "DDP: $w ranks x batch 8 for 12 steps = 1 rank x batch $((8 * w)) ($(tail -n 1 <<<"$diff"))"
    else
        fail "DDP: $w ranks x batch 8 = 1 rank x batch $((8 * w))" "exit $ddp_rc (DDP) / $RC (one rank)" "DDP run: $ddp_out" "one rank: $OUT" "${diff:-}"
    fi
done
# The same comparison must see a real difference: one rank with batch 8 trains on other samples.
ranks one_small 1 --widths none --batch-size 8 --max-steps 12 --checkpoint-dir "$T/one_small" --seed 3
if ! "$TRAIN" diff "$T/ddp4/checkpoint.ddpt" "$T/one_small/checkpoint.ddpt" --tolerance 1e-4 >/dev/null; then
    pass "control: 4 ranks x 8 differs from 1 rank x 8 beyond the tolerance"
else
    fail "control: 4 ranks x 8 differs from 1 rank x 8"
fi

# --- learning -------------------------------------------------------------------------------------
ranks learn 2 --epochs 5
acc=$(sed -n 's/.*trained after 5 of 5 epochs.*test-acc \([0-9.]*\).*/\1/p' <<<"$OUT")
if [ "$RC" = 0 ] && awk -v a="${acc:-0}" 'BEGIN {exit !(a >= 0.9)}'; then
    pass "2 ranks, synthetic data, default mlp: test accuracy $acc >= 0.9 within 5 epochs"
else
    fail "2 ranks learn to >= 0.9 within 5 epochs (got ${acc:-nothing})" "$OUT"
fi
expect_eq "$(grep -c '^\[rank 0\] epoch [1-5]/5 ' <<<"$OUT")" 5 "rank 0 prints one line per epoch"
expect_eq "$(grep -c '^\[rank 1\] epoch' <<<"$OUT")" 0 "other ranks print no epoch lines"

# --- resume ---------------------------------------------------------------------------------------
ranks whole 2 "${small[@]}" --epochs 4 --checkpoint-dir "$T/whole"
expect_eq "$RC" 0 "uninterrupted 4-epoch run"
ranks first_half 2 "${small[@]}" --epochs 4 --stop-after-epochs 2 --checkpoint-dir "$T/halves"
expect_contains "$OUT" "stopped as asked after 2 of 4 epochs" "a run stopped after its second epoch says so"
ranks second_half 2 "${small[@]}" --epochs 4 --resume --checkpoint-dir "$T/halves"
expect_contains "$OUT" "resuming from $T/halves/checkpoint.ddpt at epoch 3, batch 0" "--resume starts at epoch 3"
if [ "$RC" = 0 ] && diff=$("$TRAIN" diff "$T/whole/checkpoint.ddpt" "$T/halves/checkpoint.ddpt" --tolerance 0); then
    pass "stopped after epoch 2 and resumed = uninterrupted ($(tail -n 1 <<<"$diff"))"
else
    fail "stopped after epoch 2 and resumed = uninterrupted" "$OUT" "$diff"
fi

# --max-steps at an epoch's last step (2048 samples / 2 ranks / batch 16 = 64 steps an epoch):
# the checkpoint's position is the next epoch's start, and resuming from it is the whole run.
ranks at_boundary 2 "${small[@]}" --epochs 4 --max-steps 128 --checkpoint-dir "$T/boundary"
expect_eq "$("$TRAIN" inspect "$T/boundary/checkpoint.ddpt" | sed -n 's/^position *//p')" "epoch 2, batch 0, step 128" \
    "--max-steps at an epoch's end leaves the position at the next epoch's start"
ranks boundary_resume 2 "${small[@]}" --epochs 4 --resume --checkpoint-dir "$T/boundary"
if [ "$RC" = 0 ] && diff=$("$TRAIN" diff "$T/whole/checkpoint.ddpt" "$T/boundary/checkpoint.ddpt" --tolerance 0); then
    pass "stopped by --max-steps at an epoch's end and resumed = uninterrupted"
else
    fail "stopped by --max-steps at an epoch's end and resumed = uninterrupted" "$OUT" "${diff:-}"
fi

# SIGTERM to the agent mid-epoch: the workers finish the step, rank 0 checkpoints, all exit 75.
start_agent term -- --standalone --nproc-per-node 2 "$TRAIN" train "${small[@]}" "${paced[@]}" --epochs 4 \
    --checkpoint-dir "$T/term"
# Right after epoch 1's line, so the signal lands early in epoch 2 (a signal during an epoch's
# last step is taken after that epoch's checkpoint instead).
for _ in $(seq 300); do grep -q 'epoch 1/4' "$T/term.out" && break; sleep 0.05; done
kill -TERM "$(agent_pid term)"
wait_agent term
OUT="$OUT$ERR"
expect_contains "$OUT" "stopped by Terminated after step" "SIGTERM: the worker names the signal and its step"
expect_contains "$OUT" "exit status 75" "SIGTERM: the documented status"
position=$("$TRAIN" inspect "$T/term/checkpoint.ddpt" | sed -n 's/^position *//p')
if grep -q 'epoch [1-3], batch [1-9]' <<<"$position"; then
    pass "the SIGTERM checkpoint is mid-epoch ($position)"
else
    fail "the SIGTERM checkpoint is mid-epoch" "position: $position" "$OUT"
fi
ranks term_resume 2 "${small[@]}" --epochs 4 --resume --checkpoint-dir "$T/term"
if [ "$RC" = 0 ] && diff=$("$TRAIN" diff "$T/whole/checkpoint.ddpt" "$T/term/checkpoint.ddpt" --tolerance 0); then
    pass "stopped by SIGTERM mid-epoch and resumed = uninterrupted ($(tail -n 1 <<<"$diff"))"
else
    fail "stopped by SIGTERM mid-epoch and resumed = uninterrupted" "$OUT" "$diff"
fi

# SIGUSR2 (what the Slurm script asks for before the time limit) straight to a lone rank.
DDPJ_TESTMARK="$MARK" "$TRAIN" train "${small[@]}" "${paced[@]}" --epochs 4 --checkpoint-dir "$T/usr2" >"$T/usr2.log" 2>&1 &
pid=$!
for _ in $(seq 300); do grep -q 'epoch 1/4' "$T/usr2.log" && break; sleep 0.05; done
kill -USR2 "$pid"
wait "$pid"
expect_eq "$?" 75 "SIGUSR2: a lone rank checkpoints and exits 75"
expect_contains "$("$TRAIN" inspect "$T/usr2/checkpoint.ddpt")" "world      1 rank(s)" "... leaving a readable checkpoint"

# SIGTERM while another rank does not answer (stopped, as behind a partition): the rank gives up
# waiting a few seconds after the signal instead of at the process group's timeout.
rank_pid() { # RANK: the ddp-train worker of this test with that rank
    for pid in $(marked_pids); do
        grep -qz "^RANK=$1\$" "/proc/$pid/environ" 2>/dev/null &&
            [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = ddp-train ] && echo "$pid"
    done
}
start_agent partition DDP_PG_TIMEOUT=120 -- --standalone --nproc-per-node 2 --grace 30 "$TRAIN" train \
    "${small[@]}" "${paced[@]}" --epochs 50
for _ in $(seq 300); do grep -q 'epoch 1/50' "$T/partition.out" && break; sleep 0.05; done
rank1=$(rank_pid 1)
kill -STOP "$rank1"
sleep 0.5
start=$(date +%s%N)
kill -TERM "$(rank_pid 0)"
wait_agent partition
took=$((($(date +%s%N) - start) / 1000000))
OUT="$OUT$ERR"
expect_contains "$OUT" "rank 0: stopped by SIGTERM while the other ranks did not answer (" \
    "SIGTERM with a peer not answering: the rank says so"
expect_contains "$OUT" "gave up waiting for rank(s) 1: this process was asked to stop); nothing saved" \
    "and which rank it waited for"
expect_eq "$RC" 143 "and the job fails with 128+SIGTERM"
if [ "$took" -lt 10000 ]; then pass "within seconds (${took} ms; the group's timeout is 120 s)"; else
    fail "a rank with a silent peer took ${took} ms to leave after SIGTERM" "$OUT"; fi
expect_no_leftovers "nothing left after a SIGTERM with a silent peer"

# --- help ----------------------------------------------------------------------------------------
for cmd in hello collectives bench train inspect diff make-data; do
    out=$("$TRAIN" "$cmd" --help 2>&1)
    rc=$?
    if [ "$rc" = 0 ] && [[ "$out" == "usage: ddp-train $cmd"* ]]; then pass "ddp-train $cmd --help prints its usage"; else
        fail "ddp-train $cmd --help (exit $rc)" "$out"; fi
done
expect_contains "$("$TRAIN" --version)" "ddp-train 0." "ddp-train --version names the version"
# Mixed precision is a GPU's: asked of the CPU, or with TF32 besides, it is refused up front.
out=$("$TRAIN" train --model resnet --depth 8 --bf16 --max-steps 1 2>&1)
expect_eq "$?" 2 "--bf16 on the CPU exits 2"
expect_contains "$out" "--bf16 is mixed precision on a GPU (--backend nccl)" "and says it is a GPU's"
out=$("$TRAIN" train --tf32 --bf16 2>&1)
expect_eq "$?" 2 "--tf32 with --bf16 exits 2"
expect_contains "$out" "--tf32 and --bf16 are two precisions" "and says to choose one"

# --- checkpoints that do not fit ------------------------------------------------------------------
ranks other_model 1 "${small[@]}" --model resnet --depth 8 --resume --checkpoint-dir "$T/whole"
expect_eq "$RC" 1 "resuming another model's checkpoint fails"
expect_contains "$OUT" "was made for model \"mlp widths=256\", this run is \"resnet depth=8 width=1\"" \
    "... naming both models"
cp "$T/whole/checkpoint.ddpt" "$T/damaged.ddpt"
printf '\x55' | dd of="$T/damaged.ddpt" bs=1 seek=5000 conv=notrunc status=none
mkdir -p "$T/damaged" && mv "$T/damaged.ddpt" "$T/damaged/checkpoint.ddpt"
ranks damaged 1 "${small[@]}" --resume --checkpoint-dir "$T/damaged"
expect_eq "$RC" 1 "a damaged checkpoint fails the resume"
expect_contains "$OUT" "$T/damaged/checkpoint.ddpt: checksum mismatch" "... naming the file"
ranks missing 1 "${small[@]}" --resume --checkpoint-dir "$T/nothing-here"
expect_contains "$OUT" "cannot resume: $T/nothing-here/checkpoint.ddpt: No such file" \
    "--resume without a checkpoint is an error, not a fresh start"

out=$("$TRAIN" inspect "$T/whole/checkpoint.ddpt")
expect_contains "$out" "position   epoch 4, batch 0, step 256" "inspect: the position after 4 epochs"
expect_contains "$out" "fc1.weight                           momentum" "inspect: lists momentum tensors"
out=$("$TRAIN" diff "$T/whole/checkpoint.ddpt" "$T/whole/checkpoint.ddpt")
expect_contains "$out" "max relative difference 0.000e+00" "diff of a checkpoint with itself is 0"

# --- CIFAR-10 files -------------------------------------------------------------------------------
out=$("$TRAIN" make-data "$T/cifar" --size 600,200 --seed 5)
expect_eq "$(stat -c %s "$T/cifar/data_batch_1.bin") $(stat -c %s "$T/cifar/test_batch.bin")" \
    "$((600 * 3073)) $((200 * 3073))" "make-data writes 3073-byte records"
ranks cifar 2 --data "$T/cifar" --epochs 1 --batch-size 32
expect_eq "$RC" 0 "training on CIFAR-format files (augmented) runs"
expect_contains "$OUT" "600 train / 200 test samples" "... and reads every record"
cp -r "$T/cifar" "$T/trunc"
truncate -s $((600 * 3073 - 100)) "$T/trunc/data_batch_1.bin"
out=$("$TRAIN" train --data "$T/trunc" --epochs 1 2>&1)
expect_eq "$?" 1 "a truncated file fails"
expect_contains "$out" "$T/trunc/data_batch_1.bin: truncated" "... naming the file"
expect_contains "$out" "the record at offset $((599 * 3073)) has only 2973 bytes" "... and the offset"
cp -r "$T/cifar" "$T/corrupt"
printf '\xc8' | dd of="$T/corrupt/test_batch.bin" bs=1 seek=$((7 * 3073)) conv=notrunc status=none
out=$("$TRAIN" train --data "$T/corrupt" --epochs 1 2>&1)
expect_contains "$out" "$T/corrupt/test_batch.bin: record 7 at offset $((7 * 3073)) has label 200" \
    "a label outside 0-9 is named with its file, record and offset"
rm "$T/corrupt/test_batch.bin"
out=$("$TRAIN" train --data "$T/corrupt" --epochs 1 2>&1)
expect_contains "$out" "$T/corrupt/test_batch.bin: No such file or directory" "a missing file is named"

# --- one step against PyTorch ---------------------------------------------------------------------
# Same data (the first 16 records), same starting weights (recovered from the checkpoint), same
# SGD; parameters, momentum and batch-norm statistics compared tensor by tensor.
step_args=(--data "$T/cifar" --no-augment --no-shuffle --batch-size 16 --max-steps 1 --schedule constant)
# The ResNet on every CPU convolution path: oneDNN's on its blocked layout (the build's default),
# oneDNN's on NCHW, and im2col's.
while read -r what model; do
    rm -rf "$T/step"
    # shellcheck disable=SC2086 # the model's options are words
    "$TRAIN" train --model $model "${step_args[@]}" --checkpoint-dir "$T/step" >"$T/step.log" 2>&1
    if out=$(/usr/bin/python3 "$SRCDIR/tests/train/torch_step.py" "$T/step/checkpoint.ddpt" "$T/cifar" 16 0.1 0.9 1e-5 2>&1); then
        pass "one step of $what equals PyTorch's ($(tail -n 1 <<<"$out"))"
    else
        fail "one step of $what equals PyTorch's" "$(cat "$T/step.log")" "$out"
    fi
done <<'MODELS'
mlp mlp --widths 64,32
resnet(onednn) resnet --depth 8 --width 1 --cpu-conv onednn
resnet(onednn-nchw) resnet --depth 8 --width 1 --cpu-conv onednn-nchw
resnet(im2col) resnet --depth 8 --width 1 --cpu-conv im2col
MODELS
# Each path is the one named: oneDNN's verbose mode lists the convolutions it ran, and the
# reorders of activations between NCHW (abcd) and its blocked layouts (aBcd8b, aBcd16b).
for conv in onednn onednn-nchw im2col; do
    verbose=$(DNNL_VERBOSE=1 "$TRAIN" train --model resnet --depth 8 --cpu-conv "$conv" --max-steps 1 \
        --synthetic-size 16,16 --batch-size 16 2>&1)
    ran=$(grep -c 'exec,cpu,convolution' <<<"$verbose")
    moved=$(grep -cE 'exec,cpu,reorder,.*(abcd:f0 dst_f32::blocked:aBcd|aBcd[0-9]+b:f0 dst_f32::blocked:abcd:)' <<<"$verbose")
    case $conv in
    onednn)
        expect_eq "$((ran > 0))" 1 "--cpu-conv onednn runs oneDNN's convolution primitives ($ran)"
        expect_eq "$moved" 0 "--cpu-conv onednn reorders no activation between layers"
        ;;
    onednn-nchw)
        expect_eq "$((ran > 0 && moved > 0))" 1 "--cpu-conv onednn-nchw runs them on NCHW activations ($ran convolutions, $moved reorders)"
        ;;
    im2col) expect_eq "$ran" 0 "--cpu-conv im2col runs none of oneDNN's" ;;
    esac
done
# The comparison notices a difference: PyTorch with another weight decay is not our step.
if ! /usr/bin/python3 "$SRCDIR/tests/train/torch_step.py" "$T/step/checkpoint.ddpt" "$T/cifar" 16 0.1 0.9 0.05 >/dev/null 2>&1; then
    pass "control: PyTorch with weight decay 0.05 differs"
else
    fail "control: PyTorch with weight decay 0.05 differs"
fi

expect_no_leftovers "nothing left running"
