"""The PyTorch DDP tutorial's ToyModel: a few SGD steps under DDP (gloo), printing each rank's loss."""
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
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(5):
    optimizer.zero_grad()
    loss = nn.MSELoss()(model(torch.randn(20, 10)), torch.randn(20, 5))
    loss.backward()
    optimizer.step()
    print(f"rank {rank} of {dist.get_world_size()} step {step} loss {loss.item():.4f}", flush=True)
checksum = sum(p.detach().double().sum().item() for p in model.parameters())
print(f"rank {rank} done, parameter checksum {checksum:.10f} (equal on every rank)", flush=True)
dist.destroy_process_group()
