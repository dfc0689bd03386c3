#!/bin/bash
# A spec's sweep: block: its trials (grid:'s product, then trials:), each trial's spec with its
# placeholders replaced and DDPJOB_TRIAL / DDPJOB_TRIAL_PARAMS in its env, and validate's
# problems, each at its place; submit --dry-run of a whole sweep (the real schedulers' runs are
# tests/agent/sweep_slurm.sh and sweep_pbs.sh).
. "$SRCDIR/tests/lib/tap.sh"
cd "$T" || exit 1

cat >sweep.yaml <<'SPEC'
name: "grid-{lr}"
scheduler: slurm
nodes: 1
sweep:
  grid: {lr: [0.1, 0.03, 0.01], seed: [1, 2]}
  trials: [{lr: 0.3, seed: 1}]
  parallel: 2
env: {SEED: "{seed}"}
command: [sh, -c, 'echo "lr={lr} seed=$SEED home=${HOME:+set} {{braces}}"']
SPEC
run "$DDPJOB" validate sweep.yaml
expect_eq "$RC" 0 "a sweep validates"
expect_contains "$OUT" "sweep.yaml: ok (slurm, 1 node x 1 worker, a sweep of 7 trials, 2 at once)" \
    "grid's product and trials: 7 trials, 2 at once"
run "$DDPJOB" render sweep.yaml --trial 5 --bindir /opt/ddpjob/bin
expect_contains "$OUT" "#SBATCH --job-name=grid-0.01" "trial 5 is the grid's last (lr varies slowest): in name"
expect_contains "$OUT" "export SEED=2" "in env"
expect_contains "$OUT" "export DDPJOB_TRIAL=5" "DDPJOB_TRIAL"
expect_contains "$OUT" "export DDPJOB_TRIAL_PARAMS='{\"lr\": 0.01, \"seed\": 2}'" "DDPJOB_TRIAL_PARAMS as JSON"
expect_contains "$OUT" "lr=0.01 seed=\$SEED home=\${HOME:+set} {braces}" \
    "in command; the shell's \${...} untouched, {{ }} for braces"
run "$DDPJOB" run sweep.yaml --trial 6 --set scheduler=pbs
expect_contains "$OUT" "[rank 0] lr=0.3 seed=1 home=set {braces}" "run --trial 6: trials:'s own, appended"
run "$DDPJOB" render sweep.yaml --trial 7
expect_contains "$ERR" "sweep: --trial 7: the sweep has 7 trials" "a trial past the last"
run "$DDPJOB" submit sweep.yaml --dry-run
expect_eq "$RC" 0 "submit --dry-run of a whole sweep"
expect_eq "$OUT" "would run in .: sbatch --parsable grid-0.1.array.sbatch" "it would submit one array job"
expect_eq "$(ls grid-*.sbatch | wc -l)" 8 "having written each trial's script and the array's"
expect_contains "$(cat grid-0.1.array.sbatch)" "#SBATCH --array=0-6%2" "the array: 7 tasks, 2 at once"
expect_contains "$(cat grid-0.1.array.sbatch)" "$T/grid-0.01.t5.sbatch" "each task runs its trial's own script"
expect_contains "$(cat grid-0.01.t5.sbatch)" "export DDPJOB_TRIAL=5" "which is that trial's"

# A site profile's arrays: its largest array, or none at all: then lanes.
printf 'name: small\narrays: {max: 5}\nqueues:\n  q: {cores_per_node: 4}\n' >small.yaml
run "$DDPJOB" submit sweep.yaml --dry-run --site "$T/small.yaml"
expect_eq "$(grep -c 'would run' <<<"$OUT")" 7 "7 trials past a site's arrays: {max: 5}: one job per trial"
expect_contains "$OUT" "--dependency=afterany:<trial 4's job> grid-0.3.t6.sbatch" \
    "in 2 lanes: trial 6 after trial 4"
printf 'name: bad\narrays: {most: 5}\nqueues:\n  q: {cores_per_node: 4}\n' >badsite.yaml
run "$DDPJOB" validate sweep.yaml --site "$T/badsite.yaml"
expect_contains "$ERR" "arrays: expected false, true or {max: N}" "a profile's arrays: of another shape is refused"

cat >bad.yaml <<'SPEC'
name: bad
nodes: 1
sweep:
  grid: {lr: [], seed: [1, {a: 1}]}
  bogus: 1
  parallel: 0
command: [echo, "{lr}"]
SPEC
run "$DDPJOB" validate bad.yaml
expect_eq "$RC" 1 "a bad sweep: block fails"
expect_contains "$ERR" "bad.yaml:5:3: sweep: unknown field (grid, trials, parallel, objective, pack)" "an unknown field"
expect_contains "$ERR" "bad.yaml:4:14: sweep.grid: lr: expected a list of one value or more" "an empty list"
expect_contains "$ERR" "bad.yaml:4:28: sweep.grid: expected one value" "a value that is not one"
expect_contains "$ERR" "bad.yaml:6:13: sweep.parallel: expected a whole number of trials, 1 or more" "parallel: 0"
printf 'name: b\nnodes: 1\nwalltime: "00:10:00"\ncheckpoint: {signal: USR1, before: 120}\nsweep:\n  grid: {lr: [1, 2]}\n  pack: {nodes: 1, walltime: "00:01:00"}\ncommand: [echo, "{lr}"]\n' >bad.yaml
run "$DDPJOB" validate bad.yaml
expect_contains "$ERR" "bad.yaml:4:36: checkpoint.before: 120 s is not less than sweep.pack.walltime (60 s): no trial would start in a link of the allocation" \
    "a pack's walltime no longer than the checkpoint's lead"
sed -i 's/walltime: "00:01:00"}/walltime: 0}/' bad.yaml
run "$DDPJOB" validate bad.yaml
expect_contains "$ERR" "bad.yaml:7:30: sweep.pack.walltime: expected how long an allocation holds its nodes a link" "a pack's walltime of 0"
cat >bad.yaml <<'SPEC'
name: bad
nodes: 1
sweep:
  grid: {lr: [0.1, 0.1]}
command: [echo, "{lr}"]
SPEC
run "$DDPJOB" validate bad.yaml
expect_contains "$ERR" "bad.yaml:4:3: sweep: trials 0 and 1 are the same" "duplicate trials"
cat >bad.yaml <<'SPEC'
name: bad
nodes: 1
sweep:
  grid: {lr: [0.1, 0.2], sed: [1]}
command: [echo, "{lr}", "{seed}"]
SPEC
run "$DDPJOB" validate bad.yaml
expect_contains "$ERR" "bad.yaml:5:25: command: {seed}: the sweep has no parameter of that name" "a placeholder without a value"
sed -i 's/"{seed}"/"{lr}"/' bad.yaml
run "$DDPJOB" validate bad.yaml
expect_contains "$ERR" "bad.yaml:4:3: sweep: sed is in no {sed} of command, env, train, log_dir, workdir or name (misspelt?)" \
    "a parameter used nowhere"
cat >bad.yaml <<'SPEC'
name: bad
nodes: 1
sweep:
  grid: {lr: [0.1]}
  trials: [{lr: 0.5, seed: 3}]
train: {synthetic: true, lr: "{lr}", seed: "{seed}"}
SPEC
run "$DDPJOB" validate bad.yaml
expect_contains "$ERR" "bad.yaml:6:44: train: {seed}: trial 0 gives it no value" "a trial without a value for a placeholder"
sed -i 's/grid: {lr: \[0.1\]}/grid: {lr: [0.1, abc], seed: [1]}/; s/trials: .*//' bad.yaml
run "$DDPJOB" validate bad.yaml
expect_contains "$ERR" "train.lr: ddp-train would refuse it: --lr abc: expected a number" \
    "a later trial's value checked as the file's would be"

# Three mistakes, said in one run: the block's own, a placeholder without a parameter, and one in
# a field that takes none (a number every trial shares), named as such.
cat >three.yaml <<'SPEC'
name: three
scheduler: slurm
nodes: 1
procs_per_node: "{n}"
walltime: "00:10:00"
sweep:
  grid: {lr: [0.1, 0.01], n: [1, 2]}
  parallel: 0
command: [python3, train.py, --lr, "{lr}", "{missing}"]
SPEC
run "$DDPJOB" validate three.yaml
expect_eq "$RC" 1 "a sweep with three mistakes is refused"
expect_contains "$ERR" "three.yaml:8:13: sweep.parallel: expected a whole number of trials, 1 or more" "the block's own problem"
expect_contains "$ERR" "three.yaml:9:44: command: {missing}: the sweep has no parameter of that name" "... and the placeholder without a parameter, in the same run"
expect_contains "$ERR" "three.yaml:4:17: procs_per_node: {n}: a sweep's values go only into name, command, env, train, log_dir and workdir (and a packed sweep's into nodes); procs_per_node is the same for every trial" \
    "... and the placeholder in a numeric field, saying none is taken there"
expect_contains "$ERR" "three.yaml: 3 problems" "three problems, each said once"

# objective: the metric the best trial is judged by, and whether the highest or lowest wins.
sed 's/^  parallel: 0$/  parallel: 1\n  objective: {metric: score, goal: up}/; s/"{n}"/1/; s/"{missing}"/"{n}"/' three.yaml >objective.yaml
run "$DDPJOB" validate objective.yaml
expect_contains "$ERR" "objective.yaml:9:36: sweep.objective.goal: expected min or max (whether the best trial's score is the lowest or the highest)" \
    "an objective's goal is min or max"
sed -i 's/goal: up/goal: max/' objective.yaml
run "$DDPJOB" validate objective.yaml
expect_eq "$RC" 0 "objective: {metric: score, goal: max} validates" "$ERR"
sed -i 's/objective: .*/objective: score/' objective.yaml
run "$DDPJOB" validate objective.yaml
expect_contains "$ERR" "sweep.objective: expected {metric: NAME, goal: min or max}" "an objective that is no block is refused"
