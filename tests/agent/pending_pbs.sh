#!/bin/bash
# Why a job is pending, on a real OpenPBS (tests/cluster/pbs.sh: a server and two MoMs of 2 ncpus
# and 1 ngpus each in network namespaces; strict ordering, so the scheduler estimates starts): a
# job behind another that holds both GPUs (its comment: Insufficient amount of resource: ngpus),
# one that asks for more CPUs than the cluster has (Can Never Run), a job the user holds; `status`
# says each in words and what to do.
. "$SRCDIR/tests/lib/agents.sh"
PBS_USER=ddpjpbsp
. "$SRCDIR/tests/cluster/pbs.sh"

pbs_suite_up 2 2 1 "a 2-node OpenPBS cluster (2 ncpus, 1 ngpus per node) runs in network namespaces" || exit 1
# Strict ordering: the scheduler plans the top job's start and writes estimated.start_time.
sed -i 's/^strict_ordering: false\s*ALL/strict_ordering: true ALL/' "$PBS_CLUSTER/pbshead/sched_priv/sched_config"
pbs_in pbshead kill -HUP "$(cat "$PBS_CLUSTER/pbshead/sched_priv/sched.lock")"

home=$PBS_CLUSTER/home/$PBS_USER
jobdir=$home/jobs
mkdir -p "$PBS_CLUSTER/bin" "$jobdir"
cp "$DDPJOB" "$AGENT" "$PBS_CLUSTER/bin/"
cp -r "$BUILDDIR/templates" "$PBS_CLUSTER/templates"
spec() { # NAME NODES GPUS CPUS
    cat >"$jobdir/$1.yaml" <<SPEC
name: $1
scheduler: pbs
nodes: $2
gpus_per_node: $3
cpus_per_node: $4
walltime: "00:10:00"
command: [sleep, "300"]
SPEC
}
spec holder 2 1 1
spec gpuwait 1 1 1
spec toobig 1 0 8
chown -R "$PBS_USER:" "$home"

pj() { # ddpjob ARGS... as the user in the submission directory: RC, OUT, ERR
    local back=$PWD
    cd "$jobdir" && run pbs_as_user env DDPJOB_TEMPLATE_DIR="$PBS_CLUSTER/templates" XDG_STATE_HOME="$home/state" "$PBS_CLUSTER/bin/ddpjob" "$@"
    cd "$back" || return
}
job_state_is() { # ID STATE
    [ "$(pbs_in pbshead "$PBS_EXEC/bin/qstat" -f "$1" 2>/dev/null | sed -n 's/^    job_state = //p')" = "$2" ]
}
queue_empty() { [ -z "$(pbs_in pbshead "$PBS_EXEC/bin/qselect" 2>/dev/null)" ]; }

pj submit holder.yaml --bindir "$PBS_CLUSTER/bin"
HOLDER=$(tail -n 1 <<<"$OUT")
expect_within 60 "the first job runs, with both GPUs" job_state_is "$HOLDER" R
pj submit gpuwait.yaml --bindir "$PBS_CLUSTER/bin"
GPUWAIT=$(tail -n 1 <<<"$OUT")
pj submit toobig.yaml --bindir "$PBS_CLUSTER/bin"

# The scheduler writes its comment (and estimate) at its next cycle.
run_until 60 "estimates the start" pj status gpuwait
expect_contains "$OUT" "pending: waiting for ngpus: it asks for 1, 0 of 2 are free (PBS: Not Running: Insufficient amount of resource: ngpus" \
    "behind the job that holds both GPUs: the resource it waits for, from PBS's comment"
expect_contains "$OUT" "; PBS estimates the start at " "and the start PBS estimates"
pj status toobig
expect_contains "$OUT" "pending: it can never run: it asks for 8 ncpus and there are " \
    "a job that asks for more CPUs than any node has: it can never run"
expect_contains "$OUT" "\`ddpjob cancel toobig\`" "and what to do"

# From the user's home: pbs_as_user starts in the current directory, which may be closed to them.
(cd "$home" && pbs_as_user "$PBS_EXEC/bin/qhold" "$GPUWAIT")
expect_within 30 "the user holds the second job" job_state_is "$GPUWAIT" H
pj status gpuwait
expect_contains "$OUT" "pending: held by you: \`qrls -h u $GPUWAIT\` lets it start" "a held job: how to release it"
expect_lacks "$OUT" "estimates the start" "a held job has no estimated start"

pj cancel holder
pj cancel gpuwait
pj cancel toobig
expect_within 60 "cancelled, all three leave the queue" queue_empty
