#!/bin/bash
# Why a job is pending, on a real Slurm (2 nodes in network namespaces, the backfill scheduler
# estimating starts): a job behind another that holds both nodes (Resources, the running job
# counted, Slurm's estimated start), the one behind it (Priority), a held job (JobHeldUser, how to
# release it) and a walltime over a partition's limit (PartitionTimeLimit); `status` says each in
# words, and `--json` carries it.
. "$SRCDIR/tests/lib/agents.sh"
. "$SRCDIR/tests/cluster/slurm.sh"
at_exit 'cluster_down'
cd "$T" || exit 1

if ! cluster_up 2 >"$T/cluster.log" 2>&1; then
    fail "a 2-node Slurm cluster starts" "$(tail -n 20 "$T/cluster.log")"
    exit 1
fi
# A partition whose limit is 5 minutes, beside the default one.
sed -i 's/^PartitionName=debug .*/&\nPartitionName=short Nodes=n1,n2 MaxTime=5 State=UP/' "$CLUSTER/etc/slurm.conf"
if ! cluster_in head scontrol reconfigure >"$T/reconfigure.log" 2>&1; then
    fail "Slurm takes a second partition" "$(cat "$T/reconfigure.log")"
    exit 1
fi
pass "a 2-node Slurm cluster runs in network namespaces, with partitions debug and short (5 min)"

dj() { # ddpjob ARGS... on the head node, from $T: RC, OUT, ERR
    run env XDG_STATE_HOME="$T/state" bash -c '. "$0/tests/cluster/slurm.sh"; cd "$1" && shift && cluster_in head "$@"' \
        "$SRCDIR" "$T" "$DDPJOB" "$@"
}

squeue_is() { # ID ("": all jobs) FORMAT VALUE
    [ "$(cluster_in head squeue -h ${1:+-j "$1"} -o "$2" 2>/dev/null)" = "$3" ]
}

spec() { # NAME WALLTIME [QUEUE]
    cat >"$1.yaml" <<SPEC
name: $1
scheduler: slurm
nodes: 2
cpus_per_node: 2
walltime: "$2"
${3:+queue: $3}
command: [sleep, "300"]
SPEC
}
spec holder 00:10:00
spec behind 00:10:00
spec after 00:10:00
spec toolong 00:30:00 short

dj submit holder.yaml
HOLDER=$(tail -n 1 <<<"$OUT")
expect_within 60 "the first job runs on both nodes" \
    squeue_is "$HOLDER" %T RUNNING
dj submit behind.yaml
dj submit after.yaml
AFTER=$(tail -n 1 <<<"$OUT")
dj submit toolong.yaml

# The backfill scheduler estimates a start within its interval (1 s here).
deadline=$((SECONDS + 60))
while dj status behind && [[ $OUT != *"estimates the start"* ]] && [ "$SECONDS" -lt "$deadline" ]; do
    sleep 1
done
expect_contains "$OUT" "pending: waiting for 2 free nodes in partition debug (1 running job holds 2 nodes); Slurm estimates the start at " \
    "behind the job that holds both nodes: Resources, in words, with what holds them and Slurm's estimate"
dj status after
expect_contains "$OUT" "pending: waiting behind jobs of higher priority in partition debug (1 running job holds 2 nodes)" \
    "the next one: Priority"
dj status toolong
expect_contains "$OUT" "pending: its walltime is over partition short's limit (\`sinfo -p short -o %l\` shows it): it will not start unless the limit is raised; \`ddpjob cancel toolong\`" \
    "a walltime over the partition's limit: PartitionTimeLimit, and what to do"

cluster_in head scontrol uhold "$AFTER" >/dev/null 2>&1
expect_within 30 "Slurm holds the third job" \
    squeue_is "$AFTER" %r JobHeldUser
dj status after
expect_contains "$OUT" "pending: held by you: \`scontrol release $AFTER\` lets it start" "a held job: how to release it"
dj status after --json
expect_contains "$OUT" "\"pending\": \"held by you: \`scontrol release $AFTER\` lets it start\"" "--json carries the explanation"
dj status holder
if [[ $OUT == *"pending:"* ]]; then fail "a running job has no pending line" "$OUT"; else pass "a running job has no pending line"; fi

dj cancel holder
dj cancel behind
dj cancel after
dj cancel toolong
expect_within 60 "cancelled, all four leave the queue" \
    squeue_is "" %i ""
