#!/bin/bash
# Runs COMMAND inside the Debian 11 root OLDROOT (tests/cluster/oldroot.sh), in a mount namespace
# of its own, as a login node of its own: this machine's /dev, /proc and /tmp, its users
# (/etc/passwd, group, shadow) and the /etc/hosts and /etc/pbs.conf the caller sees, a fresh /run (sshd's
# privilege separation folder in it) and the folders OLDROOT_BINDS names (colon-separated, each
# under /run or /tmp, the suites' own), at their own paths. The cached root is left unchanged.
#   OLDROOT=DIR [OLDROOT_BINDS=DIR:DIR] oldroot-enter.sh COMMAND...
set -euo pipefail
[ -f "${OLDROOT:?}/.complete" ] || { echo "oldroot-enter: $OLDROOT is not made (oldroot_make)" >&2; exit 1; }
exec unshare --mount --propagation private bash -c '
    set -e
    r=$OLDROOT
    mount --rbind /dev "$r/dev"
    mount -t proc proc "$r/proc"
    mount --bind /tmp "$r/tmp"
    mount -t tmpfs -o mode=755 ddpjob-run "$r/run"
    mkdir -p "$r/run/sshd"
    for f in /etc/hosts /etc/passwd /etc/group /etc/shadow /etc/pbs.conf; do
        [ ! -f "$f" ] || mount --bind "$f" "$r$f"
    done
    IFS=:
    for d in ${OLDROOT_BINDS:-}; do
        case $d in /run/*) mkdir -p "$r$d" ;; /tmp/*) ;; *) echo "oldroot-enter: $d is under neither /run nor /tmp" >&2; exit 1 ;; esac
        mount --bind "$d" "$r$d"
    done
    exec chroot "$r" "$@"' oldroot-enter "$@"
