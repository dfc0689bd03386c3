/* binding: which GPU and which CPUs each worker of this node gets.
 *
 * --gpu-binding per-rank gives local rank i the i-th GPU of the node's visible set (an inherited
 * CUDA_VISIBLE_DEVICES, else the devices /dev shows), as CUDA_VISIBLE_DEVICES. --cpu-binding
 * pins each worker to its share of the CPUs the agent may use: `cores` splits them into equal
 * contiguous shares in local-rank order; `numa` gives a worker that has a GPU the CPUs of its
 * GPU's NUMA node (the PCI device's numa_node in sysfs, or its local_cpulist where the firmware
 * gives none), and one without a GPU the CPUs of one node (workers spread over the nodes in order).
 * Without them workers see what the agent sees.
 *
 * A worker's GPU is the one it was given (per-rank), else the visible GPU its local rank indexes,
 * as PyTorch programs pick theirs (torch.cuda.set_device(LOCAL_RANK)). Its PCI device is found by
 * CUDA's id: a UUID through the driver's /proc/driver/nvidia/gpus/ADDRESS/information; an index as
 * the position among the node's NVIDIA GPUs in PCI address order, which is CUDA's order with
 * CUDA_DEVICE_ORDER=PCI_BUS_ID, and its default on a node of one GPU model. */
#ifndef AGENT_BINDING_H
#define AGENT_BINDING_H

#include <sched.h>

#include "runtime/base/ddp_error.h"

typedef enum { GPU_BINDING_NONE = 0, GPU_BINDING_PER_RANK } gpu_binding_t;
typedef enum { CPU_BINDING_NONE = 0, CPU_BINDING_CORES, CPU_BINDING_NUMA } cpu_binding_t;

/* Room for one GPU id: an index, or a UUID such as GPU-8f3c...-... or MIG-... */
#define BINDING_GPU_ID_MAX 96

/* How many GPUs this node shows its workers. */
int binding_gpu_count(void);

/* Local rank `local_rank`'s GPU id into out; -1 with err when there are fewer GPUs than
 * workers. */
int binding_gpu(int local_rank, int nproc, char *out, size_t size, ddp_error_t *err);

/* Room for a PCI address: 0000:19:00.0 */
#define BINDING_PCI_MAX 32

/* The GPU local rank `local_rank` works on (see above; per-rank gives it the same one, as its
 * only visible GPU) into id, and its PCI address into pci ("" where none is found); 0 when it
 * has no GPU to know of. */
int binding_worker_gpu(int local_rank, char *id, size_t id_size, char *pci, size_t pci_size);

/* Local rank `local_rank`'s CPUs into set; gpu_pci: its GPU's PCI address, or "" or NULL. -1
 * with err when they cannot be read. */
int binding_cpus(cpu_binding_t mode, int local_rank, int nproc, const char *gpu_pci, cpu_set_t *set,
                 ddp_error_t *err);

/* The parts, for the unit tests, under a root folder standing for / (the machine's: ""). The PCI
 * address of the GPU CUDA calls id; 0, or -1 when there is none such. */
int binding_gpu_pci_at(const char *root, const char *id, char *pci, size_t size);
/* The CPUs near the PCI device at pci: its NUMA node's, else its local_cpulist; 0 or -1. */
int binding_pci_cpus_at(const char *root, const char *pci, cpu_set_t *set);

#endif
