"""The Python package on a laptop, driving a cluster through on= (submit --on and the commands
after it): a sweep, its trials and best, a job after it with the best's lr, a spec's problem, a
pipeline. One line per fact, "FACT: value", for tests/agent/laptop_slurm.sh."""
import ddpjob

sweep = ddpjob.submit("lapsweep.yaml", on="hpc")
print("sweep:", type(sweep).__name__, sweep.id)
print("sweep wait:", sweep.wait(timeout=300))
trials = sweep.trials()
print("trials:", sorted(t["state"] for t in trials))
best = sweep.best("loss", "min")
print("best:", best and best["params"])
follow = ddpjob.submit("lapfollow.yaml", set={"env.LR": best["params"]["lr"]}, on="hpc")
print("follow-up wait:", follow.wait(timeout=300))
print("follow-up logs:", follow.logs(rank=0).strip())
try:
    ddpjob.submit("lapbroken.yaml", on="hpc")
    print("spec error: none")
except ddpjob.SpecError as e:
    print("spec error:", e.line, e.path.endswith("lapbroken.yaml"))
pipe = ddpjob.submit("lappipe.yaml", on="hpc")
print("pipeline:", type(pipe).__name__)
print("pipeline wait:", pipe.wait(timeout=300))
print("pipeline stages:", [(s["name"], s["state"]) for s in pipe.stages()])
print("pipeline second:", "/.ddpjob/jobs/lapfirst." in pipe.stage("second").logs(rank=0))
