"""The tutorials' ResNet DDP program, as users bring it: torchvision resnet18 on FakeData,
init_process_group("nccl"), DDP(device_ids=[local_rank]), a checkpoint saved by rank 0.

    resnet_ddp.py CHECKPOINT [--epochs N] [--crash-at-step S]
--crash-at-step makes rank 0 index out of bounds on the GPU at that step (a device-side assert),
the failure the agent's summary must then report.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--crash-at-step", type=int, default=-1)
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl")
    rank = dist.get_rank()

    data = torchvision.datasets.FakeData(size=512, image_size=(3, 64, 64), num_classes=10,
                                         transform=torchvision.transforms.ToTensor())
    sampler = DistributedSampler(data)
    loader = DataLoader(data, batch_size=64, sampler=sampler, num_workers=2)
    model = DDP(torchvision.models.resnet18(num_classes=10).cuda(local_rank),
                device_ids=[local_rank])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    step = 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            if step == args.crash_at_step and rank == 0:
                print(f"rank {rank}: indexing out of bounds on the GPU at step {step}", flush=True)
                torch.zeros(4, device="cuda")[torch.tensor([1 << 20], device="cuda")].item()
            x, y = x.cuda(local_rank, non_blocking=True), y.cuda(local_rank, non_blocking=True)
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            step += 1
        print(f"rank {rank} epoch {epoch} loss {loss.item():.4f} on {torch.cuda.get_device_name()}",
              flush=True)
        if rank == 0:
            torch.save({"epoch": epoch, "model": model.module.state_dict(),
                        "optimizer": opt.state_dict()}, args.checkpoint)
    dist.barrier()
    dist.destroy_process_group()


main()
