"""Steps of GPU work, all ranks on the node's GPU 0, with gloo all_reduces between them and
ddpjob's one line reporting each step just before its collective.

    gpu_steps.py [--slow-rank R] [--oom-rank R]
--slow-rank R: rank R does ten times the others' GPU work per step (the rank they wait for);
--oom-rank R: rank R asks its GPU for more memory than it has at step 3, as a model too large
would (torch.OutOfMemoryError); the others then lose it in their all_reduce."""
import argparse
import os

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--slow-rank", type=int, default=-1)
parser.add_argument("--oom-rank", type=int, default=-1)
parser.add_argument("--steps", type=int, default=1000000)
args = parser.parse_args()

torch.cuda.set_device(0)
dist.init_process_group("gloo")
rank = dist.get_rank()
x = torch.randn(2048, 2048, device="cuda")
t = torch.ones(1 << 14)
for step in range(args.steps):
    if rank == args.oom_rank and step == 3:
        free, total = torch.cuda.mem_get_info()
        torch.empty(total * 2, dtype=torch.uint8, device="cuda")
    for _ in range(200 if rank == args.slow_rank else 20):
        y = x @ x
    y.sum().item()  # the host waits for the GPU, as a loop that reads its loss does
    os.environ.get("DDPJOB_PROGRESS_FILE") and open(os.environ["DDPJOB_PROGRESS_FILE"], "w").write(str(step))
    dist.all_reduce(t)
dist.destroy_process_group()
