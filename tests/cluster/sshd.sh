# shellcheck shell=bash
# Real sshd hosts for the launch suites (source this file): n1..nN, each Debian's sshd in its own
# network, UTS and mount namespace (its own hostname, address and /etc/hosts), joined through a
# bridge in a "login" namespace, where the client runs (libssh2 reads no ssh_config, so the client
# itself must live where 10.80.0.x leads nowhere else). Keys, configs and pid files live under
# SSHD_DIR (in /run, readable by the hosts' user); /etc/ssh is neither read nor changed. Logins
# are as an unprivileged user made for the run, SSHD_USER, whose home is fresh (no startup files
# of this machine's accounts run in its sessions); SSHD_DIR/bin is for what it runs. The
# client's HOME is SSHD_DIR/client, holding its key (.ssh/id_ed25519), known_hosts with every
# host's key, and an ssh config that names the user.
# shellcheck source=netns.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns.sh"
SSHD_ID=$$
SSHD_NET=10.80.0
# A suite whose hosts may run beside another's names its own (sshd_down removes the user).
SSHD_USER=${SSHD_USER:-ddpjssh}
sshd_ns() { echo "ddpjssh$SSHD_ID-$1"; }

# sshd_host_config DIR NAME ADDR: host NAME's key (DIR/keys/host-NAME) and sshd config
# (DIR/sshd-NAME.conf: listening on ADDR:22, key logins alone, keys in DIR/keys/authorized_keys
# and the user's ~/.ssh/authorized_keys,
# its pid in DIR/run); prints the host's known_hosts line.
sshd_host_config() {
    local d=$1 name=$2 addr=$3
    mkdir -p "$d/keys" "$d/run" || return 1
    ssh-keygen -q -t ed25519 -N '' -C "$name" -f "$d/keys/host-$name" || return 1
    cat >"$d/sshd-$name.conf" <<CONF
ListenAddress $addr:22
HostKey $d/keys/host-$name
PidFile $d/run/sshd-$name.pid
AuthorizedKeysFile $d/keys/authorized_keys .ssh/authorized_keys
AuthenticationMethods publickey
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 200
Subsystem sftp /usr/lib/openssh/sftp-server
PermitRootLogin no
CONF
    printf '%s,%s %s\n' "$name" "$addr" "$(cut -d' ' -f1-2 "$d/keys/host-$name.pub")"
}

# sshd_up NODES
sshd_up() {
    SSHD_NODES=$1
    SSHD_DIR=$(mktemp -d /run/ddpj-ssh.XXXXXX) || return 1
    local d=$SSHD_DIR i ns
    chmod 755 "$d"
    mkdir -p "$d/etc" "$d/keys" "$d/run" "$d/bin" "$d/client/.ssh" "$d/home/$SSHD_USER" || return 1
    chmod 700 "$d/client/.ssh"
    if ! id "$SSHD_USER" >/dev/null 2>&1; then
        # Password '*': no password login, but not a locked account, which sshd refuses outright.
        useradd -M -p '*' -d "$d/home/$SSHD_USER" -s /bin/bash "$SSHD_USER" || return 1
        touch "$d/made-user"
    else
        # Left by a run that was killed: its home was that run's, gone now.
        usermod -p '*' -d "$d/home/$SSHD_USER" "$SSHD_USER" || return 1
    fi
    chown "$SSHD_USER:" "$d/home/$SSHD_USER"
    # sshd's privilege separation folder (Debian's unit makes it at boot); left in place, as
    # another suite's hosts may be using it.
    mkdir -p /run/sshd
    netns_make "$d" sshd_ns "$SSHD_NET" login "$SSHD_NODES" || return 1
    ssh-keygen -q -t ed25519 -N '' -C ddpjob-test -f "$d/client/.ssh/id_ed25519" || return 1
    cp "$d/client/.ssh/id_ed25519.pub" "$d/keys/authorized_keys"
    chmod 644 "$d/keys/authorized_keys"
    printf 'Host *\n    User %s\n' "$SSHD_USER" >"$d/client/.ssh/config"
    : >"$d/client/.ssh/known_hosts"
    for i in $(seq "$SSHD_NODES"); do
        sshd_host_config "$d" "n$i" "$SSHD_NET.$((10 + i))" >>"$d/client/.ssh/known_hosts" || return 1
        ns=$(sshd_ns "n$i")
        nsenter --net="/run/netns/$ns" -- unshare --uts --mount --propagation private \
            sh -c 'hostname "$1" && mount --bind "$2/etc/hosts" /etc/hosts && exec /usr/sbin/sshd -f "$3"' \
            sshd "n$i" "$d" "$d/sshd-n$i.conf" || return 1
    done
    for i in $(seq "$SSHD_NODES"); do
        for _ in $(seq 100); do [ -s "$d/run/sshd-n$i.pid" ] && break; sleep 0.05; done
        [ -s "$d/run/sshd-n$i.pid" ] || return 1
    done
}

# sshd_suite_up NODES WHAT: a suite's start (tap.sh's pass and fail): NODES hosts, down when the
# suite exits. Returns non-zero (said) when they did not start.
sshd_suite_up() {
    at_exit 'sshd_down'
    if ! sshd_up "$1" >"$T/sshd.log" 2>&1; then
        fail "$1 sshd host(s) in network namespaces" "$(cat "$T/sshd.log")"
        return 1
    fi
    pass "$2"
}

sshd_down() {
    [ -n "${SSHD_DIR:-}" ] || return 0
    netns_remove "$SSHD_DIR" sshd_ns login "$SSHD_NODES"
    [ -e "$SSHD_DIR/made-user" ] && userdel "$SSHD_USER" 2>/dev/null
    rm -rf "$SSHD_DIR"
    SSHD_DIR=
}

# sshd_login COMMAND...: runs COMMAND on the login host (the namespace holding the bridge, with
# the hosts' names in its /etc/hosts and HOME=SSHD_DIR/client).
sshd_login() {
    nsenter --net="/run/netns/$(sshd_ns login)" -- unshare --mount --propagation private \
        sh -c 'mount --bind "$1/etc/hosts" /etc/hosts && shift && HOME="$0/client" exec "$@"' \
        "$SSHD_DIR" "$SSHD_DIR" "$@"
}
