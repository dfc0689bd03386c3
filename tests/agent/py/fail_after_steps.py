"""gloo all_reduces, each step reported to ddpjob just before its collective (DDPJOB_PROGRESS_FILE)
and a loss line to DDPJOB_METRICS_FILE, where rank 0 says the total steps once (STEPS, when
given); FAIL_RANK exits 3 at step FAIL_STEP (each step about STEP_SECONDS)."""
import json
import os
import sys
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
fail_rank, fail_step = int(os.environ.get("FAIL_RANK", "-1")), int(os.environ.get("FAIL_STEP", "40"))
progress, metrics = os.environ.get("DDPJOB_PROGRESS_FILE"), os.environ.get("DDPJOB_METRICS_FILE")
t = torch.ones(1024)
steps = int(os.environ.get("STEPS", "1000000"))
if metrics and rank == 0 and "STEPS" in os.environ:
    with open(metrics, "a") as f:
        f.write(json.dumps({"total_steps": steps}) + "\n")
for step in range(steps):
    if rank == fail_rank and step == fail_step:
        print(f"rank {rank}: failing at step {step}", flush=True)
        sys.exit(3)
    time.sleep(float(os.environ.get("STEP_SECONDS", "0.25")))
    if progress:
        open(progress, "w").write(str(step + 1))
    dist.all_reduce(t)
    if metrics and rank == 0 and step % 5 == 0:
        with open(metrics, "a") as f:
            f.write(json.dumps({"step": step, "loss": 2.0 / (1 + step)}) + "\n")
