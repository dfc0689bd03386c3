"""One ddp-train step against PyTorch: same data, same weights, same SGD.

    torch_step.py CHECKPOINT DATA_DIR BATCH LR MOMENTUM WEIGHT_DECAY

CHECKPOINT is ddp-train's after exactly one step (--max-steps 1 --no-shuffle --no-augment
--schedule constant) on the first BATCH records of DATA_DIR/data_batch_1.bin. SGD's first step
sets momentum = grad + wd * p0 and p1 = p0 - lr * momentum, so p0 = p1 + lr * momentum: the
starting weights come back from the checkpoint itself. PyTorch then takes the same step from p0
and every tensor (parameters, momentum, batch-norm running statistics) is compared. Prints one
line per tensor and exits 1 if any differs by more than the tolerance.
"""
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

TOLERANCE = 1e-4
MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)


def read_checkpoint(path):
    blob = open(path, "rb").read()
    end = blob.index(b"\nend\n") + len(b"\nend\n")
    header = blob[:end].decode().splitlines()
    meta, tensors, offset = {}, [], end
    for line in header[1:-1]:
        key, _, rest = line.partition(" ")
        if key == "tensor":
            name, kind, count, *dims = rest.split()
            count = int(count)
            values = torch.tensor(struct.unpack_from(f"<{count}f", blob, offset))
            offset += 4 * count
            tensors.append((name, kind, values.reshape([int(d) for d in dims])))
        else:
            meta[key] = rest
    return meta, tensors


class MLP(nn.Module):
    def __init__(self, widths):
        super().__init__()
        dims = [3072] + widths + [10]
        for i in range(len(dims) - 1):
            setattr(self, f"fc{i + 1}", nn.Linear(dims[i], dims[i + 1]))
        self.layers = len(dims) - 1

    def forward(self, x):
        x = x.flatten(1)
        for i in range(1, self.layers + 1):
            x = getattr(self, f"fc{i}")(x)
            if i < self.layers:
                x = F.relu(x)
        return x


class Block(nn.Module):
    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, planes, 1, stride, bias=False),
                                          nn.BatchNorm2d(planes))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, depth, width):
        super().__init__()
        n, c = (depth - 2) // 6, 16 * width
        self.conv1 = nn.Conv2d(3, c, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        cin = c
        for stage in range(3):
            blocks = []
            for b in range(n):
                blocks.append(Block(cin, c << stage, 2 if stage > 0 and b == 0 else 1))
                cin = c << stage
            setattr(self, f"layer{stage + 1}", nn.Sequential(*blocks))
        self.fc = nn.Linear(cin, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def make_model(description):
    kind, *fields = description.split()
    opts = dict(f.split("=") for f in fields)
    if kind == "mlp":
        widths = [] if opts["widths"] == "none" else [int(w) for w in opts["widths"].split(",")]
        return MLP(widths)
    return ResNet(int(opts["depth"]), int(opts["width"]))


def first_batch(data_dir, batch):
    raw = open(f"{data_dir}/data_batch_1.bin", "rb").read(batch * 3073)
    records = torch.frombuffer(bytearray(raw), dtype=torch.uint8).reshape(batch, 3073)
    images = records[:, 1:].reshape(batch, 3, 32, 32).float() / 255
    mean, std = torch.tensor(MEAN).view(1, 3, 1, 1), torch.tensor(STD).view(1, 3, 1, 1)
    return (images - mean) / std, records[:, 0].long()


def main():
    path, data_dir = sys.argv[1], sys.argv[2]
    batch, lr, momentum, wd = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
    torch.set_num_threads(1)
    meta, tensors = read_checkpoint(path)
    ours = {(name, kind): values for name, kind, values in tensors}
    model = make_model(meta["model"])
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(ours[(name, "param")] + lr * ours[(name, "momentum")])
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=wd)
    x, y = first_batch(data_dir, batch)
    model.train()
    F.cross_entropy(model(x), y).backward()
    opt.step()
    theirs = {}
    for name, p in params.items():
        theirs[(name, "param")] = p.detach()
        theirs[(name, "momentum")] = opt.state[p]["momentum_buffer"]
    for name, b in model.named_buffers():
        if not name.endswith("num_batches_tracked"):
            theirs[(name, "buffer")] = b
    worst, failed = 0.0, False
    for key, mine in ours.items():
        other = theirs.pop(key, None)
        if other is None or other.shape != mine.shape:
            print(f"{key[0]} {key[1]}: missing or shaped differently in PyTorch")
            failed = True
            continue
        scale = max(mine.abs().max().item(), other.abs().max().item(), 1e-30)
        rel = (mine - other).abs().max().item() / scale
        worst = max(worst, rel)
        failed |= rel > TOLERANCE
        print(f"{key[0]:36s} {key[1]:9s} {rel:.3e}")
    if theirs:
        print("only in PyTorch:", sorted(theirs))
        failed = True
    print(f"max relative difference {worst:.3e} (tolerance {TOLERANCE})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
