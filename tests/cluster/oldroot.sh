# shellcheck shell=bash
# An older Linux for a login node (source this file): a Debian 11 root (glibc 2.31; a RHEL/Rocky 8
# login node's 2.28 is older still than this machine's 2.36) with its own sshd, Slurm client
# (20.11, which Slurm 22.05's controller serves) and OpenPBS built inside it from
# ../shared/tools/openpbs (its qsub, qstat and qdel are the login node's), made by debootstrap
# from Debian's mirror once and cached in OLDROOT. tests/cluster/oldroot-enter.sh runs a command
# inside it.
OLDROOT=${DDPJOB_OLDROOT:-/var/cache/ddpjob-tests/debian11-pbs}
export OLDROOT

# oldroot_make: OLDROOT made where it is not; suites making it at once wait for the first.
oldroot_make() {
    local openpbs
    openpbs=$(dirname "${BASH_SOURCE[0]}")/../../../shared/tools/openpbs
    mkdir -p "$(dirname "$OLDROOT")" || return 1
    (
        flock 9
        [ -f "$OLDROOT/.complete" ] && exit 0
        [ -f "$openpbs/build.sh" ] ||
            { echo "oldroot: no ../shared/tools/openpbs beside the project to build OpenPBS from" >&2; exit 1; }
        rm -rf "$OLDROOT.part"
        debootstrap --variant=minbase --include=openssh-server,openssh-sftp-server,slurm-client,ca-certificates \
            bullseye "$OLDROOT.part" http://deb.debian.org/debian >"$OLDROOT.log" 2>&1 ||
            { tail -n 20 "$OLDROOT.log" >&2; exit 1; }
        oldroot_build_openpbs "$OLDROOT.part" "$openpbs" >>"$OLDROOT.log" 2>&1 ||
            { tail -n 20 "$OLDROOT.log" >&2; exit 1; }
        # Mount points for this machine's files (oldroot-enter.sh).
        touch "$OLDROOT.part/etc/hosts" "$OLDROOT.part/etc/passwd" "$OLDROOT.part/etc/group" \
            "$OLDROOT.part/etc/shadow" "$OLDROOT.part/etc/pbs.conf" "$OLDROOT.part/.complete"
        mv -T "$OLDROOT.part" "$OLDROOT"
    ) 9>"$OLDROOT.lock"
}

# oldroot_build_openpbs ROOT TOOLS: OpenPBS built and installed in ROOT's /opt/pbs by its own
# compiler and libraries, in a PID namespace so that no service its packages start outlives it.
oldroot_build_openpbs() {
    local r=$1
    mkdir -p "$r/root/openpbs" && cp "$2/build.sh" "$2/openpbs-src.tar.gz" "$2/SOURCE" "$r/root/openpbs/" || return 1
    printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d" && chmod 755 "$r/usr/sbin/policy-rc.d" || return 1
    unshare --mount --pid --fork --propagation private bash -c '
        set -e
        mount --rbind /dev "$0/dev"
        mount -t proc proc "$0/proc"
        chroot "$0" /bin/bash -c "apt-get update -q && /root/openpbs/build.sh /opt/pbs"' "$r" || return 1
    rm -rf "$r/root/openpbs" "$r/var/cache/apt/archives/"*.deb
}
