# shellcheck shell=bash
# Container images made by the tests from this machine's own files (no registry, no download):
# roots for enroot, pyxis and Charliecloud, and their squashfs files.

# image_root DIR [PROGRAM...]: a root file system holding Debian's static busybox and its
# applets, bash and the libraries it needs (pyxis runs each node's setup in bash inside), this
# machine's /etc/passwd and /etc/group (ch-run binds over them), a marker only images have
# (/etc/ddpjob-image), and each PROGRAM with the shared libraries it needs, at the same paths.
image_root() {
    local root=$1 f lib applet
    shift
    mkdir -p "$root"/{bin,etc,tmp,proc,sys,dev,root,run,var/tmp}
    cp /bin/busybox "$root/bin/busybox"
    for applet in sh cat echo env sleep ls id ps mkdir rm touch hostname grep sed head tail true \
        false kill wc tr cut date od pwd printf test stat dirname basename; do
        ln -sf busybox "$root/bin/$applet"
    done
    for f in /bin/bash "$@"; do
        f=$(readlink -f "$f")
        for lib in "$f" $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do
            mkdir -p "$root$(dirname "$lib")"
            cp -L "$lib" "$root$lib"
        done
    done
    [ -e "$root/bin/bash" ] || ln -s "$(readlink -f /bin/bash)" "$root/bin/bash"
    cp /etc/passwd /etc/group "$root/etc/"
    echo "inside the test's image" >"$root/etc/ddpjob-image"
}

# image_sqsh ROOT FILE: ROOT as a squashfs file (enroot's and pyxis's images).
image_sqsh() {
    mksquashfs "$1" "$2" -noappend -quiet >/dev/null
}

# The enroot this machine has (the install step builds it into /opt/enroot).
image_enroot_path() {
    [ -x /opt/enroot/bin/enroot ] && echo /opt/enroot/bin
}
