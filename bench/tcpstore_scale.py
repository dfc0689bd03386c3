"""PyTorch's TCPStore doing what rdzv_scale's agents do: K clients (threads of one process) each
set a record, count themselves in, wait for the last one and read a neighbour's record.
Prints "K median-seconds" per K given on the command line."""
import statistics
import sys
import threading
import time
from datetime import timedelta

import torch.distributed as dist


def once(k):
    server = dist.TCPStore("127.0.0.1", 0, k + 1, True, timedelta(seconds=120), wait_for_workers=False)
    port = server.port

    def client(i):
        s = dist.TCPStore("127.0.0.1", port, k + 1, False, timedelta(seconds=120))
        s.set(f"node/{i}", f"1 host{i}")
        if s.add("joined", 1) == k:
            s.set("go", "1")
        s.wait(["go"])
        s.get(f"node/{(i + 1) % k}")

    threads = [threading.Thread(target=client, args=(i,)) for i in range(k)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start


for arg in sys.argv[1:]:
    k = int(arg)
    print(k, f"{statistics.median(once(k) for _ in range(3)):.4f}", flush=True)
