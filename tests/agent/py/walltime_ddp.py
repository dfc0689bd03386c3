"""A PyTorch DDP loop that checkpoints on SIGUSR1 the way the PyTorch docs suggest (a flag set by
the handler, acted on between steps): it counts the signals it gets, holds on for 2 s after the
first (so a second delivery would be seen), then exits 75 to be requeued. Requeued
(TORCHELASTIC_RESTART_COUNT > 0), it finishes at once."""
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

signals = 0


def on_usr1(signum, frame):
    global signals
    signals += 1


signal.signal(signal.SIGUSR1, on_usr1)
dist.init_process_group("gloo")
rank = dist.get_rank()
link = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
if link > 0:
    print(f"link {link}: resumed, nothing left to do", flush=True)
    dist.destroy_process_group()
    sys.exit(0)
t = torch.zeros(1)
while True:
    flag = torch.tensor([float(signals > 0)])
    dist.all_reduce(flag)
    if flag.item() == dist.get_world_size():
        break
    time.sleep(0.1)
time.sleep(2)
print(f"link {link}: {signals} signal(s), checkpointed", flush=True)
dist.destroy_process_group()
sys.exit(75)
