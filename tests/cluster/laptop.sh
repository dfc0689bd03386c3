# shellcheck shell=bash
# A laptop for a test cluster's head (source this file after slurm.sh or pbs.sh; tap.sh's
# helpers): a real sshd on the head, in the head's namespaces, logged in to as the cluster's
# user with a key of the laptop's; and the laptop, a namespace of its own on the cluster's
# bridge, whose scheduler commands are traps (a laptop has none: a call of one is noted in
# $LAPTOP_DIR/trap.log) and whose ddpjob is an installed one (meson install, with its manifest).
# Keys, sshd configs, the laptop's HOME (client/) and its job folder (proj/) live in LAPTOP_DIR.
# shellcheck source=sshd.sh
. "$(dirname "${BASH_SOURCE[0]}")/sshd.sh"
LAPTOP_DIR=$(mktemp -d /run/ddpj-laptop.XXXXXX)
chmod 755 "$LAPTOP_DIR"
LAPTOP_NS=()

laptop_down() {
    local ns pid
    for pid in "$LAPTOP_DIR"/run/sshd-*.pid; do
        [ -s "$pid" ] && kill -9 "$(cat "$pid")" 2>/dev/null
    done
    for ns in "${LAPTOP_NS[@]}"; do ip netns del "$ns" 2>/dev/null; done
    rm -rf "$LAPTOP_DIR"
}

# laptop_sshd HEADNAME ADDR USER RUNNER...: sshd for USER at ADDR:22, started by RUNNER (the
# cluster's "run in the head's namespaces" function and its host's name, e.g. cluster_in head).
laptop_sshd() {
    local name=$1 addr=$2 user=$3 d=$LAPTOP_DIR
    shift 3
    mkdir -p "$d/client/.ssh" /run/sshd
    chmod 700 "$d/client/.ssh"
    [ -e "$d/client/.ssh/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C laptop -f "$d/client/.ssh/id_ed25519"
    sshd_host_config "$d" "$name" "$addr" >>"$d/client/.ssh/known_hosts" || return 1
    cp "$d/client/.ssh/id_ed25519.pub" "$d/keys/authorized_keys"
    chmod 644 "$d/keys/authorized_keys"
    printf 'Host %s\n    User %s\n' "$name" "$user" >>"$d/client/.ssh/config"
    "$@" /usr/sbin/sshd -f "$d/sshd-$name.conf" || return 1
    local i
    for i in $(seq 100); do [ -s "$d/run/sshd-$name.pid" ] && return 0; sleep 0.1; done
    return 1
}

# laptop_ns NS HEADNS ADDR: a namespace NS with ADDR/24 on HEADNS's bridge.
laptop_ns() {
    ip netns add "$1" || return 1
    LAPTOP_NS+=("$1")
    ip -n "$2" link add "vlap${#LAPTOP_NS[@]}" type veth peer name eth0 netns "$1"
    ip -n "$2" link set "vlap${#LAPTOP_NS[@]}" master br0 up
    ip -n "$1" addr add "$3/24" dev eth0
    ip -n "$1" link set eth0 up
    ip -n "$1" link set lo up
}

# laptop_install: this build installed (meson install --destdir) as the laptop's ddpjob:
# LAPTOP_DDPJOB, and its version LAPTOP_VERSION.
laptop_install() {
    meson install -C "$BUILDDIR" --destdir "$LAPTOP_DIR/inst" --quiet --no-rebuild || return 1
    LAPTOP_DDPJOB=$(find "$LAPTOP_DIR/inst" -path '*/bin/ddpjob' ! -path '*/lib/ddpjob/cluster/*' -type f | head -n 1)
    [ -f "${LAPTOP_DDPJOB%/bin/ddpjob}/share/ddpjob/SHA256SUMS" ] || return 1
    LAPTOP_VERSION=$("$LAPTOP_DDPJOB" --version | cut -d' ' -f2)
    printf '#!/bin/sh\necho "$0 $*" >>%s/trap.log\nexit 1\n' "$LAPTOP_DIR" >"$LAPTOP_DIR/trap"
    chmod 755 "$LAPTOP_DIR/trap"
    mkdir -p "$LAPTOP_DIR/proj"
}

# laptop_in NS HOSTS ddpjob ARGS...: the laptop's ddpjob in NS, with HOSTS as /etc/hosts, from
# LAPTOP_DIR/proj: RC, OUT, ERR.
laptop_in() {
    run laptop_exec "$@"
}

# laptop_exec NS HOSTS ddpjob ARGS...: the same, its output and status its own (for script(1)).
laptop_exec() {
    nsenter --net="/run/netns/$1" -- unshare --mount --propagation private sh -c '
        mount --bind "$1" /etc/hosts || exit 1
        for c in sbatch squeue scancel sacct scontrol qsub qstat qdel; do
            [ -e "/usr/bin/$c" ] && { mount --bind "$2/trap" "/usr/bin/$c" || exit 1; }
            [ -e "/opt/pbs/bin/$c" ] && { mount --bind "$2/trap" "/opt/pbs/bin/$c" || exit 1; }
        done
        shift 2; cd "$0" && exec "$@"' "$LAPTOP_DIR/proj" "$2" "$LAPTOP_DIR" \
        env -u SLURM_CONF -u DDPJOB_TEMPLATE_DIR -u PBS_CONF_FILE HOME="$LAPTOP_DIR/client" \
        XDG_STATE_HOME="$LAPTOP_DIR/client/state" PATH=/usr/bin:/bin \
        timeout --foreground -s KILL 300 "$LAPTOP_DDPJOB" "${@:3}"
}

# laptop_suite_up HEADNAME ADDR USER NS HEADNS LAPTOP_ADDR RUNNER...: a suite's start (tap.sh's
# pass and fail): sshd on the head, the laptop NS at LAPTOP_ADDR, the laptop's ddpjob installed.
laptop_suite_up() {
    if laptop_sshd "$1" "$2" "$3" "${@:7}"; then pass "a real sshd runs on the cluster's head ($1)"; else
        fail "a real sshd runs on the cluster's head ($1)"; return 1; fi
    laptop_ns "$4" "$5" "$6" || { fail "the laptop's namespace"; return 1; }
    if laptop_install >"$T/install.log" 2>&1; then pass "the laptop's ddpjob is an installed one, with its manifest"; else
        fail "the laptop's ddpjob is an installed one" "$(tail -n 5 "$T/install.log")"; return 1; fi
}

# laptop_job: the laptop's job folder's script, job.sh: a line per rank, a checkpoint per rank in
# checkpoints/, and exit 3 on the rank FAIL_RANK names.
laptop_job() {
    cat >"$LAPTOP_DIR/proj/job.sh" <<'JOB'
#!/bin/sh
echo "rank $RANK of $WORLD_SIZE on $(hostname) in $PWD"
mkdir -p checkpoints && echo "step 10 of rank $RANK" >"checkpoints/rank$RANK.ckpt"
[ "${FAIL_RANK:-none}" = "$RANK" ] && { echo "rank $RANK fails" >&2; exit 3; }
exit 0
JOB
    chmod 755 "$LAPTOP_DIR/proj/job.sh"
}

# laptop_spec SCHEDULER NAME COMMAND [ENV]: proj/NAME.yaml, a 2-node job of one rank a node.
laptop_spec() {
    local env=
    [ -z "${4:-}" ] || env="env: {$4}"
    cat >"$LAPTOP_DIR/proj/$2.yaml" <<SPEC
name: $2
scheduler: $1
nodes: 2
procs_per_node: 1
cpus_per_node: 1
walltime: "00:05:00"
command: $3
$env
SPEC
}

expect_rc() { # STATUS DESCRIPTION: the last run's exit status, its stderr shown where it differs
    if [ "$RC" = "$1" ]; then pass "$2"; else fail "$2" "exit $RC, not $1" "$ERR"; fi
}
