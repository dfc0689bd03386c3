"""Prints what a worker was given and checks it against a real all_reduce across the job."""
import os
import signal
import socket
import sys

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank)])
dist.all_reduce(t)
names = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE",
         "MASTER_ADDR", "TORCHELASTIC_RUN_ID", "FROM_SPEC"]
env = " ".join(f"{n}={os.environ.get(n, '-')}" for n in names)
print(f"host={socket.gethostname()} {env} sum={int(t.item())} expected={world * (world - 1) // 2} "
      f"cwd={os.getcwd()} python={sys.executable} setup={os.environ.get('FROM_SETUP', '-')}",
      flush=True)
if os.environ.get("FAIL_RANK") == str(rank):
    raise SystemExit(3)
if os.environ.get("KILL_RANK") == str(rank):
    os.kill(os.getpid(), signal.SIGKILL)
dist.destroy_process_group()
