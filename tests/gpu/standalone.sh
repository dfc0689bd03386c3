#!/bin/bash
# The GPU checks on a machine that has the CUDA toolkit and nothing else (no meson build, no
# Debian packages): builds ddp-train, ddpjob-agent, gpu_check and device_check with nvcc as the
# only compiler driver, then runs tests/gpu/gpu.sh against them. (Here, without a GPU, the checks skip.)
#   tests/gpu/standalone.sh [OUT_DIR]   (OUT_DIR gets the binaries and gpu.log; default /tmp/ddpjob-gpu)
# NCCL comes from the toolkit, or else from the nvidia-nccl Python wheel where PyTorch installed it.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/tmp/ddpjob-gpu}
cuda=${CUDA_HOME:-/usr/local/cuda}
nvcc=$cuda/bin/nvcc
mkdir -p "$out"

nccl_dirs=("$cuda")
wheel=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null ||
    python3 -c 'import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])' 2>/dev/null || true)
[ -n "$wheel" ] && nccl_dirs+=("$wheel")
nccl=
for d in "${nccl_dirs[@]}"; do
    if [ -e "$d/include/nccl.h" ] && ls "$d"/lib*/libnccl.so* >/dev/null 2>&1; then nccl=$d; break; fi
done
[ -n "$nccl" ] || { echo "standalone: no NCCL (nccl.h and libnccl.so) in ${nccl_dirs[*]}" >&2; exit 1; }
nccl_lib=$(dirname "$(find "$nccl"/lib* -maxdepth 1 -name 'libnccl.so*' | head -n 1)")
# The wheel ships only libnccl.so.2; the linker wants the unversioned name.
[ -e "$nccl_lib/libnccl.so" ] ||
    ln -sf "$(find "$nccl_lib" -maxdepth 1 -name 'libnccl.so.*' | head -n 1)" "$out/libnccl.so"

# cuDNN (the toolkit's, or the nvidia-cudnn wheel's) gives the convolutions; without it they are
# the im2col + cuBLAS ones.
cudnn_flags=() cudnn_libs=()
cudnn_dirs=("$cuda")
wheel=$(python3 -c 'import nvidia.cudnn; print(list(nvidia.cudnn.__path__)[0])' 2>/dev/null || true)
[ -n "$wheel" ] && cudnn_dirs+=("$wheel")
for d in "${cudnn_dirs[@]}"; do
    lib=$(find "$d"/lib* -maxdepth 1 -name 'libcudnn.so*' 2>/dev/null | head -n 1)
    if [ -e "$d/include/cudnn.h" ] && [ -n "$lib" ]; then
        lib=$(dirname "$lib")
        [ -e "$lib/libcudnn.so" ] || ln -sf "$(find "$lib" -maxdepth 1 -name 'libcudnn.so.*' | head -n 1)" "$out/libcudnn.so"
        cudnn_flags=(-DDDP_CUDNN -I"$d/include")
        cudnn_libs=(-L"$lib" -lcudnn -Xlinker -rpath="$lib")
        echo "standalone: cuDNN from $d"
        break
    fi
done
[ ${#cudnn_flags[@]} -gt 0 ] || echo "standalone: no cuDNN: convolutions are im2col + cuBLAS"

flags=(-O2 -Xcompiler '-D_GNU_SOURCE,-Wall' -DDDPJOB_VERSION='"standalone"'
       -Iruntime -I"$cuda/include" -I"$nccl/include")
libs=(-L"$cuda/lib64" -L"$nccl_lib" -L"$out" -lnccl -lcudart -lpthread
      -Xlinker -rpath="$cuda/lib64" -Xlinker -rpath="$nccl_lib")
libddp=(runtime/ddp_error.c runtime/ddp_hmac.c runtime/ddp_file.c runtime/ddp_clock.c
        runtime/ddp_net.c runtime/ddp_parse.c runtime/hostlist.c runtime/store_proto.c
        runtime/store_server.c runtime/store_client.c runtime/rendezvous.c runtime/worker_env.c)
pg=(runtime/pg.c runtime/pg_tcp.c runtime/pg_reduce.c runtime/pg_nccl.c)
# No BLAS package there: the CPU layers get a plain GEMM (tests/gpu/blas-shim).
train=(runtime/train/{model,layers_cpu,device_cpu,data,sampler,reducer,checkpoint,train_options}.c
       runtime/train/device_cuda.cu tests/gpu/blas-shim/cblas.c)
commands=(runtime/train/{main,session,cmd_hello,cmd_collectives,cmd_bench,cmd_train,cmd_checkpoint}.c)

# Each library is compiled once, then linked into the programs that need it.
"$nvcc" "${flags[@]}" --lib "${libddp[@]}" -o "$out/libddp.a"
"$nvcc" "${flags[@]}" --lib "${pg[@]}" -o "$out/libddp_pg.a"
"$nvcc" "${flags[@]}" "${cudnn_flags[@]}" --lib "${train[@]}" -Iruntime/train -Itests/gpu/blas-shim \
    -gencode 'arch=compute_90,code=[sm_90,compute_90]' -o "$out/libddp_train.a"
train_libs=(-Iruntime/train -lddp_train -lddp_pg -lddp -lcublas "${cudnn_libs[@]}" -lm)
"$nvcc" "${flags[@]}" "${commands[@]}" "${train_libs[@]}" "${libs[@]}" -o "$out/ddp-train"
"$nvcc" "${flags[@]}" tests/train/device_check.c "${train_libs[@]}" "${libs[@]}" \
    -o "$out/device_check"
"$nvcc" "${flags[@]}" tests/gpu/gpu_check.c -lddp_pg -lddp "${libs[@]}" -o "$out/gpu_check"
"$nvcc" "${flags[@]}" agent/*.c -Iagent -L"$out" -lddp -lpthread -o "$out/ddpjob-agent"

set +e
GPU_CHECK=$out/gpu_check DEVICE_CHECK=$out/device_check TRAIN=$out/ddp-train AGENT=$out/ddpjob-agent SRCDIR=$PWD \
    DDPJOB="(the CLI is not built here)" bash tests/gpu/gpu.sh 2>&1 | tee "$out/gpu.log"
status=${PIPESTATUS[0]}
grep -q '^not ok' "$out/gpu.log" && status=1
exit "$status"
