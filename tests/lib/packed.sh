# packed_case SCHED DJ QUEUE: a sweep packed into a held allocation of 2 nodes (issue 69), on a
# real scheduler whose cluster has 2 nodes or more: 12 one-node trials, never more than 2 at once
# and never two on one node (from each trial's own start and end lines), each with its record,
# metrics and row, one allocation submitted for them all; a failing trial named, then retried
# alone, packed again; its report; two allocations sharing a sweep; a 2-node trial and 1-node
# trials mixed in one pack; one trial cancelled, then the whole sweep, nothing left in the queue;
# a node's agent killed under a trial, which alone goes again, on the other node; the walltime of
# the allocation mid-sweep, its next link going on with the trials left; a packed sweep as a
# pipeline's stage. DJ runs ddpjob ([DIR=D] ARGS...: RC, OUT, ERR) in D
# (default: the current folder); QUEUE prints the names of the jobs queued or running. Needs
# tests/agent/py/sweep_trial.py beside the specs.

# The most trials at once in a PACK_LOG, and whether two ran on one host at once ("shared").
pack_overlap() {
    /usr/bin/python3 - "$1" <<'PY'
import sys
events = []
for line in open(sys.argv[1]):
    what, trial, host, at = line.split()
    events.append((float(at), 0 if what == "end" else 1, trial, host))
events.sort(key=lambda e: e[0])  # stable: a trial's start before its end, as written
going, most, shared = {}, 0, False
for at, start, trial, host in events:
    if start:
        shared |= host in going.values()
        going[trial] = host
        most = max(most, len(going))
    else:
        going.pop(trial, None)
print(most, "shared" if shared else "apart")
PY
}

packed_case() {
    local sched=$1 dj=$2 queue=$3 dir=$PWD/packed id
    mkdir -p "$dir"
    cp "$SRCDIR/tests/agent/py/sweep_trial.py" "$dir/"
    cat >"$dir/packed.yaml" <<SPEC
name: packed
scheduler: $sched
nodes: 1
procs_per_node: 1
walltime: "00:05:00"
env: {FAIL_TRIAL: "5", FAIL_UNTIL: "$dir/fixed", TRIAL_SECONDS: "1", PACK_LOG: "$dir/pack.log"}
sweep:
  grid: {lr: [0.1, 0.2, 0.3], seed: [1, 2, 3, 4]}
  pack: {nodes: 2}
command: [/usr/bin/python3, sweep_trial.py, "{lr}", "{seed}"]
SPEC
    "$dj" "DIR=$dir" submit packed.yaml
    id=$(tail -n 1 <<<"$OUT")
    expect_eq "$RC" 0 "$sched: submit of a 12-trial sweep packed into 2 nodes" "$ERR"
    expect_contains "$ERR" "sweep packed: 12 trials packed into 1 allocation of 2 nodes (job $id)" \
        "... one allocation holds them all" "$ERR"
    expect_eq "$("$queue" | grep -c '^packed')" 1 "... the queue holds one job for the sweep, not 12" "$("$queue")"
    "$dj" "DIR=$dir" wait packed --timeout 300
    expect_eq "$RC" 1 "$sched: wait on the packed sweep: 1, a trial failed" "$ERR"
    expect_contains "$ERR" "1 of 12 trials did not complete" "... saying how many"
    read -r most shared <<<"$(pack_overlap "$dir/pack.log")"
    expect_eq "$most" 2 "$sched: never more than 2 trials at once in 2 nodes, and 2 did run together" "$(cat "$dir/pack.log")"
    expect_eq "$shared" apart "... never two on one node at once"
    expect_eq "$(cut -d' ' -f3 "$dir/pack.log" | sort -u | wc -l)" 2 "... the trials ran on both nodes"
    "$dj" "DIR=$dir" status packed
    expect_contains "$OUT" "packed ($sched sweep of 12 trials, packed into 1 allocation of 2 nodes, at most 12 at once): 11 completed, 1 failed" \
        "status says how it ran, and the counts" "$OUT"
    expect_contains "$(grep '^5 ' <<<"$OUT")" "failed: rank 0 exited with code 3" "trial 5 failed, naming the rank and its code"
    expect_contains "$(grep '^0 ' <<<"$OUT")" "  0.03333" "trial 0's metrics: its last loss (0.1 x 1 / 3)"
    expect_contains "$OUT" "best: trial 0 (lr=0.1 seed=1)" "the best completed trial" "$OUT"
    "$dj" "DIR=$dir" logs packed --trial 7
    expect_contains "$OUT" 'trial 7 params {"lr": 0.2, "seed": 4} RANK=0' "logs --trial 7: its own lines, from its own record"
    expect_eq "$(ls -d "$dir"/.ddpjob/sweeps/packed.*/trial-* | wc -l)" 12 "each trial has a record of its own"

    # --retry-failed: trial 5 alone, packed again into an allocation of its own.
    touch "$dir/fixed"
    : >"$dir/pack.log"
    "$dj" "DIR=$dir" submit --retry-failed packed
    expect_eq "$RC" 0 "$sched: submit --retry-failed of the packed sweep" "$ERR"
    expect_contains "$ERR" "sweep packed: trial 5 (failed) packed again into job" "... trial 5 packed again" "$ERR"
    expect_eq "$(grep -c 'packed again' <<<"$ERR")" 1 "... and no other trial"
    "$dj" "DIR=$dir" wait packed --timeout 180
    expect_eq "$RC" 0 "every trial has now completed" "$ERR"
    expect_eq "$(cut -d' ' -f1,2 "$dir/pack.log" | sort -u | tr '\n' ' ')" "end 5 start 5 " "only trial 5 ran again"
    expect_eq "$(ls -d "$dir"/.ddpjob/sweeps/packed.*/pack-2 | wc -l)" 1 "... in a second allocation, pack-2"

    "$dj" "DIR=$dir" report packed -o "$dir/packed.html"
    expect_eq "$RC" 0 "report of the packed sweep" "$ERR"
    expect_contains "$(cat "$dir/packed.html" 2>/dev/null)" "lr=0.3 seed=4" "... its table names every trial"

    # Two allocations of one node each, the trials shared between them.
    "$dj" "DIR=$dir" submit packed.yaml --set name=twice --set 'sweep.grid={lr: [0.1, 0.2], seed: [1, 2]}' \
        --set sweep.pack.allocations=2 --pack 1
    expect_contains "$ERR" "sweep twice: 4 trials packed into 2 allocations of 1 node (job" "$sched: a sweep packed into 2 allocations of 1 node" "$ERR"
    "$dj" "DIR=$dir" wait twice --timeout 300
    expect_eq "$RC" 0 "... its 4 trials completed" "$ERR"
    "$dj" "DIR=$dir" status twice --json
    expect_eq "$(grep -o '"job_id": "[^"]*"' <<<"$OUT" | sort -u | wc -l)" 2 "... 2 trials in each allocation's job" "$OUT"
    "$dj" "DIR=$dir" status twice
    expect_contains "$OUT" "packed into 2 allocations of 1 node, at most 4 at once): 4 completed" "... status says so" "$OUT"

    # A 2-node trial and 1-node trials in one pack: the wide one takes both nodes, alone.
    cat >"$dir/mixed.yaml" <<SPEC
name: mixed
scheduler: $sched
nodes: "{n}"
procs_per_node: 1
walltime: "00:05:00"
env: {TRIAL_SECONDS: "1", PACK_LOG: "$dir/mixed.log"}
sweep:
  trials: [{n: 1, seed: 1}, {n: 2, seed: 2}, {n: 1, seed: 3}, {n: 1, seed: 4}]
  pack: {nodes: 2}
command: [/usr/bin/python3, sweep_trial.py, "0.1", "{seed}"]
SPEC
    "$dj" "DIR=$dir" submit mixed.yaml
    expect_eq "$RC" 0 "$sched: submit of a pack of 1-node and 2-node trials" "$ERR"
    "$dj" "DIR=$dir" wait mixed --timeout 300
    expect_eq "$RC" 0 "... every one completed" "$ERR"
    expect_eq "$(grep -c '^start 1 ' "$dir/mixed.log")" 2 "the 2-node trial ran a rank on each node" "$(cat "$dir/mixed.log")"
    expect_eq "$(grep '^start 1 ' "$dir/mixed.log" | cut -d' ' -f3 | sort -u | wc -l)" 2 "... on two hosts"
    read -r most shared <<<"$(pack_overlap "$dir/mixed.log")"
    expect_eq "$shared" apart "... and no trial shared a node with another at once" "$(cat "$dir/mixed.log")"

    # Cancelled: one trial, then the whole sweep; nothing is left queued or running.
    sed -e 's/^name: packed/name: slowpack/' -e 's/TRIAL_SECONDS: "1"/TRIAL_SECONDS: "120"/' "$dir/packed.yaml" >"$dir/slow.yaml"
    "$dj" "DIR=$dir" submit slow.yaml --set 'sweep.grid={lr: [0.1], seed: [1, 2, 3]}'
    for _ in $(seq 600); do
        "$dj" "DIR=$dir" status slowpack
        [[ $OUT == *": 2 running, 1 pending"* || $OUT == *": 1 pending, 2 running"* ]] && break
        sleep 0.5
    done
    expect_contains "$OUT" "2 running" "$sched: a slow packed sweep runs 2 trials, the third waits" "$OUT"
    "$dj" "DIR=$dir" cancel slowpack --trial 0
    expect_eq "$RC" 0 "cancel --trial 0 of it" "$ERR"
    for _ in $(seq 600); do
        "$dj" "DIR=$dir" status slowpack
        [[ $(grep '^2 ' <<<"$OUT") == *running* ]] && break
        sleep 0.5
    done
    expect_contains "$(grep '^0 ' <<<"$OUT")" "cancelled" "trial 0 is cancelled" "$OUT"
    expect_contains "$(grep '^2 ' <<<"$OUT")" "running" "... trial 2 runs on the node it left"
    expect_contains "$(grep '^1 ' <<<"$OUT")" "running" "... trial 1 runs on"
    "$dj" "DIR=$dir" cancel slowpack
    expect_eq "$RC" 0 "cancel of the whole packed sweep" "$ERR"
    for _ in $(seq 300); do
        [ "$("$queue" | grep -c '^slowpack')" = 0 ] && break
        sleep 0.5
    done
    expect_eq "$("$queue" | grep -c '^slowpack')" 0 "... its allocation is gone from the queue" "$("$queue")"
    "$dj" "DIR=$dir" status slowpack
    expect_contains "$OUT" ": 3 cancelled" "... every trial is cancelled" "$OUT"

    packed_lost_case "$sched" "$dj" "$dir"
    packed_walltime_case "$sched" "$dj" "$dir"

    # A packed sweep as a pipeline's stage: the stage after it takes its best trial's lr.
    printf 'name: pbest\nscheduler: %s\nnodes: 1\nprocs_per_node: 1\nwalltime: "00:05:00"\ncommand: [echo, "best lr {sweep.best.params.lr}"]\n' \
        "$sched" >"$dir/best.yaml"
    sed -e 's/^name: packed/name: ppacked/' -e 's/seed: \[1, 2, 3, 4\]/seed: [1]/' "$dir/packed.yaml" >"$dir/psweep.yaml"
    printf 'name: packpipe\nstages:\n  sweep: {spec: psweep.yaml}\n  best: {spec: best.yaml, after: {ok: [sweep]}}\n' >"$dir/packpipe.yaml"
    "$dj" "DIR=$dir" submit packpipe.yaml
    expect_eq "$RC" 0 "$sched: submit of a pipeline whose first stage is a packed sweep" "$ERR"
    "$dj" "DIR=$dir" wait packpipe --timeout 300
    expect_eq "$RC" 0 "... it completed, stage after stage" "$ERR"
    "$dj" "DIR=$dir" status ppacked
    expect_contains "$OUT" "packed into 1 allocation of 2 nodes" "... its first stage ran packed" "$OUT"
    "$dj" "DIR=$dir" logs packpipe --stage best
    expect_contains "$OUT" "best lr 0.1" "... and the next stage took the packed sweep's best lr" "$OUT"
}

# packed_lost_case SCHED DJ DIR: a node lost under a trial of a sweep packed into 2 nodes (its
# agent killed): only that trial goes again, once, on the other node, which takes every trial
# after; its row says why, and so does the allocation's output. DIR holds packed_case's spec.
packed_lost_case() {
    local sched=$1 dj=$2 dir=$3 lost_host agent killed_at trial0
    sed -e 's/^name: packed/name: lostnode/' -e 's/TRIAL_SECONDS: "1"/TRIAL_SECONDS: "12"/' \
        -e "s|$dir/pack.log|$dir/lost.log|" "$dir/packed.yaml" >"$dir/lost.yaml"
    "$dj" "DIR=$dir" submit lost.yaml --set 'sweep.grid={lr: [0.1], seed: [1, 2, 3, 4]}'
    expect_eq "$RC" 0 "$sched: submit of a packed sweep whose node will be lost" "$ERR"
    for _ in $(seq 600); do
        grep -q '^start 0 ' "$dir/lost.log" 2>/dev/null && break
        sleep 0.5
    done
    lost_host=$(awk '$1 == "start" && $2 == 0 { print $3; exit }' "$dir/lost.log" 2>/dev/null)
    trial0=$(ls -d "$dir"/.ddpjob/sweeps/lostnode.*/trial-0)
    # The agent itself (its guard, forked from it, shares its command line and is younger).
    agent=$(pgrep -o -f "^[^ ]*/ddpjob-agent .*$trial0/link-0/")
    expect_ne "$agent" "" "trial 0 runs on $lost_host: its agent is found" "$(cat "$dir/lost.log")"
    killed_at=$(date +%s.%N)
    kill -KILL "$agent"
    "$dj" "DIR=$dir" wait lostnode --timeout 300
    expect_eq "$RC" 0 "$sched: every trial completed, trial 0 after its node was lost" "$ERR"
    expect_eq "$(grep '^start' "$dir/lost.log" | cut -d' ' -f2 | sort | uniq -d)" 0 \
        "... only trial 0 ran twice" "$(cat "$dir/lost.log")"
    expect_eq "$(awk -v t="$killed_at" -v h="$lost_host" '$1 == "start" && $4 > t && $3 == h' "$dir/lost.log")" "" \
        "... no trial started on $lost_host after its agent was killed"
    expect_ne "$(awk '$1 == "start" && $2 == 0 { h = $3 } END { print h }' "$dir/lost.log")" "$lost_host" \
        "... trial 0 went again on the other node"
    "$dj" "DIR=$dir" status lostnode
    expect_contains "$OUT" "): 4 completed" "status: 4 completed" "$OUT"
    expect_eq "$(grep -cE "^0 .* completed \(again: node $lost_host lost\) +2 " <<<"$OUT")" 1 \
        "... trial 0's row says it went again, as link 2, and why" "$OUT"
    expect_contains "$(cat "$dir"/.ddpjob/sweeps/lostnode.*/pack-1/link-0/batch.log)" \
        "node $lost_host was lost under run 1: no run goes there again; the run goes again on the other nodes" \
        "... the allocation's output says so"
}

# packed_walltime_case SCHED DJ DIR: ddp-train trials packed into 2 nodes held a minute a link, the
# walltime coming mid-sweep: trial 0 completes in the first link; trial 1 is told to checkpoint,
# and resumes from its checkpoint in the allocation's next link; trial 2 fails (its checkpoint
# folder is a file), which the allocation's last link still says; trial 3, two nodes wide, waits
# behind trial 1 and starts only in a later link. Each trial is one row with its own links.
packed_walltime_case() {
    local sched=$1 dj=$2 dir=$3 pack started last
    cat >"$dir/wall.yaml" <<SPEC
name: packwall
scheduler: $sched
nodes: "{n}"
procs_per_node: 2
walltime: "00:01:00"
checkpoint: {signal: USR1, before: 40}
requeue: 10
env: {OPENBLAS_CORETYPE: Haswell}
sweep:
  trials: [{n: 1, epochs: 1, t: a}, {n: 1, epochs: 4, t: b}, {n: 1, epochs: 1, t: d}, {n: 2, epochs: 1, t: c}]
  pack: {nodes: 2, walltime: "00:01:00"}
train: {synthetic: true, synthetic_size: "4096,512", epochs: "{epochs}", batch_size: 32, seed: 7,
        min_step_ms: $CHAIN_MIN_STEP_MS, checkpoint_dir: "$dir/ckpt-{t}"}
SPEC
    echo "not a folder" >"$dir/ckpt-d"
    "$dj" "DIR=$dir" submit wall.yaml
    expect_eq "$RC" 0 "$sched: submit of ddp-train trials packed into an allocation held a minute a link" "$ERR"
    "$dj" "DIR=$dir" wait packwall --timeout 900
    expect_eq "$RC" 1 "... it ended across the allocation's links: 1, trial 2 failed" "$ERR"
    "$dj" "DIR=$dir" status packwall
    expect_contains "$OUT" "): 3 completed, 1 failed" "... 4 rows: 3 completed, 1 failed" "$OUT"
    expect_contains "$(grep '^2 ' <<<"$OUT")" "failed" "... trial 2 failed"
    expect_eq "$(grep -cE '^0 .* completed +1 ' <<<"$OUT")" 1 "trial 0 completed in one link" "$OUT"
    if [[ $(grep '^1 ' <<<"$OUT") =~ completed\ +([0-9]+)\  ]] && [ "${BASH_REMATCH[1]}" -ge 2 ]; then
        pass "trial 1 completed in link ${BASH_REMATCH[1]}, after the walltime stopped it"
    else
        fail "trial 1 completed after the walltime stopped it" "$OUT"
    fi
    expect_lacks "$(grep '^1 ' <<<"$OUT")" "lost" "... and lost no node"
    "$dj" "DIR=$dir" logs packwall --trial 1 --rank 0 --link 2
    expect_contains "$OUT" "resuming from $dir/ckpt-b/checkpoint.ddpt" "... resuming from its own checkpoint"
    "$dj" "DIR=$dir" logs packwall --trial 0 --rank 0
    expect_eq "$(grep -c 'epoch 1/1' <<<"$OUT")" 1 "trial 0 ran once"
    pack=$(ls -d "$dir"/.ddpjob/sweeps/packwall.*/pack-1)
    expect_contains "$(cat "$pack/link-0/batch.log")" \
        "run 2 stopped with its checkpoints written: it goes on in the allocation's next link" \
        "the allocation's first link said trial 1 goes on in the next"
    read -r started _ <"$(ls -d "$dir"/.ddpjob/sweeps/packwall.*/trial-3)/link-0/started"
    expect_eq "$([ -d "$pack/link-1" ] && [ "$started" -ge "$(cut -d' ' -f1 "$pack/link-1/started")" ] && echo later)" later \
        "trial 3, waiting behind trial 1, started in a later link of the allocation" "$(ls "$pack")"
    last=$(ls -d "$pack"/link-* | sort -V | tail -n 1)
    expect_eq "$(cut -d' ' -f1 "$last/ended")" 1 \
        "the allocation's last link ended 1, trial 2 having failed: afterok does not follow it"
}
