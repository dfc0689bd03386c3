#include "agent/findings/cause.h"

#include <stdio.h>
#include <string.h>

static const char *const names[] = {"own", "out_of_memory", "consequence", "gpu_out_of_memory",
                                    "checkpoint_signal"};

/* What the communication libraries say when the other end went away first. */
static const char *const peer_lost[] = {
    "Connection closed by peer",                          /* gloo's tcp pair */
    "Connection reset by peer",                           /* gloo, PyTorch's TCPStore, any socket */
    "Timed out waiting",                                  /* gloo: a peer never sent its part */
    "remote process exited or there was a network error", /* NCCL's ncclRemoteError */
    "Watchdog caught collective operation timeout",       /* PyTorch's NCCL watchdog */
    "NCCL communicator was aborted",
    "closed the connection (exited or died)", /* libddp */
    "lost the connection to rank",            /* libddp */
    "(a peer is gone or stuck)",              /* libddp over NCCL */
};

/* What the GPU libraries say when an allocation on the device fails. */
static const char *const gpu_out_of_memory[] = {
    "CUDA out of memory",                /* PyTorch's caching allocator (torch.OutOfMemoryError) */
    "CUDA error: out of memory",         /* PyTorch's check of any CUDA call */
    "cudaErrorMemoryAllocation",         /* the runtime's name, in any program's message */
    "Cuda failure 'out of memory'",      /* NCCL */
    "Cuda failure: out of memory",       /* NCCL, other releases */
    "CUBLAS_STATUS_ALLOC_FAILED",        /* cuBLAS */
    "CUDNN_STATUS_ALLOC_FAILED",         /* cuDNN */
    "RESOURCE_EXHAUSTED: Out of memory", /* JAX and XLA */
    "out of GPU memory",                 /* ddp-train */
};

const char *cause_name(failure_cause_t c)
{
    return names[c];
}

int cause_from_name(const char *name)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i]))
            return (int)i;
    return -1;
}

int cause_gpu_out_of_memory(const char *line, char *evidence, size_t size)
{
    for (size_t i = 0; i < sizeof gpu_out_of_memory / sizeof gpu_out_of_memory[0]; i++) {
        const char *at = strstr(line, gpu_out_of_memory[i]);
        if (at) {
            snprintf(evidence, size, "%s", at);
            return 1;
        }
    }
    return 0;
}

int cause_peer_lost(const char *line, char *evidence, size_t size)
{
    for (size_t i = 0; i < sizeof peer_lost / sizeof peer_lost[0]; i++)
        if (strstr(line, peer_lost[i])) {
            snprintf(evidence, size, "%s", peer_lost[i]);
            return 1;
        }
    return 0;
}
