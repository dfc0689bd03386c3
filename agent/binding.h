/* binding: which GPU and which CPUs each worker of this node gets.
 *
 * --gpu-binding per-rank gives local rank i the i-th GPU of the node's visible set (an inherited
 * CUDA_VISIBLE_DEVICES, else the devices /dev shows), as CUDA_VISIBLE_DEVICES. --cpu-binding
 * pins each worker to its share of the CPUs the agent may use: `cores` splits them into equal
 * contiguous shares in local-rank order; `numa` gives each worker the CPUs of one NUMA node
 * (workers spread over the nodes in order). Without them workers see what the agent sees. */
#ifndef AGENT_BINDING_H
#define AGENT_BINDING_H

#include <sched.h>

#include "ddp_error.h"

typedef enum { GPU_BINDING_NONE = 0, GPU_BINDING_PER_RANK } gpu_binding_t;
typedef enum { CPU_BINDING_NONE = 0, CPU_BINDING_CORES, CPU_BINDING_NUMA } cpu_binding_t;

/* Room for one GPU id: an index, or a UUID such as GPU-8f3c...-... or MIG-... */
#define BINDING_GPU_ID_MAX 96

/* How many GPUs this node shows its workers. */
int binding_gpu_count(void);

/* Local rank `local_rank`'s GPU id into out; -1 with err when there are fewer GPUs than
 * workers. */
int binding_gpu(int local_rank, int nproc, char *out, size_t size, ddp_error_t *err);

/* Local rank `local_rank`'s CPUs into set; -1 with err when they cannot be read. */
int binding_cpus(cpu_binding_t mode, int local_rank, int nproc, cpu_set_t *set, ddp_error_t *err);

#endif
