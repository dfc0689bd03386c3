#include "binding.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_parse.h"

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

/* Reads a cpulist such as "0-3,8" into set. */
static int read_cpulist(const char *path, cpu_set_t *set)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char text[4096];
    int ok = fgets(text, sizeof text, f) != NULL;
    fclose(f);
    CPU_ZERO(set);
    text[strcspn(text, "\n")] = '\0';
    char *save = NULL;
    for (char *range = ok ? strtok_r(text, ",", &save) : NULL; range;
         range = strtok_r(NULL, ",", &save)) {
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
    return ok ? 0 : -1;
}

int binding_cpus(cpu_binding_t mode, int local_rank, int nproc, cpu_set_t *set, ddp_error_t *err)
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
    int nodes = 0;
    char path[128];
    cpu_set_t node_cpus;
    for (;; nodes++) {
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist", nodes);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        fclose(f);
    }
    snprintf(path, sizeof path, "/sys/devices/system/node/node%d/cpulist",
             nodes ? local_rank * nodes / nproc : 0);
    if (!nodes || read_cpulist(path, &node_cpus)) {
        *set = allowed; /* no NUMA topology to be had: one node */
        return 0;
    }
    CPU_AND(set, &node_cpus, &allowed);
    if (CPU_COUNT(set) == 0)
        *set = allowed;
    return 0;
}
