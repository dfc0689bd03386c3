#!/bin/bash
# Builds ddpjob-agent fully static against musl (Debian's musl-tools): one binary that runs on
# any x86-64 Linux compute node, whatever its C library (or its container's).
#   scripts/build-static-agent.sh [BUILD_DIR]   (default build-static; prints the agent's path)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-static}
command -v musl-gcc >/dev/null || { echo "build-static-agent: no musl-gcc (apt-get install musl-tools)" >&2; exit 1; }
[ -f "$dir/build.ninja" ] || CC=musl-gcc meson setup "$dir" -Dstatic_agent=true --buildtype=release >/dev/null
ninja -C "$dir" agent/ddpjob-agent >/dev/null
echo "$dir/agent/ddpjob-agent"
