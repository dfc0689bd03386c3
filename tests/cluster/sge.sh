# A real Grid Engine cell on this machine for the suites (source this file; docs/grid-engine.md
# says what it takes and why): Debian 12's gridengine 8.1.9, its programs unpacked into
# /usr/lib/gridengine by the install step. sge_qmaster runs in a "head" network namespace and one
# sge_execd per node in its own network, UTS and mount namespace, so nodes n1..nN have their own
# hostnames and addresses (10.76.0.1x on a bridge in head), and no namespace has a default route.
# The cell (SGE_ROOT, spools, each node's job tmpdir) lives under $SGE_CLUSTER; jobs are
# submitted by an unprivileged user made for the run, whose home is there too. A parallel
# environment `ddp` gives a job whole nodes of SGE_SLOTS slots (allocation_rule), its tasks under
# the job's control (qrsh -inherit); one queue all.q on every node. sge_cluster_down stops
# everything and removes the namespaces, the user and $SGE_CLUSTER.

# shellcheck source=netns.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns.sh"

SGE_BIN=/usr/lib/gridengine
SGE_USER=${SGE_USER:-ddpjsge}
SGE_SLOTS=${SGE_SLOTS:-2}

sge_ns() { echo "ddpjsge$SGE_CLUSTER_ID-$1"; }

# Empty when a real Grid Engine can run here, else the reason it cannot.
sge_cluster_unavailable() {
    if [ ! -x "$SGE_BIN/sge_qmaster" ] || [ ! -r /usr/share/gridengine/util/resources/centry/h_rt ]; then
        echo "Grid Engine is not unpacked in $SGE_BIN and /usr/share/gridengine (scripts/install-test-deps.sh does it)"
    elif ! unshare --net --uts --mount true 2>/dev/null || ! command -v ip >/dev/null; then
        echo "network namespaces cannot be made here"
    fi
}

# sge_suite_up NODES WHAT: a suite's start (tap.sh's pass and fail): without a real Grid Engine
# the suite fails, it does not skip; the cell goes down when the suite exits.
sge_suite_up() {
    at_exit 'sge_cluster_down'
    local why
    why=$(sge_cluster_unavailable)
    if [ -n "$why" ]; then
        fail "a real Grid Engine runs here" "$why"
        return 1
    fi
    if ! sge_cluster_up "$1" >"$T/cluster.log" 2>&1; then
        fail "a $1-node Grid Engine cell starts" "$(tail -n 20 "$T/cluster.log")"
        return 1
    fi
    pass "$2"
}

# The environment every Grid Engine program of the cell needs: where the cell is, its ports (no
# /etc/services entry), and its architecture (spares the wrapper's arch script).
sge_env() {
    echo "SGE_ROOT=$SGE_CLUSTER/root" "SGE_CELL=ddpj" SGE_QMASTER_PORT=16444 SGE_EXECD_PORT=16445 SGE_ARCH=lx-amd64
}

# sge_in NAME CMD...: runs CMD in host NAME's namespaces (head or nN), with the cell's
# environment and no other (a daemon hands its own to every job), that host's /etc/hosts, and on
# a node its own job tmpdir.
sge_in() {
    local name=$1
    shift
    # shellcheck disable=SC2046 # the words of sge_env
    nsenter --net="/run/netns/$(sge_ns "$name")" -- unshare --uts --mount --propagation private \
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin SGE_CLUSTER="$SGE_CLUSTER" $(sge_env) bash -c 'hostname "$0" && mount --bind "$SGE_CLUSTER/etc/hosts" /etc/hosts &&
            { [ ! -d "$SGE_CLUSTER/tmp-$0" ] || mount --bind "$SGE_CLUSTER/tmp-$0" "$SGE_CLUSTER/tmp"; } &&
            exec "$@"' "$name" "$@"
}

# sge_as_user CMD...: runs CMD on head as the submitting user, in the current directory, with the
# cell's programs on PATH (as a site's login gives them).
sge_as_user() {
    # shellcheck disable=SC2046
    sge_in head runuser -u "$SGE_USER" -- env -C "$PWD" $(sge_env) PATH="$SGE_BIN:/usr/local/bin:/usr/bin:/bin" "$@"
}

sge_qconf() { sge_in head "$SGE_BIN/qconf" "$@"; }

# A cell whose suite was killed (SIGKILL outlives no exit hook) is swept before a new one starts.
sge_sweep_stale() {
    local ns id dir pids
    for ns in $(ip netns list | awk '/^ddpjsge[0-9]+-/ {print $1}'); do
        id=${ns#ddpjsge}
        id=${id%%-*}
        kill -0 "$id" 2>/dev/null && continue
        pids=$(ip netns pids "$ns")
        # shellcheck disable=SC2086 # a list of pids
        [ -z "$pids" ] || kill -9 $pids
        ip netns delete "$ns"
    done
    for dir in /run/ddpj-sge.*; do
        [ -s "$dir/owner" ] && ! kill -0 "$(cat "$dir/owner")" 2>/dev/null && rm -rf "$dir"
    done
    return 0
}

# sge_cluster_up NODES: the qmaster, NODES execds, the parallel environment ddp and all.q.
sge_cluster_up() {
    local nodes=$1 i
    sge_sweep_stale
    SGE_CLUSTER=$(mktemp -d /run/ddpj-sge.XXXXXX)
    echo $$ >"$SGE_CLUSTER/owner"
    SGE_CLUSTER_ID=$$
    SGE_CLUSTER_NODES=$nodes
    export SGE_CLUSTER SGE_CLUSTER_ID
    chmod 755 "$SGE_CLUSTER"
    local root=$SGE_CLUSTER/root cell=$SGE_CLUSTER/root/ddpj
    mkdir -p "$SGE_CLUSTER"/{etc,home,qmaster,execd,tmp} "$cell/common" "$root/utilbin" "$root/bin"
    chmod 1777 "$SGE_CLUSTER/tmp"
    for i in $(seq "$nodes"); do
        mkdir -p "$SGE_CLUSTER/tmp-n$i"
        chmod 1777 "$SGE_CLUSTER/tmp-n$i"
    done
    if ! id "$SGE_USER" >/dev/null 2>&1; then
        useradd -M -p '*' -d "$SGE_CLUSTER/home/$SGE_USER" -s /bin/bash "$SGE_USER" || return 1
    else
        usermod -d "$SGE_CLUSTER/home/$SGE_USER" "$SGE_USER" || return 1
    fi
    touch "$SGE_CLUSTER/made-user"
    mkdir -p "$SGE_CLUSTER/home/$SGE_USER"
    chown "$SGE_USER:" "$SGE_CLUSTER/home/$SGE_USER"
    netns_make "$SGE_CLUSTER" sge_ns 10.76.0 head "$nodes" || return 1
    # The shepherd of a task started by qrsh -inherit runs $SGE_ROOT/utilbin/ARCH/qrsh_starter:
    # without it the task never starts, and qrsh still exits 0.
    ln -s "$SGE_BIN" "$root/utilbin/lx-amd64"
    ln -s "$SGE_BIN" "$root/bin/lx-amd64"
    cat >"$cell/common/bootstrap" <<BOOT
admin_user              none
default_domain          none
ignore_fqdn             true
spooling_method         classic
spooling_lib            libspoolc
spooling_params         $cell/common;$SGE_CLUSTER/qmaster
binary_path             $root/bin
qmaster_spool_dir       $SGE_CLUSTER/qmaster
security_mode           none
listener_threads        2
worker_threads          2
scheduler_threads       1
BOOT
    echo head >"$cell/common/act_qmaster"
    # Debian's defaults, with the spools here, no mail, ids from 1000 down to root's allowed (the
    # suite's user is a system one), accounting flushed every 2 s.
    sed -e "s|^execd_spool_dir .*|execd_spool_dir $SGE_CLUSTER/execd|; s|^mailer .*|mailer /bin/true|" \
        -e 's|^min_uid .*|min_uid 0|; s|^min_gid .*|min_gid 0|; s|flush_time=00:00:15|flush_time=00:00:02|' \
        /usr/share/gridengine/default-configuration >"$SGE_CLUSTER/global"
    # shellcheck disable=SC2046
    (export $(sge_env) &&
        "$SGE_BIN/spoolinit" classic libspoolc "$cell/common;$SGE_CLUSTER/qmaster" init &&
        "$SGE_BIN/spooldefaults" configuration "$SGE_CLUSTER/global" &&
        "$SGE_BIN/spooldefaults" complexes /usr/share/gridengine/util/resources/centry &&
        "$SGE_BIN/spooldefaults" usersets /usr/share/gridengine/util/resources/usersets &&
        "$SGE_BIN/spooldefaults" managers root &&
        "$SGE_BIN/spooldefaults" adminhosts head) || return 1
    sge_in head "$SGE_BIN/sge_qmaster" || return 1
    local answers=$((SECONDS + 60))
    until sge_qconf -sh >/dev/null 2>&1; do
        [ "$SECONDS" -lt "$answers" ] || { echo "sge: the qmaster does not answer after 60 s" >&2; return 1; }
        sleep 0.5
    done
    # The scheduler every second, and it says why a job waits (qstat -j's scheduling info).
    sge_qconf -ssconf | sed -e 's/^schedule_interval .*/schedule_interval 0:0:1/' \
        -e 's/^schedd_job_info .*/schedd_job_info true/' >"$SGE_CLUSTER/sched_conf"
    sge_qconf -Msconf "$SGE_CLUSTER/sched_conf" || return 1
    # Jobs submit jobs (a walltime chain's next link, a pipeline's next stage): every node is a
    # submit host, as at sites.
    sge_qconf -as head || return 1
    for i in $(seq "$nodes"); do
        sge_qconf -ah "n$i" && sge_qconf -as "n$i" || return 1
    done
    cat >"$SGE_CLUSTER/pe" <<PE
pe_name            ddp
slots              999
user_lists         NONE
xuser_lists        NONE
start_proc_args    NONE
stop_proc_args     NONE
allocation_rule    $SGE_SLOTS
control_slaves     TRUE
job_is_first_task  FALSE
urgency_slots      min
accounting_summary FALSE
qsort_args         NONE
PE
    sge_qconf -Ap "$SGE_CLUSTER/pe" || return 1
    # And one for jobs of one node (a sweep's trials): any slots of one host.
    sed -e 's/^pe_name .*/pe_name smp/' -e 's/^allocation_rule .*/allocation_rule $pe_slots/' \
        "$SGE_CLUSTER/pe" >"$SGE_CLUSTER/pe-smp"
    sge_qconf -Ap "$SGE_CLUSTER/pe-smp" || return 1
    # Each job's processes carry a group id of gid_range, which its execd kills them by as the job
    # ends: execds that share one machine's processes must not share ids (a job that ended on n1
    # killed the one on n2 that had drawn the same id, "failed 100 : assumedly after job"), nor
    # those of another suite's cell.
    local gid=$((30000 + SGE_CLUSTER_ID % 300 * 100))
    mkdir -p "$SGE_CLUSTER/conf"
    for i in $(seq "$nodes"); do
        printf 'gid_range %d-%d\n' $((gid + (i - 1) * 20)) $((gid + i * 20 - 1)) >"$SGE_CLUSTER/conf/n$i"
        sge_qconf -Aconf "$SGE_CLUSTER/conf/n$i" || return 1
        sge_in "n$i" "$SGE_BIN/sge_execd" || return 1
    done
    local attr
    {
        echo "qname all.q"
        echo "hostlist $(seq -f 'n%g' "$nodes" | tr '\n' ' ')"
        echo "seq_no 0"
        echo "load_thresholds NONE"
        echo "suspend_thresholds NONE"
        echo "nsuspend 1"
        echo "suspend_interval 00:05:00"
        echo "priority 0"
        echo "min_cpu_interval 00:05:00"
        echo "processors UNDEFINED"
        echo "qtype BATCH INTERACTIVE"
        echo "ckpt_list NONE"
        echo "pe_list ddp smp"
        echo "rerun FALSE"
        echo "slots $SGE_SLOTS"
        echo "tmpdir $SGE_CLUSTER/tmp"
        echo "shell /bin/bash"
        echo "prolog NONE"
        echo "epilog NONE"
        echo "shell_start_mode unix_behavior"
        echo "starter_method NONE"
        echo "suspend_method NONE"
        echo "resume_method NONE"
        echo "terminate_method NONE"
        echo "notify 00:00:10"
        echo "owner_list NONE"
        echo "user_lists NONE"
        echo "xuser_lists NONE"
        echo "subordinate_list NONE"
        echo "complex_values NONE"
        echo "projects NONE"
        echo "xprojects NONE"
        echo "calendar NONE"
        echo "initial_state default"
        for attr in rt cpu fsize data stack core rss vmem; do
            echo "s_$attr INFINITY"
            echo "h_$attr INFINITY"
        done
    } >"$SGE_CLUSTER/queue"
    sge_qconf -Aq "$SGE_CLUSTER/queue" || return 1
    # Up once every node's execd has reported its load.
    local deadline=$((SECONDS + 60))
    until [ "$(sge_in head "$SGE_BIN/qstat" -f 2>/dev/null | grep -c '^all.q@n[0-9]* .*lx-amd64 *$')" = "$nodes" ]; do
        [ "$SECONDS" -lt "$deadline" ] || { echo "sge: the nodes are not up after 60 s" >&2; sge_in head "$SGE_BIN/qstat" -f >&2; return 1; }
        sleep 0.5
    done
}

sge_cluster_down() {
    [ -n "${SGE_CLUSTER:-}" ] || return 0
    local i
    for i in $(seq "${SGE_CLUSTER_NODES:-0}"); do
        sge_qconf -ke "n$i" >/dev/null 2>&1
    done
    sge_qconf -km >/dev/null 2>&1
    pkill -9 -u "$SGE_USER" 2>/dev/null
    netns_remove "$SGE_CLUSTER" sge_ns head "${SGE_CLUSTER_NODES:-0}"
    [ -e "$SGE_CLUSTER/made-user" ] && userdel "$SGE_USER" 2>/dev/null
    rm -rf "$SGE_CLUSTER"
    SGE_CLUSTER=
}
