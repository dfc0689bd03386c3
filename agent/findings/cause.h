/* cause: why a worker failed, beyond what its wait status says.
 *
 * Three findings: the kernel's out-of-memory killer ended it (oom.h); its GPU ran out of memory
 * (its last lines of stderr say so, in the words of CUDA, PyTorch, NCCL, cuBLAS, cuDNN, JAX or
 * ddp-train: a root cause, distinct from the kernel's kill); or it failed because
 * another process of the job went first: its last lines of stderr say a peer closed or reset
 * its connection, or a collective timed out waiting for one (gloo, NCCL, PyTorch's store,
 * libddp). Such a failure is a consequence: the job's summary leads with the failure that
 * started it, wherever and whenever that one was seen. */
#ifndef AGENT_CAUSE_H
#define AGENT_CAUSE_H

#include <stddef.h>

typedef enum {
    CAUSE_OWN,
    CAUSE_OUT_OF_MEMORY,
    CAUSE_CONSEQUENCE,
    CAUSE_GPU_OUT_OF_MEMORY,
    CAUSE_CHECKPOINT_SIGNAL /* killed by the checkpoint signal its agent sent: no handler */
} failure_cause_t;

/* "own", "out_of_memory", "consequence", "gpu_out_of_memory", "checkpoint_signal": the names in
 * the error file and the store. */
const char *cause_name(failure_cause_t c);
/* The cause named so; -1 when none is. */
int cause_from_name(const char *name);
/* Whether a line a worker wrote says a peer of it went away; the phrase it matched into
 * evidence. */
int cause_peer_lost(const char *line, char *evidence, size_t size);

/* Whether a line a worker wrote says its GPU ran out of memory; the line's words from the
 * phrase on into evidence. */
int cause_gpu_out_of_memory(const char *line, char *evidence, size_t size);

#endif
