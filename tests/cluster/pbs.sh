# A real OpenPBS cluster on this machine for the suites (source this file; see
# ../shared/tools/openpbs/README.md): pbs_server with its data service, pbs_sched and pbs_comm in a
# "pbshead" network namespace, and one pbs_mom per node in its own network, UTS and mount namespace,
# so nodes n1..nN have their own hostnames and addresses (10.78.0.1x on a bridge in pbshead). No
# namespace has a default route. Each namespace sees its own /etc/hosts and /etc/pbs.conf (bind
# mounts in its private mount namespace), so every daemon, and every job task a MoM starts, reads
# the configuration of its own host. Jobs are submitted by an unprivileged user made for the run
# (PBS refuses root's jobs), whose home is under $PBS_CLUSTER. pbs_cluster_down stops everything
# and removes the namespaces, the user and $PBS_CLUSTER.
#
# PBS itself is built by the install step from ../shared/tools/openpbs (PBS_EXEC below); where that
# is absent, pbs_cluster_available says why.

# shellcheck source=netns.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns.sh"

PBS_EXEC=/opt/pbs
# The user who submits. A suite whose cluster may run beside another's names its own (the
# suites run in parallel): cluster_down ends every process of this user.
PBS_USER=${PBS_USER:-ddpjpbs}

pbs_ns() { echo "ddpjpbs$PBS_CLUSTER_ID-$1"; }

# Empty when a real PBS can run here, else the reason it cannot.
pbs_cluster_unavailable() {
    if [ ! -x "$PBS_EXEC/sbin/pbs_server.bin" ]; then
        if [ -d "${SRCDIR:-.}/../shared/tools/openpbs" ]; then
            echo "OpenPBS is not installed in $PBS_EXEC (scripts/install-test-deps.sh builds it from ../shared/tools/openpbs)"
        else
            echo "../shared/tools/openpbs is absent and OpenPBS is not installed in $PBS_EXEC"
        fi
    elif ! unshare --net --uts --mount true 2>/dev/null || ! command -v ip >/dev/null; then
        echo "network namespaces cannot be made here (PBS refuses a server whose name resolves to loopback)"
    fi
}

# pbs_suite_up NODES NCPUS NGPUS WHAT: a suite's start (tap.sh's pass and fail): a real PBS is
# part of what the suite proves, so without one it fails, it does not skip; the cluster goes down
# when the suite exits. Returns non-zero (said) when there is none to run.
pbs_suite_up() {
    if [ ! -d "$SRCDIR/../shared/tools/openpbs" ] && [ ! -x "$PBS_EXEC/sbin/pbs_server.bin" ]; then
        fail "a real PBS is here" "../shared/tools/openpbs is absent beside the project and OpenPBS is not installed ($PBS_EXEC)"
        return 1
    fi
    at_exit 'pbs_cluster_down'
    local why
    why=$(pbs_cluster_unavailable)
    if [ -n "$why" ]; then
        fail "a real PBS runs here" "$why"
        return 1
    fi
    if ! pbs_cluster_up "$1" "$2" "$3" >"$T/cluster.log" 2>&1; then
        fail "a $1-node OpenPBS cluster starts" "$(grep -v '^\*\*\*' "$T/cluster.log" | tail -n 20)"
        return 1
    fi
    pass "$4"
}

# pbs_in NAME CMD...: runs CMD in node NAME's (or pbshead's) namespaces, with that host's files.
pbs_in() {
    local name=$1
    shift
    nsenter --net="/run/netns/$(pbs_ns "$name")" -- unshare --uts --mount --propagation private \
        bash -c 'hostname "$0" && mount --bind "$PBS_CLUSTER/etc/hosts" /etc/hosts &&
                 mount --bind "$PBS_CLUSTER/etc/pbs-$0.conf" /etc/pbs.conf &&
                 mount --bind "$PBS_CLUSTER/pgsocket" /run/postgresql && exec "$@"' "$name" "$@"
}

# pbs_as_user CMD...: runs CMD in pbshead as the submitting user, in the current directory.
pbs_as_user() {
    pbs_in pbshead runuser -u "$PBS_USER" -- env -C "$PWD" PATH="$PBS_EXEC/bin:/usr/local/bin:/usr/bin:/bin" "$@"
}

pbs_conf() { # NAME HOME SERVER SCHED COMM MOM
    cat >"$PBS_CLUSTER/etc/pbs-$1.conf" <<CONF
PBS_SERVER=pbshead
PBS_START_SERVER=$3
PBS_START_SCHED=$4
PBS_START_COMM=$5
PBS_START_MOM=$6
PBS_EXEC=$PBS_EXEC
PBS_HOME=$2
PBS_CORE_LIMIT=unlimited
PBS_SCP=/usr/bin/scp
CONF
}

pbs_qmgr() { pbs_in pbshead "$PBS_EXEC/bin/qmgr" -c "$1"; }

# A cluster whose suite was killed (meson's timeout sends SIGKILL, which no exit hook outlives)
# is swept before a new one starts: its daemons would hold the ports every cluster uses. Its
# namespaces name the suite's pid, its folder holds it.
pbs_sweep_stale() {
    local ns id dir pids tries
    for ns in $(ip netns list | awk '/^ddpjpbs[0-9]+-/ {print $1}'); do
        id=${ns#ddpjpbs}
        id=${id%%-*}
        kill -0 "$id" 2>/dev/null && continue
        pids=$(ip netns pids "$ns")
        # shellcheck disable=SC2086 # a list of pids
        [ -z "$pids" ] || kill -9 $pids
        # Gone before the next cluster starts: a data service still dying holds its files.
        tries=0
        # shellcheck disable=SC2086
        while [ -n "$pids" ] && kill -0 $pids 2>/dev/null && [ $((tries += 1)) -le 50 ]; do
            sleep 0.2
        done
        ip netns delete "$ns"
    done
    for dir in /run/ddpj-pbs.*; do
        [ -s "$dir/owner" ] && ! kill -0 "$(cat "$dir/owner")" 2>/dev/null && rm -rf "$dir"
    done
    return 0
}

# pbs_cluster_up NODES [NCPUS [NGPUS]]: the server and NODES MoMs, each node offering NCPUS CPUs
# (default 2) and NGPUS GPUs (a host-level resource, default 0), a queue workq, job history on.
# Clusters of suites running at once start in turn: two starts within seconds of each other
# failed one of them ("Error starting PBS Data Service": pending_pbs and the soak, in CI).
pbs_cluster_up() {
    local lock rc
    exec {lock}>>/run/ddpj-pbs-start.lock
    flock -w 600 "$lock"
    # The daemons it starts must not hold the lock after it (they would keep the next suite
    # waiting for its 600 s).
    pbs_cluster_start "$@" {lock}>&-
    rc=$?
    exec {lock}>&-
    return "$rc"
}

pbs_cluster_start() {
    local nodes=$1 ncpus=${2:-2} ngpus=${3:-0} i
    # PBS refuses a home on a world-writable path such as /tmp: /run is root's alone.
    pbs_sweep_stale
    PBS_CLUSTER=$(mktemp -d /run/ddpj-pbs.XXXXXX)
    echo $$ >"$PBS_CLUSTER/owner"
    PBS_CLUSTER_ID=$$
    PBS_CLUSTER_NODES=$nodes
    export PBS_CLUSTER PBS_CLUSTER_ID
    # The data service runs as postgres and jobs as $PBS_USER: both must reach their directories.
    chmod 755 "$PBS_CLUSTER"
    mkdir -p "$PBS_CLUSTER"/{etc,home,pbshead}
    # Every cluster's data service listens on the same port in its own network; its socket and
    # lock file (.s.PGSQL.15007) would meet in the machine's /run/postgresql, where a second
    # cluster's postgres refuses to start while the first runs ("Error starting PBS Data
    # Service": pending_pbs and the soak, side by side in CI). Each cluster has its own.
    mkdir -p "$PBS_CLUSTER/pgsocket" /run/postgresql
    chown postgres:postgres "$PBS_CLUSTER/pgsocket"
    chmod 2775 "$PBS_CLUSTER/pgsocket"
    [ -c /dev/null ] || { echo "pbs: /dev/null is not the null device (see the OpenPBS README)" >&2; return 1; }
    if ! id "$PBS_USER" >/dev/null 2>&1; then
        # Password '*': no password login, yet not locked, which sshd would refuse (launcher: ssh).
        useradd -M -p '*' -d "$PBS_CLUSTER/home/$PBS_USER" -s /bin/bash "$PBS_USER" || return 1
        touch "$PBS_CLUSTER/made-user"
    else
        # Left by a run that was killed before its cleanup: its home must be this cluster's.
        usermod -d "$PBS_CLUSTER/home/$PBS_USER" "$PBS_USER" || return 1
        touch "$PBS_CLUSTER/made-user"
    fi
    mkdir -p "$PBS_CLUSTER/home/$PBS_USER"
    chown "$PBS_USER:" "$PBS_CLUSTER/home/$PBS_USER"
    netns_make "$PBS_CLUSTER" pbs_ns 10.78.0 pbshead "$nodes" || return 1
    pbs_conf pbshead "$PBS_CLUSTER/pbshead" 1 1 1 0
    # The first start makes PBS_HOME, the data service's database and the default queue workq.
    pbs_in pbshead /etc/init.d/pbs start >"$PBS_CLUSTER/pbshead.log" 2>&1 || { cat "$PBS_CLUSTER/pbshead.log" >&2; return 1; }
    # The init script returns before the server answers: on a loaded machine, by seconds.
    local answers=$((SECONDS + 120))
    until pbs_in pbshead "$PBS_EXEC/bin/qstat" -B >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$answers" ] ||
            { echo "pbs: the server does not answer after 120 s" >&2; tail -n 20 "$PBS_CLUSTER/pbshead.log" >&2; return 1; }
        sleep 0.5
    done
    pbs_qmgr "set server job_history_enable=true" || return 1
    pbs_qmgr "set server scheduler_iteration=1"
    # A user is the same user on every host (as at sites whose jobs may submit jobs).
    pbs_qmgr "set server flatuid=true"
    # GPUs as PBS Pro sites define them: a host-level consumable the scheduler matches on.
    pbs_qmgr "create resource ngpus type=long, flag=nh" || return 1
    sed -i 's/^resources: "ncpus, mem, arch, host, vnode, aoe, eoe"$/resources: "ncpus, mem, arch, host, vnode, aoe, eoe, ngpus"/' \
        "$PBS_CLUSTER/pbshead/sched_priv/sched_config"
    pbs_in pbshead kill -HUP "$(cat "$PBS_CLUSTER/pbshead/sched_priv/sched.lock")"
    for i in $(seq "$nodes"); do
        pbs_qmgr "create node n$i resources_available.ncpus=$ncpus,resources_available.ngpus=$ngpus" || return 1
        pbs_conf "n$i" "$PBS_CLUSTER/n$i" 0 0 0 1
        mkdir -p "$PBS_CLUSTER/n$i"
        pbs_in "n$i" /etc/init.d/pbs start >"$PBS_CLUSTER/n$i.log" 2>&1 || { cat "$PBS_CLUSTER/n$i.log" >&2; return 1; }
        # Every host sees the same files: job output goes back by cp, not scp. The MoM is
        # restarted to read it: with a SIGHUP right after its start instead, the first job's
        # output was now and then left undelivered on a busy machine. The init script's stop
        # only sends the signal, and its start does nothing while the old MoM still lives.
        printf '$usecp *:/ /\n' >>"$PBS_CLUSTER/n$i/mom_priv/config"
        # Each cluster's job ids start at 0: in the machine's shared /var/tmp, two clusters' job
        # 1.pbshead (or one a killed run left) meet, and the MoM refuses the second ("possible
        # attempted security breach"). A job's tmpdir is made in the node's own folder.
        mkdir -p "$PBS_CLUSTER/n$i/tmp"
        chmod 1777 "$PBS_CLUSTER/n$i/tmp"
        printf '$tmpdir %s\n' "$PBS_CLUSTER/n$i/tmp" >>"$PBS_CLUSTER/n$i/mom_priv/config"
        local mom_pid
        mom_pid=$(cat "$PBS_CLUSTER/n$i/mom_priv/mom.lock" 2>/dev/null)
        pbs_in "n$i" /etc/init.d/pbs stop >>"$PBS_CLUSTER/n$i.log" 2>&1
        local gone_by=$((SECONDS + 60))
        while [ -n "$mom_pid" ] && kill -0 "$mom_pid" 2>/dev/null; do
            [ "$SECONDS" -lt "$gone_by" ] || { echo "pbs: n$i's first MoM (pid $mom_pid) still runs 60 s after its stop" >&2; return 1; }
            sleep 0.2
        done
        pbs_in "n$i" /etc/init.d/pbs start >>"$PBS_CLUSTER/n$i.log" 2>&1 ||
            { cat "$PBS_CLUSTER/n$i.log" >&2; return 1; }
        # The new MoM writes its lock a moment after the script returns: seconds when loaded.
        local new_pid= up_by=$((SECONDS + 60))
        until new_pid=$(cat "$PBS_CLUSTER/n$i/mom_priv/mom.lock" 2>/dev/null) &&
            [ -n "$new_pid" ] && [ "$new_pid" != "$mom_pid" ] && kill -0 "$new_pid" 2>/dev/null; do
            [ "$SECONDS" -lt "$up_by" ] ||
                { echo "pbs: n$i's MoM was not restarted to read \$usecp" >&2; cat "$PBS_CLUSTER/n$i.log" >&2; return 1; }
            sleep 0.2
        done
    done
    local deadline=$((SECONDS + 60))
    while [ "$(pbs_in pbshead "$PBS_EXEC/bin/pbsnodes" -a 2>/dev/null | grep -c 'state = free')" != "$nodes" ]; do
        [ "$SECONDS" -lt "$deadline" ] || { echo "pbs: nodes not free after 60 s" >&2; pbs_in pbshead "$PBS_EXEC/bin/pbsnodes" -a >&2; return 1; }
        sleep 0.5
    done
}

pbs_cluster_down() {
    [ -n "${PBS_CLUSTER:-}" ] || return 0
    local i
    for i in $(seq "${PBS_CLUSTER_NODES:-0}"); do
        pbs_in "n$i" /etc/init.d/pbs stop >/dev/null 2>&1
    done
    pbs_in pbshead /etc/init.d/pbs stop >/dev/null 2>&1
    # Whatever is still running in the cluster's namespaces: daemons, postgres, job tasks.
    pkill -9 -u "$PBS_USER" 2>/dev/null
    netns_remove "$PBS_CLUSTER" pbs_ns pbshead "${PBS_CLUSTER_NODES:-0}"
    [ -e "$PBS_CLUSTER/made-user" ] && userdel "$PBS_USER" 2>/dev/null
    rm -rf "$PBS_CLUSTER"
    PBS_CLUSTER=
}
