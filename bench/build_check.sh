#!/bin/bash
# The benchmarks' C programs start and answer (the bench_build check; their numbers are the
# bench scripts' business). BENCH_DIR: where meson built them.
set -u
n=0 failed=0
check() { # WHAT COMMAND...: ok when COMMAND exits 0 and prints something
    local out
    n=$((n + 1))
    if out=$("${@:2}" 2>&1) && [ -n "$out" ]; then
        echo "ok $n - $1"
    else
        echo "not ok $n - $1"
        sed 's/^/#   /' <<<"$out"
        failed=1
    fi
}
check "rdzv_scale: 8 agents join one store" "$BENCH_DIR/rdzv_scale" 8
check "loopback: one stream's bandwidth" "$BENCH_DIR/loopback" 1
check "peak_rss: of /bin/true" "$BENCH_DIR/peak_rss" /bin/true
check "memcpy_bw: two copiers at once" "$BENCH_DIR/memcpy_bw" 2 65536 4096
if [ -x "$BENCH_DIR/batchnorm" ]; then
    check "batchnorm: ours against oneDNN's at batch 2" "$BENCH_DIR/batchnorm" 2
else
    n=$((n + 1))
    echo "ok $n # SKIP no oneDNN to build batchnorm against"
fi
if [ -x "$BENCH_DIR/allreduce_mpi" ]; then
    as_root=()
    [ "$(id -u)" = 0 ] && as_root=(--allow-run-as-root)
    check "allreduce_mpi: 2 ranks under mpirun" mpirun "${as_root[@]}" --oversubscribe -np 2 \
        --mca btl self,vader "$BENCH_DIR/allreduce_mpi" 65536 4096
else
    n=$((n + 1))
    echo "ok $n # SKIP no MPI to build allreduce_mpi against"
fi
echo "1..$n"
exit "$failed"
