#!/bin/bash
# ddp-train's tcp all_reduce against PyTorch gloo and Open MPI's MPI_Allreduce (over its tcp
# transport and over its default shared-memory one), side by side:
#   bench/allreduce.sh [BUILD_DIR]   (needs /usr/bin/python3 with torch, mpicc, mpirun)
# Every system runs the same sizes, float32 sum, with the same iteration rule (1 GiB of traffic
# per size, 5 to 200 iterations, a quarter of that as warm-up); each cell is the median of REPS
# runs, the systems interleaved run by run so that a noisy machine penalises all of them alike.
# busbw = bytes / time * 2(n-1)/n (nccl-tests' factor); WORLDS (default "2 4") picks the world
# sizes. The last column is this machine's limit: n loopback streams at once carry n * busbw in
# an n-rank ring.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
agent=$build/agent/ddpjob-agent
train=$build/runtime/train/ddp-train
py=/usr/bin/python3
reps=${REPS:-3}
budget=$((1 << 30))
sizes=(4096 16384 65536 262144 1048576 4194304 16777216 67108864 268435456)
mpi_net=(--mca oob_tcp_if_include lo --mca btl_tcp_if_include lo)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

ninja -C "$build" bench/allreduce_mpi bench/loopback >/dev/null
mpirun_args=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)

# shellcheck source=lib.sh
. bench/lib.sh

seconds_of() { # FILE SIZE: the median seconds of that size's runs
    awk -v s="$2" '$1 == s {print $2}' "$1" | median
}

iterations() { local n=$((budget / $1)); echo $((n < 5 ? 5 : n > 200 ? 200 : n)); }

ours() { # N: `bytes seconds` per size
    local s it
    for s in "${sizes[@]}"; do
        it=$(iterations "$s")
        "$agent" --standalone --nproc-per-node "$1" "$train" bench --op all_reduce \
            --min-bytes "$s" --max-bytes "$s" --iters "$it" --warmup $((it / 4 > 2 ? it / 4 : 2)) 2>&1 |
            awk '/^\[rank 0\] +[0-9]/ {printf "%s %.9f\n", $3, $8 / 1e6}'
    done
}

gloo() {
    "$agent" --standalone --nproc-per-node "$1" "$py" bench/allreduce_gloo.py "$budget" "${sizes[@]}" 2>&1 |
        awk '/^\[rank 0\] [0-9]/ {print $3, $4}'
}

mpi() { # N BTL
    mpirun "${mpirun_args[@]}" -np "$1" "${mpi_net[@]}" ${2:+--mca btl "$2"} \
        "$build/bench/allreduce_mpi" "$budget" "${sizes[@]}"
}

systems=(ours gloo mpi_tcp mpi_sm)
for n in ${WORLDS:-2 4}; do
    for ((rep = 0; rep < reps; rep++)); do
        ours "$n" >>"$out/ours.$n"
        gloo "$n" >>"$out/gloo.$n"
        mpi "$n" self,tcp >>"$out/mpi_tcp.$n"
        mpi "$n" "" >>"$out/mpi_sm.$n"
    done
    limit=$("$build/bench/loopback" "$n" | awk -v n="$n" '{print $2 / n / 1e9}')
    echo "== all_reduce float32 sum, $n ranks: busbw GB/s (median of $reps), ratios ours/theirs; loopback limit $limit GB/s =="
    printf '%10s %9s %9s %9s %9s %9s %9s %9s %8s\n' bytes ours gloo mpi-tcp mpi-sm \
        x-gloo x-mpitcp x-mpism x-limit
    for s in "${sizes[@]}"; do
        row=()
        for sys in "${systems[@]}"; do
            row+=("$(seconds_of "$out/$sys.$n" "$s")")
        done
        awk -v s="$s" -v n="$n" -v lim="$limit" -v o="${row[0]}" -v g="${row[1]}" -v t="${row[2]}" -v m="${row[3]}" 'BEGIN {
            f = 2 * (n - 1) / n
            bo = s / o * f / 1e9; bg = s / g * f / 1e9; bt = s / t * f / 1e9; bm = s / m * f / 1e9
            printf "%10d %9.3f %9.3f %9.3f %9.3f %8.2fx %8.2fx %8.2fx %7.0f%%\n", s, bo, bg, bt, bm,
                bo / bg, bo / bt, bo / bm, 100 * bo / lim }'
    done
    awk -v o="$(seconds_of "$out/ours.$n" 4096)" -v g="$(seconds_of "$out/gloo.$n" 4096)" 'BEGIN {
        printf "4 KiB latency: ours %.1f us, gloo %.1f us: %.1fx better\n\n", o * 1e6, g * 1e6, g / o }'
done
echo "Targets: busbw >= 1.5x gloo from 1 MiB to 256 MiB; >= Open MPI over tcp from 16 MiB up;"
echo "4 KiB latency >= 10x better than gloo's."
