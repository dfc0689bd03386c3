"""What a worker sees of its placement: its CPUs (as a cpulist) and the PCI address CUDA gives
the GPU its local rank indexes, as a PyTorch program picks it (torch.cuda.set_device(LOCAL_RANK))."""
import os

import torch

local_rank = int(os.environ["LOCAL_RANK"])
p = torch.cuda.get_device_properties(local_rank)
cpus = sorted(os.sched_getaffinity(0))
runs, start = [], cpus[0]
for a, b in zip(cpus, cpus[1:] + [None]):
    if b != a + 1:
        runs.append(f"{start}-{a}" if a != start else f"{a}")
        start = b
print(f"local_rank={local_rank} pci={p.pci_domain_id:04x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0 "
      f"cpus={','.join(runs)}", flush=True)
