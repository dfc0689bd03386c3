"""The tutorial's blocking point-to-point example: rank 0 sends a tensor to every other rank."""
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
tensor = torch.zeros(1)
if rank == 0:
    tensor += 1
    for dst in range(1, world):
        dist.send(tensor=tensor, dst=dst)
else:
    dist.recv(tensor=tensor, src=0)
    print(f"Rank {rank} has received data from rank 0: {tensor[0].item()}", flush=True)
print(f"rank {rank} of {world}: local {os.environ['LOCAL_RANK']} node {os.environ['GROUP_RANK']}",
      flush=True)
dist.destroy_process_group()
