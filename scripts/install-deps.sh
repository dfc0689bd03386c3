#!/bin/bash
# Installs what ddpjob needs to build and test on Debian 12 (run as root). Safe to re-run.
set -euo pipefail
packages=(
    build-essential meson ninja-build pkg-config   # the build
    libyaml-dev libssh2-1-dev libjansson-dev       # spec parsing, SSH launch, JSON (records, reports)
    libcurl4-openssl-dev                           # notify.webhook's messages (HTTP, HTTPS)
    libopenblas-dev                                # ddp-train's CPU GEMMs
    libdnnl-dev                                    # ddp-train's CPU convolutions (oneDNN)
    shellcheck man-db clang-format                 # the suite lints every script and source, formats the man page
    clang libclang-rt-14-dev                       # the fuzz targets (libFuzzer, ASan, UBSan)
    python3-torch                                  # real PyTorch workers (for /usr/bin/python3)
    slurm-wlm munge                                # a real Slurm cluster the suite starts itself
    slurmdbd mariadb-server                        # ... and again with its accounting (sacct)
    openmpi-bin libopenmpi-dev                     # mpirun starts agents and workers; the MPI bench anchor
    iproute2 util-linux procps                     # network namespaces as separate hosts, pgrep
    openssh-server openssh-client                  # real sshd hosts for `ddpjob launch`
    musl-tools busybox-static                      # the static agent, and an empty root to run it in
    environment-modules                            # `module load ddpjob` (Tcl modules, as NCI runs)
    charliecloud-runtime                           # containers: Charliecloud's ch-run
    chromium                                       # a real headless browser opens ddpjob report's pages
    squashfs-tools squashfuse fuse-overlayfs jq parallel curl zstd makeself libbsd-dev libmd-dev  # ... enroot's build and run (below)
    libslurm-dev                                   # ... pyxis, built against Debian's Slurm (below)
    lua5.3 lua-filesystem lua-json lua-posix lua-term tcl  # ... and Lmod's own needs (below)
)
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
# Lmod too, which Debian will not install beside environment-modules (each Conflicts: the
# other): its package unpacked into /opt/lmod, run there as `lmod bash load ...`.
if [ ! -x /opt/lmod/usr/share/lmod/lmod/libexec/lmod ]; then
    deb_dir=$(mktemp -d)
    (cd "$deb_dir" && apt-get download -qq lmod >/dev/null)
    dpkg -x "$deb_dir"/lmod_*.deb /opt/lmod
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
# scripts/install-deps.sh.
ENROOT_RUNTIME_PATH /run/enroot/$(hostname)/user-$(id -u)
ENROOT_DATA_PATH /var/tmp/enroot-data/$(hostname)/user-$(id -u)
ENROOT_CACHE_PATH /var/tmp/enroot-cache/$(hostname)/group-$(id -g)
ENROOT_TEMP_PATH /var/tmp
CONF
fi
