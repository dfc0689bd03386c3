"""A job record as ddpjob submit and the agents leave it, made up: RANKS ranks over two links (the
first stopped by the walltime's checkpoint signal and requeued, the second completed), SAMPLES
history samples per link, SLOW_RANK busy 4x the others and named slow, rank 0's metrics.

usage: synthetic_record.py WORKDIR NAME RANKS SAMPLES SLOW_RANK  (prints the record's folder)"""
import json
import os
import sys

workdir, name, ranks, samples, slow = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
os.umask(0o077)
record = os.path.join(workdir, ".ddpjob", "jobs", f"{name}.20261127-100000.Syn7hE")
os.makedirs(record)
t0 = 1795000000
nodes = max(1, ranks // 8)
with open(os.path.join(record, "job.json"), "w") as f:
    json.dump({"version": 1, "name": name, "scheduler": "slurm", "workdir": workdir, "spec": "x.yaml",
               "submitted": t0, "nodes": nodes, "procs_per_node": ranks // nodes,
               "walltime_s": 3600, "requeue": 3}, f)
with open(os.path.join(record, "links"), "w") as f:
    f.write("0 7001\n1 7002\n")
start = t0 + 30
for link in (0, 1):
    d = os.path.join(record, f"link-{link}")
    os.makedirs(d)
    end = start + samples * 5 + 10
    open(os.path.join(d, "started"), "w").write(f"{start} {7001 + link} n1\n")
    open(os.path.join(d, "ended"), "w").write(f"{75 if link == 0 else 0} {end}\n")
    with open(os.path.join(d, "history.jsonl"), "w") as f:
        ev = lambda t, kind, rank, text: f.write(json.dumps(
            {"t": t, "event": kind, "attempt": 0, "rank": rank, "text": text}) + "\n")
        ev(start + 2, "attempt_start", None, f"{nodes} node(s), {ranks} rank(s)")
        for k in range(samples):
            t = start + 5 + 5 * k
            step = link * samples * 10 + k * 10
            steps = [step - (3 if r == slow else 0) for r in range(ranks)]
            busy = [4000 if r == slow else 1000 + (r * 7) % 50 for r in range(ranks)]
            f.write(json.dumps({"t": t, "attempt": 0, "steps": steps, "busy_us": busy}) + "\n")
            if k == 3:
                ev(t, "slow", slow, f"rank {slow} (node {slow // 8}, host n{slow // 8 + 1}) is slow: "
                   "busy 4.0 ms per step, 4.0x the median rank's 1.0 ms")
        if link == 0:
            ev(end - 8, "walltime_signal", None, "SIGUSR1 sent 180 s before the walltime")
            ev(end - 6, "checkpoint", None, "checkpoint written by every rank")
            ev(end - 5, "attempt_end", None, "checkpointed")
        else:
            ev(end - 5, "attempt_end", None, "completed")
    m = os.path.join(d, "logs", "run", "attempt_0", "rank_0")
    os.makedirs(m)
    with open(os.path.join(m, "metrics.jsonl"), "w") as f:
        for e in range(5):
            epoch = link * 5 + e
            f.write(json.dumps({"epoch": epoch, "loss": 2.3 / (1 + epoch), "test_acc": 0.1 + 0.08 * epoch}) + "\n")
    start = end + 40
print(record)
