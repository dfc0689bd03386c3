#!/bin/bash
# The whole path on a real Slurm (Debian's slurmctld, slurmd, munge) that this suite starts:
# two nodes n1 and n2, each with its own hostname and address in its own network namespace
# (a machine that cannot make namespaces fails the suite: it would prove nothing multi-host).
# `ddpjob submit` sends a spec whose command is a real PyTorch DDP program (gloo); the rendered
# script reads SLURM_JOB_NODELIST, srun starts one real agent per node, and the agents meet
# across the two hosts; then the built-in workload (a train: spec) trains across both nodes.
. "$SRCDIR/tests/lib/agents.sh"
. "$SRCDIR/tests/cluster/slurm.sh"
at_exit 'cluster_down'
cd "$T" || exit 1

# ACCOUNTING=1 (the suite slurm_accounting): the same cases with slurmdbd and a real MariaDB, where
# status reads sacct for the jobs slurmctld has forgotten.
if ! cluster_up 2 >"$T/cluster.log" 2>&1; then
    fail "a 2-node Slurm cluster starts" "$(tail -n 20 "$T/cluster.log")" \
        "$(tail -n 5 "$CLUSTER"/log/*.log 2>/dev/null)"
    exit 1
fi
if [ "${ACCOUNTING:-0}" = 1 ]; then
    pass "a 2-node Slurm cluster with accounting (slurmctld, 2 slurmd, munged, slurmdbd, MariaDB) runs in network namespaces"
    forgotten="sacct COMPLETED"
else
    pass "a 2-node Slurm cluster (slurmctld, 2 slurmd, munged; no accounting) runs in network namespaces"
    forgotten="from its record"
fi
n1=n1 n2=n2

# SPEC [ENV=VALUE...]: `ddpjob submit SPEC` (or, with SUBMIT set, `ddpjob $SUBMIT`) from the head
# node; JOB gets the job id.
submit() {
    local spec=$1 args
    shift
    args=(submit "$spec")
    [ -z "${SUBMIT:-}" ] || read -ra args <<<"$SUBMIT"
    run env DDPJ_TESTMARK="$MARK" XDG_STATE_HOME="$T/state" "$@" bash -c '. "$0/tests/cluster/slurm.sh"; cluster_in head "$@"' \
        "$SRCDIR" "$DDPJOB" "${args[@]}"
    JOB=$(grep -o '[0-9][0-9]*' <<<"$OUT" | tail -n 1)
}

# ddpjob ARGS... on the head node, from DIR ($T unless given as DIR=...), with this suite's
# index of jobs: RC, OUT, ERR.
dj() {
    local dir=$T
    case $1 in DIR=*) dir=${1#DIR=}; shift ;; esac
    run cluster_ddpjob "$dir" "$@"
}

submit_and_wait() { # SPEC [ENV=VALUE...]: JOB gets the job id, OUT the job's output
    submit "$@"
    local deadline=$((SECONDS + 120))
    while [ -n "$(cluster_in head squeue -h -j "$JOB" 2>/dev/null)" ] && [ "$SECONDS" -lt "$deadline" ]; do
        sleep 0.3
    done
    OUT=$(cat "$T"/*-"$JOB".out 2>/dev/null)
}

cat >job.yaml <<SPEC
name: e2e
scheduler: slurm
nodes: 2
procs_per_node: 2
walltime: "00:05:00"
env: {FROM_SPEC: "from the spec"}
command: [/usr/bin/python3, "$SRCDIR/tests/agent/py/env_ddp.py"]
SPEC
submit_and_wait job.yaml
state=$(cluster_in head scontrol -o show job "$JOB" 2>/dev/null | grep -o 'JobState=[A-Z]*\|ExitCode=[0-9:]*' | tr '\n' ' ')
expect_eq "$state" "JobState=COMPLETED ExitCode=0:0 " "an unmodified tutorial script under a spec without checkpoint: runs to its end inside the limit: COMPLETED, 0"
expect_contains "$OUT" "ddpjob: job $JOB: 2 node(s), 2 worker(s) each, master $n1
" "the job script found its 2 nodes and master $n1"
expect_contains "$OUT" "node 0 of 2 (n1): ranks 0-1 of 4" "the agent on $n1 is node 0 with ranks 0-1"
expect_contains "$OUT" "node 1 of 2 (n2): ranks 2-3 of 4" "the agent on $n2 is node 1 with ranks 2-3"
for r in 0 1 2 3; do
    node=$((r / 2)) host=n$((r / 2 + 1)) local=$((r % 2))
    expect_contains "$OUT" "[rank $r] host=$host RANK=$r LOCAL_RANK=$local WORLD_SIZE=4 LOCAL_WORLD_SIZE=2 GROUP_RANK=$node GROUP_WORLD_SIZE=2 MASTER_ADDR=$n1 TORCHELASTIC_RUN_ID=$JOB FROM_SPEC=from the spec sum=6 expected=6" \
        "rank $r on $host has the right environment and took part in the all_reduce"
done

# ddpjob doctor through Slurm: the same job's agents on both nodes, preflight only.
# After submit: the job's record answers once Slurm (no accounting here; MinJobAge 4 s, purged
# on slurmctld's next sweep) has forgotten the job.
e2e_out=$OUT
for _ in $(seq 600); do
    [ -z "$(cluster_in head squeue -h -t all -j "$JOB" 2>/dev/null)" ] && break
    sleep 0.2
done
dj status "$JOB"
expect_contains "$OUT" "e2e (slurm job $JOB): completed, exit 0 ($forgotten" "status of a completed job slurmctld has forgotten: $forgotten"
expect_contains "$OUT" ", elapsed 00:0" "... with its elapsed time"

dj wait "$JOB"
expect_eq "$RC" 0 "wait on a completed job exits 0"
dj logs "$JOB" --rank 3
expect_contains "$OUT" "host=n2 RANK=3 LOCAL_RANK=1" "logs --rank 3: rank 3's own lines, from the record"
expect_lacks "$OUT" "RANK=2 " "and no other rank's"
dj logs "$JOB" --node 0
expect_contains "$OUT" "[rank 1] host=n1 RANK=1" "logs --node 0: node 0's ranks, prefixed"
dj DIR=/ list
expect_contains "$OUT" "e2e (slurm job $JOB): completed" "list from another directory finds the job"
dj DIR=/ status e2e --json
expect_contains "$OUT" "\"id\": \"$JOB\", \"job_ids\": [\"$JOB\"], \"scheduler\": \"slurm\", \"state\": \"completed\"" "status --json by the spec's name"
dj status no-such-job
expect_eq "$RC" 3 "status of an unknown job exits 3"
expect_contains "$ERR" "no job \"no-such-job\": not a job record's folder, and no job of that name or scheduler id in the index $T/state/ddpjob/jobs" "naming what was looked for and where"
OUT=$e2e_out

SUBMIT="doctor job.yaml --submit" submit_and_wait job.yaml
expect_contains "$OUT" "ddpjob-agent: preflight: 2 node(s); 0 fact(s) that must agree differ" \
    "ddpjob doctor --submit: the job's output holds node 0's preflight of both nodes"
expect_lacks "$OUT" "[rank " "doctor starts no worker"
state=$(cluster_in head scontrol -o show job "$JOB" 2>/dev/null | grep -o 'JobState=[A-Z]*\|ExitCode=[0-9:]*' | tr '\n' ' ')
expect_eq "$state" "JobState=COMPLETED ExitCode=0:0 " "and the doctor's job completes with 0"

submit_and_wait job.yaml FAIL_RANK=3
expect_contains "$OUT" "job failed (exit 3): rank 3 (node 1, host n2, local rank 1) exited with code 3" \
    "a failing rank on $n2 is named in the job's output"
state=$(cluster_in head scontrol -o show job "$JOB" 2>/dev/null | grep -o 'JobState=[A-Z]*\|ExitCode=[0-9:]*' | tr '\n' ' ')
expect_eq "$state" "JobState=FAILED ExitCode=3:0 " "and Slurm records the job as failed with the worker's code"
dj status "$JOB"
expect_contains "$OUT" "e2e (slurm job $JOB): failed, exit 3" "status: failed, exit 3"
expect_contains "$OUT" "  rank 3 (node 1, host n2): exited with code 3" "status names rank 3, its host and code"
dj wait "$JOB"
expect_eq "$RC" 3 "wait on it exits with the job's status, 3"

# Node 1's agent missing on n2 alone (an install not on a shared filesystem): its slurmd's mount
# namespace hides the agent's folder. The job stops at once, naming the node and the path.
agent_dir=$(dirname "$AGENT")
mkdir -p "$T/empty"
nsenter --mount --target "$(cat "$CLUSTER/run/slurmd-n2.pid")" mount --bind "$T/empty" "$agent_dir"
started=$SECONDS
submit_and_wait job.yaml
nsenter --mount --target "$(cat "$CLUSTER/run/slurmd-n2.pid")" umount "$agent_dir"
state=$(cluster_in head scontrol -o show job "$JOB" 2>/dev/null | grep -o 'JobState=[A-Z]*\|ExitCode=[0-9:]*' | tr '\n' ' ')
# (srun --kill-on-bad-exit stops node 0's task with SIGTERM, and sbatch's status is srun's
# highest: 143.)
expect_contains "$state" "JobState=FAILED" "a node whose agent is missing fails the Slurm job"
expect_contains "$OUT" "/ddpjob-agent: No such file or directory" "the job's output names the path"
expect_contains "$OUT" "n2: task 1: Exited with exit code 127" "and the node (srun's line)"
if [ $((SECONDS - started)) -lt 60 ]; then
    pass "... at once, not at the rendezvous timeout"
else
    fail "... at once, not at the rendezvous timeout" "took $((SECONDS - started)) s"
fi

# Out of memory under Slurm's own memory cgroups (task/cgroup, ConstrainRAMSpace=yes): rank 3
# asks for 1 GiB in a job of 256 MiB per node.
cat >oom.yaml <<SPEC
name: oom
scheduler: slurm
nodes: 2
procs_per_node: 2
mem: 256M
walltime: "00:05:00"
command: [/usr/bin/python3, -c, "import os, time; os.environ['RANK'] == '3' and bytearray(1 << 30); time.sleep(60)"]
SPEC
submit_and_wait oom.yaml
expect_contains "$OUT" "job failed (exit 137): rank 3 (node 1, host n2, local rank 1) killed by the out-of-memory killer: its memory cgroup's limit 256 MiB was reached (/slurm_n2/uid_0/job_$JOB/" \
    "a rank past the job's --mem: the agent names the OOM kill and Slurm's limit"
expect_contains "$OUT" "Detected 1 oom-kill event(s) in StepId=$JOB." "Slurm saw the same kill"
dj status "$JOB"
# srun ends a step that had an OOM kill with 1, whatever its task's own status: the job's is node
# 0's agent's (137), which its task writes for the batch shell.
expect_contains "$OUT" "oom (slurm job $JOB): out of memory, exit 137 (" "status: out of memory, with the agents' status"
expect_contains "$OUT" "  rank 3 (node 1, host n2): killed by the out-of-memory killer" "status names the rank the OOM killer ended"

# A node lost without a spare: n2's link cut for 20 s, which Slurm (SlurmdTimeout 300 s) does
# not notice; the agents do, and end the job naming the node. srun, which would wait for n2's task
# until the walltime, is ended 60 s after node 0's agent. Slurm says FAILED (sacct too), status
# node failure, here and once Slurm has forgotten the job (below).
cat >lost.yaml <<SPEC
name: lost
scheduler: slurm
nodes: 2
procs_per_node: 1
walltime: "00:05:00"
command: [sh, -c, 'echo "rank \$RANK up"; exec sleep 120']
SPEC
submit lost.yaml
for _ in $(seq 600); do [ "$(grep -c ' up$' "$T/lost-$JOB.out" 2>/dev/null)" = 2 ] && break; sleep 0.2; done
ip -n "$(cluster_ns head)" link set v2 down
sleep 20
ip -n "$(cluster_ns head)" link set v2 up
cluster_wait_gone "$JOB"
expect_contains "$(cat "$T/lost-$JOB.out")" "but srun still waits for a task of the step (on a node Slurm cannot reach?): ending srun" \
    "the batch shell ended srun, which waited for the lost node's task, and said why"
dj status "$JOB"
expect_contains "$OUT" "lost (slurm job $JOB): node failure" "a node lost without a spare: status says node failure" "$(cat "$T/lost-$JOB.out")"
expect_contains "$OUT" "  node 1 (host n2) lost: agent lost" "... naming the node, its host and how it was lost"
lost=$JOB

# cancel: a job whose ranks would sleep for minutes ends at once, nothing of it left.
cat >sleepy.yaml <<SPEC
name: sleepy
scheduler: slurm
nodes: 2
procs_per_node: 2
walltime: "00:05:00"
command: [/bin/sleep, "300.$$"]
SPEC
submit sleepy.yaml
for _ in $(seq 600); do
    [ "$(cluster_in head squeue -h -j "$JOB" -o %T 2>/dev/null)" = RUNNING ] && [ -n "$(ls -d "$T"/.ddpjob/jobs/sleepy.*/link-0/started 2>/dev/null)" ] && break
    sleep 0.1
done
dj status sleepy
expect_contains "$OUT" "sleepy (slurm job $JOB): running (squeue RUNNING)" "status of a running job: from squeue"
dj cancel "$JOB"
expect_eq "$RC" 0 "cancel of a running job exits 0 once it has ended"
expect_contains "$OUT" "job $JOB (sleepy): cancelled" "and says so"
dj status "$JOB"
expect_contains "$OUT" "sleepy (slurm job $JOB): cancelled" "status afterwards: cancelled"
dj wait "$JOB"
expect_eq "$RC" 1 "wait on a cancelled job exits 1"
for _ in $(seq 300); do pgrep -f "sleep 300.$$" >/dev/null || break; sleep 0.2; done
expect_lacks "$(pgrep -a sleep)" "sleep 300.$$" "nothing of the cancelled job runs on any node"
# cancel --checkpoint ("stop and save"): the workers checkpoint on the spec's signal, the job
# ends with 75 and is not requeued, though its spec allows it.
cat >stopsave.yaml <<SPEC
name: stopsave
scheduler: slurm
nodes: 2
procs_per_node: 2
walltime: "00:05:00"
checkpoint: {signal: USR1, before: 40}
requeue: 3
train: $(chain_train "$T/stopsave")
SPEC
submit stopsave.yaml
for _ in $(seq 600); do
    dj logs "$JOB" --rank 0
    grep -q "epoch 1/$CHAIN_EPOCHS" <<<"$OUT" && break
    sleep 0.2
done
# logs -f follows rank 0's stderr from now on, and must end by itself when the job does.
XDG_STATE_HOME="$T/state" bash -c '. "$0/tests/cluster/slurm.sh"; cd "$1" && cluster_in head "$2" logs "$3" --rank 0 --stderr -f' \
    "$SRCDIR" "$T" "$DDPJOB" "$JOB" >"$T/follow.out" 2>&1 &
follow=$!
dj cancel "$JOB" --checkpoint
expect_eq "$RC" 0 "cancel --checkpoint of a training job exits 0 once it has ended"
expect_contains "$OUT" "asked job $JOB to checkpoint (SIGUSR1)" "it asks the workers to checkpoint with the spec's signal"
dj status "$JOB"
expect_contains "$OUT" "stopsave (slurm job $JOB): cancelled, exit 75" "status: cancelled, exit 75 (every rank checkpointed)"
expect_contains "$OUT" "link 1 of 1" "and it was not requeued"
position=$("$TRAIN" inspect "$T/stopsave/checkpoint.ddpt" 2>&1 | sed -n 's/^position *//p')
step=$(sed -n 's/.*, step \([0-9]*\)$/\1/p' <<<"$position")
if [ -n "$step" ] && [ "$step" -gt 0 ] && [ "$step" -lt $((CHAIN_EPOCHS * 32)) ]; then
    pass "the checkpoint holds the position it stopped at, mid-training ($position)"
else
    fail "the checkpoint holds the position it stopped at" "position: ${position:-none}"
fi
dj wait "$JOB"
expect_eq "$RC" 75 "wait on it exits 75"
for _ in $(seq 100); do kill -0 "$follow" 2>/dev/null || break; sleep 0.2; done
if kill -0 "$follow" 2>/dev/null; then
    kill "$follow"
    fail "logs -f ends by itself when the job has ended" "still running 20 s after"
else
    pass "logs -f ends by itself when the job has ended"
fi
expect_contains "$(cat "$T/follow.out")" "ddp-train train: stopped by User defined signal 1 after step" \
    "and it followed: the line rank 0 wrote after it started"

# The built-in workload across the two nodes: ddp-train's ranks meet over the nodes' addresses.
cat >train.yaml <<SPEC
name: e2e-train
scheduler: slurm
nodes: 2
procs_per_node: 2
walltime: "00:05:00"
train: {synthetic: true, synthetic_size: "2048,512", epochs: 2, batch_size: 32}
SPEC
submit_and_wait train.yaml
expect_contains "$OUT" "[rank 0] epoch 2/2 " "a train: spec trains on 2 nodes x 2 ranks under Slurm"
expect_contains "$OUT" "trained after 2 of 2 epochs (32 steps, 4 ranks)" "... every rank took every step"

# The walltime contract on the real Slurm (a requeued job is let start as soon as its nodes are
# free: cluster_wait_gone).
# A PyTorch script that checkpoints on SIGUSR1 gets it exactly once per link: the agent sends it
# 90 s before the 2-minute limit (time for `import torch` on a busy machine: a signal that comes
# before the script's handler exists kills it), Slurm itself sends nothing early.
cat >signals.yaml <<SPEC
name: signals
scheduler: slurm
nodes: 2
procs_per_node: 2
walltime: "00:02:00"
checkpoint: {signal: USR1, before: 90}
requeue: 1
command: [/usr/bin/python3, "$SRCDIR/tests/agent/py/walltime_ddp.py"]
SPEC
submit signals.yaml
cluster_wait_gone "$JOB"
for r in 0 1 2 3; do
    expect_contains "$OUT" "[rank $r] link 0: 1 signal(s), checkpointed" "rank $r got the checkpoint signal exactly once in the first link"
    expect_contains "$OUT" "[rank $r] link 1: resumed" "rank $r ran again in the requeued link (restart count 1)"
done
expect_contains "$OUT" "ddpjob: job $JOB stopped with every rank's checkpoint written; requeueing it (1 of 1)" "the job requeued itself once"
expect_lacks "$OUT" "job failed" "the planned stop is not called a failure"

# ddp-train across requeues: more epochs than one link can do, each link stopped by the checkpoint
# signal; the chain's last checkpoint equals an uninterrupted run's.
cat >chain.yaml <<SPEC
name: chain
scheduler: slurm
nodes: 2
procs_per_node: 2
walltime: "00:01:00"
checkpoint: {signal: USR1, before: 40}
# 2 links at least (chain_train); a slower or busier machine needs more.
requeue: 10
# One BLAS kernel for the chain and the reference run (OpenBLAS picks by CPU and environment).
env: {OPENBLAS_CORETYPE: Haswell}
train: $(chain_train $T/chain)
SPEC
submit chain.yaml
cluster_wait_gone "$JOB"
expect_contains "$OUT" "ddpjob: requeue 1 of 10 of job $JOB, resuming" "the first requeue resumes"
expect_contains "$OUT" "[rank 0] ddp-train: resuming from $T/chain/checkpoint.ddpt at epoch" "from the checkpoint the first link wrote"
expect_contains "$OUT" "trained after $CHAIN_EPOCHS of $CHAIN_EPOCHS epochs" "the chain trains to the end"
dj status "$JOB"
links=$(sed -n 's/^  link \([0-9]*\) of \([0-9]*\).*/\1 \2/p' <<<"$OUT")
if [ "${links% *}" = "${links#* }" ] && [ "${links% *}" -ge 2 ]; then pass "status of the chain: completed at its last link ($links)"; else
    fail "status of the chain: completed at its last link" "$OUT"; fi
expect_contains "$OUT" "chain (slurm job $JOB): completed, exit 0" "... completed, exit 0"
expect_contains "$OUT" "  last steps (20" "... with each rank's last step, from node 0's report (--progress-file)"
dj wait "$JOB"
expect_eq "$RC" 0 "wait on the chain exits 0"
dj logs "$JOB" --rank 0 --link 1
expect_contains "$OUT" "epoch 1/$CHAIN_EPOCHS" "logs --link 1: the first link's lines"
dj logs "$JOB" --rank 0 --link 2
expect_contains "$OUT" "resuming from $T/chain/checkpoint.ddpt" "logs --link 2: the requeued link's lines"
REFERENCE_HOSTS=("$(cluster_ns n1)" "$(cluster_ns n2)") REFERENCE_MASTER=10.77.0.11
expect_same_as_uninterrupted "$T/chain/checkpoint.ddpt" "the requeued chain's final checkpoint = an uninterrupted run's" "$OUT"
# A user without root installs the release bundle in their own folder (scripts/bundle.sh, its
# install.sh) and submits with its ddpjob a 2-node spec whose modules: [ddpjob] loads it on
# every node (the real environment-modules; MODULEPATH from the submitting shell, which sbatch
# passes on): the nodes run the bundle's static agent.
if ! bundle=$(bash "$SRCDIR/scripts/bundle.sh" "$T" 2>"$T/bundle.err"); then
    fail "scripts/bundle.sh builds the bundle" "$(tail -n 20 "$T/bundle.err")"
else
    uhome=$(mktemp -d /tmp/ddpjob-slurm-user.XXXXXX)
    at_exit "rm -rf $uhome"
    chmod 755 "$uhome"
    cp "$bundle" "$SRCDIR/tests/agent/py/env_ddp.py" "$uhome/"
    chown -R nobody: "$uhome"
    as_nobody=(runuser -u nobody -- env -i PATH=/usr/bin:/bin HOME="$uhome" SLURM_CONF="$SLURM_CONF"
        MODULEPATH="$uhome/ddpjob/share/ddpjob/modulefiles" XDG_STATE_HOME="$uhome/state")
    "${as_nobody[@]}" tar -xzf "$uhome/$(basename "$bundle")" -C "$uhome"
    "${as_nobody[@]}" "$uhome/$(basename "$bundle" .tar.gz)/install.sh" "$uhome/ddpjob" >"$T/install.out" 2>&1
    cat >"$uhome/bundled.yaml" <<SPEC
name: bundled
scheduler: slurm
nodes: 2
procs_per_node: 2
walltime: "00:05:00"
modules: [ddpjob]
setup: export FROM_SETUP="\$DDPJOB_ROOT on \$(hostname)"
command: [/usr/bin/python3, "$uhome/env_ddp.py"]
SPEC
    chown nobody: "$uhome/bundled.yaml"
    run bash -c '. "$1/tests/cluster/slurm.sh"; shift; cd "$1" && cluster_in head "${@:2}"' _ "$SRCDIR" "$uhome" \
        "${as_nobody[@]}" "$uhome/ddpjob/bin/ddpjob" submit bundled.yaml
    JOB=$(grep -o '^[0-9][0-9]*$' <<<"$OUT" | tail -n 1)
    for _ in $(seq 600); do
        [ -n "$JOB" ] && [ -z "$(cluster_in head squeue -h -j "$JOB" 2>/dev/null)" ] && break
        sleep 0.2
    done
    OUT=$(cat "$uhome"/*-"$JOB".out 2>/dev/null)
    expect_contains "$(cat "$uhome/bundled.sbatch" 2>/dev/null)" "$uhome/ddpjob/bin/ddpjob-agent" \
        "the bundle installed by a user without root: its script starts the bundle's agent"
    for r in 0 3; do
        host=n$((r / 2 + 1))
        expect_contains "$OUT" "[rank $r] host=$host RANK=$r" "rank $r ran on $host"
        expect_contains "$OUT" "setup=$uhome/ddpjob on $host" "module load ddpjob set DDPJOB_ROOT on $host"
    done
    state=$(cluster_in head scontrol -o show job "$JOB" 2>/dev/null | grep -o 'JobState=[A-Z]*')
    [ -z "$state" ] && state=$(cluster_in head "${as_nobody[@]}" "$uhome/ddpjob/bin/ddpjob" status "$JOB" 2>&1 | head -n 1)
    if [ "$state" = JobState=COMPLETED ] || grep -q ": completed, exit 0" <<<"$state"; then
        pass "and the 2-node job completes"
    else
        fail "and the 2-node job completes" "$state" "$OUT"
    fi

    # Two jobs of the same user; the first one's record says its link 1 is "--me" (a record
    # another user swapped, or a line written by mistake), and the user's index also lists a
    # record that root's folder holds, whose link says "--me" too. Cancelling them must never
    # reach scancel --me: the second job runs on.
    printf 'name: %s\nscheduler: slurm\nnodes: 1\nwalltime: "00:05:00"\ncommand: [sleep, "300"]\n' first \
        >"$uhome/first.yaml"
    sed 's/^name: first/name: second/' "$uhome/first.yaml" >"$uhome/second.yaml"
    chown nobody: "$uhome/first.yaml" "$uhome/second.yaml"
    ids=()
    for j in first second; do
        run bash -c '. "$1/tests/cluster/slurm.sh"; shift; cd "$1" && cluster_in head "${@:2}"' _ "$SRCDIR" "$uhome" \
            "${as_nobody[@]}" "$uhome/ddpjob/bin/ddpjob" submit "$j.yaml"
        ids+=("$(grep -o '^[0-9][0-9]*$' <<<"$OUT" | tail -n 1)")
    done
    first_record=$(ls -d "$uhome"/.ddpjob/jobs/first.* | head -n 1)
    runuser -u nobody -- sh -c 'echo "1 --me" >>"$1/links"' _ "$first_record"
    planted=$(mktemp -d /tmp/ddpjob-planted.XXXXXX)
    at_exit "rm -rf $planted"
    chmod 755 "$planted"
    printf '{\n  "version": 1,\n  "name": "victim",\n  "scheduler": "slurm",\n  "nodes": 1\n}\n' >"$planted/job.json"
    echo "0 --me" >"$planted/links"
    printf '1\t--me\tslurm\tvictim\t%s\n' "$planted" >>"$uhome/state/ddpjob/jobs"
    dj_nobody() {
        run bash -c '. "$1/tests/cluster/slurm.sh"; shift; cd "$1" && cluster_in head "${@:2}"' _ "$SRCDIR" "$uhome" \
            "${as_nobody[@]}" "$uhome/ddpjob/bin/ddpjob" "$@"
    }
    dj_nobody cancel victim
    expect_eq "$RC" 3 "cancel of a job whose record root's folder holds: refused"
    expect_contains "$ERR" "passed over not trusting the job record $planted: $planted: refusing a folder owned by root (uid 0)" \
        "naming the record and its owner"
    dj_nobody cancel first
    second_state=$(cluster_in head squeue -h -j "${ids[1]}" -o %T 2>&1)
    case $second_state in
    PENDING | RUNNING | CONFIGURING) pass "cancel of a record whose links say --me ends that job only: the other runs on ($second_state)" ;;
    *) fail "cancel of a record whose links say --me ends that job only: the other runs on" "squeue: $second_state" "cancel: $RC $OUT $ERR" ;;
    esac
    expect_eq "$RC" 0 "and the job itself is cancelled (ddpjob cancel exits 0: it ended)"
    dj_nobody cancel second
    expect_eq "$RC" 0 "the second job is cancelled by its own name"

    # With spares, node 0's status comes back through a file on its host. Another user (root
    # here) made files under the names an earlier script used (/tmp/ddpjob-JOBID.status) for the
    # next job ids, which the job's user can neither remove nor write: the job runs as it would.
    # (A spare that comes after node 0's workers have ended waits for the store until its
    # rendezvous timeout: the workers sleep a little, and the timeout is short.)
    printf 'name: spared\nscheduler: slurm\nnodes: 1\nspares: 1\nwalltime: "00:05:00"\nrendezvous_timeout: 20\ncommand: [sleep, "5"]\n' \
        >"$uhome/spared.yaml"
    chown nobody: "$uhome/spared.yaml"
    planted_ids=$(seq $((ids[1] + 1)) $((ids[1] + 5)))
    for id in $planted_ids; do echo 1 >"/tmp/ddpjob-$id.status"; done
    dj_nobody submit spared.yaml
    JOB=$(grep -o '^[0-9][0-9]*$' <<<"$OUT" | tail -n 1)
    for _ in $(seq 120); do
        [ -n "$JOB" ] && [ -z "$(cluster_in head squeue -h -j "$JOB" 2>/dev/null)" ] && break
        sleep 1
    done
    dj_nobody status "$JOB"
    expect_contains "$OUT" "spared (slurm job $JOB): completed, exit 0" \
        "a job with spares whose old status-file name another user holds completes, exit 0"
    for id in $planted_ids; do rm -f "/tmp/ddpjob-$id.status"; done
fi

# What status says of a job never changes once Slurm forgets it (issue 72; ddpjob(1), STATES):
# four endings nobody asked ddpjob about while Slurm knew them (root reads Slurm's own word with
# scontrol, which keeps nothing), then status once slurmctld has forgotten them (MinJobAge 4 s;
# with accounting, sacct answers, else what the batch shell wrote as the job ended).
for ending in completed failed scancel timeout; do
    case $ending in
    completed) command="[sh, -c, 'sleep 2']" walltime=00:05:00 ;;
    failed) command="[sh, -c, 'sleep 2; exit 3']" walltime=00:05:00 ;;
    *) command="[sleep, '300.$$']" walltime=00:01:00 ;;
    esac
    printf 'name: end-%s\nscheduler: slurm\nnodes: 1\nwalltime: "%s"\ncommand: %s\n' \
        "$ending" "$walltime" "$command" >"end-$ending.yaml"
    submit "end-$ending.yaml"
    eval "end_$ending=\$JOB"
done
for _ in $(seq 600); do
    [ -n "$(ls -d "$T"/.ddpjob/jobs/end-scancel.*/link-0/started 2>/dev/null)" ] && break
    sleep 0.2
done
cluster_in head scancel "$end_scancel"
# Slurm's word on each, read while it holds them (at least MinJobAge after each end): all four
# watched at once, since one may end while another is watched.
declare -A said=()
for _ in $(seq 900); do
    left=0
    for ending in completed failed scancel timeout; do
        [ -z "${said[$ending]:-}" ] || continue
        eval "id=\$end_$ending"
        s=$(cluster_in head scontrol -o show job "$id" 2>/dev/null | grep -o ' JobState=[A-Z_]*')
        case ${s# JobState=} in
        COMPLETED | FAILED | CANCELLED | TIMEOUT) said[$ending]=${s# JobState=} ;;
        '') said[$ending]=forgotten ;;
        *) left=1 ;;
        esac
    done
    [ "$left" = 0 ] && break
    sleep 0.3
done
for ending in completed failed scancel timeout; do
    eval "id=\$end_$ending"
    cluster_wait_gone "$id"
    for _ in $(seq 100); do
        [ -z "$(cluster_in head squeue -h -t all -j "$id" 2>/dev/null)" ] && break
        sleep 0.2
    done
    case $ending in scancel) want=cancelled ;; *) want=$ending ;; esac
    expect_eq "${said[$ending]:-}" "$(tr a-z A-Z <<<"$want")" "Slurm's own word on the $ending job as it ended"
    dj status "$id"
    expect_contains "$OUT" "end-$ending (slurm job $id): $want" \
        "... and status, once slurmctld has forgotten it, says $want" "$ERR"
    expect_lacks "$OUT" "unknown" "... never unknown"
done
# A job status looked at while Slurm knew it: the state then is kept, and said the same after.
dj status sleepy
expect_contains "$OUT" "sleepy (slurm job" "status of the job cancelled above, now forgotten: cancelled"
expect_contains "$OUT" "): cancelled" "... cancelled still"
dj status oom
expect_contains "$OUT" "): out of memory" "... and the out-of-memory one: out of memory still"
dj status "$lost"
expect_contains "$OUT" "lost (slurm job $lost): node failure" "... and the one that lost a node: node failure still"

# A failure before any worker starts (issue 72): a setup line that fails on the nodes. No agent
# reports it; what the batch shell said is in the record's batch stream, and status, wait and
# logs say it, with the host.
cat >badsetup.yaml <<SPEC
name: badsetup
scheduler: slurm
nodes: 2
walltime: "00:05:00"
setup: "echo preparing the nodes; no-such-tool-$$ --init"
command: [sh, -c, 'echo never ran']
SPEC
submit_and_wait badsetup.yaml
dj wait "$JOB"
expect_eq "$RC" 127 "wait on a job whose setup line fails: the shell's status (127: not found)"
expect_contains "$ERR" "no-such-tool-$$: command not found" "... and it prints what the batch shell said" "$ERR"
dj status "$JOB"
expect_contains "$OUT" "badsetup (slurm job $JOB): failed, exit 127" "status: failed, exit 127"
expect_contains "$OUT" "no agent reported a failure; the batch shell on n1 said last (ddpjob logs $JOB --batch):" \
    "... no agent reported: the batch shell's last lines, and where it ran"
expect_contains "$OUT" "no-such-tool-$$: command not found" "... which name the cause"
dj logs "$JOB"
expect_contains "$OUT" "[batch] preparing the nodes" "logs of a job no rank wrote to: the batch stream, marked"
dj logs "$JOB" --batch
expect_contains "$OUT" "no-such-tool-$$: command not found" "logs --batch: the whole batch stream"
expect_lacks "$OUT" "[rank" "... never a rank's lines"
dj status "$JOB" --json
expect_contains "$OUT" "\"batch_tail\": [" "status --json: the batch stream's last lines"
dj logs e2e --batch
expect_contains "$OUT" "ddpjob: job " "logs --batch of a job that ran: its batch shell's own lines"
expect_lacks "$OUT" "[rank " "... without the ranks' (in their own logs)"

# Every CPU the spec gave a node is its workers', though the cluster binds each task to its CPUs
# as production ones do (TaskPlugin task/affinity,task/cgroup); with cpu_binding: cores each
# worker has its own share. This Slurm (22.05) still gives a step that
# names no CPUs all of the job's on its node, unless the step is exact: SLURM_EXACT=1, which
# sites set and `srun --exact` means, gives it one CPU per task, so the jobs run with it, and
# only the CPUs the script passes to srun hold them (without them each worker sees CPU 0 alone).
# A spec that names no CPUs (issue 72): each worker its own CPU's worth, 1 per worker, asked for
# and given (before, the node's one task had one CPU, and both workers shared CPU 0).
for binding in none cores default; do
    cat >"affinity-$binding.yaml" <<SPEC
name: affinity-$binding
scheduler: slurm
nodes: 2
procs_per_node: 2
walltime: "00:05:00"
command: [/usr/bin/python3, "$SRCDIR/tests/agent/py/affinity.py"]
SPEC
    [ "$binding" = default ] || printf 'cpus_per_node: 2\ncpu_binding: %s\n' "$binding" >>"affinity-$binding.yaml"
    submit_and_wait "affinity-$binding.yaml" SLURM_EXACT=1
    cpus=$(grep -o 'rank [0-9] local [01] cpus [0-9,]*' <<<"$OUT" | sort | sed 's/rank [0-9] local \([01]\)/\1/' | tr '\n' ' ')
    if [ "$binding" = default ]; then
        expect_eq "$cpus" "0 cpus 0,1 1 cpus 0,1 0 cpus 0,1 1 cpus 0,1 " "no cpus_per_node: the 2 workers of a node have its 2 CPUs (1 each, asked), not one between them"
    elif [ "$binding" = none ]; then
        expect_eq "$cpus" "0 cpus 0,1 1 cpus 0,1 0 cpus 0,1 1 cpus 0,1 " "cpu_binding: none: each worker may run on both CPUs its node was given"
    else
        expect_eq "$cpus" "0 cpus 0 1 cpus 1 0 cpus 0 1 cpus 1 " "cpu_binding: cores: each worker on its own CPU of the two"
    fi
done
expect_no_leftovers "no process of the jobs is left on any node"
