"""The seeds' torch.distributed.launch program, as such scripts are written: --local_rank from
the launcher's argv (or LOCAL_RANK), --backend, init_process_group from the environment."""
import argparse
import os

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", "--local-rank", type=int, default=int(os.environ.get("LOCAL_RANK", 0)))
parser.add_argument("--backend", default="nccl")
args = parser.parse_args()
dist.init_process_group(args.backend)
t = torch.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
print(f"rank {dist.get_rank()} local_rank {args.local_rank} of {dist.get_world_size()}: sum {int(t.item())}")
dist.destroy_process_group()
