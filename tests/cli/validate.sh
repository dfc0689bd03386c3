#!/bin/bash
# Validation reports every problem at once as FILE:LINE:COL: FIELD: PROBLEM, exits 1 and writes
# nothing; a valid spec passes.
. "$SRCDIR/tests/lib/tap.sh"
cd "$T" || exit 1

cat >job.yaml <<'SPEC'
name: resnet-ddp
scheduler: pbs
nodes: 2
gpus_per_nod: 4
cpus_per_node: 0
mem: 380XB
walltime: 2h
queue: [gpuvolta]
project: "vp 91"
modules: python3
env: {RANK: "1", 9X: a, GOOD: [1]}
master_port: 70000
max_restarts: -1
rendezvous_timeout: "300"
command: []
pbs: {storage: "scratch/vp91+", jobfs: lots, launcher: pdsh, directives: ["-l a\nb"]}
slurm: {exclusive: maybe, extra: 1}
schedular: x
SPEC
run "$DDPJOB" render job.yaml -o out.sh
expect_eq "$RC" 1 "an invalid spec exits 1"
expect_no_file out.sh "render -o writes nothing for an invalid spec"
expect_eq "$OUT" "" "and prints nothing on stdout"
expect_eq "$ERR" 'job.yaml:4:1: gpus_per_nod: unknown field (did you mean gpus_per_node?)
job.yaml:5:16: cpus_per_node: must be at least 1, got 0
job.yaml:6:6: mem: expected a size such as 380GB (units KB MB GB TB, K M G T, KiB MiB GiB TiB; at most 64TB), got "380XB"
job.yaml:7:11: walltime: expected [[HH:]MM:]SS or D-HH:MM:SS, got "2h"
job.yaml:8:8: queue: expected a string, got a list
job.yaml:9:10: project: "vp 91" contains a blank, which a #PBS/#SBATCH directive cannot carry
job.yaml:10:10: modules: expected a list, got a plain value
job.yaml:11:7: env: RANK is set by ddpjob-agent for each worker and cannot be set in the spec
job.yaml:11:18: env: "9X" is not a valid environment variable name
job.yaml:11:31: env: value of GOOD must be a string, got a list
job.yaml:12:14: master_port: must be between 1 and 65535, got 70000
job.yaml:13:15: max_restarts: must be between 0 and 1000, got -1
job.yaml:14:21: rendezvous_timeout: expected a whole number, got a quoted string
job.yaml:15:10: command: must not be empty: give the program and its arguments
job.yaml:16:16: pbs.storage: empty item in "scratch/vp91+"
job.yaml:16:40: pbs.jobfs: expected a size such as 380GB (units KB MB GB TB, K M G T, KiB MiB GiB TiB; at most 64TB), got "lots"
job.yaml:16:56: pbs.launcher: expected pbsdsh or ssh, got "pdsh"
job.yaml:16:75: pbs.directives: contains a newline or control character, which cannot be made safe in a job script directive
job.yaml:17:20: slurm.exclusive: expected true or false, got a plain value "maybe"
job.yaml:17:27: slurm.extra: unknown field
job.yaml:18:1: schedular: unknown field (did you mean scheduler?)
ddpjob: job.yaml: 21 problems; nothing was written' "every problem is reported at once, with line and column"

# One check per kind of mistake, each on its own.
check() { # DESCRIPTION EXPECTED-STDERR-LINE SPEC-TEXT
    printf '%s' "$3" >case.yaml
    run "$DDPJOB" validate case.yaml
    expect_eq "$RC" 1 "$1: exit 1"
    expect_contains "$ERR" "$2" "$1: message"
}
base='name: x
scheduler: slurm
command: [a]
'
check "YAML syntax error carries libyaml's position" \
    "case.yaml:3:10: YAML syntax error: mapping values are not allowed in this context" \
    'name: x
nodes: 2
  command: [a]
'
check "unterminated quote" "case.yaml:2:1: YAML syntax error: found unexpected end of stream while scanning a quoted scalar" \
    'name: "x
'
check "sweep: a parameter given twice (libyaml keeps both keys)" 'case.yaml:6:32: sweep.grid: seed: given twice' \
    "${base}nodes: 1
sweep:
  grid: {lr: [0.1], seed: [1], seed: [2]}
"
check "notify: an event it does not know" 'case.yaml:5:28: notify.on: "started" is no event: failed, requeued, completed or slow' \
    "${base}nodes: 1
notify: {email: a@b.c, on: [failed, started]}
"
check "notify: a webhook that is not http(s), the URL not said" \
    'case.yaml:5:19: notify.webhook: not an http:// or https:// URL (the URL is not repeated here: it is a secret)' \
    "${base}nodes: 1
notify: {webhook: ftp://example.org/secret-key}
"
check "notify: nothing to send to" 'case.yaml:5:9: notify: names no email: and no webhook: to send to' \
    "${base}nodes: 1
notify: {on: [failed]}
"
check "unknown scheduler" 'case.yaml:2:12: scheduler: expected pbs, slurm or sge, got "lsf"' \
    'name: x
scheduler: lsf
nodes: 1
command: [a]
'
check "misspelt scheduler gets a suggestion" 'scheduler: expected pbs, slurm or sge, got "slurn" (did you mean slurm?)' \
    'name: x
scheduler: slurn
nodes: 1
command: [a]
'
check "zero nodes" "case.yaml:4:8: nodes: must be at least 1, got 0" "${base}nodes: 0
"
check "negative nodes" "nodes: must be at least 1, got -2" "${base}nodes: -2
"
check "nodes as text" 'nodes: expected a whole number, got "two"' "${base}nodes: two
"
check "an elastic range whose least is above its most" \
    'case.yaml:4:8: nodes: expected a count, or MIN:MAX with 1 <= MIN <= MAX <= 100000, got "3:2"' "${base}nodes: 3:2
"
check "an elastic range for a scheduler" \
    "case.yaml:4:8: nodes: 2:3: an elastic world runs with \`ddpjob launch\`; a scheduler allocates a fixed count" \
    "${base}nodes: 2:3
"
check "spares with an elastic range" "case.yaml:5:9: spares: an elastic world (nodes: 2:3) has no spares" "${base}nodes: 2:3
spares: 1
"
check "negative spares" "spares: must be between 0 and 99999, got -1" "${base}nodes: 2
spares: -1
"
check "fractional GPUs" 'gpus_per_node: expected a whole number, got "1.5"' "${base}nodes: 1
gpus_per_node: 1.5
"
check "empty command string" "command: must not be empty" 'name: x
scheduler: slurm
nodes: 1
command: ""
'
check "empty program name" "command: the program name must not be empty" 'name: x
scheduler: slurm
nodes: 1
command: ["", a]
'
check "command as a mapping" "command: expected a list of arguments or a string, got a mapping" 'name: x
scheduler: slurm
nodes: 1
command: {a: b}
'
check "missing required fields" "case.yaml:1:1: command: missing (required, unless a train: block names the built-in workload)" 'name: x
scheduler: slurm
nodes: 1
'
check "train: a misspelt option" "case.yaml:5:3: train.epoch: unknown ddp-train option (did you mean epochs?)" 'name: x
scheduler: slurm
nodes: 1
train:
  epoch: 3
'
check "train: a value of the wrong kind" 'case.yaml:5:10: train.model: ddp-train would refuse it: --model vgg: expected mlp or resnet' 'name: x
scheduler: slurm
nodes: 1
train:
  model: vgg
  lr: fast
'
check "train: a number that is not one" 'case.yaml:6:7: train.lr: ddp-train would refuse it: --lr fast: expected a number from 0 to 1000' 'name: x
scheduler: slurm
nodes: 1
train:
  model: mlp
  lr: fast
'
check "train: checked by ddp-train's own table (a range)" 'case.yaml:4:16: train.depth: ddp-train would refuse it: --depth 0: expected a depth from 8 to 1202' 'name: x
scheduler: slurm
nodes: 1
train: {depth: 0}
'
check "train: checked by ddp-train's own rules (ResNet depth)" "train.depth: ddp-train would refuse it: --depth 10: a ResNet's depth is 6n+2" 'name: x
scheduler: slurm
nodes: 1
train: {model: resnet, depth: 10}
'
check "command and train together" "train: the spec already has a command; give command or train, not both" 'name: x
scheduler: slurm
nodes: 1
command: [a]
train: {epochs: 2}
'
check "missing name" "case.yaml:1:1: name: missing (required)" 'scheduler: slurm
nodes: 1
command: [a]
'
printf 'name: x\nnodes: 1\ncommand: [a]\n' >local.yaml
run "$DDPJOB" validate local.yaml
expect_eq "$RC" 0 "a spec without a scheduler is valid (for ddpjob run)"
expect_contains "$OUT" "local.yaml: ok (local only: no scheduler" "and validate says it is local only"
printf 'container: {runtime: enroot, image: %s/missing.sqsh}\n' "$PWD" >>local.yaml
run "$DDPJOB" validate local.yaml
expect_eq "$RC" 1 "a local-only spec whose image is not on this machine is refused"
expect_contains "$ERR" "local.yaml:4:37: container.image: $PWD/missing.sqsh: No such file or directory (a spec with no scheduler runs on this machine" \
    "naming the image and why it must be here"
printf 'name: x\nnodes: 1\ncommand: [a]\n' >local.yaml
run "$DDPJOB" render local.yaml
expect_eq "$RC" 1 "render of a spec without a scheduler fails"
expect_contains "$ERR" "scheduler: missing: set scheduler: pbs, slurm or sge in the spec, or pass --scheduler" \
    "saying what to set"
check "duplicate field" "case.yaml:5:1: nodes: given more than once" "${base}nodes: 1
nodes: 2
"
check "walltime minutes out of range" 'walltime: expected [[HH:]MM:]SS or D-HH:MM:SS, got "1:75:00"' "${base}nodes: 1
walltime: 1:75:00
"
check "memory without unit" 'mem: expected a size such as 380GB (units KB MB GB TB, K M G T, KiB MiB GiB TiB; at most 64TB), got "380"' "${base}nodes: 1
mem: 380
"
check "a size that overflows 64 bits" 'mem: expected a size such as 380GB (units KB MB GB TB, K M G T, KiB MiB GiB TiB; at most 64TB), got "18446744073709551619K"' "${base}nodes: 1
mem: 18446744073709551619K
"
check "a size above 64TB" 'got "65TB"' "${base}nodes: 1
mem: 65TB
"
check "a job name with a slash" "case.yaml:1:7: name: \"../../../x\": a job's name may not hold '/' or start with '.'" 'name: "../../../x"
scheduler: slurm
nodes: 1
command: [a]
'
check "newline in a directive value" "name: contains a newline or control character" 'name: "a\nb"
scheduler: slurm
nodes: 1
command: [a]
'
check "blank in the job name" 'name: "my job" contains a blank' 'name: my job
scheduler: slurm
nodes: 1
command: [a]
'
check "PBS job-name rules" 'case.yaml:1:7: name: "a$(id)" is not a valid PBS job name' 'name: "a$(id)"
scheduler: pbs
nodes: 1
command: [a]
'
check "a second YAML document" "case.yaml:5:1: a spec file holds one YAML document; found another here" "${base}nodes: 1
---
name: y
"
check "empty file" "case.yaml:1:1: the spec is empty" ""
check "not a mapping" "the spec must be a mapping of fields" '- a
- b
'
check "misspelt nested key" "case.yaml:5:7: pbs.storag: unknown field (did you mean pbs.storage?)" "${base}nodes: 1
pbs: {storag: [a]}
"
check "slurm.signal is gone" 'slurm.signal: is gone: use checkpoint: {signal: USR2, before: 120}' "${base}nodes: 1
slurm: {signal: USR2@120}
"
check "checkpoint signal by name" 'checkpoint.signal: expected a signal such as USR1 or SIGUSR2, got "SIGFOO"' "${base}nodes: 1
checkpoint: {signal: SIGFOO}
"
check "checkpoint before the walltime" 'checkpoint.before: 600 s is not less than the walltime (300 s)' "${base}nodes: 1
walltime: \"00:05:00\"
checkpoint: {signal: USR1, before: 600}
"
check "requeue of train: without checkpoints" 'requeue: a requeued train: run needs train.checkpoint_dir' "name: t
scheduler: slurm
nodes: 1
requeue: 2
train: {synthetic: true}
"
check "one error_file for several nodes" 'error_file: every node of the job would write "fail.json": put %n (the node' "${base}nodes: 2
error_file: fail.json
"
check "an unknown binding" 'cpu_binding: expected cores or numa or none, got "sockets"' "${base}nodes: 1
cpu_binding: sockets
"
check "agent-owned variable prefix" "env: DDPJOB_TOKEN is set by ddpjob-agent" "${base}nodes: 1
env: {DDPJOB_TOKEN: x}
"
check "negative hang timeout" "case.yaml:5:15: hang_timeout: must be between 0 and 604800, got -5" "${base}nodes: 1
hang_timeout: -5
"
printf '%s' "${base}nodes: 1
hang_timeout: 90
" >hang.yaml
run "$DDPJOB" render hang.yaml --scheduler slurm
expect_contains "$OUT" "--hang-timeout 90" "hang_timeout reaches the agents' command line"
check "a slow factor of 1" 'case.yaml:5:14: slow_factor: expected 0 (never) or a factor above 1 and at most 100, got "1"' "${base}nodes: 1
slow_factor: 1
"
printf '%s' "${base}nodes: 1
slow_factor: 2.5
slow_window: 60
" >slow.yaml
run "$DDPJOB" render slow.yaml --scheduler pbs
expect_contains "$OUT" "--slow-factor 2.5 --slow-window 60" "slow_factor and slow_window reach the agents' command line"
run "$DDPJOB" render hang.yaml --scheduler pbs
expect_lacks "$OUT" "--slow-" "without them the agents keep their defaults"

# Valid specs: the bundled examples, a string command, null optional fields.
for spec in "$SRCDIR"/share/examples/*.yaml; do
    run "$DDPJOB" validate "$spec"
    expect_eq "$RC" 0 "$(basename "$spec") is valid"
done
printf '%s' "${base}nodes: 1
queue: ~
cpus_per_node:
slurm: {constraint: \"\"}
" >ok.yaml
run "$DDPJOB" validate ok.yaml
expect_eq "$OUT" "ok.yaml: ok (slurm, 1 node x 1 worker)" "null and empty optional fields count as unset"
run "$DDPJOB" validate --scheduler pbs "$SRCDIR/share/examples/slurm-2x8.yaml"
expect_eq "$RC" 0 "--scheduler overrides the spec's scheduler"
run "$DDPJOB" validate /nonexistent/job.yaml
expect_eq "$RC" 3 "an unreadable spec exits 3"
expect_eq "$ERR" "ddpjob: /nonexistent/job.yaml: No such file or directory" "and says why"

# --set PATH=VALUE: typed and checked as if the file held it; its problems name the flag.
cat >set.yaml <<'SPEC'
name: sweepable
scheduler: slurm
nodes: 2
env: {A: "1"}
train: {synthetic: true, epochs: 2, lr: 0.1}
SPEC
run "$DDPJOB" render set.yaml --bindir /opt/ddpjob/bin --set nodes=4 --set train.lr=0.05 --set env.SEED=3 \
    --set 'modules=[cuda/12, nccl]' --set container.image=/i/x.sqsh
expect_eq "$RC" 0 "--set overrides render"
expect_contains "$OUT" "#SBATCH --nodes=4" "a number (nodes=4)"
expect_contains "$OUT" "--lr 0.05" "a train: option (train.lr=0.05)"
expect_contains "$OUT" "export SEED=3" "an env: variable the file lacks (env.SEED=3)"
expect_contains "$OUT" "module load nccl" "a list as YAML (modules=[cuda/12, nccl])"
expect_contains "$OUT" "--container-image=/i/x.sqsh" "a block the file lacks (container.image)"
run "$DDPJOB" validate set.yaml --set train.lr=abc --set nodes=zero --set foo=1
expect_eq "$RC" 1 "a bad override fails validation"
expect_contains "$ERR" "set.yaml: --set train.lr=abc: ddp-train would refuse it: --lr abc: expected a number" "naming the flag (train.lr)"
expect_contains "$ERR" "set.yaml: --set nodes=zero: expected a whole number, got \"zero\"" "(nodes)"
expect_contains "$ERR" "set.yaml: --set foo=1: unknown field" "an unknown field"
run "$DDPJOB" validate set.yaml --set noequals --set nodes.x=1 --set 'x=['
expect_contains "$ERR" "--set noequals: expected PATH=VALUE" "an override without ="
expect_contains "$ERR" "--set nodes.x=1: nodes is not a block of fields in the spec" "a path through a value"
expect_contains "$ERR" "--set x=[: not a YAML value" "a value that is not YAML"

# A bare walltime below a minute: seconds here and to PBS, minutes to Slurm's own --time. Both
# readings said, at the field; a bare number of a minute or more, or "MM:SS", says nothing.
printf 'name: t\nscheduler: slurm\nnodes: 1\nwalltime: 10\ncommand: [true]\n' >"$T/bare.yaml"
run "$DDPJOB" validate "$T/bare.yaml"
expect_contains "$RC:$ERR" "0:$T/bare.yaml:4:11: walltime: warning: 10 is taken as 10 seconds (as PBS reads it; Slurm's own --time=10 would be 10 minutes" \
    "walltime: 10 is a warning naming both readings, at the field"
expect_contains "$ERR" 'write "00:00:10" for seconds or "10:00" for minutes' "... and the forms that leave no doubt"
run "$DDPJOB" validate "$T/bare.yaml" --set walltime=3600
expect_lacks "$ERR" "warning" "a bare number of a minute or more: no warning"
run "$DDPJOB" validate "$T/bare.yaml" --set walltime=00:00:10
expect_lacks "$ERR" "warning" "\"00:00:10\": no warning"

# A checkpoint signal for a command of one's own: validate notes that it must be handled (its
# default action kills the program); ddp-train (train:) handles it itself.
run "$DDPJOB" validate "$SRCDIR/share/examples/slurm-2x8.yaml"
expect_contains "$ERR" "slurm-2x8.yaml:17:13: checkpoint: note: the program must handle SIGUSR2 (set a flag, finish the step, save, exit 75)" \
    "validate notes that a command's program must handle the checkpoint signal, at the field"
printf 'name: t\nnodes: 1\ncheckpoint: {signal: USR1}\ntrain: {synthetic: true}\n' >"$T/train-ckpt.yaml"
run "$DDPJOB" validate "$T/train-ckpt.yaml"
expect_lacks "$ERR" "must handle" "not for train:, whose ddp-train handles it"

# Workers without cpus_per_node (issue 72): each node asks for one CPU per worker, and validate
# says so; the scheduler's default (one CPU per node's task) would have them share one.
printf 'name: two\nscheduler: slurm\nnodes: 1\nprocs_per_node: 2\nwalltime: "00:05:00"\ncommand: [echo]\n' >"$T/two.yaml"
run "$DDPJOB" validate "$T/two.yaml"
expect_contains "$ERR" "two.yaml:4:17: procs_per_node: note: no cpus_per_node, so each node asks for 2: 2 worker(s) x 1 CPU" \
    "validate: no cpus_per_node: a note naming what each node asks for, at the field"
run "$DDPJOB" render "$T/two.yaml"
expect_contains "$OUT" "#SBATCH --cpus-per-task=2" "... which sbatch is asked for"
run "$DDPJOB" render "$T/two.yaml" --scheduler pbs
expect_contains "$OUT" "#PBS -l select=1:ncpus=2" "... and PBS too"
run "$DDPJOB" validate "$T/two.yaml" --set cpus_per_node=8
expect_lacks "$ERR" "no cpus_per_node" "a spec that names its CPUs: no note"
run "$DDPJOB" render "$T/two.yaml" --set slurm.exclusive=true
expect_lacks "$OUT" "#SBATCH --cpus-per-task" "exclusive: whole nodes, nothing asked per worker"

# A pipeline (issue 70): its stages checked whole, each problem at its place, before anything runs.
mkdir -p "$T/pipe" && cd "$T/pipe" || exit 1
stage_spec() { # NAME COMMAND
    printf 'name: %s\nscheduler: slurm\nnodes: 1\ncpus_per_node: 1\nwalltime: "00:05:00"\ncommand: %s\n' "$1" "$2"
}
{ stage_spec sw "[sh, -c, 'echo lr={lr}']"; printf 'sweep: {grid: {lr: [0.1, 0.2]}, objective: {metric: loss, goal: min}}\n'; } >sweep.yaml
stage_spec tr "[sh, -c, 'echo lr={sweep.best.params.lr} from {sweep.record}']" >train.yaml
stage_spec ev "[sh, -c, 'echo eval {train.checkpoint}']" >eval.yaml
cat >tune.yaml <<'PIPE'
name: tune
stages:
  sweep: {spec: sweep.yaml}
  train: {spec: train.yaml, after: {ok: [sweep]}}
  eval:  {spec: eval.yaml, set: {walltime: "00:02:00"}, after: {ok: [train]}}
PIPE
run "$DDPJOB" validate tune.yaml
expect_eq "$RC" 0 "validate of a 3-stage pipeline: ok" "$ERR"
expect_contains "$OUT" "tune.yaml: ok: pipeline tune of 3 stage(s): sweep (sweep.yaml), train (train.yaml, after sweep ok; its values" \
    "... naming its stages in their order, and what each waits for"
cat >bad.yaml <<'PIPE'
stages:
  a: {spec: eval.yaml, after: {ok: [b]}}
  b: {spec: eval.yaml, after: {ok: [a], any: [zz]}}
  c: {spec: train.yaml, after: {ok: [a]}}
  d: {spec: nothere.yaml, sett: 1}
  sweep: {spec: sweep.yaml}
  e: {spec: train.yaml, after: {any: [sweep]}, set: {env.X: "{sweep.best.loss}"}}
  f: {spec: nothere.yaml, after: {ok: [f]}}
PIPE
run "$DDPJOB" validate bad.yaml
expect_eq "$RC" 1 "a pipeline with problems: exit 1"
expect_contains "$ERR" 'bad.yaml:2:3: a: a cycle: a -> b -> a' "a cycle, named stage by stage"
expect_contains "$ERR" 'bad.yaml:3:47: after: no stage "zz"' "after: naming no stage"
expect_contains "$ERR" 'bad.yaml:8:40: after: f cannot wait for itself' "a stage waiting for itself"
expect_contains "$ERR" 'bad.yaml:5:27: d: sett: unknown field (spec, set, after)' "an unknown field"
expect_contains "$ERR" 'bad.yaml:5:3: d: spec: nothere.yaml' "a spec that is not there"
expect_contains "$ERR" 'train.yaml:6:28: c: {sweep.best.params.lr}: c does not wait for sweep (after:)' \
    "a value from a stage the stage does not wait for, at its place in the spec"
expect_contains "$ERR" 'bad.yaml:7:61: set: {sweep.best.loss}: best.loss: a stage has best.params.NAME, best.checkpoint, record and checkpoint' \
    "a value of no kind there is"
expect_eq "$OUT" "" "... and no ok"
run "$DDPJOB" render tune.yaml
expect_eq "$RC" 2 "render of a pipeline: one stage's spec is rendered, said (exit 2)"
expect_contains "$ERR" "tune.yaml is a pipeline (stages:): render one stage's spec" "... naming it a pipeline"
sed 's/after: {ok: \[sweep\]}/after: {best: [sweep]}/' tune.yaml >best.yaml
run "$DDPJOB" validate best.yaml
expect_contains "$OUT" "train (train.yaml, after sweep best;" "after: {best: [SWEEP]}: at least one trial completed" "$ERR"
sed 's/after: {ok: \[sweep\]}/after: {done: [sweep]}/' tune.yaml >done.yaml
run "$DDPJOB" validate done.yaml
expect_contains "$ERR" "done: expected ok, any, notok or best" "an after: kind there is none of"
run "$DDPJOB" submit tune.yaml --set nodes=2
expect_eq "$RC" 2 "submit of a pipeline with --set: refused (exit 2)"
expect_contains "$ERR" "submit takes it with --scheduler, --site, --bindir and --dry-run alone" "... saying what it takes"
run "$DDPJOB" submit tune.yaml --dry-run
expect_eq "$RC" 0 "submit --dry-run of a pipeline" "$ERR"
expect_contains "$OUT" "pipeline tune: would submit sweep now, train as those before it end" "... says what goes when"
expect_eq "$(ls -A "$T/pipe/.ddpjob" 2>/dev/null)" "" "... and writes nothing"
cd "$T" || exit 1
