/* cuda_runtime.h for the host: the part of the CUDA runtime and execution model that
 * runtime/train/model/device_cuda.cu uses, run on the CPU so its kernels, launch sizes and cuBLAS
 * calls can be checked against the CPU layers on a machine without a GPU (tests/train/
 * device_check.c). It is not a GPU: everything runs at once, in order, on the calling thread.
 *
 * A launch runs the blocks one after another. The threads of a block are fibers, so that
 * __syncthreads is a real barrier; when no thread of the first block reached one, the other
 * blocks' threads run as plain calls instead (fast), and a __syncthreads there aborts: a barrier
 * that only some blocks or threads reach is a bug on the GPU too. Device memory is host memory
 * ending at an inaccessible page, so a kernel that writes or reads past the end of a buffer faults.
 */
#ifndef DDP_CUDA_HOST_RUNTIME_H
#define DDP_CUDA_HOST_RUNTIME_H

#include <functional>
#include <map>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define __global__
#define __device__
#define __host__
#define __shared__ static

enum cudaError_t {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorNotSupported = 801,
};
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
typedef struct cuda_host_stream *cudaStream_t;
#define cudaStreamNonBlocking 0x01
/* Events mark nothing (everything has run by the time they are recorded); graphs are not
 * recorded here: capturing one fails, as on a GPU that cannot. */
typedef struct cuda_host_event *cudaEvent_t;
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
typedef struct cuda_host_graph *cudaGraph_t;
typedef struct cuda_host_graph_exec *cudaGraphExec_t;
enum cudaStreamCaptureMode { cudaStreamCaptureModeThreadLocal = 1 };

struct dim3 {
    unsigned x, y, z;
};

namespace cuda_host
{

inline dim3 block_index, thread_index, block_dim, grid_dim;
inline cudaError_t last_error = cudaSuccess;
inline std::map<void *, std::pair<void *, size_t>> mappings; /* buffer -> its mapping */

const unsigned MAX_THREADS = 1024;
const size_t STACK_BYTES = 64 * 1024;

struct fiber {
    ucontext_t context;
    char *stack;
    bool done;
};

struct block_run {
    ucontext_t scheduler;
    fiber *running;
    const std::function<void()> *body;
    bool synced; /* some thread reached __syncthreads */
    bool direct; /* threads run as plain calls: the kernel never synchronises */
    fiber fibers[MAX_THREADS];
};
inline block_run run;

inline void fiber_main()
{
    (*run.body)();
    run.running->done = true; /* returning resumes the scheduler through uc_link */
}

/* Runs every thread of the current block to its end, one barrier phase at a time. */
inline void run_block_as_fibers(unsigned threads)
{
    for (unsigned t = 0; t < threads; t++) {
        fiber &f = run.fibers[t];
        if (!f.stack && !(f.stack = (char *)malloc(STACK_BYTES)))
            abort();
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = f.stack;
        f.context.uc_stack.ss_size = STACK_BYTES;
        f.context.uc_link = &run.scheduler;
        makecontext(&f.context, fiber_main, 0);
        f.done = false;
    }
    for (unsigned left = threads; left;) {
        unsigned finished = 0;
        for (unsigned t = 0; t < threads; t++) {
            if (run.fibers[t].done)
                continue;
            thread_index = dim3{t, 0, 0};
            run.running = &run.fibers[t];
            swapcontext(&run.scheduler, &run.fibers[t].context);
            finished += run.fibers[t].done;
        }
        if (finished && finished != left) {
            fprintf(stderr,
                    "cuda-host: block %u: some threads ended while others wait at "
                    "__syncthreads\n",
                    block_index.x);
            abort();
        }
        left -= finished;
    }
}

inline void launch(unsigned blocks, unsigned threads, const std::function<void()> &body)
{
    if (blocks == 0 || threads == 0 || threads > MAX_THREADS || blocks > 0x7fffffffu) {
        last_error = cudaErrorInvalidConfiguration;
        return;
    }
    grid_dim = dim3{blocks, 1, 1};
    block_dim = dim3{threads, 1, 1};
    run.body = &body;
    run.direct = false;
    run.synced = false;
    for (unsigned b = 0; b < blocks; b++) {
        block_index = dim3{b, 0, 0};
        if (run.direct) {
            for (unsigned t = 0; t < threads; t++) {
                thread_index = dim3{t, 0, 0};
                body();
            }
        } else {
            run_block_as_fibers(threads);
            /* A kernel whose first block never reached a barrier has none. */
            run.direct = !run.synced;
        }
    }
}

inline void sync_threads()
{
    if (run.direct) {
        fprintf(stderr,
                "cuda-host: __syncthreads in thread %u of block %u, but no thread of "
                "block 0 reached one\n",
                thread_index.x, block_index.x);
        abort();
    }
    run.synced = true;
    swapcontext(&run.running->context, &run.scheduler);
}

} // namespace cuda_host

#define blockIdx cuda_host::block_index
#define threadIdx cuda_host::thread_index
#define blockDim cuda_host::block_dim
#define gridDim cuda_host::grid_dim
#define __syncthreads() cuda_host::sync_threads()
#define LAUNCH(kernel, blocks, ...)                                                                \
    cuda_host::launch((blocks), THREADS, [&] { kernel(__VA_ARGS__); })

inline cudaError_t cudaMalloc(void **p, size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), rounded = (bytes + 15) & ~(size_t)15;
    size_t length = (rounded + page - 1) / page * page + page;
    char *base =
        (char *)mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return cudaErrorMemoryAllocation;
    mprotect(base + length - page, page, PROT_NONE);
    *p = base + length - page - rounded;
    memset(*p, 0xff, rounded); /* like the GPU, new memory holds no zeros to rely on */
    cuda_host::mappings[*p] = {base, length};
    return cudaSuccess;
}

/* cuda_runtime.h's typed overload. */
template <class T> cudaError_t cudaMalloc(T **p, size_t bytes)
{
    return cudaMalloc((void **)p, bytes);
}

inline cudaError_t cudaFree(void *p)
{
    if (!p)
        return cudaSuccess;
    auto m = cuda_host::mappings.find(p);
    if (m == cuda_host::mappings.end())
        return cudaErrorInvalidValue;
    munmap(m->second.first, m->second.second);
    cuda_host::mappings.erase(m);
    return cudaSuccess;
}

inline cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t)
{
    memset(p, value, bytes);
    return cudaSuccess;
}

inline cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind,
                                   cudaStream_t)
{
    memcpy(dst, src, bytes);
    return cudaSuccess;
}

inline cudaError_t cudaStreamSynchronize(cudaStream_t)
{
    return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int device)
{
    return device == 0 ? cudaSuccess : cudaErrorInvalidValue;
}

inline cudaError_t cudaGetDeviceCount(int *count)
{
    *count = 1;
    return cudaSuccess;
}

/* The host stands for one GPU: no bus of its own, and its memory counted as none free. */
inline cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int device)
{
    snprintf(bus, (size_t)len, "0000:00:%02x.0", device);
    return cudaSuccess;
}

inline cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    *free_bytes = *total = 0;
    return cudaSuccess;
}

inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned)
{
    *stream = NULL;
    return cudaSuccess;
}

inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned)
{
    *event = NULL;
    return cudaSuccess;
}

inline cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t)
{
    return cudaSuccess;
}

inline cudaError_t cudaEventSynchronize(cudaEvent_t)
{
    return cudaSuccess;
}

inline cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned)
{
    return (*p = malloc(bytes)) ? cudaSuccess : cudaErrorMemoryAllocation;
}

inline cudaError_t cudaFreeHost(void *p)
{
    free(p);
    return cudaSuccess;
}

inline cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode)
{
    return cudaErrorNotSupported;
}

inline cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t *)
{
    return cudaErrorNotSupported;
}

inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t *, cudaGraph_t, unsigned long long)
{
    return cudaErrorNotSupported;
}

inline cudaError_t cudaGraphDestroy(cudaGraph_t)
{
    return cudaErrorNotSupported;
}

inline cudaError_t cudaGraphLaunch(cudaGraphExec_t, cudaStream_t)
{
    return cudaErrorNotSupported;
}

inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t)
{
    return cudaErrorNotSupported;
}

inline cudaError_t cudaGetLastError()
{
    cudaError_t e = cuda_host::last_error;
    cuda_host::last_error = cudaSuccess;
    return e;
}

inline const char *cudaGetErrorName(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return "cudaSuccess";
    case cudaErrorInvalidValue:
        return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
        return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
        return "cudaErrorInvalidConfiguration";
    case cudaErrorNotSupported:
        return "cudaErrorNotSupported";
    }
    return "unknown";
}

inline const char *cudaGetErrorString(cudaError_t e)
{
    return cudaGetErrorName(e);
}

#endif
