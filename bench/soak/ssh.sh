# shellcheck shell=bash
# The soak's sshd hosts (bench/soak.sh): tests/cluster/sshd.sh's three hosts, each job started by
# `ddpjob launch` from the login host and followed to its end there; its exit status and what it
# said are the outcome (a launched job keeps no record). No OOM case (a launched job has no
# memory cgroup) and no walltime (no scheduler).
SSHD_USER=ddpjsoak-ssh
# shellcheck source=../../tests/cluster/sshd.sh
. "$SRCDIR/tests/cluster/sshd.sh"

soak_ssh_kinds() { echo worker_signal worker_exit agent_killed link_cut node_frozen stall slow cancel; }

soak_ssh_up() {
    at_exit sshd_down
    sshd_up 3 >"$T/sshd.log" 2>&1 || { echo "three sshd hosts did not start: $(tail -n 3 "$T/sshd.log")"; return 1; }
    cp "$AGENT" "$SRCDIR/tests/agent/py/soak_loop.py" "$SSHD_DIR/bin/"
    SOAK_SSH_DIR=$T/ssh
    mkdir -p "$SOAK_SSH_DIR"
}

soak_ssh_dir() { echo "$SOAK_SSH_DIR"; }
soak_ssh_header() { :; }
soak_ssh_workload() { echo "$SSHD_DIR/bin/soak_loop.py"; }
# gloo's own pick of an interface would be loopback's name here.
soak_ssh_env() { echo ', GLOO_SOCKET_IFNAME: eth0'; }

soak_ssh_submit() { # SPEC_FILE: JOB (the launcher's pid)
    local hosts=n1,n2
    grep -q '^spares: 1' "$1" && hosts+=,n3
    sshd_login timeout -s KILL 300 "$DDPJOB" launch "$1" --hosts "$hosts" --bindir "$SSHD_DIR/bin" \
        >"$SOAK_SSH_DIR/soak-$i.out" 2>"$SOAK_SSH_DIR/soak-$i.err" &
    JOB=$!
}

soak_ssh_namespaces() { local n; for n in login n1 n2 n3; do sshd_ns "$n"; done; }
soak_ssh_node_ns() { sshd_ns "$1"; }
soak_ssh_head_ns() { sshd_ns login; }
# Ctrl-C on the launcher.
soak_ssh_cancel() { pkill -INT -f "^$DDPJOB launch $SOAK_SSH_DIR/soak-$i.yaml"; }
soak_ssh_ended() { ! kill -0 "$JOB" 2>/dev/null; }

soak_ssh_finish() {
    local rc
    if wait "$JOB"; then rc=0; else rc=$?; fi
    case $rc in
    0) STATE=completed ;;
    143) STATE=cancelled ;;
    *) STATE=failed ;;
    esac
    SAID=$(cat "$SOAK_SSH_DIR/soak-$i.err")
    LOGS=$SAID$'\n'$(cat "$SOAK_SSH_DIR/soak-$i.out")
}

# What runs on the hosts besides sshd itself.
soak_ssh_left() {
    local n pid
    for n in n1 n2 n3; do
        for pid in $(ip netns pids "$(sshd_ns "$n")"); do
            [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sshd ] || echo "$n: $({ tr "\0" " " <"/proc/$pid/cmdline"; } 2>/dev/null)"
        done
    done
}

soak_ssh_restore() { ip -n "$(sshd_ns login)" link set v2 up; }
