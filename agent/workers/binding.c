#include "agent/workers/binding.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/ddp_parse.h"

#define GPUS_MAX 256

/* The visible GPU ids of this node: a count, with each id into ids[i] (up to max). */
static int visible_gpus(char ids[][BINDING_GPU_ID_MAX], int max)
{
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    int n = 0;
    if (visible) {
        for (const char *p = visible; *p && n < max;) {
            size_t len = strcspn(p, ",");
            /* An entry of -1 or a blank hides every device after it, as CUDA does. */
            if (len == 0 || !strncmp(p, "-1", 2))
                break;
            snprintf(ids[n++], sizeof ids[0], "%.*s", (int)len, p);
            p += len + (p[len] == ',');
        }
        return n;
    }
    DIR *d = opendir("/dev");
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, "nvidia", 6) && isdigit((unsigned char)e->d_name[6]) && n < max)
            n++;
    if (d)
        closedir(d);
    for (int i = 0; i < n; i++)
        snprintf(ids[i], sizeof ids[0], "%d", i);
    return n;
}

int binding_gpu_count(void)
{
    char ids[GPUS_MAX][BINDING_GPU_ID_MAX];
    return visible_gpus(ids, GPUS_MAX);
}

int binding_gpu(int local_rank, int nproc, char *out, size_t size, ddp_error_t *err)
{
    char ids[GPUS_MAX][BINDING_GPU_ID_MAX];
    int n = visible_gpus(ids, GPUS_MAX);
    if (n < nproc)
        return ddp_error_set(
            err,
            "--gpu-binding per-rank: %d worker(s) but %d visible GPU(s) "
            "(CUDA_VISIBLE_DEVICES=%s)",
            nproc, n, getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
    snprintf(out, size, "%s", ids[local_rank]);
    return 0;
}

/* The first line of a file, without its newline, into buf; 0 or -1. */
static int read_line(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int ok = fgets(buf, (int)size, f) != NULL;
    fclose(f);
    if (ok)
        buf[strcspn(buf, "\n")] = '\0';
    return ok ? 0 : -1;
}

/* Reads a cpulist such as "0-3,8" into set. */
static int read_cpulist(const char *path, cpu_set_t *set)
{
    char text[4096];
    if (read_line(path, text, sizeof text))
        return -1;
    CPU_ZERO(set);
    char *save = NULL;
    for (char *range = strtok_r(text, ",", &save); range; range = strtok_r(NULL, ",", &save)) {
        char *dash = strchr(range, '-');
        if (dash)
            *dash = '\0';
        long lo, hi;
        if (ddp_parse_long(range, 0, CPU_SETSIZE - 1, &lo) ||
            ddp_parse_long(dash ? dash + 1 : range, lo, CPU_SETSIZE - 1, &hi))
            return -1;
        for (long c = lo; c <= hi; c++)
            CPU_SET((int)c, set);
    }
    return 0;
}

/* An NVIDIA display or 3D controller (PCI class 0x03): a GPU, not its audio or USB function. */
static int is_nvidia_gpu(const char *root, const char *address)
{
    char path[4200], vendor[32], class[32];
    snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/vendor", root, address);
    if (read_line(path, vendor, sizeof vendor) || strcmp(vendor, "0x10de"))
        return 0;
    snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/class", root, address);
    return !read_line(path, class, sizeof class) && !strncmp(class, "0x03", 4);
}

static int by_address(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* The node's NVIDIA GPUs' PCI addresses, in address order: their count. */
static int nvidia_gpus(const char *root, char addresses[][BINDING_PCI_MAX], int max)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/sys/bus/pci/devices", root);
    DIR *d = opendir(path);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d)) && n < max;)
        if (e->d_name[0] != '.' && strlen(e->d_name) < BINDING_PCI_MAX &&
            is_nvidia_gpu(root, e->d_name))
            snprintf(addresses[n++], BINDING_PCI_MAX, "%s", e->d_name);
    if (d)
        closedir(d);
    qsort(addresses, (size_t)n, sizeof addresses[0], by_address);
    return n;
}

/* The driver's "GPU UUID:" of the GPU at address matches uuid (CUDA takes a unique prefix). */
static int has_uuid(const char *root, const char *address, const char *uuid)
{
    char path[8400], line[256];
    snprintf(path, sizeof path, "%s/proc/driver/nvidia/gpus/%s/information", root, address);
    FILE *f = fopen(path, "r");
    int found = 0;
    while (f && !found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "GPU UUID:", 9))
            continue;
        const char *value = line + 9 + strspn(line + 9, " \t");
        found = !strncmp(value, uuid, strlen(uuid));
    }
    if (f)
        fclose(f);
    return found;
}

int binding_gpu_pci_at(const char *root, const char *id, char *pci, size_t size)
{
    char addresses[GPUS_MAX][BINDING_PCI_MAX];
    int n = nvidia_gpus(root, addresses, GPUS_MAX);
    long index = -1;
    if (!strncmp(id, "GPU-", 4)) {
        for (int i = 0; i < n && index < 0; i++)
            if (has_uuid(root, addresses[i], id))
                index = i;
    } else if (ddp_parse_long(id, 0, GPUS_MAX - 1, &index)) {
        index = -1; /* a MIG instance, or no id CUDA would take */
    }
    if (index < 0 || index >= n)
        return -1;
    snprintf(pci, size, "%s", addresses[index]);
    return 0;
}

int binding_pci_cpus_at(const char *root, const char *pci, cpu_set_t *set)
{
    char path[4300], text[32];
    long node;
    snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/numa_node", root, pci);
    if (!read_line(path, text, sizeof text) && !ddp_parse_long(text, 0, 65535, &node)) {
        snprintf(path, sizeof path, "%s/sys/devices/system/node/node%ld/cpulist", root, node);
        if (!read_cpulist(path, set))
            return 0;
    }
    snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/local_cpulist", root, pci);
    return read_cpulist(path, set);
}

int binding_worker_gpu(int local_rank, char *id, size_t id_size, char *pci, size_t pci_size)
{
    char ids[GPUS_MAX][BINDING_GPU_ID_MAX];
    if (local_rank >= visible_gpus(ids, GPUS_MAX))
        return 0;
    snprintf(id, id_size, "%s", ids[local_rank]);
    if (binding_gpu_pci_at("", id, pci, pci_size))
        snprintf(pci, pci_size, "%s", "");
    return 1;
}

/* The CPUs of NUMA node local_rank * nodes / nproc (workers spread over the nodes in order);
 * -1 where the machine shows no NUMA topology. */
static int spread_over_nodes(int local_rank, int nproc, cpu_set_t *set)
{
    char path[128];
    int nodes = 0;
    for (;; nodes++) {
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", nodes);
        if (access(path, R_OK))
            break;
    }
    if (!nodes)
        return -1;
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist",
             local_rank * nodes / nproc);
    return read_cpulist(path, set);
}

int binding_cpus(cpu_binding_t mode, int local_rank, int nproc, const char *gpu_pci, cpu_set_t *set,
                 ddp_error_t *err)
{
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed))
        return ddp_error_set(err, "sched_getaffinity: %s", strerror(errno));
    int cpus[CPU_SETSIZE], count = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed))
            cpus[count++] = c;
    CPU_ZERO(set);
    if (mode == CPU_BINDING_CORES) {
        /* Equal contiguous shares; with fewer CPUs than workers, they take turns. */
        int lo = local_rank * count / nproc, hi = (local_rank + 1) * count / nproc;
        if (hi <= lo)
            hi = lo + 1;
        for (int i = lo; i < hi; i++)
            CPU_SET(cpus[i % count], set);
        return 0;
    }
    cpu_set_t near;
    int found = gpu_pci && *gpu_pci ? binding_pci_cpus_at("", gpu_pci, &near)
                                    : spread_over_nodes(local_rank, nproc, &near);
    if (found) {
        *set = allowed; /* no NUMA topology to be had: one node */
        return 0;
    }
    CPU_AND(set, &near, &allowed);
    if (CPU_COUNT(set) == 0)
        *set = allowed;
    return 0;
}
