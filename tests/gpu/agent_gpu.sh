#!/bin/bash
# The agent with GPU workers: each worker's CPUs near its GPU (--cpu-binding numa), a GPU out of
# memory named as such (PyTorch's and ddp-train's), progress and the slow rank with workers that
# wait on their GPU, and the static agent starting GPU workers. Run alone (not beside the other
# GPU suite): one case takes all of the GPU's memory.
set -u
# shellcheck source=lib.sh
. "$SRCDIR/tests/gpu/lib.sh"
host=$(hostname)
if ! "$PY" -c 'import torch; assert torch.cuda.is_available()' 2>"$T/torch.err"; then
    fail "PyTorch with CUDA is importable by $PY (TORCH_PYTHON)" "$(cat "$T/torch.err")"
    exit 1
fi

# --- placement by GPU ----------------------------------------------------------------------------
# Each worker reports the PCI address CUDA gives its GPU and its CPUs; they must be that PCI
# device's NUMA node's CPUs (its local_cpulist where the firmware names no node), within what the
# agent may use: all of the machine's, then two CPUs of it (taskset).
expected_cpus() { # PCI ALLOWED_CPULIST: the CPUs a worker on that GPU should have
    "$PY" - "$1" "$2" <<'PY'
import os, sys
def cpus(text):
    out = set()
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out
dev = f"/sys/bus/pci/devices/{sys.argv[1]}"
node = int(open(f"{dev}/numa_node").read())
near = cpus(open(f"/sys/devices/system/node/node{node}/cpulist").read() if node >= 0
            else open(f"{dev}/local_cpulist").read())
got = sorted(near & cpus(sys.argv[2])) or sorted(cpus(sys.argv[2]))
runs, start = [], got[0]
for a, b in zip(got, got[1:] + [None]):
    if b != a + 1:
        runs.append(f"{start}-{a}" if a != start else f"{a}")
        start = b
print(",".join(runs))
PY
}
# The agent started on ALLOWED (a comma-separated CPU list), as taskset would start it.
pinned() { # ALLOWED COMMAND...
    "$PY" -c 'import os, sys
os.sched_setaffinity(0, {int(c) for c in sys.argv[1].split(",")})
os.execvp(sys.argv[2], sys.argv[2:])' "$@"
}
last=$(($(nproc) - 1))
for allowed in "$(seq -s, 0 "$last")" "$((last - 1)),$last"; do
    out=$(DDPJ_TESTMARK="$MARK" pinned "$allowed" timeout 120 "$AGENT" --standalone \
        --nproc-per-node gpu --cpu-binding numa "$PY" "$SRCDIR/tests/gpu/py/placement.py" 2>&1)
    expect_eq "$?" 0 "--cpu-binding numa with GPU workers (agent on CPUs $allowed) exits 0"
    lines=$(grep -o 'local_rank=.*' <<<"$out")
    [ -n "$lines" ] || fail "each worker reports its placement" "$out"
    while read -r rank pci cpus; do
        pci=${pci#pci=} cpus=${cpus#cpus=}
        node=$(cat "/sys/bus/pci/devices/$pci/numa_node" 2>&1)
        want=$(expected_cpus "$pci" "$allowed" 2>&1)
        expect_eq "$cpus" "$want" "$rank (agent on CPUs $allowed): the CPUs near its GPU at $pci (numa_node $node; local_cpulist $(cat "/sys/bus/pci/devices/$pci/local_cpulist" 2>&1))"
    done <<<"$lines"
done

# --- a GPU out of memory ------------------------------------------------------------------------
# PyTorch: rank 0 asks for twice its GPU's memory at step 3; rank 1 then loses it in gloo.
pci0=$("$PY" -c 'import torch; p = torch.cuda.get_device_properties(0); print(f"{p.pci_domain_id:04x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0")')
out=$(DDPJ_TESTMARK="$MARK" timeout 180 "$AGENT" --standalone --nproc-per-node 2 --grace 5 \
    --error-file "$T/oom.json" "$PY" "$SRCDIR/tests/gpu/py/gpu_steps.py" --oom-rank 0 2>&1)
rc=$?
summary=$(grep '^ddpjob-agent: ' <<<"$out")
expect_eq "$rc" 1 "a PyTorch worker out of GPU memory fails the job (exit 1)"
expect_contains "$summary" "job failed (exit 1): rank 0 (node 0, host $host, local rank 0) ran out of GPU memory on GPU 0 (PCI $pci0) (exited with code 1)" \
    "the summary leads with the GPU out of memory, naming the GPU and its PCI address"
expect_contains "$summary" 'its stderr says "CUDA out of memory. Tried to allocate' "and quotes PyTorch's allocator"
expect_lacks "$summary" "out-of-memory killer" "not the kernel's OOM killer"
json=$("$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); f=d["failed_ranks"][0]; print(d["first_failure"]["cause"], f["gpu"], f["gpu_pci"])' "$T/oom.json" 2>&1)
expect_eq "$json" "gpu_out_of_memory 0 $pci0" "--error-file: cause gpu_out_of_memory, the GPU and its PCI address"
while IFS= read -r line; do echo "# $line"; done <<<"$summary"

# ddp-train: a model (eight layers of 65536) larger than the GPU.
out=$(DDPJ_TESTMARK="$MARK" timeout 180 "$AGENT" --standalone --nproc-per-node gpu \
    --error-file "$T/train_oom.json" "$TRAIN" train --backend nccl --model mlp \
    --widths 65536,65536,65536,65536,65536,65536,65536,65536 --synthetic-size 256,64 \
    --batch-size 16 --max-steps 1 2>&1)
rc=$?
summary=$(grep '^ddpjob-agent: ' <<<"$out")
expect_eq "$rc" 1 "ddp-train out of GPU memory fails the job (exit 1)"
expect_contains "$summary" "rank 0 (node 0, host $host, local rank 0) ran out of GPU memory on GPU 0 (PCI $pci0)" \
    "the summary names ddp-train's GPU out of memory and the GPU"
expect_contains "$summary" "its stderr says \"out of GPU memory on CUDA device 0 (PCI " \
    "ddp-train's own words name the CUDA device"
expect_contains "$(grep 'out of GPU memory on CUDA device' <<<"$summary")" "${pci0#*:}, " \
    "its PCI address (CUDA's own) and what was free"
while IFS= read -r line; do echo "# $line"; done <<<"$summary"
expect_no_leftovers "nothing left after the GPU out-of-memory jobs"

# --- progress and the slow rank ------------------------------------------------------------------
# ddp-train on the GPU reports its steps itself: node 0's progress file has them.
out=$(DDPJ_TESTMARK="$MARK" timeout 180 "$AGENT" --standalone --nproc-per-node gpu --heartbeat 0.5 \
    --slow-window 1 --progress-file "$T/progress.json" "$TRAIN" train --backend nccl --model resnet \
    --depth 20 --synthetic-size 8192,512 --epochs 4 --batch-size 32 2>&1)
expect_eq "$?" 0 "ddp-train on the GPU with --progress-file exits 0"
json=$("$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["ranks"][0]; print(r["step"] > 100, (r["busy_us_per_step"] or 0) > 0)' "$T/progress.json" 2>&1)
expect_eq "$json" "True True" "its progress file holds rank 0's step and busy time per step ($(tr -d '\n' <"$T/progress.json" 2>&1 | cut -c 1-200))"

# Two PyTorch ranks on the one GPU (gloo between them): rank 1 does ten times the GPU work per
# step, its host thread waiting for the GPU; node 0 must name it, and not rank 0.
slow_case() { # ARGS...: SLOW_ERR gets node 0's output after it names a slow rank or 25 s pass
    local start
    next_port
    start_agent gpu -- --standalone --nproc-per-node 2 --heartbeat 0.5 --slow-window 4 \
        --slow-factor 2 "$PY" "$SRCDIR/tests/gpu/py/gpu_steps.py" "$@"
    start=$SECONDS
    while [ $((SECONDS - start)) -lt 25 ] && ! grep -q " is slow: " "$T/gpu.err"; do sleep 0.2; done
    kill -TERM "${AGENT_PID[gpu]}" 2>/dev/null # timeout passes it on to the agent
    wait_agent gpu
    SLOW_ERR=$ERR
}
slow_case --slow-rank 1
expect_contains "$SLOW_ERR" "rank 1 (node 0, host $host, local rank 1) is slow: busy " \
    "the rank doing 10x the GPU work is named slow"
expect_lacks "$SLOW_ERR" "rank 0 (node 0, host $host, local rank 0) is slow" "and not the rank waiting for it"
grep ' is slow: ' <<<"$SLOW_ERR" | while IFS= read -r line; do echo "# $line"; done
slow_case
expect_lacks "$SLOW_ERR" " is slow: " "the same ranks doing equal work: none named in 25 s"
expect_no_leftovers "nothing left after the slow-rank jobs"

# --- the static agent ----------------------------------------------------------------------------
# Built with musl where musl-tools are (scripts/build-static-agent.sh); STATIC_AGENT names it where
# it was carried from such a machine.
static=${STATIC_AGENT:-}
if [ -z "$static" ]; then
    static=$(bash "$SRCDIR/scripts/build-static-agent.sh" "$T/build-static" 2>&1 | tail -n 1)
fi
if [ ! -x "$static" ]; then
    fail "a static agent to run (STATIC_AGENT, or musl-tools to build one)" "$static"
else
    out=$(DDPJ_TESTMARK="$MARK" timeout 300 "$static" --standalone --nproc-per-node gpu --grace 5 \
        "$PY" "$SRCDIR/tests/gpu/py/resnet_ddp.py" "$T/static.pt" --epochs 1 2>&1)
    rc=$?
    expect_eq "$rc" 0 "the static agent starts the tutorials' resnet18 DDP on the GPU (exit $rc)"
    expect_contains "$out" "rank 0 epoch 0 loss" "and it trains"
    grep 'epoch 0 loss' <<<"$out" | while IFS= read -r line; do echo "# $line"; done
fi
expect_no_leftovers "nothing left running"
