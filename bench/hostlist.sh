#!/bin/bash
# hostlist compression at scale: `ddpjob nodes --compress` of N hosts that form N groups
# (a0x1, a1x1, ...: each name its own prefix) and of N hosts in one group, N = 10k, 40k, 160k.
# Each 4x more hosts should cost about 4x (n log n), not 16x (the quadratic grouping before).
#   bench/hostlist.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
ddpjob=${1:-build}/cli/ddpjob

seconds() { # EXPR: wall seconds of one compression
    local start end
    start=$(date +%s%N)
    "$ddpjob" nodes --slurm "$1" --compress >/dev/null
    end=$(date +%s%N)
    awk -v ns=$((end - start)) 'BEGIN {printf "%.3f", ns / 1e9}'
}

printf '%-8s %14s %14s\n' hosts "N groups (s)" "one group (s)"
for n in 10000 40000 160000; do
    printf '%-8d %14s %14s\n' "$n" "$(seconds "a[0-$((n - 1))]x1")" "$(seconds "n[0-$((n - 1))]")"
done
