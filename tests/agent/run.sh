#!/bin/bash
# `ddpjob run SPEC`: the spec's workload under a local agent, its env, setup and workdir applied,
# and the job's exit status as ddpjob's.
. "$SRCDIR/tests/lib/agents.sh"

mkdir -p "$T/work dir"
cat >"$T/job.yaml" <<YAML
name: local-test
nodes: 1
procs_per_node: 3
workdir: "$T/work dir"
setup: |
  export FROM_SETUP="set up"
env:
  GREETING: "hello \$USER; it's 'quoted'"
command: 'echo "rank=\$RANK/\$WORLD_SIZE dir=\$(pwd) setup=\$FROM_SETUP greeting=\$GREETING"; exit \${JOB_EXIT:-0}'
YAML
run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$T/job.yaml"
expect_eq "$RC" 0 "ddpjob run exits 0 when every worker does"
expect_eq "$(grep -c '^\[rank' <<<"$OUT")" 3 "procs_per_node workers ran"
expect_contains "$OUT" "[rank 2] rank=2/3 dir=$T/work dir setup=set up greeting=hello \$USER; it's 'quoted'" \
    "each worker sees its rank, the workdir, the setup's and the spec's environment (literally)"
expect_contains "$ERR" "node 0 of 1" "under a local agent"

run env DDPJ_TESTMARK="$MARK" JOB_EXIT=9 "$DDPJOB" run "$T/job.yaml" --nproc-per-node 1
expect_eq "$RC" 9 "the job's failure is ddpjob run's exit status"
expect_contains "$ERR" "job failed (exit 9): rank 0" "with the failure summary"

run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$T/job.yaml" --set procs_per_node=1 --set 'env.GREETING=from --set'
expect_eq "$(grep -c '^\[rank' <<<"$OUT")" 1 "--set procs_per_node=1: one worker"
expect_contains "$OUT" "greeting=from --set" "--set env.GREETING: the override's value"

sed 's/^procs_per_node: 3/procs_per_node: zero/' "$T/job.yaml" >"$T/bad.yaml"
run "$DDPJOB" run "$T/bad.yaml"
expect_eq "$RC" 1 "an invalid spec is refused with exit 1"
expect_contains "$ERR" "bad.yaml:3:" "naming the line"

# ARGS after -- reach the workload: a list command's arguments, or more train: options.
cat >"$T/args.yaml" <<YAML
name: args-test
nodes: 1
procs_per_node: 1
command: [/bin/echo, from-spec]
YAML
run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$T/args.yaml" --nproc-per-node 1 -- --resume "two words"
expect_contains "$OUT" "[rank 0] from-spec --resume two words" "ddpjob run SPEC -- ARGS appends ARGS to the command"
run "$DDPJOB" run "$T/job.yaml" -- --resume
expect_eq "$RC" 2 "ARGS for a one-string shell command are a usage error"
expect_contains "$ERR" "the spec's command is one shell string, which takes no more arguments" "saying why"
run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$SRCDIR/share/examples/train-synthetic.yaml" -- --epochs 1 \
    --synthetic-size 512,128
expect_contains "$OUT" "trained after 1 of 1 epochs" "-- ARGS reach a train: block as ddp-train options"

# The walltime contract on one machine: the spec's walltime counts from the start, and its
# checkpoint signal comes `before` seconds ahead; workers that checkpoint (exit 75) stop the run.
cat >"$T/walltime.yaml" <<YAML
name: walltime-test
nodes: 1
procs_per_node: 2
walltime: "00:00:05"
checkpoint: {signal: USR2, before: 3}
requeue: 2
command: 'trap "echo rank \$RANK checkpointed; exit 75" USR2; sleep 30 & wait'
YAML
run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$T/walltime.yaml"
expect_eq "$RC" 75 "ddpjob run honours walltime and checkpoint: every rank checkpointed, exit 75"
expect_contains "$ERR" "requeue: 2 is a scheduler's chain of jobs, not run here: a run stopped at its walltime ends with 75, and \`ddpjob run\` again resumes it" \
    "and says that requeue: is not run here"
expect_contains "$OUT" "[rank 1] rank 1 checkpointed" "the workers got the checkpoint signal"
expect_contains "$ERR" "stopped for the walltime: checkpoint written by every rank; requeue to resume" "and the stop is a planned one"

# A checkpoint asked from outside (what `ddpjob cancel --checkpoint` does: the signal to the
# agent, which passes it on) is said as that, not as the walltime.
cat >"$T/asked.yaml" <<YAML
name: asked-test
nodes: 1
procs_per_node: 2
checkpoint: {signal: USR2}
command: 'trap "echo rank \$RANK checkpointed; exit 75" USR2; echo rank \$RANK started; sleep 30 & wait'
YAML
env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$T/asked.yaml" >"$T/asked.out" 2>"$T/asked.err" &
asked=$!
for _ in $(seq 200); do [ "$(grep -c started "$T/asked.out")" = 2 ] && break; sleep 0.1; done
kill -USR2 "$asked"
if wait "$asked"; then RC=0; else RC=$?; fi
expect_eq "$RC" 75 "a checkpoint asked from outside: every rank checkpointed, exit 75" "$(cat "$T/asked.err")"
expect_contains "$(cat "$T/asked.err")" "stopped as asked (SIGUSR2 from outside, as \`ddpjob cancel --checkpoint\` sends it)" \
    "and the stop is said as asked, not as the walltime's"

# log_dir: and error_file: reach the agent; a second run never writes over the first one's logs.
mkdir -p "$T/reports"
cat >"$T/reports/job.yaml" <<'YAML'
name: reports
nodes: 1
procs_per_node: 2
workdir: .
log_dir: logs
error_file: "failure-%n.json"
command: 'echo "run $RUN rank $RANK"; if [ "$RANK" = 1 ]; then exit ${CODE:-0}; fi'
YAML
(cd "$T/reports" && env DDPJ_TESTMARK="$MARK" RUN=1 "$DDPJOB" run job.yaml >/dev/null 2>&1)
(cd "$T/reports" && env DDPJ_TESTMARK="$MARK" RUN=2 CODE=4 "$DDPJOB" run job.yaml >/dev/null 2>&1)
expect_eq "$(cat "$T/reports/logs/reports/attempt_0/rank_1/stdout.log" 2>&1)" "run 1 rank 1" "log_dir: each rank's output under LOG_DIR/RUN_ID"
expect_eq "$(cat "$T/reports/logs/reports.1/attempt_0/rank_1/stdout.log" 2>&1)" "run 2 rank 1" "and the next run in LOG_DIR/RUN_ID.1, the first run's logs kept"
json=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["exit_code"], d["first_failure"]["rank"])' "$T/reports/failure-0.json" 2>&1)
expect_eq "$json" "4 1" "error_file: the failed run's JSON report, %n replaced by the node rank"

# gpu_binding and cpu_binding: each worker sees its own GPU of the visible set, and its share of
# the CPUs this run may use (checked through the affinity the worker itself sees).
cat >"$T/bind.yaml" <<'YAML'
name: bind
nodes: 1
procs_per_node: 2
gpu_binding: per-rank
cpu_binding: cores
command: 'echo "rank $RANK gpu=$CUDA_VISIBLE_DEVICES cpus=$(sed -n "s/^Cpus_allowed_list:\t//p" /proc/self/status)"'
YAML
run env DDPJ_TESTMARK="$MARK" CUDA_VISIBLE_DEVICES=3,5 "$DDPJOB" run "$T/bind.yaml"
shares=$(/usr/bin/python3 -c '
import os
cpus = sorted(os.sched_getaffinity(0))
n = 2
for i in range(n):
    lo, hi = i * len(cpus) // n, (i + 1) * len(cpus) // n
    share = [cpus[j % len(cpus)] for j in range(lo, max(hi, lo + 1))]
    print(",".join(map(str, share)))')
for r in 0 1; do
    want=$(sed -n "$((r + 1))p" <<<"$shares")
    got=$(sed -n "s/^\[rank $r\] rank $r gpu=\([^ ]*\) cpus=\(.*\)/\1 \2/p" <<<"$OUT")
    got_cpus=$(/usr/bin/python3 -c '
import sys
out = []
for part in sys.argv[1].split(","):
    lo, _, hi = part.partition("-")
    out += range(int(lo), int(hi or lo) + 1)
print(",".join(map(str, out)))' "${got#* }" 2>/dev/null)
    expect_eq "${got%% *} $got_cpus" "$([ $r = 0 ] && echo 3 || echo 5) $want" \
        "rank $r: gpu_binding per-rank gives it GPU $([ $r = 0 ] && echo 3 || echo 5), cpu_binding cores CPUs $want"
done
uuids=GPU-8f3c1e2a-1111-2222-3333-444455556666,GPU-9f3c1e2a-1111-2222-3333-444455556666
run env DDPJ_TESTMARK="$MARK" CUDA_VISIBLE_DEVICES=$uuids "$DDPJOB" run "$T/bind.yaml"
expect_contains "$OUT" "[rank 1] rank 1 gpu=${uuids#*,} " "GPUs named by UUID are bound whole"
run env DDPJ_TESTMARK="$MARK" CUDA_VISIBLE_DEVICES=3 "$DDPJOB" run "$T/bind.yaml"
expect_contains "$ERR" "--gpu-binding per-rank: 2 worker(s) but 1 visible GPU(s) (CUDA_VISIBLE_DEVICES=3)" \
    "more workers than visible GPUs is an error naming both"

# local_rank_arg: torch.distributed.launch's --local_rank=N, from the spec.
printf 'name: lr\nnodes: 1\nprocs_per_node: 2\nlocal_rank_arg: true\ncommand: [sh, -c, "echo args: \\"$@\\"", x]\n' >"$T/lr.yaml"
run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run "$T/lr.yaml"
expect_contains "$OUT" "[rank 1] args: --local_rank=1" "local_rank_arg: true appends --local_rank=N to each worker's arguments"

cd "$SRCDIR/share/examples" || exit 1
run env DDPJ_TESTMARK="$MARK" "$DDPJOB" run local-ddp.yaml
expect_eq "$RC" 0 "the bundled local-ddp example (the README's first command) runs"
expect_eq "$(grep 'parameter checksum' <<<"$OUT" | sed 's/.*checksum//' | sort -u | wc -l)/$(grep -c 'parameter checksum' <<<"$OUT")" "1/2" \
    "both DDP ranks end with identical parameters"
expect_no_leftovers "nothing left after ddpjob run"

# A sweep run here runs one trial, and says so (issue 72).
printf 'name: sw\nnodes: 1\nprocs_per_node: 1\nsweep:\n  grid: {n: [1, 2, 3]}\ncommand: [echo, "trial {n}"]\n' >"$T/sw.yaml"
run "$DDPJOB" run "$T/sw.yaml"
expect_contains "$RC:$ERR" "0:ddpjob run: $T/sw.yaml: a sweep of 3 trials: running trial 0 alone here (--trial K for another" \
    "ddpjob run of a sweep says it runs trial 0 alone"
expect_contains "$OUT" "[rank 0] trial 1" "... and runs it"
run "$DDPJOB" run "$T/sw.yaml" --trial 2
expect_eq "$RC:$(grep -c 'alone here' <<<"$ERR")" "0:0" "with --trial K, that trial, nothing said"
