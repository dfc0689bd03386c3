"""A DDP training loop that takes the walltime's checkpoint signal (checkpoint: {signal: USR1} in
the spec): the handler only sets a flag; each step the ranks agree whether any saw it, so all
stop after the same step; rank 0 saves; every rank exits 75, which ddpjob requeues to resume
from the checkpoint. STEPS steps in all (default 200), STEP_SECONDS each (default 0.1);
CHECKPOINT names the file (default checkpoint.pt)."""
import os
import signal
import sys
import time

stop_asked = False


def on_checkpoint_signal(signum, frame):
    global stop_asked
    stop_asked = True  # only a flag: the step in progress finishes first


# Before `import torch`, which takes seconds (tens on a busy node): a signal that comes while it
# loads is kept, not fatal.
signal.signal(signal.SIGUSR1, on_checkpoint_signal)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

dist.init_process_group("gloo")
rank = dist.get_rank()
path = os.environ.get("CHECKPOINT", "checkpoint.pt")
steps, step_seconds = int(os.environ.get("STEPS", "200")), float(os.environ.get("STEP_SECONDS", "0.1"))
torch.manual_seed(0)
model = DDP(nn.Linear(10, 5))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
start = 0
if os.path.exists(path):
    state = torch.load(path)
    model.module.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    start = state["step"]
    print(f"rank {rank}: resuming at step {start}", flush=True)
for step in range(start, steps):
    optimizer.zero_grad()
    nn.MSELoss()(model(torch.randn(20, 10)), torch.randn(20, 5)).backward()
    optimizer.step()
    time.sleep(step_seconds)
    # Every rank stops after the same step: the one where any rank has seen the signal.
    stop = torch.tensor([float(stop_asked)])
    dist.all_reduce(stop, op=dist.ReduceOp.MAX)
    if stop.item():
        if rank == 0:
            torch.save({"model": model.module.state_dict(), "optimizer": optimizer.state_dict(),
                        "step": step + 1}, path + ".tmp")
            os.replace(path + ".tmp", path)  # whole or not at all
        dist.barrier()  # no rank leaves before the checkpoint is written
        print(f"rank {rank}: checkpointed after step {step + 1} of {steps}", flush=True)
        dist.destroy_process_group()
        sys.exit(75)
print(f"rank {rank}: trained {steps} steps", flush=True)
dist.destroy_process_group()
