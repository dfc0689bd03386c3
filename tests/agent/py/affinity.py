"""Each worker's CPUs as the kernel lets it run (sched_getaffinity), one line per rank."""
import os

print(f"rank {os.environ['RANK']} local {os.environ['LOCAL_RANK']} cpus "
      f"{','.join(map(str, sorted(os.sched_getaffinity(0))))}", flush=True)
