"""The tutorial's ToyModel DDP step; prints the parameter checksum, which DDP keeps equal."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(rank)  # different initial weights: DDP must broadcast rank 0's
model = DDP(ToyModel())
optimizer = torch.optim.SGD(model.parameters(), lr=0.001)
optimizer.zero_grad()
outputs = model(torch.randn(20, 10))
nn.MSELoss()(outputs, torch.randn(20, 5)).backward()
optimizer.step()
checksum = sum(p.detach().double().sum().item() for p in model.parameters())
print(f"rank {rank} ddp step done, checksum {checksum:.10f}", flush=True)
dist.destroy_process_group()
