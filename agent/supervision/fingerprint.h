/* fingerprint: what a node is, as far as a distributed job cares, for the preflight.
 *
 * One fact per line, "NAME<TAB>VALUE": the host, kernel, glibc, the GPUs (count, model, memory,
 * as nvidia-smi on PATH tells), the NVIDIA driver and its CUDA version, NCCL's version (the
 * library the loader finds), InfiniBand devices, the network interfaces with their addresses,
 * the NCCL_* and CUDA_VISIBLE_DEVICES environment, the workers asked for, and, when the command
 * is a python, that python's version and its torch's (the image's, in a container), and the
 * container's runtime version and image. A fact that cannot be learnt reads "none"
 * (absent) or says why. Every probe has a deadline. */
#ifndef AGENT_FINGERPRINT_H
#define AGENT_FINGERPRINT_H

#include "agent/workers/container.h"

/* The facts, in this order; those marked in fingerprint_compared() must agree across nodes. */
#define FP_HOST "host"
#define FP_KERNEL "kernel"
#define FP_GLIBC "glibc"
#define FP_GPUS "gpus"
#define FP_GPU_COUNT "gpu count"
#define FP_DRIVER "nvidia driver"
#define FP_CUDA "cuda (driver)"
#define FP_NCCL "nccl"
#define FP_INFINIBAND "infiniband"
#define FP_INTERFACES "interfaces"
#define FP_WORKERS "workers"
#define FP_PYTHON "python"
#define FP_TORCH "torch"
#define FP_CONTAINER_RUNTIME "container runtime"
#define FP_CONTAINER_IMAGE "container image"
/* Environment facts are named "$NAME". */

/* A malloc'd fingerprint of this node (with c, a container's runtime and image: container.h);
 * NULL when out of memory. */
char *fingerprint_collect(char *const *command, int nproc, const container_t *c);

/* The same, collected by a child process of its own so that nothing waits for it (killed if the
 * agent dies). NULL when no child could be started. */
typedef struct fingerprint_probe fingerprint_probe_t;
fingerprint_probe_t *fingerprint_start(char *const *command, int nproc, const container_t *c);
/* The fingerprint once collected (malloc'd; the probe is then freed, its child reaped, and
 * *probe NULL), else NULL. Never blocks. */
char *fingerprint_take(fingerprint_probe_t **probe);
/* Kills and reaps a probe not yet taken; *probe becomes NULL. */
void fingerprint_cancel(fingerprint_probe_t **probe);

/* Whether fact `name` must be the same on every node (not the host, its addresses, its workers
 * and GPU count, which the advice weighs). */
int fingerprint_compared(const char *name);

/* The value of fact `name` in fingerprint `fp`, copied into buf; NULL when absent. */
const char *fingerprint_get(const char *fp, const char *name, char *buf, unsigned size);

#endif
