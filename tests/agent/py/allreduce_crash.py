"""All-reduces in a loop; the rank named by CRASH_RANK SIGKILLs itself in the middle."""
import os
import signal

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(1 << 16)
for step in range(1000000):
    dist.all_reduce(t)
    t.fill_(1)
    if step == 20:
        print(f"rank {rank} in the collective loop", flush=True)
        if rank == int(os.environ["CRASH_RANK"]):
            os.kill(os.getpid(), signal.SIGKILL)
