# shellcheck shell=bash
# Real sshd hosts for the launch suites (source this file): n1..nN, each Debian's sshd in its own
# network, UTS and mount namespace (its own hostname, address and /etc/hosts), joined through a
# bridge in a "login" namespace, where the client runs (libssh2 reads no ssh_config, so the client
# itself must live where 10.80.0.x leads nowhere else). Keys, configs and pid files live under
# SSHD_DIR; /etc/ssh is neither read nor changed. The client's HOME is SSHD_DIR/home, holding its
# key (.ssh/id_ed25519) and known_hosts with every host's key.
# shellcheck source=netns.sh
. "$(dirname "${BASH_SOURCE[0]}")/netns.sh"
SSHD_ID=$$
SSHD_NET=10.80.0
sshd_ns() { echo "ddpjssh$SSHD_ID-$1"; }

# sshd_up DIR NODES
sshd_up() {
    SSHD_DIR=$1
    SSHD_NODES=$2
    local d=$SSHD_DIR i ns
    mkdir -p "$d/etc" "$d/keys" "$d/run" "$d/home/.ssh" || return 1
    chmod 700 "$d/home/.ssh"
    [ -d /run/sshd ] || { mkdir -p /run/sshd && touch "$d/made-run-sshd"; }
    netns_make "$d" sshd_ns "$SSHD_NET" login "$SSHD_NODES" || return 1
    ssh-keygen -q -t ed25519 -N '' -C ddpjob-test -f "$d/home/.ssh/id_ed25519" || return 1
    cp "$d/home/.ssh/id_ed25519.pub" "$d/keys/authorized_keys"
    : >"$d/home/.ssh/known_hosts"
    for i in $(seq "$SSHD_NODES"); do
        ssh-keygen -q -t ed25519 -N '' -C "n$i" -f "$d/keys/host-n$i" || return 1
        printf 'n%d,%s.%d %s\n' "$i" "$SSHD_NET" $((10 + i)) "$(cut -d' ' -f1-2 "$d/keys/host-n$i.pub")" \
            >>"$d/home/.ssh/known_hosts"
        cat >"$d/sshd-n$i.conf" <<CONF
ListenAddress $SSHD_NET.$((10 + i)):22
HostKey $d/keys/host-n$i
PidFile $d/run/sshd-n$i.pid
AuthorizedKeysFile $d/keys/authorized_keys
AuthenticationMethods publickey
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 200
PermitRootLogin prohibit-password
CONF
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

sshd_down() {
    [ -n "${SSHD_DIR:-}" ] || return 0
    netns_remove "$SSHD_DIR" sshd_ns login "$SSHD_NODES"
    [ -e "$SSHD_DIR/made-run-sshd" ] && rmdir /run/sshd 2>/dev/null
    SSHD_DIR=
}

# sshd_login COMMAND...: runs COMMAND on the login host (the namespace holding the bridge, with
# the hosts' names in its /etc/hosts and HOME=SSHD_DIR/home).
sshd_login() {
    nsenter --net="/run/netns/$(sshd_ns login)" -- unshare --mount --propagation private \
        sh -c 'mount --bind "$1/etc/hosts" /etc/hosts && shift && HOME="$0/home" exec "$@"' \
        "$SSHD_DIR" "$SSHD_DIR" "$@"
}
