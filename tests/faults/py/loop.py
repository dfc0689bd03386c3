"""The fault matrix's workload: gloo all_reduces in a loop, STEPS of them (0: until stopped).
At step 20 each rank writes its pid to FAULT_DIR/rank<R> and says it is ready; then FAULT
happens on rank FAULT_RANK: exit (code 3), exit_late (its connections closed EXIT_DELAY
seconds, default 0.5, before it exits 3: its peers fail first, of its going), flood (FLOOD_LINES lines of 100 bytes on stdout, each
its 7-digit number, a blank and 91 x's),
or, on every rank, deadlock (each waits to receive from the other: blocked for ever in a
collective)."""
import os
import sys
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
fault, fault_rank = os.environ.get("FAULT", ""), int(os.environ.get("FAULT_RANK", "-1"))
steps = int(os.environ.get("STEPS", "0"))
t = torch.ones(1024)
step = 0
while steps == 0 or step < steps:
    dist.all_reduce(t)
    t.fill_(1)
    if step == 20:
        with open(os.path.join(os.environ["FAULT_DIR"], f"rank{rank}"), "w") as f:
            f.write(str(os.getpid()))
        print(f"rank {rank} ready", flush=True)
        if fault == "deadlock":
            dist.recv(t, src=(rank + 1) % world)
        if rank == fault_rank and fault in ("exit", "exit_late"):
            print(f"rank {rank}: failing on purpose", file=sys.stderr, flush=True)
            if fault == "exit_late":
                dist.destroy_process_group()
                time.sleep(float(os.environ.get("EXIT_DELAY", "0.5")))
            sys.exit(3)
        if rank == fault_rank and fault == "flood":
            tail = " " + "x" * 91 + "\n"
            for i in range(int(os.environ.get("FLOOD_LINES", "200000"))):
                sys.stdout.write(f"{i:07d}{tail}")
            sys.stdout.flush()
    step += 1
    time.sleep(0.01)
print(f"rank {rank} done", flush=True)
dist.destroy_process_group()
