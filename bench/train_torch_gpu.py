"""PyTorch training throughput on one GPU, the anchor for `ddp-train train --backend nccl`.

    train_torch_gpu.py DEPTH BATCH STEPS [eager|compile|bf16]
ResNet-DEPTH (tests/train/torch_step.py's, width 1), random CIFAR-shaped inputs already on the
GPU, SGD with momentum and weight decay, float32 (PyTorch's defaults: cuDNN may use TF32 for
convolutions). `compile` wraps the model in torch.compile (default mode); `bf16` runs the
forward and the loss under torch.autocast with bfloat16 (mixed precision). Prints `samples/s N`,
timed over STEPS steps after 5 warm-up steps (compile's first steps compile and are not timed).
"""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "train"))
from torch_step import ResNet  # noqa: E402


def main():
    depth, batch, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    mode = sys.argv[4] if len(sys.argv) > 4 else "eager"
    model = ResNet(depth, 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-5)
    forward = torch.compile(model) if mode == "compile" else model
    x = torch.randn(batch, 3, 32, 32, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")
    for step in range(steps + 5):
        if step == 5:
            torch.cuda.synchronize()
            start = time.perf_counter()
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=mode == "bf16"):
            loss = F.cross_entropy(forward(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    print(f"samples/s {steps * batch / (time.perf_counter() - start):.1f}", flush=True)


main()
