#!/bin/bash
# Sweeps on a real OpenPBS (tests/cluster/pbs.sh: a server and two MoMs in network namespaces, an
# unprivileged user who submits): 4 one-node trials, 2 at once, as one -J array (max_run_subjobs
# read back from qstat), trial 1 failing with exit 3; the same sweep under a profile that says
# arrays: false, as lanes whose afterany chain is read back from qstat; a one-trial sweep as a
# plain job; jobs after others (submit --after, the spec's after:); a pipeline of a sweep and
# two jobs, values flowing (pipeline_case); a sweep packed into a held allocation (packed_case);
# and a trial that its walltime stops: its successor is its own script submitted again as a plain
# job, which resumes that trial alone. Last, an allocation held by `ddpjob dev` and runs in it
# (dev_cases.sh), Charliecloud's image among them.
. "$SRCDIR/tests/lib/agents.sh"
# Its own user: found, the pbs suite's cluster beside it lost a job when this one's went down
# (both submitted as one user, and a cluster's end kills that user's every process).
PBS_USER=ddpjpbsw
. "$SRCDIR/tests/cluster/pbs.sh"
. "$SRCDIR/tests/lib/packed.sh"

pbs_suite_up 2 2 0 "a 2-node OpenPBS cluster runs in network namespaces" || exit 1

home=$PBS_CLUSTER/home/$PBS_USER
bin=$PBS_CLUSTER/bin
jobdir=$home/jobs/sweep
mkdir -p "$bin" "$jobdir"
cp "$DDPJOB" "$AGENT" "$TRAIN" "$bin/"
cp -r "$BUILDDIR/templates" "$PBS_CLUSTER/templates"
cp "$SRCDIR/tests/agent/py/sweep_trial.py" "$jobdir/"
cat >"$jobdir/sweep.yaml" <<SPEC
name: grid
scheduler: pbs
nodes: 1
cpus_per_node: 1
walltime: "00:05:00"
env: {FAIL_TRIAL: "1", TRIAL_SECONDS: "2"}
sweep:
  grid: {lr: [0.1, 0.01], seed: [1, 2]}
  parallel: 2
command: [/usr/bin/python3, sweep_trial.py, "{lr}", "{seed}"]
SPEC
cat >"$jobdir/noarrays.yaml" <<'SITE'
name: noarrays
arrays: false
queues:
  workq: {cores_per_node: 2}
SITE
chown -R "$PBS_USER:" "$home"

pj() { # ddpjob ARGS... as the user in the submission directory: RC, OUT, ERR
    local back=$PWD
    cd "$jobdir" && run pbs_as_user env DDPJOB_TEMPLATE_DIR="$PBS_CLUSTER/templates" XDG_STATE_HOME="$home/state" "$bin/ddpjob" "$@"
    cd "$back" || return
}
qstat_f() { pbs_in pbshead "$PBS_EXEC/bin/qstat" -xf "$@" 2>/dev/null; }

pj submit sweep.yaml --bindir "$bin"
ARRAY=$(tail -n 1 <<<"$OUT")
expect_eq "$RC" 0 "submit of a 4-trial sweep exits 0"
expect_contains "$ARRAY" "[]" "qsub made an array job ($ARRAY)"
expect_contains "$(qstat_f -t "$ARRAY")" "max_run_subjobs = 2" "PBS holds it to 2 subjobs at once (-J 0-3%2)"
pj wait grid --timeout 180
expect_eq "$RC" 1 "wait on the sweep exits 1: trial 1 failed"
pj status grid
expect_contains "$OUT" "grid (pbs sweep of 4 trials, one array job, at most 2 at once): 3 completed, 1 failed" "status: the counts, from qstat -x"
row=$(grep '^1 ' <<<"$OUT")
if [[ $row == *"failed: rank 0 exited with code 3"* ]]; then pass "trial 1 failed, naming the rank and its code"; else
    fail "trial 1 failed, naming the rank and its code" "$row" "$(ls -la "$jobdir")" "$(tail -n 20 "$jobdir"/.ddpjob/sweeps/grid.*/*.OU)"
fi
expect_contains "$(grep '^3 ' <<<"$OUT")" "lr=0.01 seed=2" "trial 3's parameters"
expect_contains "$OUT" "best: trial 2 (lr=0.01 seed=1)" "the best completed trial"
# Found here: every subjob of the array derived the array's port, so two trials on one node met
# a port in use. Each now has its own.
ports=$(cat "$jobdir"/.ddpjob/sweeps/grid.*/*.OU | grep -o 'MASTER_PORT=[0-9]*' | sort -u | wc -l)
expect_eq "$ports" 4 "each of the 4 trials had a port of its own (their output files in the sweep's record, JOBID.OU)"
expect_eq "$(find "$jobdir" -maxdepth 1 \( -name 'grid.o*' -o -name 'grid.*.pbs' \))" "" \
    "no trial's output file in the submission folder, nor any script"
pj logs grid --trial 2
expect_contains "$OUT" 'trial 2 params {"lr": 0.01, "seed": 1}' "logs --trial 2, from the subjob's record"

# arrays: false: one plain job per trial, 2 lanes, each trial after the one before it in its lane.
pj submit sweep.yaml --site "$jobdir/noarrays.yaml" --set name=lanes --bindir "$bin"
expect_contains "$ERR" "sweep lanes: 4 trials as 4 jobs in 2 lanes" "arrays: false: lanes"
mapfile -t ids < <(pbs_in pbshead "$PBS_EXEC/bin/qselect" -x -N lanes 2>/dev/null | sort -t. -k1,1n)
expect_eq "${#ids[@]}" 4 "4 plain jobs"
expect_contains "$(qstat_f "${ids[2]}")" "depend = afterany:${ids[0]}" "trial 2 waits for trial 0 (afterany, read from qstat)"
expect_contains "$(qstat_f "${ids[3]}")" "depend = afterany:${ids[1]}" "trial 3 waits for trial 1"
pj wait lanes --timeout 180
expect_eq "$RC" 1 "the lanes ran to their end (trial 1 failed as before)"
pj status lanes
expect_contains "$OUT" "3 completed, 1 failed" "status of the lanes"
expect_eq "$(find "$jobdir" -maxdepth 1 \( -name 'lanes.*' -o -name '*.OU' \))" "" \
    "the lanes left no script or output file in the submission folder"
expect_eq "$(ls "$jobdir"/.ddpjob/sweeps/lanes.*/*.OU | wc -l)" 4 "each lane trial's output file is in the sweep's record"

# A one-trial sweep: PBS refuses -J 0-0, so it is a plain job.
pj submit sweep.yaml --set 'sweep.grid={lr: [0.1], seed: [1]}' --set name=one --bindir "$bin"
expect_eq "$RC" 0 "a one-trial sweep is submitted"
expect_lacks "$(tail -n 1 <<<"$OUT")" "[]" "as a plain job, not an array"
pj wait one --timeout 120
expect_eq "$RC" 0 "and it completes"

# Jobs after others (issue 70): PBS's own depend=, and a job whose afterok can no longer be met
# is deleted by the server, not left held; one after a job that has already failed is refused.
after_job() { # NAME [SPEC LINE]: a one-rank job that says it ran
    printf 'name: %s\nscheduler: pbs\nnodes: 1\ncpus_per_node: 1\nwalltime: "00:05:00"\ncommand: [sh, -c, "echo %s ran"]\n%s\n' \
        "$1" "$1" "${2:-}" >"$jobdir/$1.yaml"
}
after_job first
sed -i 's/command: .*/command: [sh, -c, "sleep 4; exit 3"]/' "$jobdir/first.yaml"
after_job onok
after_job onfail 'after: {notok: [first]}'
chown "$PBS_USER:" "$jobdir"/*.yaml
pj submit first.yaml --bindir "$bin"
FIRST=$(tail -n 1 <<<"$OUT")
pj submit onok.yaml --bindir "$bin" --after first
ONOK=$(tail -n 1 <<<"$OUT")
expect_eq "$RC" 0 "submit --after first: held until it completes"
expect_contains "$(qstat_f "$ONOK" | tr -d '\n\t ')" "depend=afterok:$FIRST" "... PBS's own depend=afterok on first's id (read from qstat)"
pj submit onfail.yaml --bindir "$bin"
expect_eq "$RC" 0 "a spec's after: {notok: [first]}"
pj wait first --timeout 120
expect_eq "$RC" 3 "first fails (exit 3)"
pj wait onfail --timeout 120
expect_eq "$RC" 0 "the job after first:notok runs once it failed"
pj logs onfail
expect_contains "$OUT" "onfail ran" "... its line"
for _ in $(seq 300); do
    qstat_f "$ONOK" | grep -q 'job_state = [HQ]' || break
    sleep 0.2
done
expect_lacks "$(qstat_f "$ONOK" | grep job_state)" "= H" "the job after first:ok is not left held"
pj status onok
expect_lacks "$OUT" "pending" "status of the job after first:ok: ended, not pending" "$OUT"
pj submit onok.yaml --bindir "$bin" --set name=late --after first
expect_eq "$RC" 1 "a job after first:ok, first having failed already: refused"
expect_contains "$ERR" "first has ended failed: a job after it as \`ok\` would never start" "... saying why"

# A trial's requeue on PBS: trial 0 trains 1 epoch inside its first link, trial 1 needs more, so
# the checkpoint signal before its walltime stops it and its successor (its own script, qsub'd
# again as a plain job with its record) resumes it; trial 0 is not run again.
cat >"$jobdir/train-sweep.yaml" <<SPEC
name: trainsweep
scheduler: pbs
nodes: 1
procs_per_node: 2
cpus_per_node: 2
$(sweep_chain_trials "$jobdir/ckpt" 2)
SPEC
chown "$PBS_USER:" "$jobdir/train-sweep.yaml"
pj submit train-sweep.yaml --bindir "$bin"
expect_eq "$RC" 0 "submit of a sweep of ddp-train trials"
pj wait trainsweep --timeout 500
expect_eq "$RC" 0 "both trials completed"
expect_requeued_alone pj trainsweep "$jobdir/ckpt"

# A pipeline (issue 70, pipeline_case): its later stages are submitted by the batch shell of
# the stage before them, from the MoM, with the installed layout's templates beside the bin.
mkdir -p "$PBS_CLUSTER/share/ddpjob" "$jobdir/pipe"
cp -r "$BUILDDIR/templates" "$PBS_CLUSTER/share/ddpjob/templates"
chown "$PBS_USER:" "$jobdir/pipe"
pjd() { # [DIR=D] ddpjob ARGS... in D (default: the submission directory)
    local back=$jobdir
    case $1 in DIR=*) jobdir=${1#DIR=} && shift ;; esac
    case $1 in submit) set -- submit --bindir "$bin" "${@:2}" ;; esac
    pj "$@"
    jobdir=$back
}
pbs_queue() { pbs_in pbshead "$PBS_EXEC/bin/qstat" -f 2>/dev/null | sed -n 's/^ *Job_Name = //p'; }
cd "$jobdir" && pipeline_case pbs pjd pbs_queue "$jobdir/noarrays.yaml"

# A sweep packed into a held allocation of the 2 nodes (packed_case, issue 69): a run on the
# other node than the holder's has its node 0's agent started there by pbsdsh too.
mkdir -p "$jobdir/packed" && chown "$PBS_USER:" "$jobdir/packed"
cd "$jobdir" && packed_case pbs pjd pbs_queue

# An allocation held for runs, on the same cluster (dev_cases.sh): dev and run render with the
# suite's ddpjob on the nodes.
dj() {
    case $1 in
    dev | run) pj "$1" --bindir "$bin" "${@:2}" ;;
    *) pj "$@" ;;
    esac
}
dev_ddpjob() {
    local args=("$@")
    case $1 in dev | run) args=("$1" --bindir "$bin" "${@:2}") ;; esac
    (cd "$jobdir" && pbs_as_user env DDPJOB_TEMPLATE_DIR="$PBS_CLUSTER/templates" XDG_STATE_HOME="$home/state" "$bin/ddpjob" "${args[@]}")
}
on_login() { pbs_in pbshead "$@"; }
in_queue() {
    local state
    state=$(qstat_f "$1" | grep -o 'job_state = [A-Z]')
    [ -n "$state" ] && [ "$state" != "job_state = F" ]
}
DEV_SCHED=pbs
DEV_SPEC_EXTRA="cpus_per_node: 2"
# Charliecloud's image, a folder the user owns (ch-run is given the mount points it lacks).
. "$SRCDIR/tests/lib/images.sh"
image_root "$jobdir/chimage"
chown -R "$PBS_USER:" "$jobdir/chimage"
DEV_IMAGE="container: {runtime: charliecloud, image: $jobdir/chimage}"
cd "$jobdir" || exit 1
. "$SRCDIR/tests/agent/dev_cases.sh"
