"""PyTorch's dist.all_reduce over nccl on one GPU (world size 1), the anchor for
`ddp-train bench --backend nccl --op all_reduce`: the same sizes, timed the same way (WARMUP
untimed calls, then ITERS back to back and one synchronize), float32 sum.

    allreduce_torch_gpu.py MIN_BYTES MAX_BYTES FACTOR ITERS WARMUP PORT
Prints `BYTES US_PER_CALL ALGBW_GB_S` per size.
"""
import sys
import time

import torch
import torch.distributed as dist


def main():
    lo, hi, factor, iters, warmup, port = (int(a) for a in sys.argv[1:7])
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1,
                            device_id=torch.device("cuda", 0))
    size = lo
    while size <= hi:
        t = torch.ones(size // 4, device="cuda")
        for _ in range(warmup):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        torch.cuda.synchronize()
        us = (time.perf_counter() - start) / iters * 1e6
        print(f"{size} {us:.2f} {size / us / 1e3:.3f}", flush=True)
        size *= factor
    dist.destroy_process_group()


main()
