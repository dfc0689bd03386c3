"""PyTorch gloo all_reduce timing, the anchor for ddp-train's tcp backend.

Run one process per rank with the torchrun environment (e.g. under ddpjob-agent --standalone);
rank 0 prints `bytes seconds_per_op` for each size given on the command line. Iterations per
size: argv[1] is the byte budget, clamped to [5, 200] iterations, as allreduce.sh does for all.
"""
import sys
import time

import torch
import torch.distributed as dist


def iterations(budget, size):
    return max(5, min(200, budget // size))


def main():
    budget = int(sys.argv[1])
    sizes = [int(s) for s in sys.argv[2:]]
    dist.init_process_group("gloo")
    for size in sizes:
        t = torch.ones(size // 4, dtype=torch.float32)
        n = iterations(budget, size)
        for _ in range(max(2, n // 4)):
            dist.all_reduce(t)
        dist.barrier()
        start = time.perf_counter()
        for _ in range(n):
            dist.all_reduce(t)
        elapsed = (time.perf_counter() - start) / n
        spent = torch.tensor([elapsed], dtype=torch.float64)
        dist.all_reduce(spent, op=dist.ReduceOp.MAX)
        if dist.get_rank() == 0:
            print(size, f"{spent.item():.9f}", flush=True)
    dist.destroy_process_group()


main()
