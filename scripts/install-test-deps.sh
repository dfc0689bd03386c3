#!/bin/bash
# What the whole test suite needs on Debian 12 (run as root), beyond what building and running
# ddpjob needs (scripts/install-deps.sh, run first): the README's second command. Safe to re-run.
# The suite starts its own Slurm, MariaDB, munge, sshd and PBS daemons, each where it wants them;
# the system's own services of these packages are neither started now nor at boot, so a
# workstation with systemd gets no Slurm or database running behind its back.
set -euo pipefail
"$(dirname "$0")/install-deps.sh"
packages=(
    shellcheck man-db clang-format                 # the suite lints every script and source, formats the man page
    clang libclang-rt-14-dev                       # the fuzz targets (libFuzzer, ASan, UBSan)
    python3-torch                                  # real PyTorch workers (for /usr/bin/python3)
    python3-pip python3-setuptools python3-wheel   # pip installs the ddpjob Python package from the repository
    slurm-wlm munge                                # a real Slurm cluster the suite starts itself
    slurmdbd mariadb-server                        # ... and again with its accounting (sacct)
    openmpi-bin libopenmpi-dev                     # mpirun starts agents and workers; the MPI bench anchor
    iproute2 util-linux procps                     # network namespaces as separate hosts, pgrep
    openssh-server openssh-client                  # real sshd hosts for `ddpjob launch`
    busybox-static debootstrap                     # an empty root, and a Debian 11 one (a login node)
    gcc-aarch64-linux-gnu linux-libc-dev-arm64-cross qemu-user-static  # the aarch64 cluster build, run under qemu
    environment-modules                            # `module load ddpjob` (Tcl modules, as NCI runs)
    charliecloud-runtime                           # containers: Charliecloud's ch-run
    chromium                                       # a real headless browser opens ddpjob report's pages
    squashfs-tools squashfuse fuse-overlayfs jq parallel curl zstd makeself libbsd-dev libmd-dev  # ... enroot's build and run (below)
    libslurm-dev                                   # ... pyxis, built against Debian's Slurm (below)
    lua5.3 lua-filesystem lua-json lua-posix lua-term tcl  # ... and Lmod's own needs (below)
    libjemalloc2 libdb5.3 libhwloc15 libmunge2 libtirpc3  # ... and Grid Engine's programs (below)
)
# The services these packages would start, and which of them this run adds.
services=(slurmctld slurmd slurmdbd mariadb munge ssh)
new_services=()
for s in "${services[@]}"; do
    [ -e "/lib/systemd/system/$s.service" ] || new_services+=("$s")
done
export DEBIAN_FRONTEND=noninteractive
# Debian's way to keep a package's service from starting as it is installed (invoke-rc.d asks
# policy-rc.d; 101: not now). Only ours, and only while apt runs.
policy=/usr/sbin/policy-rc.d
ours=
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# scripts/install-test-deps.sh, while it installs\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    ours=1
fi
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
[ -z "$ours" ] || rm -f "$policy"
if [ -d /run/systemd/system ]; then
    for s in "${new_services[@]}"; do
        [ ! -e "/lib/systemd/system/$s.service" ] || systemctl disable --quiet "$s" 2>/dev/null || true
    done
fi
# Lmod too, which Debian will not install beside environment-modules (each Conflicts: the
# other): its package unpacked into /opt/lmod, run there as `lmod bash load ...`.
if [ ! -x /opt/lmod/usr/share/lmod/lmod/libexec/lmod ]; then
    deb_dir=$(mktemp -d)
    (cd "$deb_dir" && apt-get download -qq lmod >/dev/null)
    dpkg -x "$deb_dir"/lmod_*.deb /opt/lmod
    rm -rf "$deb_dir"
fi
# Debian's Grid Engine 8.1.9 for the sge suites, unpacked: only its programs, at the path they
# load their spooling library from (/usr/lib/gridengine), and its defaults (/usr/share/gridengine).
# Installing the packages would put qsub, qstat and qdel into /usr/bin over OpenPBS's, and pull
# in a mailer (docs/grid-engine.md).
if [ ! -x /usr/lib/gridengine/sge_qmaster ]; then
    deb_dir=$(mktemp -d)
    (cd "$deb_dir" && apt-get download -qq gridengine-common gridengine-client gridengine-master \
        gridengine-exec >/dev/null)
    for deb in "$deb_dir"/*.deb; do dpkg -x "$deb" "$deb_dir/root"; done
    cp -a "$deb_dir/root/usr/share/gridengine" /usr/share/
    cp -a "$deb_dir/root/usr/lib/gridengine" /usr/lib/
    rm -rf "$deb_dir"
fi
# A real OpenPBS for the PBS suite, built from the source snapshot beside the project (about 10
# minutes on 2 cores, once: the script does nothing when /opt/pbs is there already).
openpbs=$(dirname "$0")/../../shared/tools/openpbs/build.sh
if [ -x "$openpbs" ]; then
    "$openpbs"
fi
# enroot and pyxis (NVIDIA's container runtime and its Slurm plugin) for the container suites,
# built from the source snapshots beside the project (Debian has neither; a minute, once), and
# enroot's state per node and user, as NVIDIA's pyxis guide sets a Slurm node up.
tools=$(dirname "$0")/../../shared/tools
if [ ! -x /opt/enroot/bin/enroot ] && [ -x "$tools/enroot/build.sh" ]; then
    "$tools/enroot/build.sh" /opt/enroot
fi
if [ ! -e /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_pyxis.so ] && [ -x "$tools/pyxis/build.sh" ]; then
    "$tools/pyxis/build.sh"
fi
if [ -d /opt/enroot/etc/enroot/enroot.conf.d ]; then
    cat >/opt/enroot/etc/enroot/enroot.conf.d/50-ddpjob.conf <<'CONF'
# Where enroot keeps its state, per node and user (NVIDIA's pyxis guide's layout; the host's name
# keeps apart nodes that share /var/tmp and /run, as the test cluster's do). Written by ddpjob's
# scripts/install-test-deps.sh.
ENROOT_RUNTIME_PATH /run/enroot/$(hostname)/user-$(id -u)
ENROOT_DATA_PATH /var/tmp/enroot-data/$(hostname)/user-$(id -u)
ENROOT_CACHE_PATH /var/tmp/enroot-cache/$(hostname)/group-$(id -g)
ENROOT_TEMP_PATH /var/tmp
CONF
fi
# qemu-user for aarch64 programs, as systemd-binfmt registers it at boot (a machine without
# systemd has it registered here), so that the aarch64 bundle's ddpjob can start its agent.
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] && [ -r /usr/lib/binfmt.d/qemu-aarch64.conf ]; then
    mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf >/proc/sys/fs/binfmt_misc/register
fi
# The laptop suites' login node runs in a Debian 11 root (tests/cluster/oldroot.sh): made from
# Debian's mirror once (minutes) and cached, as the suite would on its first run.
(. "$(dirname "$0")/../tests/cluster/oldroot.sh" && oldroot_make)
