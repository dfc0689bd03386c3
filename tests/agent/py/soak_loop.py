"""The soak's workload: gloo all_reduces at about STEP_MS a step for STEPS steps, each step reported
just before its collective, and FAULT on FAULT_RANK from step 20: exit (code 3), alloc (memory
past any limit, touched), stall (for good) or wait (150 ms idle before each step)."""
import os
import sys
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
fault = os.environ.get("FAULT", "") if rank == int(os.environ.get("FAULT_RANK", "-1")) else ""
step_s = int(os.environ.get("STEP_MS", "50")) / 1000
t = torch.ones(1 << 12)
hoard = []
for step in range(int(os.environ.get("STEPS", "200"))):
    time.sleep(step_s)
    if step >= 20 and fault == "exit":
        print(f"rank {rank}: exiting with 3 at step {step}", flush=True)
        sys.exit(3)
    if step >= 20 and fault == "alloc":
        hoard.append(bytearray(64 << 20))  # bytearray zero-fills: the pages are touched
    if step == 20 and fault == "stall":
        time.sleep(3600)
    if fault == "wait":
        time.sleep(0.15)
    open(os.environ["DDPJOB_PROGRESS_FILE"], "w").write(str(step))
    dist.all_reduce(t)
print(f"rank {rank}: {step + 1} steps", flush=True)
