#!/bin/bash
# What a report costs (ddpjob(1), report): made-up records of 8 and 1,024 ranks over two links of
# 200 samples each (tests/cli/py/synthetic_record.py, the most a link's history keeps), drawn by
# `ddpjob report`, then loaded by a real headless Chromium (--dump-dom, which returns once the
# page is laid out), against the anchor of the same Chromium loading an empty page. Goal: the
# 1,024-rank page in under 2 s in the browser. Medians of RUNS runs.
#   bench/report.sh [BUILD_DIR]
set -u
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
DDPJOB=$PWD/$build/cli/ddpjob RUNS=${RUNS:-5}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
now_ms() { echo $(($(date +%s%N) / 1000000)); }
median() { tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
chromium_ms() { # PAGE
    local start
    start=$(now_ms)
    timeout 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir="$T/chromium" \
        --dump-dom "file://$1" >/dev/null 2>&1
    echo $(($(now_ms) - start))
}
echo '<!DOCTYPE html><html><body></body></html>' >"$T/empty.html"
chromium_ms "$T/empty.html" >/dev/null # the profile made once, outside the timings
empty=()
for _ in $(seq "$RUNS"); do empty+=("$(chromium_ms "$T/empty.html")"); done
e=$(median <<<"${empty[*]}")
echo "report of a job, $(nproc) CPU(s): $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(chromium --version 2>/dev/null)"
printf '%-6s  %-10s  %-14s  %-16s  %s\n' ranks "page size" "ddpjob report" "Chromium loads it" "vs an empty page ($e ms)"
for ranks in 8 1024; do
    record=$(python3 tests/cli/py/synthetic_record.py "$T/w$ranks" "syn$ranks" "$ranks" 200 $((ranks / 2)))
    made=() shown=()
    for _ in $(seq "$RUNS"); do
        start=$(now_ms)
        env PATH=/usr/bin:/bin "$DDPJOB" report "$record" -o "$T/r$ranks.html" >/dev/null 2>&1
        made+=($(($(now_ms) - start)))
        shown+=("$(chromium_ms "$T/r$ranks.html")")
    done
    m=$(median <<<"${made[*]}") s=$(median <<<"${shown[*]}")
    printf '%-6s  %-10s  %-14s  %-16s  %s\n' "$ranks" "$(($(stat -c %s "$T/r$ranks.html") / 1024)) KiB" "$m ms" "$s ms" \
        "$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.2fx", a / b }')"
done
