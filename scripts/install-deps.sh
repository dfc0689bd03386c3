#!/bin/bash
# Installs what ddpjob needs to build and test on Debian 12 (run as root). Safe to re-run.
set -euo pipefail
packages=(
    build-essential meson ninja-build pkg-config   # the build
    libyaml-dev libssh2-1-dev libjansson-dev       # spec parsing, SSH launch, JSON (records, reports)
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
