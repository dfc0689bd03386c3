#!/bin/bash
# The whole Grid Engine path on a real cell this suite starts (tests/cluster/sge.sh: Debian's
# gridengine 8.1.9, a qmaster and three execds in network namespaces, a parallel environment whose
# allocation rule gives whole nodes, an unprivileged user who submits). `ddpjob submit` of a
# scheduler: sge spec renders a #$ script; node 0's agent runs in the batch shell and
# `ddpjob node-agents` starts node 1's through qrsh -inherit, as a task of the job. Then: the
# built-in workload on 2 nodes x 2 ranks; a rank that exits 3, named by status; a node whose
# agent cannot start (qrsh -inherit exits 0 for it); cancel, which leaves nothing; a sweep as an
# array with a cap; a job after another; a walltime chain resumed from its checkpoint; a spare
# that takes the place of a node whose agent died.
. "$SRCDIR/tests/lib/agents.sh"
. "$SRCDIR/tests/cluster/sge.sh"
. "$SRCDIR/tests/lib/images.sh"

# Three nodes: the jobs run on two, the spares case (at the end) on all three.
sge_suite_up 3 "a 3-node Grid Engine cell (Debian's gridengine 8.1.9: sge_qmaster, 3 sge_execd) runs in network namespaces" || exit 1

# What the user's jobs use must be theirs to read: the built programs and templates are copied
# beside the cell, the workload into the user's submission directory.
home=$SGE_CLUSTER/home/$SGE_USER
bin=$SGE_CLUSTER/bin
jobdir=$home/jobs/e2e
mkdir -p "$bin" "$home/tools" "$jobdir"
cp "$DDPJOB" "$AGENT" "$TRAIN" "$bin/"
cp -r "$BUILDDIR/templates" "$SGE_CLUSTER/templates"
cp "$SRCDIR/tests/agent/py/env_ddp.py" "$SRCDIR/tests/agent/py/sweep_trial.py" "$jobdir/"
chown -R "$SGE_USER:" "$home"

qstat_state() { # JOB: its state letters while qstat knows it
    sge_in head "$SGE_BIN/qstat" -u '*' -g d 2>/dev/null | awk -v id="$1" '$1 == id { print $5; exit }'
}
qacct_field() { # JOB FIELD [TASK]: the job's last record's field, once the accounting has it
    sge_in head "$SGE_BIN/qacct" -j "$1" ${3:+-t "$3"} 2>/dev/null | awk -v f="$2" '$1 == f { print $2 }' | tail -n 1
}
qacct_wait() { # JOB FIELD [TASK]: qacct_field, waiting up to 60 s for the accounting's flush
    local value deadline=$((SECONDS + 60))
    until value=$(qacct_field "$@") && [ -n "$value" ] || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.5; done
    echo "$value"
}

# ddpjob ARGS... as the user, from the submission directory: RC, OUT, ERR.
pj() {
    local back=$PWD
    cd "$jobdir" && run sge_as_user env DDPJOB_TEMPLATE_DIR="$SGE_CLUSTER/templates" "$bin/ddpjob" "$@"
    cd "$back" || return
}
submit_job() { # SPEC [ARGS...]: JOB
    pj submit "$@" --bindir "$bin"
    JOB=$(tail -n 1 <<<"$OUT")
}
wait_job() { # SPEC: until JOB has ended and its accounting says so (180 s at most); OUT, STATUS
    local deadline=$((SECONDS + 180))
    while [ -n "$(qstat_state "$JOB")" ] && [ "$SECONDS" -lt "$deadline" ]; do sleep 0.5; done
    STATUS=
    while [ -z "$STATUS" ] && [ "$SECONDS" -lt "$deadline" ]; do
        STATUS=$(qacct_field "$JOB" exit_status)
        [ -n "$STATUS" ] || sleep 0.5
    done
    OUT=$(cat "$jobdir/${1%.yaml}.o$JOB" 2>/dev/null)
}

cat >"$jobdir/e2e.yaml" <<SPEC
name: e2e
scheduler: sge
sge: {pe: ddp}
nodes: 2
procs_per_node: 2
walltime: "00:05:00"
mem: 2GB
env: {FROM_SPEC: "from the spec"}
command: [/usr/bin/python3, env_ddp.py]
SPEC
chown "$SGE_USER:" "$jobdir/e2e.yaml"
submit_job e2e.yaml
wait_job e2e.yaml
expect_contains "$(cat "$jobdir/e2e.sge")" "#$ -pe ddp 4
#$ -l h_rt=00:05:00
#$ -l h_vmem=1G" "the script asks the parallel environment for 4 slots, the walltime as h_rt, memory per slot"
expect_eq "$STATUS" 0 "qacct: exit_status 0 for the job that succeeded (job $JOB)"
# The hosts are those Grid Engine chose, the master the one it started the script on
# (PE_HOSTFILE's first); node 1's is the one its agent says it runs on.
node1_host() { sed -n 's/.*ddpjob-agent: node 1 of [0-9]* (\(n[0-9]\)).*/\1/p' | head -n 1; }
master=$(sed -n 's/^ddpjob: job [0-9]*: .* master \(n[0-9]\), in .*/\1/p' <<<"$OUT")
other=$(node1_host <<<"$OUT")
hosts=("$master" "$other")
expect_contains "$OUT" "ddpjob: job $JOB: 2 node(s), 2 worker(s) each, master $master, in $jobdir" "the script found its 2 nodes in PE_HOSTFILE, its own host the master"
for r in 0 1 2 3; do
    node=$((r / 2)) host=${hosts[$((r / 2))]} local=$((r % 2))
    expect_contains "$OUT" "[rank $r] host=$host RANK=$r LOCAL_RANK=$local WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=$node GROUP_WORLD_SIZE=2 MASTER_ADDR=$master TORCHELASTIC_RUN_ID=$JOB FROM_SPEC=from the spec sum=6 expected=6 cwd=$jobdir" \
        "rank $r on $host: torchrun's environment, the all_reduce across both nodes, in the submission directory"
done
for _ in $(seq 100); do
    tasks=$(sge_in head "$SGE_BIN/qacct" -j "$JOB" 2>/dev/null | awk '$1 == "hostname" { print $2 }' | sort | tr '\n' ' ')
    [ "$(wc -w <<<"$tasks")" != 2 ] || break
    sleep 0.3
done
expect_eq "$tasks" "$(printf '%s\n' "$master" "$other" | sort | tr '\n' ' ')" "qacct: the job on $master and its qrsh -inherit task on $other, accounted as the job's"
expect_no_file "$jobdir/.ddpjob/$JOB" "the job's own files (token, node environment) are gone afterwards"
pj status "$JOB"
expect_contains "$OUT" "e2e (sge job $JOB): completed, exit 0" "status of the finished job"
pj logs "$JOB" --rank 3
expect_contains "$OUT" "host=$other RANK=3 LOCAL_RANK=1" "logs --rank 3: rank 3's lines from the record"
pj list
expect_contains "$OUT" "e2e (sge job $JOB): completed" "list finds the job"

# A spec that names no parallel environment, submitted to a cell a site profile recognises (the
# user's own, by its qmaster): the profile's is taken, and submit says so.
mkdir -p "$home/.config/ddpjob/sites"
printf 'name: lab\nsge_pe: ddp\nrecognise: {sge_qmaster: [head]}\nqueues:\n  all.q: {cores_per_node: 2}\n' \
    >"$home/.config/ddpjob/sites/lab.yaml"
sed -e 's/^name: e2e/name: lab/' -e '/^sge:/d' "$jobdir/e2e.yaml" >"$jobdir/lab.yaml"
chown -R "$SGE_USER:" "$home/.config" "$jobdir/lab.yaml"
submit_job lab.yaml
expect_contains "$ERR" "site: note: the Grid Engine server head is site lab's ($home/.config/ddpjob/sites/lab.yaml recognises it)" \
    "submit reads the cell's qmaster, takes the profile that recognises it and says so"
wait_job lab.yaml
expect_contains "$(cat "$jobdir/lab.sge")" "#$ -pe ddp 4" "the script asks for the profile's parallel environment"
expect_eq "$STATUS" 0 "and the job runs to its end"
rm -rf "$home/.config/ddpjob/sites"

# The built-in workload on 2 nodes x 2 ranks.
cat >"$jobdir/train.yaml" <<SPEC
name: train
scheduler: sge
sge: {pe: ddp}
nodes: 2
procs_per_node: 2
walltime: "00:05:00"
train: {synthetic: true, synthetic_size: "2048,512", epochs: 2, batch_size: 32}
SPEC
chown "$SGE_USER:" "$jobdir/train.yaml"
submit_job train.yaml
wait_job train.yaml
expect_contains "$OUT" "[rank 0] epoch 2/2 " "a train: spec trains on 2 nodes x 2 ranks under Grid Engine"
expect_contains "$OUT" "trained after 2 of 2 epochs (32 steps, 4 ranks)" "... every rank took every step"

# ddpjob doctor through the scheduler: the same job's agents on both nodes, preflight only.
pj doctor e2e.yaml --submit --bindir "$bin"
JOB=$(tail -n 1 <<<"$OUT")
wait_job e2e.yaml
expect_eq "$STATUS" 0 "ddpjob doctor --submit: the job ends with exit_status 0"
expect_contains "$OUT" "ddpjob-agent: preflight: 2 node(s); 0 fact(s) that must agree differ" \
    "and its output holds node 0's preflight of both nodes"
expect_lacks "$OUT" "[rank " "doctor starts no worker"

# The job in a Charliecloud image (the real ch-run; the user's own image folder) on both nodes:
# node 0's agent in the batch shell and node 1's through qrsh -inherit start every worker inside.
image_root "$home/image"
chown -R "$SGE_USER:" "$home/image"
cat >"$jobdir/inside.yaml" <<SPEC
name: inside
scheduler: sge
sge: {pe: ddp}
nodes: 2
procs_per_node: 2
walltime: "00:05:00"
container: {runtime: charliecloud, image: $home/image}
command: 'cat /etc/ddpjob-image; echo "host=\$(hostname) RANK=\$RANK WORLD_SIZE=\$WORLD_SIZE"'
SPEC
chown "$SGE_USER:" "$jobdir/inside.yaml"
submit_job inside.yaml
wait_job inside.yaml
expect_eq "$STATUS" 0 "a job in a Charliecloud image on 2 Grid Engine nodes: exit_status 0"
expect_eq "$(grep -c "inside the test's image" <<<"$OUT")" 4 "every rank ran inside the image"
expect_contains "$OUT" "RANK=3 WORLD_SIZE=4" "node 1's ranks too, started through qrsh -inherit"

# A rank that exits 3 on node 1: the job fails with 3 and status names the rank, node and host.
sed -e 's/^name: e2e/name: fail/' -e 's/FROM_SPEC: "from the spec"/FROM_SPEC: "from the spec", FAIL_RANK: "3"/' \
    "$jobdir/e2e.yaml" >"$jobdir/fail.yaml"
chown "$SGE_USER:" "$jobdir/fail.yaml"
submit_job fail.yaml
wait_job fail.yaml
expect_eq "$STATUS" 3 "rank 3 exiting 3: qacct's exit_status is 3"
pj status "$JOB"
expect_contains "$OUT" "fail (sge job $JOB): failed, exit 3" "status says failed, exit 3"
expect_contains "$OUT" "rank 3 (node 1, host $(node1_host <"$jobdir/fail.o$JOB")): exited with code 3" \
    "and names the rank, node and host"

# A node whose agent cannot start (its setup fails: node 1's, whose task has no PE_HOSTFILE): the
# job fails at once, naming it.
sed -e 's/^name: e2e/name: nostart/' -e "s|^command:.*|setup: '[ -n \"\$PE_HOSTFILE\" ] \|\| exit 7'\ncommand: [/usr/bin/python3, env_ddp.py]|" \
    "$jobdir/e2e.yaml" >"$jobdir/nostart.yaml"
chown "$SGE_USER:" "$jobdir/nostart.yaml"
started=$SECONDS
submit_job nostart.yaml
wait_job nostart.yaml
expect_ne "$STATUS" 0 "a node whose setup fails: the job fails (exit_status $STATUS)"
expect_contains "$OUT" "ddpjob: node 1 (n" "the job's output names the node whose agent did not start"
expect_contains "$OUT" "its agent could not start (status 7" "... and its setup's status"
if [ $((SECONDS - started)) -lt 150 ]; then pass "... at once, not at the rendezvous timeout"; else
    fail "... at once, not at the rendezvous timeout" "took $((SECONDS - started)) s"
fi

# cancel: qdel of a running job; status says cancelled, and nothing of it is left on either node.
sed -e 's/^name: e2e/name: long/' -e 's|^command:.*|command: [sleep, "300"]|' "$jobdir/e2e.yaml" >"$jobdir/long.yaml"
chown "$SGE_USER:" "$jobdir/long.yaml"
submit_job long.yaml
long=$JOB
sleeping() { for i in 1 2 3; do ip netns pids "$(sge_ns "n$i")"; done | xargs -r ps -o args= -p | grep -c '^sleep 300'; }
for _ in $(seq 300); do [ "$(qstat_state "$long")" = r ] && [ "$(sleeping)" = 4 ] && break; sleep 0.2; done
expect_eq "$(sleeping)" 4 "the job's 4 ranks run, on both its nodes"
pj cancel "$long"
expect_eq "$RC" 0 "cancel of a running job exits 0"
for _ in $(seq 100); do [ -z "$(qstat_state "$long")" ] && break; sleep 0.2; done
expect_eq "$(qstat_state "$long")" "" "qstat no longer knows it"
left=
for _ in $(seq 100); do
    left=$(for i in 1 2 3; do ip netns pids "$(sge_ns "n$i")"; done | xargs -r ps -o user=,args= -p | grep -v '^root ')
    [ -z "$left" ] && break
    sleep 0.2
done
expect_eq "$left" "" "nothing of the cancelled job (agents, workers) is left on either node"
pj status "$long"
expect_contains "$OUT" "long (sge job $long): cancelled" "status says cancelled"

# A sweep of 4 one-node trials as one array job, 2 at once (-t 1-4 -tc 2), trial 1 failing.
cat >"$jobdir/sweep.yaml" <<SPEC
name: grid
scheduler: sge
sge: {pe: smp}
nodes: 1
procs_per_node: 1
walltime: "00:05:00"
env: {FAIL_TRIAL: "1", TRIAL_SECONDS: "2"}
sweep:
  grid: {lr: [0.1, 0.01], seed: [1, 2]}
  parallel: 2
command: [/usr/bin/python3, sweep_trial.py, "{lr}", "{seed}"]
SPEC
chown "$SGE_USER:" "$jobdir/sweep.yaml"
pj submit sweep.yaml --bindir "$bin"
expect_eq "$RC" 0 "submit of the sweep exits 0"
array=$(tail -n 1 <<<"$OUT")
expect_contains "$(cat "$jobdir"/.ddpjob/sweeps/grid.*/*.sge 2>/dev/null)" "#$ -t 1-4
#$ -tc 2" "the array's script asks for tasks 1-4, 2 at once (job $array)"
pj wait grid --timeout 180
expect_eq "$RC" 1 "wait on the sweep exits 1: trial 1 failed"
for t in 1 2 3 4; do
    want=0
    [ "$t" != 2 ] || want=3
    expect_eq "$(qacct_wait "$array" exit_status "$t")" "$want" "qacct: task $t (trial $((t - 1))) exit_status $want"
done
pj status grid
expect_contains "$OUT" "grid (sge sweep of 4 trials, one array job, at most 2 at once): 3 completed, 1 failed" "status of the sweep: the counts"
row=$(grep '^1 ' <<<"$OUT")
expect_contains "$row" "failed: rank 0 exited with code 3" "trial 1 failed, naming the rank and its code"
expect_contains "$OUT" "best: trial 2 (lr=0.01 seed=1)" "the best completed trial"

# A job after another (--after): held (hqw) until it ends, then runs.
sed -e 's/^name: e2e/name: first/' -e 's|^command:.*|command: [sleep, "8"]|' "$jobdir/e2e.yaml" >"$jobdir/first.yaml"
sed -e 's/^name: e2e/name: second/' "$jobdir/e2e.yaml" >"$jobdir/second.yaml"
chown "$SGE_USER:" "$jobdir/first.yaml" "$jobdir/second.yaml"
submit_job first.yaml
first=$JOB
submit_job second.yaml --after first
second=$JOB
expect_eq "$(qstat_state "$second")" hqw "the second job waits on hold (hqw) while the first runs"
pj status "$second"
expect_contains "$OUT" "waiting for the job it depends on to end" "status says why it waits"
wait_job second.yaml
expect_eq "$STATUS" 0 "and runs once the first has ended (exit_status 0)"
start_second=$(sge_in head "$SGE_BIN/qacct" -j "$second" | awk '$1 == "start_time" { $1 = ""; print }' | tail -n 1)
end_first=$(sge_in head "$SGE_BIN/qacct" -j "$first" | awk '$1 == "end_time" { $1 = ""; print }' | tail -n 1)
if [ "$(date -d "$start_second" +%s)" -ge "$(date -d "$end_first" +%s)" ]; then
    pass "it started after the first ended ($start_second, $end_first)"
else
    fail "it started after the first ended" "second started $start_second, first ended $end_first"
fi

# Grid Engine has no afterok: a job after one that fails starts all the same, and its script,
# which checks the accounting, stops before anything runs, saying why.
sed -e 's/^name: e2e/name: doomed/' -e 's|^command:.*|command: [sh, -c, "sleep 6; exit 3"]|' "$jobdir/e2e.yaml" >"$jobdir/doomed.yaml"
sed -e 's/^name: e2e/name: hopeful/' "$jobdir/e2e.yaml" >"$jobdir/hopeful.yaml"
chown "$SGE_USER:" "$jobdir/doomed.yaml" "$jobdir/hopeful.yaml"
submit_job doomed.yaml
doomed=$JOB
submit_job hopeful.yaml --after doomed
wait_job hopeful.yaml
expect_eq "$STATUS" 1 "a job after one that failed (afterok) ends with exit_status 1"
expect_contains "$OUT" "ddpjob: not run: job $doomed, which it runs after if it succeeded (afterok), failed" \
    "its output says which job it needed and how that one ended"
expect_lacks "$OUT" "[rank " "and no worker ran"

# The walltime contract: Grid Engine kills at h_rt with no warning; the agents send the checkpoint
# signal 40 s before the 1-minute walltime, ddp-train checkpoints and every rank exits 75, and the
# script submits its successor (qsub -v), which resumes; until the training is done.
cat >"$jobdir/chain.yaml" <<SPEC
name: chain
scheduler: sge
sge: {pe: ddp}
nodes: 2
procs_per_node: 2
walltime: "00:01:00"
checkpoint: {signal: USR1, before: 40}
requeue: 10
env: {OPENBLAS_CORETYPE: Haswell}
train: $(chain_train ckpt)
SPEC
chown "$SGE_USER:" "$jobdir/chain.yaml"
submit_job chain.yaml
wait_job chain.yaml
links=1 chain=$OUT
while next=$(sed -n 's/.*its successor \([^ ]*\) resumes it.*/\1/p' <<<"$OUT") && [ -n "$next" ] && [ "$links" -lt 11 ]; do
    JOB=$next
    wait_job chain.yaml
    chain+=$'\n'"$OUT"
    links=$((links + 1))
done
expect_contains "$chain" "its successor" "a link stopped by the checkpoint signal submits its successor"
expect_contains "$chain" "ddpjob: requeue 1 of 10 (job" "which knows its place in the chain"
expect_contains "$chain" "[rank 0] ddp-train: resuming from ckpt/checkpoint.ddpt at epoch" "and resumes from the checkpoint"
expect_contains "$chain" "trained after $CHAIN_EPOCHS of $CHAIN_EPOCHS epochs" "the chain of $links Grid Engine jobs trains to the end"
expect_eq "$STATUS" 0 "and its last job's exit_status is 0"
pj status chain
expect_contains "$OUT" "chain (sge job $JOB): completed, exit 0" "status of the chain, by its name: completed at its last job"
expect_contains "$OUT" "link $links of $links" "... link $links of $links"
pj report chain -o "$home/chain.html"
expect_eq "$RC" 0 "report of the chain exits 0"
expect_contains "$(cat "$home/chain.html" 2>/dev/null)" "data-link=\"$links\"" "and its page shows every link"


# Spares: a spec with `nodes: 2` and `spares: 1` (-pe ddp 6, node-agents --spares) loses node 1's
# agent once its first checkpoint is written (killed): the spare takes its place, the training
# resumes from the checkpoint, and the job ends with exit_status 0 and an uninterrupted run's
# final checkpoint.
node1_agent() {
    local i pid
    for i in 1 2 3; do
        for pid in $(ip netns pids "$(sge_ns "n$i")"); do
            [ "$(basename "$(readlink "/proc/$pid/exe" 2>/dev/null)")" = ddpjob-agent ] &&
                tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- '--node-rank 1 ' && echo "$pid" && return
        done
    done
}
CHAIN_EPOCHS=6
ckpt=$jobdir/ckpt-spares
spares_spec sge "$ckpt" 1 | sed 's/^scheduler: sge/scheduler: sge\nsge: {pe: ddp}/' >"$jobdir/spares.yaml"
chown "$SGE_USER:" "$jobdir/spares.yaml"
submit_job spares.yaml
for _ in $(seq 600); do [ -s "$ckpt/checkpoint.ddpt" ] && [ -n "$(node1_agent)" ] && break; sleep 0.1; done
kill -9 "$(node1_agent)"
wait_job spares.yaml
expect_eq "$STATUS" 0 "spares, node 1's agent killed: the job ends with exit_status 0" "$OUT"
expect_contains "$OUT" "2 node(s) and 1 spare(s)" "spares: the script asked for the spare"
expect_contains "$(cat "$jobdir/spares.sge")" "#$ -pe ddp 6" "... 3 nodes' slots"
expect_contains "$OUT" "takes the place of" "spares: the spare took node 1's place"
expect_contains "$OUT" "resuming from $ckpt/checkpoint.ddpt" "spares: training resumed from its checkpoint"
REFERENCE_HOSTS=("$(sge_ns n1)" "$(sge_ns n2)") REFERENCE_MASTER=10.76.0.11
expect_same_as_uninterrupted "$ckpt/checkpoint.ddpt" "spares: the final checkpoint = an uninterrupted run's"
