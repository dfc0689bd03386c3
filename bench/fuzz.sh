#!/bin/bash
# The fuzz targets for as long as asked: executions, executions per second and failures found.
#   bench/fuzz.sh [SECONDS] [TARGET...]   (default 300 s each; hostlist, spec, store)
# Builds into build/fuzz (clang's libFuzzer + ASan + UBSan); inputs that fail stay there.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
seconds=${1:-300}
shift
FUZZ_SECONDS=$seconds SRCDIR=$PWD BUILDDIR=$PWD/build bash tests/fuzz/fuzz.sh "$@" >/dev/null
printf '%-10s %12s %10s %8s\n' target executions "exec/s" failures
for log in build/fuzz/fuzz_*.log; do
    t=${log##*/fuzz_}
    t=${t%.log}
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    failed=$(find build/fuzz -maxdepth 1 -name "$t-*" | wc -l)
    awk -v t="$t" -v r="${runs:-0}" -v s="$seconds" -v f="$failed" \
        'BEGIN {printf "%-10s %12d %10.0f %8d\n", t, r, r / s, f}'
done
