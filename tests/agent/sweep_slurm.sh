#!/bin/bash
# Sweeps on a real Slurm (3 nodes in network namespaces; ACCOUNTING=1 with slurmdbd and MariaDB):
# 6 one-node trials, 2 at once, as one array job; trial 1 fails with exit 3. Read from Slurm
# while it runs: never more than 2 trials at once. Then the table, wait, logs, list, cancel of
# one trial of a second sweep, a site that takes no arrays (lanes chained by afterany), jobs after
# others (submit --after, the spec's after:), pipelines, a sweep packed into a held allocation
# (packed_case), the Python package, and 2-node ddp-train trials with a spare, one of which its
# walltime requeues: it resumes alone. The
# sweep's report in a real headless Chromium.
. "$SRCDIR/tests/lib/agents.sh"
. "$SRCDIR/tests/cluster/slurm.sh"
. "$SRCDIR/tests/lib/browser.sh"
. "$SRCDIR/tests/lib/packed.sh"
at_exit 'cluster_down'
cd "$T" || exit 1

# Three nodes: the 2-node trials with a spare (at the end) take all three.
if ! cluster_up 3 >"$T/cluster.log" 2>&1; then
    fail "a 3-node Slurm cluster starts" "$(tail -n 20 "$T/cluster.log")"
    exit 1
fi
pass "a 3-node Slurm cluster${ACCOUNTING:+ with accounting} runs in network namespaces"

# ddpjob ARGS... on the head node, from $T, with this suite's index of jobs: RC, OUT, ERR.
dj() {
    local dir=$T
    case $1 in DIR=*) dir=${1#DIR=}; shift ;; esac
    FAIL_TRIAL=${FAIL_TRIAL:-} run cluster_ddpjob "$dir" "$@"
}

cat >sweep.yaml <<SPEC
name: grid
scheduler: slurm
nodes: 1
procs_per_node: 1
walltime: "00:05:00"
sweep:
  grid: {lr: [0.1, 0.01], seed: [1, 2, 3]}
  parallel: 2
command: [/usr/bin/python3, "$SRCDIR/tests/agent/py/sweep_trial.py", "{lr}", "{seed}"]
SPEC

FAIL_TRIAL=1 dj submit sweep.yaml
ARRAY=$(tail -n 1 <<<"$OUT")
expect_eq "$RC" 0 "submit of a 6-trial sweep exits 0"
expect_contains "$ERR" "sweep grid: 6 trials as array job $ARRAY, at most 2 at once" "it goes as one array job"
expect_eq "$(cluster_in head scontrol -o show job "${ARRAY}_0" 2>/dev/null | grep -o 'ArrayTaskThrottle=[0-9]*' | head -n 1)" \
    "ArrayTaskThrottle=2" "Slurm holds the array to 2 tasks at once (%2)"

# Sampled from Slurm while it runs: how many trials run at once, at most.
most=0
deadline=$((SECONDS + 240))
while [ "$SECONDS" -lt "$deadline" ]; do
    running=$(cluster_in head squeue -h -r -t RUNNING -o %i 2>/dev/null | grep -c "^${ARRAY}_")
    [ "$running" -gt "$most" ] && most=$running
    [ -z "$(cluster_in head squeue -h -r -o %i 2>/dev/null | grep "^${ARRAY}_")" ] && break
    sleep 0.2
done
expect_eq "$most" 2 "at no moment did more than 2 trials run (and 2 did run together)"

dj wait grid --timeout 120
expect_eq "$RC" 1 "wait on the sweep exits 1: a trial did not complete"
expect_contains "$ERR" "1 of 6 trials did not complete" "and says how many"
expect_eq "$(ls "$T"/.ddpjob/sweeps/grid.*/grid-"${ARRAY}"_[0-5].out 2>/dev/null | wc -l)" 6 \
    "each trial's output file is in the sweep's record (grid-ARRAY_K.out)" "$(ls -R "$T"/.ddpjob/sweeps)"
expect_eq "$(find "$T" -maxdepth 1 \( -name '*.out' -o -name '*.sbatch' \))" "" \
    "none in the submission folder, nor any script (the array's and the trials' are in the record)"
expect_eq "$(ls "$T"/.ddpjob/sweeps/grid.*/grid.array.sbatch | wc -l)" 1 "the array's script is in the sweep's record"

# Once slurmctld has forgotten the tasks (MinJobAge), status reads them from sacct with
# accounting, else from the trials' records.
for _ in $(seq 300); do
    [ -z "$(cluster_in head squeue -h -r -t all -o %i 2>/dev/null | grep "^${ARRAY}_")" ] && break
    sleep 0.2
done
dj status grid --json
expect_contains "$OUT" "\"job_id\": \"${ARRAY}_1\"" "each trial is known by its array task id (${ARRAY}_1)"
if [ "${ACCOUNTING:-0}" = 1 ]; then want_source=sacct; else want_source=record; fi
expect_eq "$(grep -c "\"source\": \"$want_source\"" <<<"$OUT")" 6 "every trial's state came from the $want_source"
dj status grid
table=$OUT
expect_contains "$table" "grid (slurm sweep of 6 trials, one array job, at most 2 at once): 5 completed, 1 failed" "status: the counts"
for k in 0 2 3 5; do
    expect_contains "$table" "$(printf '%-5s' $k)  lr=" "trial $k has its row"
done
row1=$(grep '^1 ' <<<"$table")
expect_contains "$row1" "lr=0.1 seed=2" "trial 1's parameters"
expect_contains "$row1" "failed: rank 0 exited with code 3" "trial 1 failed, naming the rank and its code"
row0=$(grep '^0 ' <<<"$table")
expect_contains "$row0" "completed" "trial 0 completed"
expect_contains "$(sed -n 3p <<<"$table")" "loss    test_acc" "the metrics the trials wrote are columns"
expect_contains "$row0" "  0.03333" "trial 0's last loss (0.1 x 1 / 3)"
expect_contains "$table" "best: trial 3 (lr=0.01 seed=1): test_acc 0.996667 (highest)" "the best completed trial by test_acc"

dj status grid --sort loss --json
expect_contains "$OUT" "\"best\": 3" "--json names the best trial"
first=$(grep -o '"trial": [0-9]*' <<<"$OUT" | head -n 1)
expect_eq "$first" '"trial": 3' "--sort loss: the lowest loss first"
expect_contains "$OUT" '"summary": "failed: rank 0 exited with code 3"' "--json: the failed trial's cause"

# The sweep's report, in a real headless Chromium: each metric one chart with a curve per trial
# that wrote one (5: trial 1 failed before its first step).
dj report grid -o "$T/grid.html"
expect_eq "$RC" 0 "report of the sweep exits 0"
dom=$(browser_dom "$T/grid.html")
expect_contains "$dom" 'aria-label="loss"' "a chart of the trials' loss"
expect_contains "$dom" 'aria-label="test_acc"' "and one of their test_acc"
expect_eq "$(grep -c '<path class="trial" data-trial=' <<<"$dom")" 10 "a curve per trial with metrics on each chart (5 x 2)"
expect_contains "$dom" '<li data-trial="4">' "the legend names the trials"
expect_contains "$dom" 'lr=0.01 seed=2' "the table, with the parameters"
# Slurm that cannot be asked (squeue fails): the trials' records answer, as for one job's report.
run env XDG_STATE_HOME="$T/state" bash -c '. "$0/tests/cluster/slurm.sh"; cd "$1" && shift && cluster_in head "$@"' \
    "$SRCDIR" "$T" env SLURM_CONF=/nonexistent "$DDPJOB" report grid -o "$T/grid-nosqueue.html"
expect_eq "$RC" 0 "report of the sweep when squeue fails exits 0" "$ERR"
expect_contains "$ERR" "(the trials' records answer for them)" "saying the trials' records answer"
expect_contains "$(cat "$T/grid-nosqueue.html" 2>/dev/null)" 'lr=0.01 seed=2' "and the page is written, its table from the records"

dj logs grid --trial 4
expect_contains "$OUT" 'trial 4 params {"lr": 0.01, "seed": 2} RANK=0' "logs --trial 4: trial 4's own lines"
expect_lacks "$OUT" "trial 5 " "and no other trial's"
dj logs grid
expect_eq "$RC" 2 "logs of a sweep without --trial is refused"
expect_contains "$ERR" "say which with --trial K" "naming the option"
dj DIR=/ list
expect_contains "$OUT" "grid (slurm sweep of 6 trials" "list shows the sweep as one line"

# Two trials' own rendezvous: every trial had a port of its own (from its own Slurm job id).
ports=$(for k in 0 1 2 3 4 5; do dj logs grid --trial $k; grep -o 'MASTER_PORT=[0-9]*' <<<"$OUT"; done | sort -u | wc -l)
expect_eq "$ports" 6 "each of the 6 trials met at a port of its own"

# --retry-failed: trial 1 alone again (no longer made to fail), the sweep then whole.
dj submit --retry-failed grid
expect_eq "$RC" 0 "submit --retry-failed exits 0"
expect_contains "$ERR" "sweep grid: trial 1 (failed) submitted again as job" "it submits trial 1 again"
expect_eq "$(grep -c 'submitted again' <<<"$ERR")" 1 "and no other trial"
dj wait grid --timeout 120
expect_eq "$RC" 0 "wait: every trial of the sweep has now completed"
dj status grid
expect_contains "$OUT" "at most 2 at once): 6 completed" "status: 6 completed"
expect_eq "$(ls -d "$T"/.ddpjob/sweeps/grid.*/trial-1.try-1 | wc -l)" 1 "the failed try's record is kept as trial-1.try-1"

# Two sweeps of the same spec side by side, known by their record folders (the second's --set
# submitted while the first's trials wait; their scripts once shared the folder's names): each
# trial runs its own sweep's script, from its record. Cancelling one trial of one sweep leaves
# the others.
cat >sweep2.yaml <<SPEC
name: grid2
scheduler: slurm
nodes: 1
procs_per_node: 1
walltime: "00:05:00"
env: {TRIAL_SECONDS: "60", WHICH: first}
sweep:
  grid: {lr: [0.1], seed: [1, 2, 3]}
  parallel: 1
command: [/usr/bin/python3, "$SRCDIR/tests/agent/py/sweep_trial.py", "{lr}", "{seed}"]
SPEC
dj submit sweep2.yaml
first=$(tail -n 1 <<<"$OUT") A=$(sed -n 's/^ddpjob: its record: //p' <<<"$ERR")
dj submit sweep2.yaml --set env.WHICH=second
second=$(tail -n 1 <<<"$OUT") B=$(sed -n 's/^ddpjob: its record: //p' <<<"$ERR")
expect_eq "$(ls "$T"/grid2.* 2>/dev/null)" "" "neither sweep wrote a script into the folder"
expect_eq "$(grep -c 'WHICH=second' "$B/trial-1/script")" 1 "the second sweep's trial 1 script is its own, in its record"
for _ in $(seq 300); do
    [ "$(cluster_in head squeue -h -r -t RUNNING -o %i 2>/dev/null | grep -c "^\($first\|$second\)_")" -ge 2 ] && break
    sleep 0.2
done
dj cancel "$A" --trial 0
expect_eq "$RC" 0 "cancel --trial 0 of the first sweep exits 0"
dj status "$A"
expect_contains "$(grep '^0 ' <<<"$OUT")" "cancelled" "its trial 0 is cancelled"
for _ in $(seq 300); do
    [ "$(cluster_in head squeue -h -r -t RUNNING -o %i 2>/dev/null | grep -c "^${first}_1$")" -ge 1 ] && break
    sleep 0.2
done
dj status "$A"
expect_contains "$(grep '^1 ' <<<"$OUT")" "running" "its trial 1 starts in its place (parallel: 1)"
dj status "$B"
expect_lacks "$OUT" "cancelled" "the other sweep's trials are untouched"
for _ in $(seq 100); do dj logs "$A" --trial 1; [[ $OUT == *WHICH=* ]] && break; sleep 0.2; done
expect_contains "$OUT" "WHICH=first" "the first sweep's trial 1 (started after the second sweep was written) runs its own spec"
dj logs "$B" --trial 0
expect_contains "$OUT" "WHICH=second" "and the second sweep's, its own"
dj cancel "$A"
expect_eq "$RC" 0 "cancel of the whole first sweep exits 0"
dj status "$A"
expect_contains "$OUT" ": 3 cancelled" "every trial of it is cancelled"
dj cancel "$B"
expect_eq "$RC" 0 "and of the second"

# A site that takes no arrays: one job per trial, in lanes chained by afterany.
mkdir -p sites
cat >sites/noarrays.yaml <<'SITE'
name: noarrays
arrays: false
queues:
  debug: {cores_per_node: 2}
SITE
# Its spec names its own objective: the lowest test_acc is the best trial here. Trial 5's loss
# diverges (to 1e36).
DIVERGE_TRIAL=5 dj submit sweep.yaml --site "$T/sites/noarrays.yaml" --set name=lanes --set "sweep.parallel=2" \
    --set sweep.objective.metric=test_acc --set sweep.objective.goal=min
expect_contains "$ERR" "sweep lanes: 6 trials as 6 jobs in 2 lanes" "arrays: false: one job per trial, in 2 lanes"
deps=$(cluster_in head squeue -h -o '%i %E' 2>/dev/null | grep -c 'afterany:')
expect_eq "$deps" 4 "4 trials wait for the one before them in their lane (afterany, read from squeue)"
dj wait lanes --timeout 180
expect_eq "$RC" 0 "every lane trial completed"
dj status lanes
expect_contains "$OUT" "best: trial 0 (lr=0.1 seed=1): test_acc 0.966667 (lowest)" \
    "the best trial by the spec's objective (test_acc, min), not the highest test_acc" "$OUT"
dj status lanes --json
expect_contains "$OUT" '"best_by": "test_acc"' "--json names the objective it went by"
dj report lanes -o "$T/lanes.html"
expect_contains "$(cat "$T/lanes.html" 2>/dev/null)" "best: trial 0 (lr=0.1 seed=1): test_acc 0.966667 (lowest)" \
    "the report's table names the same best trial"
dom=$(browser_dom "$T/lanes.html")
expect_contains "$dom" "outside this axis: trial 5 (to 1e+36), drawn at the edge" \
    "the loss chart keeps the other trials' curves readable and says trial 5 leaves its axis"

# Accounting changes how status reads finished trials, not how they run: the rest runs once.
[ "${ACCOUNTING:-0}" = 1 ] && exit 0

# Jobs after others (issue 70): Slurm's own dependency, and one that can no longer be met ends the
# job (--kill-on-invalid-dep), never leaves it pending; a job already ended as asked holds
# nothing back, one ended otherwise refuses the submission.
after_job() { # NAME [SPEC LINE]: a one-rank job that says it ran
    printf 'name: %s\nscheduler: slurm\nnodes: 1\nprocs_per_node: 1\nwalltime: "00:05:00"\ncommand: [sh, -c, "echo %s ran"]\n%s\n' \
        "$1" "$1" "${2:-}" >"$1.yaml"
}
after_job first
sed -i 's/command: .*/command: [sh, -c, "sleep 4; exit 3"]/' first.yaml
dj submit first.yaml
FIRST=$(tail -n 1 <<<"$OUT")
after_job onok
dj submit onok.yaml --after first
ONOK=$(tail -n 1 <<<"$OUT")
expect_eq "$RC" 0 "submit --after first: held until it completes"
expect_contains "$(cluster_in head squeue -h -j "$ONOK" -o %E 2>/dev/null)" "afterok:$FIRST" \
    "... Slurm's own dependency: afterok on first's id (read from squeue)"
after_job onfail 'after: {notok: [first]}'
dj submit onfail.yaml
expect_eq "$RC" 0 "a spec's after: {notok: [first]}"
after_job onany
dj submit onany.yaml --after "$FIRST:any"
expect_eq "$RC" 0 "submit --after ID:any (the job by its Slurm id)"
dj wait first --timeout 120
expect_eq "$RC" 3 "first fails (exit 3)"
dj wait onfail --timeout 120
expect_eq "$RC" 0 "the job after first:notok runs once it failed"
dj logs onfail
expect_contains "$OUT" "onfail ran" "... its line"
dj wait onany --timeout 120
expect_eq "$RC" 0 "the job after first:any runs too"
for _ in $(seq 300); do
    [ -z "$(cluster_in head squeue -h -j "$ONOK" -t PENDING -o %i 2>/dev/null)" ] && break
    sleep 0.2
done
expect_eq "$(cluster_in head squeue -h -j "$ONOK" -t PENDING -o %i 2>/dev/null)" "" \
    "the job after first:ok is ended by Slurm, not left pending"
dj status onok
expect_contains "$OUT" "cancelled" "status of the job after first:ok: cancelled" "$OUT"
dj logs onok
expect_lacks "$OUT" "onok ran" "... it never ran"
dj submit onok.yaml --set name=late --after first
expect_eq "$RC" 1 "a job after first:ok, first having failed already: refused"
expect_contains "$ERR" "first has ended failed: a job after it as \`ok\` would never start" "... saying why"
dj submit onany.yaml --set name=lateany --after first:any
expect_eq "$RC" 0 "after first:any, first having ended: nothing to wait for"
dj wait lateany --timeout 120
expect_eq "$RC" 0 "... it runs"
dj submit onok.yaml --set name=aftersweep --after lanes
expect_eq "$RC" 0 "after the completed lanes sweep (every trial completed): nothing to wait for"
dj submit onok.yaml --set name=nosuch --after no-such-job
expect_eq "$RC" 1 "after a job there is no record of: refused"
expect_contains "$ERR" "after: " "... naming it" "$ERR"

# A pipeline (pipeline_case): a sweep, its best trained longer, then evaluated; a failed first
# stage; a pipeline cancelled. Later stages are submitted from inside the jobs before them.
slurm_queue() { cluster_in head squeue -h -t PENDING,RUNNING -o %j 2>/dev/null; }
pipeline_case slurm dj slurm_queue "$T/sites/noarrays.yaml"
# The pipeline's report, in a real headless Chromium: its stages' table, linking each one's page.
dj DIR="$T/pipe" report tune -o "$T/tune.html"
expect_eq "$RC" 0 "report of the pipeline" "$ERR"
dom=$(browser_dom "$T/tune.html")
expect_contains "$dom" '<tr data-stage="train"><td><a href="tune.train.html">train</a>' "the stages' table links each stage's page" "$dom"
expect_contains "$(browser_dom "$T/tune.sweep.html")" 'aria-label="loss"' "the sweep stage's page: its trials' loss"
expect_contains "$(browser_dom "$T/tune.train.html")" "ptrain" "the train stage's page"

# A sweep packed into a held allocation of 2 nodes (packed_case, issue 69).
packed_case slurm dj slurm_queue

# The Python package (python/ddpjob) on the login node, as a user's script drives it: a spec given
# as a dict with an override, a failed job's status, a spec's problem as SpecError with where, a
# sweep's trials and its best, a job after it with the best's lr, a pipeline given as a dict, a
# name nothing has.
run cluster_in head env -C "$T" DDPJOB="$DDPJOB" XDG_STATE_HOME="$T/state" PYTHONPATH="$SRCDIR/python" \
    timeout 600 /usr/bin/python3 "$SRCDIR/tests/agent/py/client_check.py" "$SRCDIR/tests/agent/py/sweep_trial.py"
expect_eq "$RC" 0 "the Python client's script runs to its end" "$ERR"
for fact in "job: Job " "wait: 0" "state: completed" "logs: hello from rank 0" "failed wait: 3" \
    "failed state: failed" "spec error: True True" "sweep: Sweep pysweep" "sweep wait: 1" \
    "trials: 4 ['completed', 'completed', 'completed', 'failed']" \
    "trial params: [(0.3, 1), (0.3, 2), (0.4, 1), (0.4, 2)]" \
    "best: {'lr': 0.3, 'seed': 1} completed" "follow-up wait: 0" "follow-up logs: follow-up with lr 0.3" \
    "pipeline: Pipeline" "pipeline wait: 0" "pipeline stages: [('first', 'completed'), ('second', 'completed')]" \
    "pipeline second: True" "not found: JobNotFound"; do
    expect_contains "$OUT" "$fact" "ddpjob.py: $fact"
done

# 2-node ddp-train trials with a spare node, one after the other: trial 0 trains 1 epoch inside
# its first link; trial 1 needs more than one link, so its walltime's checkpoint signal requeues
# it (Slurm requeues that array task alone) and it resumes from its own checkpoint. The table
# shows ddp-train's own metrics (DDPJOB_METRICS_FILE).
cat >train-sweep.yaml <<SPEC
name: trainsweep
scheduler: slurm
nodes: 2
spares: 1
procs_per_node: 2
$(sweep_chain_trials "$T/ckpt" 1)
SPEC
dj submit train-sweep.yaml
expect_eq "$RC" 0 "submit of a sweep of 2-node trials with a spare"
dj wait trainsweep --timeout 500
expect_eq "$RC" 0 "both trials completed"
expect_requeued_alone dj trainsweep "$T/ckpt"
