"""gloo all_reduces after some local work, with ddpjob's one line reporting each step just
before the step's collective. STALL_RANK stops for good before it reports step 50; WAIT_RANK
waits before each step, idle, as a rank slowed by its data would: it sleeps WAIT_MS, or reads a
line from the FIFO that WAIT_FIFO names."""
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
stall = int(os.environ.get("STALL_RANK", "-1"))
waits = rank == int(os.environ.get("WAIT_RANK", "-1"))
fifo = open(os.environ["WAIT_FIFO"]) if waits and "WAIT_FIFO" in os.environ else None
wait_s = int(os.environ.get("WAIT_MS", "0")) / 1000
t = torch.ones(1 << 14)
for step in range(int(os.environ.get("STEPS", "1000000"))):
    x = torch.randn(128, 128)
    for _ in range(20):
        x = x @ x / 128
    if rank == stall and step == 50:
        print(f"rank {rank}: stalling before step {step}", flush=True)
        time.sleep(3600)
    if waits and fifo:
        fifo.readline()
    elif waits:
        time.sleep(wait_s)
    os.environ.get("DDPJOB_PROGRESS_FILE") and open(os.environ["DDPJOB_PROGRESS_FILE"], "w").write(str(step))
    dist.all_reduce(t)
