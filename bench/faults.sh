#!/bin/bash
# The fault matrix's figures beside torchrun's: the same two-node job (tests/faults/lib.sh: node 0
# and node 1 in network namespaces, one PyTorch gloo worker each) under ddpjob-agent and under
# torchrun (Debian's torch 1.13, which needs `--redirects 1 --tee 1` here), one fault at a time.
# For each: the exit status of node 0's and node 1's launcher, the time from the fault until
# nothing of the job runs (killed by the bench at FAULT_CAP seconds, default 90), and the cause
# node 0 names (torchrun: its "Root Cause" rank and exit code).
#   bench/faults.sh [BUILD_DIR]   (default build; as root: it makes network namespaces)
#   CASES="node_never_starts ..." runs only those.
set -u
cd "$(dirname "$0")/.." || exit 1
build=${1:-build}
export SRCDIR=$PWD DDPJOB=$PWD/$build/cli/ddpjob AGENT=$PWD/$build/agent/ddpjob-agent \
    TRAIN=$PWD/$build/runtime/train/ddp-train
FAULT_CAP=${FAULT_CAP:-90}
# shellcheck source=../tests/faults/lib.sh
. tests/faults/lib.sh
trap 'fault_net_down; rm -rf "$T"' EXIT
fault_net_up >"$T/net.log" 2>&1 || { cat "$T/net.log" >&2; exit 1; }

cause() {
    if [ "$LAUNCHER" = agent ]; then
        failure_line | cut -c1-90
    else
        printf '%s\n%s\n' "$ERR0" "$ERR1" | awk '/Root Cause/ {r = 1} r && /rank *:/ {rank = $3}
            r && /exitcode *:/ {printf "root cause: rank %s, exitcode %s", rank, $3; exit}
            END {if (!rank) printf "-"}'
    fi
}

declare -A figure
row() { # CASE
    local took
    if [ "$TOOK_MS" -ge 0 ]; then
        printf '  %-13s %-8s %10s ms   %s\n' "$1" "$RC0/$RC1" "$TOOK_MS" "$(cause)"
    else
        printf '  %-13s %-8s %10s ms   %s; still running then: %s worker(s), %s launcher(s)\n' "$1" "$RC0/$RC1" \
            "> $((FAULT_CAP * 1000))" "$(cause)" "$(grep -v -c 'distributed.run\|ddpjob-agent' <<<"$LEFT")" \
            "$(awk '($4 ~ /python3$/ && $6 == "torch.distributed.run") || $4 ~ /ddpjob-agent$/' <<<"$LEFT" | wc -l)"
    fi
}

echo "== fault -> nothing of the job running; exit status node 0/node 1; the cause node 0 names =="
echo "   (2 nodes x 1 rank, PyTorch $("$PY" -c 'import torch; print(torch.__version__)') gloo; $(date -u +%F))"
for c in ${CASES:-worker_kill collective_hang agent1_kill node_never_starts stdout_stall}; do
    echo "$c" | tr _ ' '
    for LAUNCHER in agent torchrun; do
        RC1=- ERR1=
        "case_$c"
        figure[$LAUNCHER]=$TOOK_MS
        row "$([ "$LAUNCHER" = agent ] && echo ddpjob-agent || echo torchrun)"
    done
    if [ "${figure[agent]}" -gt 0 ]; then
        if [ "${figure[torchrun]}" -ge 0 ]; then
            awk -v a="${figure[agent]}" -v t="${figure[torchrun]}" 'BEGIN {printf "  torchrun / ddpjob-agent: %.1fx\n", t / a}'
        else
            awk -v a="${figure[agent]}" -v t="$((FAULT_CAP * 1000))" 'BEGIN {printf "  torchrun / ddpjob-agent: > %.0fx\n", t / a}'
        fi
    fi
done
