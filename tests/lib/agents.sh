# Shared by the agent suites: run real ddpjob-agents in the background, wait for them with a
# deadline, and prove that nothing they started is left running.
# shellcheck source=tap.sh
. "$SRCDIR/tests/lib/tap.sh"
: "${AGENT:?run through meson test}"

# Every process of a test carries this mark in its environment (the test shell itself does not),
# so leftovers can be found by it.
MARK=ddpjob-test-$$-$RANDOM
# Below the kernel's ephemeral range (32768 and up), where the ranks' own sockets live; even, as
# a job takes two ports (job_contract.h).
PORT_BASE=$((20000 + 2 * (($$ * 7) % 6000)))
PORT_NEXT=0
declare -A AGENT_PID

# Sets PORT to a job's master port (the workers' MASTER_PORT) and STORE_PORT to the agents' store
# port after it: distinct per case and per suite run, so that suites running at once do not
# collide.
next_port() {
    PORT_NEXT=$((PORT_NEXT + 2))
    PORT=$((PORT_BASE + PORT_NEXT))
    STORE_PORT=$((PORT + 1))
}

# start_agent NAME [ENV=VALUE...] -- AGENT_ARGS...: output goes to $T/NAME.out and $T/NAME.err;
# killed after AGENT_KILL_AFTER seconds (default 120) if it has not ended by then; stdout goes to
# AGENT_STDOUT instead when that is set.
start_agent() {
    local name=$1
    shift
    local envs=()
    while [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    # Emptied here, before the agent starts, so nobody reads the last case's output as this one's.
    : >"$T/$name.out"
    : >"$T/$name.err"
    env DDPJ_TESTMARK="$MARK" "${envs[@]}" timeout -s KILL "${AGENT_KILL_AFTER:-120}" "$AGENT" "$@" \
        >>"${AGENT_STDOUT:-$T/$name.out}" 2>>"$T/$name.err" &
    AGENT_PID[$name]=$!
}

# Until node 0's store listens on STORE_PORT here (its agent is up), at most 30 s.
wait_listening() {
    for _ in $(seq 300); do ss -ltn "sport = :$STORE_PORT" | grep -q LISTEN && return 0; sleep 0.1; done
    return 1
}

# two_agents [ENV=VALUE...] -- AGENT_ARGS...: one job's node 1 and node 0, started in that order
# with NODE1_ARGS / NODE0_ARGS (arrays; by default --node-rank 1 / --node-rank 0) before
# AGENT_ARGS, and both waited for: RC0/RC1, OUT0/OUT1, ERR0/ERR1, and OUT, both nodes' stdout.
two_agents() {
    local envs=() node0=(--node-rank 0) node1=(--node-rank 1)
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    if declare -p NODE0_ARGS >/dev/null 2>&1; then node0=("${NODE0_ARGS[@]}"); fi
    if declare -p NODE1_ARGS >/dev/null 2>&1; then node1=("${NODE1_ARGS[@]}"); fi
    start_agent n1 "${envs[@]}" -- "${node1[@]}" "$@"
    start_agent n0 "${envs[@]}" -- "${node0[@]}" "$@"
    wait_agent n0
    RC0=$RC OUT0=$OUT ERR0=$ERR
    wait_agent n1
    RC1=$RC OUT1=$OUT ERR1=$ERR
    OUT=$OUT0$OUT1
}

# The pid of agent NAME itself (start_agent's $! is the `timeout` wrapping it).
agent_pid() {
    pgrep -P "${AGENT_PID[$1]}" -x ddpjob-agent
}

# wait_agent NAME: RC gets its status, OUT and ERR its output.
wait_agent() {
    if wait "${AGENT_PID[$1]}"; then RC=0; else RC=$?; fi
    OUT=$(cat "$T/$1.out")
    ERR=$(cat "$T/$1.err")
}

# wait_for TEXT FILE...: until every FILE holds TEXT (an agent's output), 60 s at most: a loaded
# machine may take long to start workers, and a case must not act on agents still joining.
# 1, failing the test with what was missing, when they do not.
wait_for() {
    local text=$1 f missing
    shift
    for _ in $(seq 600); do
        missing=
        for f in "$@"; do grep -q -- "$text" "$f" 2>/dev/null || missing+=" $f"; done
        [ -z "$missing" ] && return 0
        sleep 0.1
    done
    fail "\"$text\" appears in$missing within 60 s" "$(tail -n 5 "$@" 2>/dev/null)"
    return 1
}

# The pids of processes carrying this test's mark.
marked_pids() {
    local f pid state
    for f in $(grep -lsz "^DDPJ_TESTMARK=$MARK\$" /proc/[0-9]*/environ); do
        pid=${f#/proc/}
        pid=${pid%/environ}
        # Zombies waiting for the sandbox's init to reap them are gone already.
        read -r _ _ state _ 2>/dev/null <"/proc/$pid/stat" && [ "$state" != Z ] && echo "$pid"
    done
}

# expect_no_leftovers DESCRIPTION: nothing of this test may still run (a moment is allowed for
# PR_SET_PDEATHSIG and SIGKILL to land).
expect_no_leftovers() {
    local left i
    for i in $(seq 50); do
        left=$(marked_pids)
        [ -z "$left" ] && break
        sleep 0.1
    done
    if [ -z "$left" ]; then
        pass "$1"
    else
        fail "$1" "still running: $(for p in $left; do tr '\0' ' ' <"/proc/$p/cmdline"; echo; done)"
        kill -9 $left 2>/dev/null
    fi
}

# The walltime chains' workload (the PBS and Slurm suites' train: block) and its uninterrupted
# reference: CHAIN_EPOCHS epochs of 4096 samples over 4 ranks at batch 32 (32 steps each), each
# step at least CHAIN_MIN_STEP_MS. That floor (32 s in all) keeps any link, on however fast a
# machine, from finishing before its checkpoint signal (20 s in), so the chain has 2 links or
# more; a machine 5x slower than ours still needs few (its steps are slower than the floor).
CHAIN_EPOCHS=10 CHAIN_MIN_STEP_MS=100
chain_train() { # CHECKPOINT_DIR: the spec's train: block
    echo "{synthetic: true, synthetic_size: \"4096,512\", epochs: $CHAIN_EPOCHS, batch_size: 32, seed: 7," \
        "min_step_ms: $CHAIN_MIN_STEP_MS, checkpoint_dir: $1}"
}

# sweep_chain_trials CHECKPOINT_PREFIX PARALLEL: the sweep suites' walltime lines and a sweep of two
# chain_train trials, each checkpointing into PREFIX-EPOCHS: trial 0 of 1 epoch, done inside its
# first link; trial 1 of CHAIN_EPOCHS, which needs more than one, so its walltime requeues it.
sweep_chain_trials() {
    cat <<SPEC
walltime: "00:01:00"
checkpoint: {signal: USR1, before: 40}
requeue: 10
env: {OPENBLAS_CORETYPE: Haswell}
sweep:
  trials: [{epochs: 1}, {epochs: $CHAIN_EPOCHS}]
  parallel: $2
train: {synthetic: true, synthetic_size: "4096,512", epochs: "{epochs}", batch_size: 32, seed: 7,
        min_step_ms: $CHAIN_MIN_STEP_MS, checkpoint_dir: "$1-{epochs}"}
SPEC
}

# expect_requeued_alone DDPJOB_FN NAME CHECKPOINT_PREFIX: sweep_chain_trials' sweep NAME, seen
# through DDPJOB_FN (the suite's ddpjob runner: RC, OUT), ended as it must: trial 0 completed in
# one link and ran once, trial 1 completed after its requeue and resumed from its own checkpoint;
# the table has ddp-train's metrics.
expect_requeued_alone() {
    local dj=$1 name=$2 prefix=$3 row0 row1
    "$dj" status "$name"
    expect_contains "$(sed -n 3p <<<"$OUT")" "test_acc" "the table has ddp-train's metrics"
    row0=$(grep '^0 ' <<<"$OUT") row1=$(grep '^1 ' <<<"$OUT")
    expect_contains "$row0" "completed                                 1 " "trial 0 completed in its first link"
    if [[ $row1 =~ completed\ +([0-9]+)\  ]] && [ "${BASH_REMATCH[1]}" -ge 2 ]; then
        pass "trial 1 completed after its walltime requeued it (link ${BASH_REMATCH[1]})"
    else
        fail "trial 1 completed after its walltime requeued it" "$OUT"
    fi
    "$dj" logs "$name" --trial 1 --rank 0 --link 2
    expect_contains "$OUT" "resuming from $prefix-$CHAIN_EPOCHS/checkpoint.ddpt" "trial 1's second link resumed from its own checkpoint"
    "$dj" logs "$name" --trial 0 --rank 0
    expect_eq "$(grep -c 'epoch 1/1' <<<"$OUT")" 1 "trial 0 ran once: the other trial's requeue did not rerun it"
}

# spares_spec SCHEDULER CHECKPOINT_DIR SPARES: the cluster suites' spares job: chain_train's
# workload (CHAIN_EPOCHS epochs, a 40 ms step floor) on 2 nodes x 2 workers and SPARES more.
spares_spec() {
    cat <<SPEC
name: spares
scheduler: $1
nodes: 2
spares: $3
procs_per_node: 2
max_restarts: 2
walltime: "00:05:00"
env: {OPENBLAS_CORETYPE: Haswell, OMP_NUM_THREADS: "1"}
train: {synthetic: true, synthetic_size: "4096,512", epochs: $CHAIN_EPOCHS, batch_size: 32, seed: 7, min_step_ms: 40, checkpoint_dir: $2}
SPEC
}

# expect_same_as_uninterrupted CHECKPOINT DESCRIPTION [DETAIL...]: the cluster suites' walltime
# chain workload (chain_train's, without its step floor; 4 ranks, one BLAS kernel) run without
# interruption ends with exactly the checkpoint CHECKPOINT. The run has the
# chain's layout, 2 hosts x 2 workers, where REFERENCE_HOSTS names the hosts' two namespaces
# (REFERENCE_MASTER: the first one's address): the sums of an all_reduce are grouped by host
# there, so only the same layout gives the same bits. Without it: 4 workers here.
expect_same_as_uninterrupted() {
    local ckpt=$1 what=$2 diff
    shift 2
    # One reference run per workload and layout, however many checkpoints it is compared with.
    local whole=$T/whole-$CHAIN_EPOCHS-${REFERENCE_HOSTS[*]:+hosts}
    local job=(train --synthetic --synthetic-size 4096,512 --epochs "$CHAIN_EPOCHS" --batch-size 32 --seed 7
        --checkpoint-dir "$whole")
    RC=0 ERR=
    if [ -s "$whole/checkpoint.ddpt" ]; then
        :
    elif [ -n "${REFERENCE_HOSTS[*]:-}" ]; then
        next_port
        local node common=(--nnodes 2 --nproc-per-node 2 --master-addr "$REFERENCE_MASTER" --master-port "$PORT")
        for node in 1 0; do
            AGENT=ip start_agent "whole$node" OPENBLAS_CORETYPE=Haswell DDPJOB_TOKEN=reference-$$ -- \
                netns exec "${REFERENCE_HOSTS[$node]}" "$AGENT" "${common[@]}" --node-rank "$node" "$TRAIN" "${job[@]}"
        done
        wait_agent whole1
        wait_agent whole0
    else
        start_agent whole0 OPENBLAS_CORETYPE=Haswell -- --standalone --nproc-per-node 4 "$TRAIN" "${job[@]}"
        wait_agent whole0
    fi
    if [ "$RC" = 0 ] && diff=$("$TRAIN" diff "$whole/checkpoint.ddpt" "$ckpt" --tolerance 0); then
        pass "$what ($(tail -n 1 <<<"$diff"))"
    else
        fail "$what" "$@" "$ERR" "${diff:-}"
    fi
}

# A worker program written into $T.
worker() { # NAME BODY
    printf '#!/bin/bash\n%s\n' "$2" >"$T/$1"
    chmod +x "$T/$1"
}

# The real PyTorch the suites' workers run on (Debian's python3-torch for /usr/bin/python3): a
# suite without it has failed, not skipped. PY: that python.
PY=/usr/bin/python3
require_torch() {
    if ! "$PY" -c 'import torch' 2>"$T/torch.err"; then
        fail "PyTorch is importable by $PY (install python3-torch)" "$(cat "$T/torch.err")"
        exit 1
    fi
}

# pipeline_case SCHEDULER DDPJOB_FN QUEUE_FN NOARRAYS_SITE: issue 70's pipelines on a real
# scheduler, from $PWD/pipe. A 4-trial ddp-train sweep (an array job), then its best trial
# trained longer from its own checkpoint with its lr, then an evaluation of that checkpoint; a
# sweep whose every trial fails (in lanes: the site takes no arrays), after which the stages that
# can no longer run are cancelled with the reason and nothing of them is queued (QUEUE_FN prints
# the names of the scheduler's jobs waiting or running); a pipeline cancelled whole.
# DDPJOB_FN runs ddpjob there (RC, OUT, ERR).
pipeline_case() {
    local sched=$1 dj=$2 queue=$3 site=$4 dir=$PWD/pipe best record script job
    mkdir -p "$dir"
    cat >"$dir/sweep.yaml" <<SPEC
name: psweep
scheduler: $sched
nodes: 1
procs_per_node: 1
walltime: "00:05:00"
env: {OPENBLAS_CORETYPE: Haswell}
sweep:
  grid: {lr: [0.05, 0.1, 0.2, 0.4]}
  parallel: 2
  objective: {metric: loss, goal: min}
train: {synthetic: true, synthetic_size: "1024,256", epochs: 1, batch_size: 32, seed: 3, lr: "{lr}",
        checkpoint_dir: "$dir/ckpt-{lr}"}
SPEC
    cat >"$dir/train.yaml" <<SPEC
name: ptrain
scheduler: $sched
nodes: 1
procs_per_node: 1
walltime: "00:05:00"
env: {OPENBLAS_CORETYPE: Haswell}
train: {synthetic: true, synthetic_size: "1024,256", epochs: 2, batch_size: 32, seed: 3,
        lr: "{sweep.best.params.lr}", checkpoint_dir: "{sweep.best.checkpoint}", resume: true}
SPEC
    cat >"$dir/eval.yaml" <<SPEC
name: peval
scheduler: $sched
nodes: 1
procs_per_node: 1
walltime: "00:05:00"
command: [sh, -c, "echo evaluating {train.checkpoint} of {train.record}; ls {train.checkpoint}"]
SPEC
    printf 'name: tune\nstages:\n  sweep: {spec: sweep.yaml}\n  train: {spec: train.yaml, after: {ok: [sweep]}}\n  eval: {spec: eval.yaml, after: {ok: [train]}}\n' >"$dir/tune.yaml"
    "$dj" "DIR=$dir" submit tune.yaml
    expect_eq "$RC" 0 "$sched: submit of a 3-stage pipeline" "$ERR"
    expect_contains "$ERR" "pipeline tune: stage sweep submitted" "... its first stage submitted at once" "$ERR"
    expect_lacks "$ERR" "stage train submitted" "... the stages after it not yet"
    expect_contains "$OUT" "$dir/.ddpjob/pipelines/tune." "... its record's folder printed"
    # Each stage's batch shell starts the next as it ends: no ddpjob runs here meanwhile.
    for _ in $(seq 1200); do
        [ -e "$(echo "$dir"/.ddpjob/pipelines/tune.*/eval.stage)" ] && break
        sleep 0.5
    done
    expect_contains "$(cat "$dir"/.ddpjob/pipelines/tune.*/eval.stage 2>/dev/null)" "submitted" \
        "$sched: stage eval was submitted by the stage before it, as that ended"
    "$dj" "DIR=$dir" wait tune --timeout 600
    expect_eq "$RC" 0 "$sched: the pipeline completed, stage after stage" "$ERR"
    "$dj" "DIR=$dir" status tune
    expect_contains "$OUT" "pipeline tune: completed, 3 of 3 stages ended" "status of the pipeline" "$OUT"
    "$dj" "DIR=$dir" status psweep --json
    best=$(/usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["trials"][d["best"]]["params"]["lr"])' <<<"$OUT")
    "$dj" "DIR=$dir" status tune --json
    record=$(/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["stages"][1]["record"])' <<<"$OUT")
    job=$(/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["stages"][1]["job"])' <<<"$OUT")
    "$dj" "DIR=$dir" status ptrain
    expect_contains "$OUT" "job $job):" "stage train, submitted from inside a trial's job, is its own job, not the trial's" "$OUT"
    script=$(cat "$record/script" 2>/dev/null)
    expect_contains "$script" "--lr $best " "the sweep's best lr ($best) reached stage train's command" "$script"
    expect_contains "$script" "--checkpoint-dir $dir/ckpt-$best " "... and its best trial's checkpoint"
    "$dj" "DIR=$dir" logs ptrain
    expect_contains "$OUT" "resuming from $dir/ckpt-$best/checkpoint.ddpt" "stage train resumed from the best trial's checkpoint" "$OUT"
    "$dj" "DIR=$dir" logs tune --stage eval
    expect_contains "$OUT" "evaluating $dir/ckpt-$best of $record" "stage eval took train's checkpoint and record (logs tune --stage eval)" "$OUT"
    expect_contains "$OUT" "checkpoint.ddpt" "... and read the checkpoint there"

    # Every trial of the first stage fails: the stages after it are never submitted.
    sed -e 's/^name: psweep/name: pfail/' -e '/^train:/,$d' "$dir/sweep.yaml" >"$dir/fail.yaml"
    echo 'command: [sh, -c, "echo trial {lr} fails; exit 3"]' >>"$dir/fail.yaml"
    sed -e 's/^name: tune/name: tunefail/' -e 's/sweep.yaml/fail.yaml/' "$dir/tune.yaml" >"$dir/tunefail.yaml"
    "$dj" "DIR=$dir" submit tunefail.yaml --site "$site"
    expect_eq "$RC" 0 "$sched: submit of a pipeline whose first stage will fail" "$ERR"
    expect_contains "$ERR" "sweep pfail: 4 trials as 4 jobs in 2 lanes" "... a sweep in lanes, as its site takes no arrays" "$ERR"
    "$dj" "DIR=$dir" wait tunefail --timeout 300
    expect_eq "$RC" 1 "wait of it: 1, a stage failed" "$ERR"
    "$dj" "DIR=$dir" status tunefail
    expect_contains "$OUT" "pipeline tunefail: failed, 3 of 3 stages ended" "status: failed" "$OUT"
    expect_contains "$(grep '^  train ' <<<"$OUT")" "cancelled: stage sweep failed: 0 of 4 trials completed (trial 0 failed" \
        "stage train cancelled, saying why" "$OUT"
    expect_contains "$(grep '^  eval ' <<<"$OUT")" "cancelled: stage sweep failed" "stage eval cancelled with the same cause" "$OUT"
    expect_eq "$("$queue" | grep -c 'ptrain\|peval')" 0 "nothing of the cancelled stages is queued" "$("$queue")"

    # Cancelled whole while its first stage runs.
    printf 'name: pslow\nscheduler: %s\nnodes: 1\nprocs_per_node: 1\nwalltime: "00:05:00"\ncommand: [sleep, "300"]\n' "$sched" >"$dir/slow.yaml"
    printf 'name: pnote\nscheduler: %s\nnodes: 1\nprocs_per_node: 1\nwalltime: "00:05:00"\ncommand: [echo, "{slow.record}"]\n' "$sched" >"$dir/note.yaml"
    printf 'name: tunecancel\nstages:\n  slow: {spec: slow.yaml}\n  note: {spec: note.yaml, after: {any: [slow]}}\n' >"$dir/tunecancel.yaml"
    "$dj" "DIR=$dir" submit tunecancel.yaml
    "$dj" "DIR=$dir" cancel tunecancel
    expect_eq "$RC" 0 "$sched: cancel of a running pipeline" "$ERR"
    "$dj" "DIR=$dir" wait tunecancel --timeout 120
    expect_eq "$RC" 1 "... wait of it: 1"
    "$dj" "DIR=$dir" status tunecancel
    expect_contains "$OUT" "pipeline tunecancel: cancelled" "status: cancelled" "$OUT"
    expect_contains "$(grep '^  note ' <<<"$OUT")" "cancelled: the pipeline was" "the stage after it (any) never ran, saying why" "$OUT"
    expect_eq "$("$queue" | grep -c 'pslow\|pnote')" 0 "nothing of it is left in the queue" "$("$queue")"
}
