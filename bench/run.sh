#!/bin/bash
# Runs the agent's benchmarks against their anchors and prints the tables of bench/results/:
#   bench/run.sh [BUILD_DIR]   (default build; needs /usr/bin/python3 with torch)
# Launch overhead: ddpjob-agent --standalone vs torchrun --standalone (with the flags that make
# Debian's torchrun 1.13 work, and current torchrun's 0.1 s monitor interval) vs a plain shell
# loop starting the same gloo workers; overhead = launcher time - shell-loop time. Then the same
# with /bin/true workers, where import torch's noise is gone and only the launchers are timed.
# Rendezvous scale: K agents joining one store vs PyTorch's TCPStore doing the same.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
agent=$build/agent/ddpjob-agent
py=/usr/bin/python3
runs=${RUNS:-5}

# shellcheck source=lib.sh
. bench/lib.sh

median_time() { # CMD...: median wall seconds of $runs runs
    local times=() i s
    for ((i = 0; i < runs; i++)); do
        s=$(date +%s%N)
        "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
        times+=("$(( ($(date +%s%N) - s) / 1000000 ))")
    done
    printf '%s\n' "${times[@]}" | median | awk '{printf "%.3f", $1 / 1000}'
}

echo "== launch: N gloo workers form a process group and exit (median of $runs, seconds) =="
printf '%3s %9s %9s %9s %14s %14s %9s\n' N shell agent torchrun agent-overhead torch-overhead ratio
for n in 1 2 4 8; do
    shell=$(median_time bench/launch_shell.sh "$n" "$py" bench/pg_noop.py)
    ours=$(median_time "$agent" --standalone --nproc-per-node "$n" "$py" bench/pg_noop.py)
    theirs=$(median_time "$py" -m torch.distributed.run --standalone --nproc_per_node "$n" \
        --redirects 1 --tee 1 --monitor_interval 0.1 bench/pg_noop.py)
    awk -v n="$n" -v s="$shell" -v a="$ours" -v t="$theirs" 'BEGIN {
        ao = a - s; to = t - s
        printf "%3d %9.3f %9.3f %9.3f %14.3f %14.3f %9s\n", n, s, a, t, ao, to,
            (ao > 0.001 ? sprintf("1/%.0f", to / ao) : "<1/" sprintf("%.0f", to / 0.001)) }'
done

ninja -C "$build" bench/peak_rss >/dev/null
# peak_rss_mib CMD...: the largest resident set (MiB) of CMD and everything it waited for.
peak_rss_mib() { "$build/bench/peak_rss" "$@" | awk '{printf "%.1f", $1 / 1024}'; }

echo
echo "== launcher's own cost: N /bin/true workers, so nothing but the launcher is timed (median of $((runs * 3)); peak RSS in MiB) =="
printf '%3s %9s %9s %9s %14s %14s %9s %9s %9s\n' N shell agent torchrun agent-overhead torch-overhead \
    ratio agent-rss torch-rss
runs_saved=$runs
runs=$((runs * 3))
for n in 1 2 4 8; do
    shell=$(PORT=1 median_time bench/launch_shell.sh "$n" /bin/true)
    agent_cmd=("$agent" --standalone --nproc-per-node "$n" /bin/true)
    torch_cmd=("$py" -m torch.distributed.run --standalone --nproc_per_node "$n" --redirects 1 \
        --tee 1 --monitor_interval 0.1 --no_python /bin/true)
    ours=$(median_time "${agent_cmd[@]}")
    theirs=$(median_time "${torch_cmd[@]}")
    awk -v n="$n" -v s="$shell" -v a="$ours" -v t="$theirs" -v ar="$(peak_rss_mib "${agent_cmd[@]}")" \
        -v tr="$(peak_rss_mib "${torch_cmd[@]}")" 'BEGIN {
        ao = a - s; to = t - s
        printf "%3d %9.3f %9.3f %9.3f %14.3f %14.3f %9s %9.1f %9.1f\n", n, s, a, t, ao, to,
            (ao > 0.001 ? sprintf("1/%.0f", to / ao) : "<1/" sprintf("%.0f", to / 0.001)), ar, tr }'
done
runs=$runs_saved

echo
echo "== rendezvous: K agents join, publish a record, get their ranks (median, seconds) =="
echo "   (ddpjob: until the last agent has its ranks, connections held as a running job holds them;"
echo "   to exit: until every agent has closed and exited, TCPStore's end point, which the speedup"
echo "   compares; store KiB/agent: the store's peak resident memory per joined agent, its relay"
echo "   processes' included; relays: processes the store forked to hold more connections than one"
echo "   may; CPU: seconds, user and system, of the store's processes and of the simulated agents')"
ninja -C "$build" bench/rdzv_scale >/dev/null
ours=$("$build/bench/rdzv_scale" 64 1024 8192 16384 32768)
theirs=$(timeout 120 "$py" bench/tcpstore_scale.py 64 256 1024 || true)
printf '%6s %10s %10s %10s %8s %16s %7s %10s %10s\n' K ddpjob "to exit" TCPStore speedup \
    "store KiB/agent" relays "store CPU" "agents CPU"
while read -r k t kib relays store_cpu agents_cpu exit_t; do
    p=$(awk -v k="$k" '$1 == k {print $2}' <<<"$theirs")
    awk -v k="$k" -v t="$t" -v e="$exit_t" -v m="$kib" -v r="$relays" -v sc="$store_cpu" \
        -v ac="$agents_cpu" -v p="${p:-}" 'BEGIN {
        printf "%6d %10.4f %10.4f %10s %8s %16.2f %7d %10.2f %10.2f\n", k, t, e,
            (p == "" ? "(not run)" : p), (p == "" ? "-" : sprintf("%.1fx", p / e)), m, r, sc, ac }'
done <<<"$ours"
