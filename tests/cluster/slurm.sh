# A real Slurm cluster on this machine for the suites (source this file; see
# shared/notes/cluster.md): munged, slurmctld and one slurmd per node.
#
# Two modes. `netns` (used wherever namespaces can be made): slurmctld in a "head" network
# namespace, and each slurmd in its own network, UTS and mount namespace, so nodes n1..nN have
# their own hostnames and addresses (10.77.0.1x on a bridge in head). No namespace has a default
# route, so a wrong address fails at once instead of leaving the machine. `plain` (the fallback,
# or DDPJ_CLUSTER_MODE=plain): every daemon on the host's own network and loopback, each slurmd on
# its own port; node 1 is named after this host so that the job's master (the first node)
# resolves without touching /etc/hosts. Suites read CLUSTER_MODE, cluster_node_name and
# cluster_node_host to know what to expect. Everything lives under $CLUSTER and is stopped by
# cluster_down, which also kills whatever carries the cluster's mark.

# shellcheck source=netns.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns.sh"

cluster_ns() { echo "ddpj$CLUSTER_ID-$1"; }

# The Slurm name of node I, and the hostname its processes see.
cluster_node_name() {
    if [ "$CLUSTER_MODE" != plain ]; then
        echo "n$1"
    elif [ "$1" = 1 ]; then
        hostname
    else
        echo "$(hostname)n$1" # sorts after node 1, as Slurm orders a node list
    fi
}
cluster_node_host() { if [ "$CLUSTER_MODE" = plain ]; then hostname; else echo "n$1"; fi; }

# netns where this machine lets us make namespaces, else plain.
cluster_pick_mode() {
    if [ -n "${DDPJ_CLUSTER_MODE:-}" ]; then
        echo "$DDPJ_CLUSTER_MODE"
    elif unshare --net --uts --mount true 2>/dev/null && command -v ip >/dev/null; then
        echo netns
    else
        echo plain
    fi
}

# cluster_in NAME CMD...: runs CMD in node NAME's (or head's) namespaces.
cluster_in() {
    local name=$1
    shift
    [ "$CLUSTER_MODE" = plain ] && { "$@"; return; }
    nsenter --net="/run/netns/$(cluster_ns "$name")" -- unshare --uts --mount --propagation private \
        bash -c 'hostname "$0" && mount --bind "$CLUSTER/etc/hosts" /etc/hosts && exec "$@"' "$name" "$@"
}

cluster_up() { # NODES
    local nodes=$1 i
    CLUSTER=$(mktemp -d "${TMPDIR:-/tmp}/ddpj-cluster.XXXXXX")
    CLUSTER_ID=$$
    CLUSTER_NODES=$nodes
    CLUSTER_MODE=$(cluster_pick_mode)
    export CLUSTER CLUSTER_ID CLUSTER_MODE
    mkdir -p "$CLUSTER"/{etc,munge,state,spool,log,run}
    chmod 755 "$CLUSTER" "$CLUSTER/munge"
    [ "$CLUSTER_MODE" = plain ] || netns_make "$CLUSTER" cluster_ns 10.77.0 head "$nodes" || return 1
    dd if=/dev/urandom of="$CLUSTER/munge/key" bs=1024 count=1 status=none
    chmod 400 "$CLUSTER/munge/key"
    DDPJ_TESTCLUSTER=$CLUSTER munged --socket "$CLUSTER/munge/sock" --key-file "$CLUSTER/munge/key" \
        --pid-file "$CLUSTER/run/munged.pid" --log-file "$CLUSTER/log/munged.log" \
        --seed-file "$CLUSTER/munge/seed" || return 1
    local ctld_host='head(10.77.0.1)' names=
    [ "$CLUSTER_MODE" = plain ] && ctld_host='localhost(127.0.0.1)'
    cat >"$CLUSTER/etc/slurm.conf" <<CONF
ClusterName=ddpj
SlurmctldHost=$ctld_host
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
        names+=${names:+,}$(cluster_node_name "$i")
        [ "$CLUSTER_MODE" = plain ] || echo "NodeName=n$i NodeAddr=10.77.0.$((10 + i))" >>"$CLUSTER/etc/slurm.conf"
    done
    # Several slurmd on one host must be declared on one line (Slurm's multiple-slurmd support).
    [ "$CLUSTER_MODE" = plain ] &&
        echo "NodeName=$names NodeHostname=localhost NodeAddr=127.0.0.1 Port=16811-$((16810 + nodes))" >>"$CLUSTER/etc/slurm.conf"
    echo "PartitionName=debug Nodes=$names Default=YES MaxTime=INFINITE State=UP" >>"$CLUSTER/etc/slurm.conf"
    : >"$CLUSTER/etc/plugstack.conf"
    export SLURM_CONF=$CLUSTER/etc/slurm.conf
    DDPJ_TESTCLUSTER=$CLUSTER cluster_in head slurmctld -f "$SLURM_CONF" || return 1
    for i in $(seq "$nodes"); do
        DDPJ_TESTCLUSTER=$CLUSTER cluster_in "n$i" slurmd -f "$SLURM_CONF" -N "$(cluster_node_name "$i")" || return 1
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
    [ "$CLUSTER_MODE" = plain ] || netns_remove "$CLUSTER" cluster_ns head "$CLUSTER_NODES"
    rm -rf "$CLUSTER"
    CLUSTER=
}
