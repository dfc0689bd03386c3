"""The Python package against a real cluster, as a user script would drive it: one line per fact,
"FACT: value", for the suite to check (tests/agent/sweep_slurm.sh)."""
import json
import sys

import ddpjob

trial = sys.argv[1]  # sweep_trial.py's path: it fails its trial FAIL_TRIAL, else reports loss

# A spec given as a dict: a job of one rank that exits 0, with an override.
job = ddpjob.submit({"name": "pyjob", "scheduler": "slurm", "nodes": 1, "procs_per_node": 1,
                     "walltime": "00:05:00", "env": {"GREETING": "hi"},
                     "command": ["/bin/sh", "-c", "echo $GREETING from rank $RANK"]},
                    set={"env.GREETING": "hello"})
print("job:", type(job).__name__, job.id)
print("wait:", job.wait(timeout=180))
print("state:", job.status()["state"])
print("logs:", job.logs(rank=0).strip())

# A failure's exit status.
bad = ddpjob.submit({"name": "pyfail", "scheduler": "slurm", "nodes": 1, "procs_per_node": 1,
                     "walltime": "00:05:00", "command": ["/bin/sh", "-c", "exit 3"]})
print("failed wait:", bad.wait(timeout=180))
print("failed state:", bad.status()["state"])

# A spec with problems: SpecError with where.
try:
    ddpjob.submit({"name": "pybad", "scheduler": "slurm", "nodes": 0,
                   "command": ["/bin/true"]})
    print("spec error: none")
except ddpjob.SpecError as e:
    print("spec error:", e.line is not None and e.column is not None, e.path.endswith(".yaml"),
          e.message)

# A sweep of 4 trials (trial 1 fails): trials, best.
sweep = ddpjob.submit({"name": "pysweep", "scheduler": "slurm", "nodes": 1,
                       "procs_per_node": 1, "walltime": "00:05:00",
                       "env": {"FAIL_TRIAL": "1", "TRIAL_SECONDS": "1"},
                       "sweep": {"grid": {"lr": [0.4, 0.3], "seed": [1, 2]}, "parallel": 2},
                       "command": ["/usr/bin/python3", trial, "{lr}", "{seed}"]})
print("sweep:", type(sweep).__name__, sweep.id)
print("sweep wait:", sweep.wait(timeout=240))
trials = sweep.trials()
print("trials:", len(trials), sorted(t["state"] for t in trials))
print("trial params:", sorted((t["params"]["lr"], t["params"]["seed"]) for t in trials))
best = sweep.best("loss", "min")
print("best:", best and best["params"], best and best["state"])

# The best trial's lr into a job after it, with set=.
follow = ddpjob.submit({"name": "pyfollow", "scheduler": "slurm", "nodes": 1, "procs_per_node": 1,
                        "walltime": "00:05:00", "env": {"LR": "0"},
                        "command": ["/bin/sh", "-c", "echo follow-up with lr $LR"]},
                       set={"env.LR": best["params"]["lr"]})
print("follow-up wait:", follow.wait(timeout=180))
print("follow-up logs:", follow.logs(rank=0).strip())

# A pipeline given as a dict: its second stage takes the first's record.
for name, command in (("pyfirst", "echo first"), ("pysecond", "echo after {first.record}")):
    with open(f"{name}.yaml", "w") as f:
        json.dump({"name": name, "scheduler": "slurm", "nodes": 1, "procs_per_node": 1,
                   "walltime": "00:05:00", "command": ["/bin/sh", "-c", command]}, f)
pipe = ddpjob.submit({"name": "pypipe", "stages": {
    "first": {"spec": "pyfirst.yaml"},
    "second": {"spec": "pysecond.yaml", "after": {"ok": ["first"]}}}})
print("pipeline:", type(pipe).__name__)
print("pipeline wait:", pipe.wait(timeout=300))
print("pipeline stages:", [(s["name"], s["state"]) for s in pipe.stages()])
print("pipeline second:", "/.ddpjob/jobs/pyfirst." in pipe.stage("second").logs(rank=0))

try:
    ddpjob.Job("nosuchjob").status()
    print("not found: none")
except ddpjob.JobNotFound:
    print("not found: JobNotFound")
