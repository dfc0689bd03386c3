# shellcheck shell=bash
# An older Linux for a login node (source this file): a Debian 11 root (glibc 2.31; a RHEL/Rocky 8
# login node's 2.28 is older still than this machine's 2.36) with its own sshd and Slurm client
# (20.11, which Slurm 22.05's controller serves), made by debootstrap from Debian's mirror once
# and cached in OLDROOT. tests/cluster/oldroot-enter.sh runs a command inside it.
OLDROOT=${DDPJOB_OLDROOT:-/var/cache/ddpjob-tests/debian11}
export OLDROOT

# oldroot_make: OLDROOT made where it is not; suites making it at once wait for the first.
oldroot_make() {
    mkdir -p "$(dirname "$OLDROOT")" || return 1
    (
        flock 9
        [ -f "$OLDROOT/.complete" ] && exit 0
        rm -rf "$OLDROOT.part"
        debootstrap --variant=minbase --include=openssh-server,openssh-sftp-server,slurm-client,ca-certificates \
            bullseye "$OLDROOT.part" http://deb.debian.org/debian >"$OLDROOT.log" 2>&1 ||
            { tail -n 20 "$OLDROOT.log" >&2; exit 1; }
        # Mount points for this machine's files (oldroot-enter.sh).
        touch "$OLDROOT.part/etc/hosts" "$OLDROOT.part/etc/passwd" "$OLDROOT.part/etc/group" \
            "$OLDROOT.part/etc/shadow" "$OLDROOT.part/.complete"
        mv -T "$OLDROOT.part" "$OLDROOT"
    ) 9>"$OLDROOT.lock"
}
