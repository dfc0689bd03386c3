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

# cluster_in NAME CMD...: runs CMD in node NAME's (or head's) namespaces. The cluster's munged
# is at munge's default socket there too: Slurm 22.05's connections to slurmdbd ignore AuthInfo.
cluster_in() {
    local name=$1
    shift
    nsenter --net="/run/netns/$(cluster_ns "$name")" -- unshare --uts --mount --propagation private \
        bash -c 'hostname "$0" && mount --bind "$CLUSTER/etc/hosts" /etc/hosts &&
            mount --bind "$CLUSTER/munge" /run/munge && exec "$@"' "$name" "$@"
}

# cluster_ddpjob DIR ARGS...: $DDPJOB ARGS on the head node, from DIR, with the suite's own job
# index ($T/state), as the suites' users submit from a login node.
cluster_ddpjob() {
    env XDG_STATE_HOME="$T/state" bash -c '. "$0/tests/cluster/slurm.sh"; cd "$1" && shift && cluster_in head "$@"' \
        "$SRCDIR" "$1" "$DDPJOB" "${@:2}"
}

# slurm_accounting: a real MariaDB and Debian's slurmdbd in the head namespace (the database on
# head's loopback, its files the mysql user's under $CLUSTER/mysql; slurmdbd on head's address),
# the cluster registered; slurm.conf then points at slurmdbd (cluster_up's ACCOUNTING=1).
slurm_accounting() {
    mkdir -p "$CLUSTER/mysql"
    chown mysql: "$CLUSTER/mysql"
    mariadb-install-db --user=mysql --datadir="$CLUSTER/mysql" --skip-test-db \
        --auth-root-authentication-method=normal >"$CLUSTER/log/mariadb-install.log" 2>&1 || return 1
    DDPJ_TESTCLUSTER=$CLUSTER cluster_in head mariadbd --no-defaults --user=mysql \
        --datadir="$CLUSTER/mysql" --socket="$CLUSTER/mysql/mysql.sock" --pid-file="$CLUSTER/mysql/mariadb.pid" \
        --bind-address=127.0.0.1 --port=3306 --log-error="$CLUSTER/mysql/mariadb.log" &
    disown
    local deadline=$((SECONDS + 60))
    until cluster_in head mariadb --no-defaults -h 127.0.0.1 -P 3306 -u root -e 'select 1' >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$deadline" ] || { echo "cluster: MariaDB not up after 60 s" >&2; tail -n 20 "$CLUSTER/mysql/mariadb.log" >&2; return 1; }
        sleep 0.3
    done
    cat >"$CLUSTER/etc/slurmdbd.conf" <<CONF
AuthType=auth/munge
AuthInfo=socket=$CLUSTER/munge/sock
DbdHost=head
DbdAddr=10.77.0.1
DbdPort=16819
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=root
StorageLoc=ddpj_acct
PidFile=$CLUSTER/run/slurmdbd.pid
LogFile=$CLUSTER/log/slurmdbd.log
CONF
    chmod 600 "$CLUSTER/etc/slurmdbd.conf"
    # slurmdbd reads slurmdbd.conf beside slurm.conf.
    SLURM_CONF=$CLUSTER/etc/slurm.conf DDPJ_TESTCLUSTER=$CLUSTER cluster_in head slurmdbd || return 1
    deadline=$((SECONDS + 60))
    until SLURM_CONF=$CLUSTER/etc/slurm.conf cluster_in head sacctmgr -i add cluster ddpj >/dev/null 2>&1 ||
        SLURM_CONF=$CLUSTER/etc/slurm.conf cluster_in head sacctmgr -n list cluster format=cluster 2>/dev/null | grep -q ddpj; do
        [ "$SECONDS" -lt "$deadline" ] || { echo "cluster: slurmdbd does not answer after 60 s" >&2; tail -n 20 "$CLUSTER/log/slurmdbd.log" >&2; return 1; }
        sleep 0.5
    done
}

cluster_up() { # NODES (ACCOUNTING=1: with slurmdbd and MariaDB; SLURM_EXTRA_CONF: more slurm.conf lines; SLURM_PLUGSTACK: plugstack.conf's)
    local nodes=$1 i storage=none
    [ "${ACCOUNTING:-0}" = 0 ] || storage=slurmdbd
    CLUSTER=$(mktemp -d "${TMPDIR:-/tmp}/ddpj-cluster.XXXXXX")
    CLUSTER_ID=$$
    CLUSTER_NODES=$nodes
    # Slurm puts a job's cgroups at slurm_NODE/uid_U/job_ID on the host, and every test cluster
    # has nodes n1..: clusters of suites running at once would share a job's cgroup (its memory
    # limit, its cleanup) if their job ids met. Each starts its ids apart, 1000 for itself.
    CLUSTER_FIRST_JOB=$((1000 * (1 + $$ % 60000)))
    export CLUSTER CLUSTER_ID CLUSTER_FIRST_JOB
    mkdir -p "$CLUSTER"/{etc,munge,state,spool,log,run} /run/munge
    chmod 755 "$CLUSTER" "$CLUSTER/munge"
    netns_make "$CLUSTER" cluster_ns 10.77.0 head "$nodes" || return 1
    dd if=/dev/urandom of="$CLUSTER/munge/key" bs=1024 count=1 status=none
    chmod 400 "$CLUSTER/munge/key"
    ln -s sock "$CLUSTER/munge/munge.socket.2"
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
SelectTypeParameters=CR_Core_Memory
DefMemPerNode=4096
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity,task/cgroup
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/$storage
AccountingStorageHost=head
AccountingStoragePort=16819
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
SchedulerParameters=batch_sched_delay=0,bf_interval=1
FirstJobId=$CLUSTER_FIRST_JOB
MinJobAge=4
ReturnToService=2
MailProg=/bin/true
NodeName=DEFAULT CPUs=2 RealMemory=65536 State=UNKNOWN
${SLURM_EXTRA_CONF:-}
CONF
    for i in $(seq "$nodes"); do
        names+=${names:+,}n$i
        echo "NodeName=n$i NodeAddr=10.77.0.$((10 + i))" >>"$CLUSTER/etc/slurm.conf"
    done
    echo "PartitionName=debug Nodes=$names Default=YES MaxTime=INFINITE State=UP" >>"$CLUSTER/etc/slurm.conf"
    # SLURM_PLUGSTACK: the SPANK plugins' lines (pyxis: tests/cluster/pyxis.sh).
    printf '%s\n' "${SLURM_PLUGSTACK:-}" >"$CLUSTER/etc/plugstack.conf"
    # Each job step in a memory cgroup limited to its --mem, as production clusters run, and
    # bound to its CPUs (task/affinity). Not ConstrainCores=yes: on this cgroup v1, Slurm 22.05
    # then fails a job now and then when a user's second job starts on a node ("unable to write
    # ... job_N/cpuset.cpus: Device or resource busy", "Slurmd could not execve job") and drains
    # the node; the binding a step gets is task/affinity's either way.
    printf '%s\n' ConstrainRAMSpace=yes ConstrainSwapSpace=yes AllowedSwapSpace=0 \
        >"$CLUSTER/etc/cgroup.conf"
    export SLURM_CONF=$CLUSTER/etc/slurm.conf
    if [ "$storage" = slurmdbd ]; then slurm_accounting || return 1; fi
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
    # Slurm 22.05 leaves a cancelled job's empty batch-step cgroup on cgroup v1: this cluster's go.
    local dir id
    for dir in /sys/fs/cgroup/*/slurm_n*/uid_*/job_*; do
        id=${dir##*job_}
        [ "$id" -ge "$CLUSTER_FIRST_JOB" ] 2>/dev/null && [ "$id" -lt $((CLUSTER_FIRST_JOB + 1000)) ] &&
            find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
    done
    rm -rf "$CLUSTER"
    CLUSTER=
}

# cluster_wait_gone JOB: until the job has left the queue (420 s at most); OUT gets its output
# ($T/*-JOB.out). A job is requeued as the same job id; Slurm then holds it ~2 minutes
# (BeginTime) before it may start again, which on a cluster is idle time anyway: the test, as the
# admin, lets it start once the old run has left every node.
cluster_wait_gone() {
    local deadline=$((SECONDS + 420)) state
    while state=$(cluster_in head squeue -h -j "$1" -o '%T %r' 2>/dev/null) && [ -n "$state" ] &&
        [ "$SECONDS" -lt "$deadline" ]; do
        if [ "$state" = "PENDING BeginTime" ] &&
            [ "$(cluster_in head sinfo -h -t idle -o '%D' 2>/dev/null)" = "$CLUSTER_NODES" ]; then
            sleep 2
            cluster_in head scontrol update JobId="$1" StartTime=now >/dev/null 2>&1
        fi
        sleep 0.3
    done
    OUT=$(cat "$T"/*-"$1".out 2>/dev/null)
}
