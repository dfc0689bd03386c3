"""PyTorch DDP training throughput, the anchor for `ddp-train train` (bench/train.sh).

One process per rank with the torchrun environment (run under ddpjob-agent --standalone).
    train_torch.py MODEL BATCH STEPS [DEPTH|WIDTHS]
The models are tests/train/torch_step.py's, the ones ddp-train's step is checked against; random
inputs of CIFAR's shape (throughput does not depend on the pixels); SGD with momentum and weight
decay; one BLAS thread per rank, as ddp-train uses. Rank 0 prints `samples/s N` over all ranks,
timed after 3 warm-up steps.
"""
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "train"))
from torch_step import MLP, ResNet  # noqa: E402


def main():
    kind, batch, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    if kind == "resnet":
        model = ResNet(int(sys.argv[4]), 1)
    else:
        model = MLP([int(w) for w in sys.argv[4].split(",")])
    model = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-5)
    x, y = torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,))
    for step in range(steps + 3):
        if step == 3:
            dist.barrier()
            start = time.perf_counter()
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    dist.barrier()
    elapsed = time.perf_counter() - start
    if dist.get_rank() == 0:
        print(f"samples/s {steps * batch * dist.get_world_size() / elapsed:.1f}", flush=True)
    dist.destroy_process_group()


main()
