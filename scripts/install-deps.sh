#!/bin/bash
# What building and running ddpjob needs on Debian 12 (run as root): the README's first command
# installs only this. The test suite's world (Slurm, MariaDB, OpenPBS, a browser, ...) is
# scripts/install-test-deps.sh's. Safe to re-run.
set -euo pipefail
packages=(
    build-essential meson ninja-build pkg-config   # the build
    libyaml-dev libssh2-1-dev libjansson-dev       # spec parsing, SSH launch, JSON (records, reports)
    libcurl4-openssl-dev                           # notify.webhook's messages (HTTP, HTTPS)
    libopenblas-dev                                # ddp-train's CPU GEMMs
    libdnnl-dev                                    # ddp-train's CPU convolutions (oneDNN)
    musl-tools cmake                               # the cluster build: static, for submit --on
)
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
