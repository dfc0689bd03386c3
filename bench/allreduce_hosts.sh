#!/bin/bash
# The hierarchical all_reduce across two hosts, side by side with the flat TCP ring and gloo:
# two network namespaces (n1, n2: veths through a bridge, as the cluster suites make them), one
# ddpjob-agent per host with 2 workers each (2 hosts x 2 ranks), ddp-train bench's all_reduce
# (shared memory within each host, the ring between the hosts' leaders), the same with
# DDP_PG_SHM=0 (the flat ring over all 4 ranks), and PyTorch gloo (bench/allreduce_gloo.py).
#   bench/allreduce_hosts.sh [BUILD_DIR]   (as root: it makes network namespaces)
# Sizes (SIZES overrides), iteration rule, medians of REPS interleaved runs and busbw as in
# bench/allreduce.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
agent=$PWD/$build/agent/ddpjob-agent
train=$PWD/$build/runtime/train/ddp-train
py=/usr/bin/python3
reps=${REPS:-3}
budget=$((1 << 30))
read -ra sizes <<<"${SIZES:-4096 16384 65536 262144 1048576 4194304 16777216 67108864 268435456}"
net=10.82.0
dir=$(mktemp -d)
export DDPJOB_TOKEN=bench-hosts-$$
# shellcheck source=lib.sh
. bench/lib.sh
# shellcheck source=../tests/cluster/netns.sh
. tests/cluster/netns.sh
host_ns() { echo "ddpjbh$$-$1"; }
trap 'netns_remove "$dir" host_ns head 2; rm -rf "$dir"' EXIT
mkdir -p "$dir/etc"
netns_make "$dir" host_ns "$net" head 2

port=$((21000 + $$ % 8000))

# job ENV PROGRAM...: both hosts' agents (2 workers each) on PROGRAM; node 0's output on stdout.
job() {
    local env=$1 node1
    shift
    port=$((port + 1))
    local common=(--nnodes 2 --nproc-per-node 2 --master-addr "$net.11" --master-port "$port")
    ip netns exec "$(host_ns n2)" env $env GLOO_SOCKET_IFNAME=eth0 "$agent" "${common[@]}" \
        --node-rank 1 "$@" >/dev/null 2>&1 &
    node1=$!
    ip netns exec "$(host_ns n1)" env $env GLOO_SOCKET_IFNAME=eth0 "$agent" "${common[@]}" \
        --node-rank 0 "$@" 2>&1
    wait "$node1"
}

ours() { # DDP_PG_SHM: `bytes seconds` per size
    local s it
    for s in "${sizes[@]}"; do
        it=$(iterations "$s")
        job "DDP_PG_SHM=$1" "$train" bench --op all_reduce --min-bytes "$s" --max-bytes "$s" \
            --iters "$it" --warmup $((it / 4 > 2 ? it / 4 : 2)) |
            awk '/^\[rank 0\] +[0-9]/ {printf "%s %.9f\n", $3, $8 / 1e6}'
    done
}

gloo() {
    job "OMP_NUM_THREADS=1" "$py" bench/allreduce_gloo.py "$budget" "${sizes[@]}" |
        awk '/^\[rank 0\] [0-9]/ {print $3, $4}'
}

for ((rep = 0; rep < reps; rep++)); do
    ours 1 >>"$dir/hier"
    ours 0 >>"$dir/flat"
    gloo >>"$dir/gloo"
done
echo "== all_reduce float32 sum, 2 hosts x 2 ranks (network namespaces): busbw GB/s (median of $reps) =="
printf '%10s %12s %9s %9s %9s %9s\n' bytes hierarchical flat gloo x-flat x-gloo
for s in "${sizes[@]}"; do
    awk -v s="$s" -v h="$(seconds_of "$dir/hier" "$s")" -v f="$(seconds_of "$dir/flat" "$s")" \
        -v g="$(seconds_of "$dir/gloo" "$s")" 'BEGIN {
        k = 2 * 3 / 4 / 1e9
        printf "%10d %12.3f %9.3f %9.3f %8.2fx %8.2fx\n", s, s / h * k, s / f * k, s / g * k, f / h, g / h }'
done
