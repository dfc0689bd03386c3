"""A sweep's trial as a user's script writes it: its parameters from the command line, a metrics
line per step into DDPJOB_METRICS_FILE (rank 0's are the trial's), a few seconds of work; trial
FAIL_TRIAL exits 3 (until the file FAIL_UNTIL names is there), trial DIVERGE_TRIAL's loss diverges. With PACK_LOG, its start and end (trial,
host, time) go there, a line each, for a test to see which trials ran at once, and where."""
import json
import os
import socket
import sys
import time


def pack_log(what):
    if os.environ.get("PACK_LOG"):
        with open(os.environ["PACK_LOG"], "a") as f:
            f.write(f"{what} {os.environ.get('DDPJOB_TRIAL')} {socket.gethostname()} {time.time():.3f}\n")


lr, seed = float(sys.argv[1]), int(sys.argv[2])
fail_trial = os.environ.get("FAIL_TRIAL") or "-1"
seconds = float(os.environ.get("TRIAL_SECONDS") or "3")
print(f"trial {os.environ.get('DDPJOB_TRIAL')} params {os.environ.get('DDPJOB_TRIAL_PARAMS')} "
      f"RANK={os.environ.get('RANK')} MASTER_PORT={os.environ.get('MASTER_PORT')} "
      f"WHICH={os.environ.get('WHICH')}", flush=True)
pack_log("start")
fail_until = os.environ.get("FAIL_UNTIL")
if os.environ.get("DDPJOB_TRIAL") == fail_trial and not (fail_until and os.path.exists(fail_until)):
    pack_log("end")
    sys.exit(3)
steps = 3
for step in range(1, steps + 1):
    time.sleep(seconds / steps)
    # One line per step, as the one-liner in ddpjob(1) writes it.
    with open(os.environ["DDPJOB_METRICS_FILE"], "a") as f:
        loss = lr * seed / step
        if os.environ.get("DDPJOB_TRIAL") == os.environ.get("DIVERGE_TRIAL"):
            loss = 10.0 ** (12 * step)  # a trial whose loss diverges: 1e12, 1e24, 1e36
        f.write(json.dumps({"step": step, "loss": loss, "test_acc": 1 - lr / step}) + "\n")
pack_log("end")
