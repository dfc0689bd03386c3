#!/bin/bash
# ddp-train's tcp-backend all_reduce on one host (shared memory: "ours" on pg_alloc'd buffers,
# zero-copy; "ours-cp" on malloc'd ones, copied through the segment's stages; and over TCP alone,
# with DDP_PG_SHM=0) against PyTorch gloo and Open MPI's MPI_Allreduce (over its tcp transport and over
# its default shared-memory one), side by side:
#   bench/allreduce.sh [BUILD_DIR]   (needs /usr/bin/python3 with torch, mpicc, mpirun)
# Every system runs the same sizes, float32 sum, with the same iteration rule (1 GiB of traffic
# per size, 5 to 200 iterations, a quarter of that as warm-up); each cell is the median of REPS
# runs, the systems interleaved run by run so that a noisy machine penalises all of them alike.
# busbw = bytes / time * 2(n-1)/n (nccl-tests' factor); WORLDS (default "2 4") picks the world
# sizes. The memcpy column is this machine's limit measured in the same run: one thread's memcpy
# of the same size, as GB/s; x-memcpy is ours against it.
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

ninja -C "$build" bench/allreduce_mpi bench/memcpy_bw >/dev/null
mpirun_args=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)

# shellcheck source=lib.sh
. bench/lib.sh

ours() { # N [DDP_PG_SHM [BUFFERS]]: `bytes seconds` per size
    local s it
    for s in "${sizes[@]}"; do
        it=$(iterations "$s")
        DDP_PG_SHM=${2:-1} "$agent" --standalone --nproc-per-node "$1" "$train" bench --op all_reduce \
            --buffers "${3:-pg}" --min-bytes "$s" --max-bytes "$s" --iters "$it" \
            --warmup $((it / 4 > 2 ? it / 4 : 2)) 2>&1 |
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

systems=(ours ours_copy ours_tcp gloo mpi_tcp mpi_sm memcpy)
for n in ${WORLDS:-2 4}; do
    for ((rep = 0; rep < reps; rep++)); do
        ours "$n" >>"$out/ours.$n"
        ours "$n" 1 host >>"$out/ours_copy.$n"
        ours "$n" 0 host >>"$out/ours_tcp.$n"
        gloo "$n" >>"$out/gloo.$n"
        mpi "$n" self,tcp >>"$out/mpi_tcp.$n"
        mpi "$n" "" >>"$out/mpi_sm.$n"
        "$build/bench/memcpy_bw" 1 "$budget" "${sizes[@]}" >>"$out/memcpy.$n"
    done
    echo "== all_reduce float32 sum, $n ranks on one host: busbw GB/s (median of $reps), ratios ours/theirs =="
    printf '%10s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n' bytes ours ours-cp ours-tcp \
        gloo mpi-tcp mpi-sm memcpy x-ours-cp x-gloo x-mpitcp x-mpism x-memcpy
    for s in "${sizes[@]}"; do
        row=()
        for sys in "${systems[@]}"; do
            row+=("$(seconds_of "$out/$sys.$n" "$s")")
        done
        awk -v s="$s" -v n="$n" -v times="${row[*]}" 'BEGIN {
            split(times, t, " ")
            f = 2 * (n - 1) / n
            for (i = 1; i <= 6; i++) b[i] = s / t[i] * f / 1e9
            mem = s / t[7] / 1e9
            printf "%10d %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.2f %8.2fx %7.2fx %7.2fx %7.2fx %7.0f%%\n", s,
                b[1], b[2], b[3], b[4], b[5], b[6], mem, b[1] / b[2], b[1] / b[4], b[1] / b[5], b[1] / b[6], 100 * b[1] / mem }'
    done
    awk -v o="$(seconds_of "$out/ours.$n" 4096)" -v g="$(seconds_of "$out/gloo.$n" 4096)" -v m="$(seconds_of "$out/mpi_sm.$n" 4096)" 'BEGIN {
        printf "4 KiB latency: ours %.1f us, Open MPI shared memory %.1f us, gloo %.1f us\n\n", o * 1e6, m * 1e6, g * 1e6 }'
done
echo "Targets: busbw >= Open MPI's shared memory (mpi-sm) from 4 KiB to 256 MiB; >= 3x gloo from"
echo "1 MiB; >= 70% of one thread's memcpy at 16-64 MiB."
