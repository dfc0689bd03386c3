# A real Slurm cluster on this machine for the suites (source this file; see
# shared/notes/cluster.md): munged, slurmctld and one slurmd per node. slurmctld runs in a "head"
# network namespace, and each slurmd in its own network, UTS and mount namespace, so nodes
# n1..nN have their own hostnames and addresses (10.77.0.1x on a bridge in head). No namespace
# has a default route, so a wrong address fails at once instead of leaving the machine. There is
# no fallback without namespaces: two nodes sharing one host would pass multi-host checks they
# never made. Everything lives under $CLUSTER and is stopped by cluster_down, which also kills
# whatever carries the cluster's mark.

# shellcheck source=netns.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns.sh"

cluster_ns() { echo "ddpj$CLUSTER_ID-$1"; }

# cluster_in NAME CMD...: runs CMD in node NAME's (or head's) namespaces.
cluster_in() {
    local name=$1
    shift
    nsenter --net="/run/netns/$(cluster_ns "$name")" -- unshare --uts --mount --propagation private \
        bash -c 'hostname "$0" && mount --bind "$CLUSTER/etc/hosts" /etc/hosts && exec "$@"' "$name" "$@"
}

cluster_up() { # NODES
    local nodes=$1 i
    CLUSTER=$(mktemp -d "${TMPDIR:-/tmp}/ddpj-cluster.XXXXXX")
    CLUSTER_ID=$$
    CLUSTER_NODES=$nodes
    export CLUSTER CLUSTER_ID
    mkdir -p "$CLUSTER"/{etc,munge,state,spool,log,run}
    chmod 755 "$CLUSTER" "$CLUSTER/munge"
    netns_make "$CLUSTER" cluster_ns 10.77.0 head "$nodes" || return 1
    dd if=/dev/urandom of="$CLUSTER/munge/key" bs=1024 count=1 status=none
    chmod 400 "$CLUSTER/munge/key"
    DDPJ_TESTCLUSTER=$CLUSTER munged --socket "$CLUSTER/munge/sock" --key-file "$CLUSTER/munge/key" \
        --pid-file "$CLUSTER/run/munged.pid" --log-file "$CLUSTER/log/munged.log" \
        --seed-file "$CLUSTER/munge/seed" || return 1
    local names=
    cat >"$CLUSTER/etc/slurm.conf" <<CONF
ClusterName=ddpj
SlurmctldHost=head(10.77.0.1)
SlurmctldPort=16800
SlurmdPort=16801
AuthType=auth/munge
AuthInfo=socket=$CLUSTER/munge/sock
CredType=cred/munge
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$CLUSTER/state
SlurmdSpoolDir=$CLUSTER/spool/%n
SlurmctldPidFile=$CLUSTER/run/slurmctld.pid
SlurmdPidFile=$CLUSTER/run/slurmd-%n.pid
SlurmctldLogFile=$CLUSTER/log/slurmctld.log
SlurmdLogFile=$CLUSTER/log/slurmd-%n.log
PlugStackConfig=$CLUSTER/etc/plugstack.conf
SlurmdParameters=config_overrides
SchedulerParameters=batch_sched_delay=0
MinJobAge=4
ReturnToService=2
MailProg=/bin/true
NodeName=DEFAULT CPUs=2 State=UNKNOWN
CONF
    for i in $(seq "$nodes"); do
        names+=${names:+,}n$i
        echo "NodeName=n$i NodeAddr=10.77.0.$((10 + i))" >>"$CLUSTER/etc/slurm.conf"
    done
    echo "PartitionName=debug Nodes=$names Default=YES MaxTime=INFINITE State=UP" >>"$CLUSTER/etc/slurm.conf"
    : >"$CLUSTER/etc/plugstack.conf"
    export SLURM_CONF=$CLUSTER/etc/slurm.conf
    DDPJ_TESTCLUSTER=$CLUSTER cluster_in head slurmctld -f "$SLURM_CONF" || return 1
    for i in $(seq "$nodes"); do
        DDPJ_TESTCLUSTER=$CLUSTER cluster_in "n$i" slurmd -f "$SLURM_CONF" -N "n$i" || return 1
    done
    local deadline=$((SECONDS + 30))
    while [ "$(cluster_in head sinfo -h -t idle -o '%D' 2>/dev/null)" != "$nodes" ]; do
        [ "$SECONDS" -lt "$deadline" ] || { echo "cluster: nodes not idle after 30 s" >&2; return 1; }
        sleep 0.2
    done
}

cluster_down() {
    [ -n "${CLUSTER:-}" ] || return 0
    cluster_in head scancel --full -u root >/dev/null 2>&1
    local f pid
    for f in "$CLUSTER"/run/*.pid; do
        [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
    done
    for f in $(grep -lsz "^DDPJ_TESTCLUSTER=$CLUSTER\$" /proc/[0-9]*/environ); do
        pid=${f#/proc/}
        kill -9 "${pid%/environ}" 2>/dev/null
    done
    netns_remove "$CLUSTER" cluster_ns head "$CLUSTER_NODES"
    rm -rf "$CLUSTER"
    CLUSTER=
}
