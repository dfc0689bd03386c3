"""One line per attempt into $WORLD_LOG/attempt<N>.rank<R>: the world this rank was given and the
sum of an all_reduce of every rank's number (proving they really form that world), then
all_reduces each 0.2 s until STEPS (default: for ever)."""
import os
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
t = torch.tensor([float(rank)])
dist.all_reduce(t)
with open(f"{os.environ['WORLD_LOG']}/attempt{attempt}.rank{rank}", "w") as f:
    f.write(f"rank {rank} world {world} env {os.environ['RANK']}/{os.environ['WORLD_SIZE']} "
            f"group {os.environ['GROUP_RANK']}/{os.environ['GROUP_WORLD_SIZE']} sum {int(t.item())}\n")
for _ in range(int(os.environ.get("STEPS", "1000000000"))):
    dist.all_reduce(torch.ones(16))
    time.sleep(0.2)
dist.destroy_process_group()
