"""bench/spares.sh's workload: a gloo all_reduce every 50 ms. Each attempt's first completed
step writes its wall-clock time to $WORLD_LOG/resumed.<attempt>.<rank>, the bench's "training
resumed" mark."""
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
t = torch.ones(1024)
for step in range(1000000000):
    dist.all_reduce(t)
    if step == 0:
        with open(f"{os.environ['WORLD_LOG']}/resumed.{attempt}.{rank}", "w") as f:
            f.write(f"{time.time():.3f} {dist.get_world_size()}\n")
    time.sleep(0.05)
