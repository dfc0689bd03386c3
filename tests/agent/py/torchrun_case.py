"""A torchrun test-style worker: says how it was run (argv, __name__, interpreter, the launcher's
variables), joins the job's process group with TR_INIT's method (env:// by default, or tcp: to
init_method=tcp://MASTER_ADDR:MASTER_PORT, as older scripts do) and checks an all_reduce of the
ranks. TR_PRINT_THEN_SLEEP: print a line without flushing, then sleep that many seconds."""
import os
import sys
import time

import torch
import torch.distributed as dist

if os.environ.get("TR_PRINT_THEN_SLEEP"):
    print("printed without flush")
    time.sleep(float(os.environ["TR_PRINT_THEN_SLEEP"]))
method = "env://"
if os.environ.get("TR_INIT") == "tcp":
    method = f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
dist.init_process_group("gloo", init_method=method, rank=int(os.environ["RANK"]),
                        world_size=int(os.environ["WORLD_SIZE"]))
rank, world = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(rank)])
dist.all_reduce(t)
print(f"rank={rank} world={world} local={os.environ['LOCAL_RANK']} group={os.environ['GROUP_RANK']} "
      f"master_port={os.environ['MASTER_PORT']} sum={int(t.item())} "
      f"expected={world * (world - 1) // 2} name={__name__} argv={' '.join(sys.argv[1:])} "
      f"exe={sys.executable} marker={os.environ.get('TR_EXEC_MARKER', '-')}")
print(f"stderr of rank {rank}", file=sys.stderr)
dist.destroy_process_group()
