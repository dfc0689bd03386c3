#include "cli/spec/site_rules.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/spec/units.h"

/* The queue the job goes to: the spec's, else the site's default (NULL when neither is known). */
static const site_queue_t *job_queue(const site_t *site, const job_spec_t *spec)
{
    const char *name = spec->queue ? spec->queue : site->default_queue;
    return name ? site_find_queue(site, name) : NULL;
}

/* Reports at `field`'s place in the file, or at the queue's (or line 1) when the spec leaves the
 * field out. */
static void report(diag_t *d, const job_spec_t *spec, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void report(diag_t *d, const job_spec_t *spec, const char *field, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    spec_loc_t at = spec_field_loc(spec, field);
    if (!at.line)
        at = spec_field_loc(spec, "queue");
    if (!at.line)
        at = (spec_loc_t){1, 1};
    diag_add(d, at.line, at.col, field, "%s", msg);
}

static void queue_names(const site_t *site, char *out, size_t size, int with_gpus)
{
    out[0] = '\0';
    for (size_t i = 0; i < site->queue_count; i++)
        if (with_gpus < 0 || (site->queues[i].gpus_per_node > 0) == with_gpus)
            snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? ", " : "",
                     site->queues[i].name);
}

/* The walltime limit for a job of `cores` CPUs; 0 when the queue sets none for it. */
static uint64_t walltime_limit(const site_queue_t *q, long cores, long *band)
{
    for (size_t i = 0; i < q->walltime_count; i++)
        if (cores <= q->walltimes[i].max_cores) {
            *band = q->walltimes[i].max_cores;
            return q->walltimes[i].walltime_s;
        }
    return 0;
}

static void check_gpus_and_cpus(const site_t *site, const site_queue_t *q, job_spec_t *spec,
                                diag_t *problems, diag_t *remarks)
{
    char names[256];
    if (spec->gpus_per_node > 0 && q->gpus_per_node == 0) {
        queue_names(site, names, sizeof names, 1);
        report(problems, spec, "gpus_per_node", "%ld, but %s has no GPUs: use a GPU queue (%s)",
               spec->gpus_per_node, q->name, names[0] ? names : "the site has none");
        return;
    }
    if (q->gpus_per_node > 0 && spec->gpus_per_node == 0) {
        report(problems, spec, "gpus_per_node", "missing: %s is a GPU queue (%ld per node)",
               q->name, q->gpus_per_node);
        return;
    }
    if (spec->gpus_per_node > q->gpus_per_node && q->gpus_per_node > 0)
        report(problems, spec, "gpus_per_node", "%ld is more than %s's %ld GPUs per node: use %ld",
               spec->gpus_per_node, q->name, q->gpus_per_node, q->gpus_per_node);
    if (spec_alloc_nodes(spec) > 1 && q->whole_nodes && q->gpus_per_node > 0 &&
        spec->gpus_per_node < q->gpus_per_node)
        report(
            problems, spec, "gpus_per_node",
            "%ld on %ld nodes breaks %s's rule that a job of several nodes takes whole nodes: use "
            "%ld",
            spec->gpus_per_node, spec_alloc_nodes(spec), q->name, q->gpus_per_node);

    long want = 0;
    char why[64] = "";
    if (q->cpus_per_gpu && spec->gpus_per_node > 0) {
        want = q->cpus_per_gpu * spec->gpus_per_node;
        snprintf(why, sizeof why, "%ld CPUs per GPU", q->cpus_per_gpu);
    } else if (spec_alloc_nodes(spec) > 1 && q->whole_nodes) {
        want = q->cores_per_node;
        snprintf(why, sizeof why, "whole nodes for a job of several nodes");
    }
    if (spec->cpus_per_node == 0 && want) {
        spec->cpus_per_node = want;
        report(remarks, spec, "cpus_per_node", "note: filled in as %ld (%s's %s)", want, q->name,
               why);
    } else if (want && spec->cpus_per_node != want) {
        if (q->cpus_per_gpu && spec->gpus_per_node > 0)
            report(problems, spec, "cpus_per_node", "%ld breaks %s's %ld CPUs per GPU: use %ld",
                   spec->cpus_per_node, q->name, q->cpus_per_gpu, want);
        else
            report(problems, spec, "cpus_per_node",
                   "%ld on %ld nodes breaks %s's rule that a job of several nodes takes whole "
                   "nodes: use %ld",
                   spec->cpus_per_node, spec_alloc_nodes(spec), q->name, want);
    } else if (spec->cpus_per_node > q->cores_per_node) {
        report(problems, spec, "cpus_per_node", "%ld is more than %s's %ld cores per node: use %ld",
               spec->cpus_per_node, q->name, q->cores_per_node, q->cores_per_node);
    }
}

static void check_sizes_and_time(const site_queue_t *q, const job_spec_t *spec, diag_t *problems)
{
    char got[32], max[32];
    if (q->mem_per_node && spec->mem_bytes > q->mem_per_node) {
        units_format_size(spec->mem_bytes, 1, got, sizeof got);
        units_format_size(q->mem_per_node, 1, max, sizeof max);
        report(problems, spec, "mem", "%s per node is more than %s's %s: use at most %s", got,
               q->name, max, max);
    }
    if (q->jobfs_per_node && spec->pbs.jobfs_bytes > q->jobfs_per_node) {
        units_format_size(spec->pbs.jobfs_bytes, 1, got, sizeof got);
        units_format_size(q->jobfs_per_node, 1, max, sizeof max);
        report(problems, spec, "pbs.jobfs", "%s per node is more than %s's %s: use at most %s", got,
               q->name, max, max);
    }
    long cores = (spec->cpus_per_node ? spec->cpus_per_node : 1) * spec_alloc_nodes(spec), band = 0;
    if (q->walltime_count && cores > q->walltimes[q->walltime_count - 1].max_cores) {
        report(problems, spec, "nodes", "%ld CPUs in all is more than %s takes (%ld)", cores,
               q->name, q->walltimes[q->walltime_count - 1].max_cores);
        return;
    }
    uint64_t limit = walltime_limit(q, cores, &band);
    if (limit && spec->walltime_s > limit) {
        units_format_hms(spec->walltime_s, got, sizeof got);
        units_format_hms(limit, max, sizeof max);
        report(problems, spec, "walltime",
               "%s is over %s's limit for a job of %ld CPUs (up to %ld): use at most %s", got,
               q->name, cores, band, max);
    }
}

/* NCI's /scratch/P and /g/data/P are mounted in a job only with -l storage=scratch/P (gdata/P);
 * the job's own project's /scratch comes without asking. */
static void check_storage(const job_spec_t *spec, const char *field, const char *text,
                          diag_t *remarks)
{
    static const struct {
        const char *prefix, *flag;
    } mounts[] = {{"/scratch/", "scratch"}, {"/g/data/", "gdata"}};
    for (size_t m = 0; m < 2 && text; m++) {
        for (const char *p = strstr(text, mounts[m].prefix); p;
             p = strstr(p + 1, mounts[m].prefix)) {
            const char *proj = p + strlen(mounts[m].prefix);
            size_t len = 0;
            while (isalnum((unsigned char)proj[len]) || proj[len] == '_')
                len++;
            if (!len)
                continue;
            char flag[96];
            snprintf(flag, sizeof flag, "%s/%.*s", mounts[m].flag, (int)len, proj);
            bool own = m == 0 && spec->project && strlen(spec->project) == len &&
                       !strncmp(spec->project, proj, len);
            bool listed = false;
            for (size_t i = 0; i < spec->pbs.storage.count; i++)
                listed |= !strcmp(spec->pbs.storage.items[i], flag);
            if (!own && !listed) {
                report(remarks, spec, field,
                       "warning: uses %s%.*s, which the job cannot see without pbs.storage: [%s]",
                       mounts[m].prefix, (int)len, proj, flag);
                return;
            }
        }
    }
}

/* The memory a node of this job has to itself: a whole node's when it takes whole nodes, else its
 * share of the node by GPUs or CPUs; 0 when the queue says nothing of it. */
static uint64_t node_share_of_mem(const site_queue_t *q, const job_spec_t *spec)
{
    if (!q->mem_per_node || !q->cores_per_node)
        return 0;
    if (q->gpus_per_node > 0 && spec->gpus_per_node > 0 && spec->gpus_per_node < q->gpus_per_node)
        return q->mem_per_node / (uint64_t)q->gpus_per_node * (uint64_t)spec->gpus_per_node;
    long cpus = spec->cpus_per_node ? spec->cpus_per_node : 1;
    if ((spec_alloc_nodes(spec) > 1 && q->whole_nodes) || cpus >= q->cores_per_node)
        return q->mem_per_node;
    return q->mem_per_node / (uint64_t)q->cores_per_node * (uint64_t)cpus;
}

/* A spec that leaves mem: out gets the site's default, which on Gadi is far below a training
 * job's need and ends it in an OOM kill that names no cause the user set. */
static void check_default_mem(const site_t *site, const site_queue_t *q, const job_spec_t *spec,
                              diag_t *remarks)
{
    if (!site->default_mem || spec->mem_bytes)
        return;
    char given[32], share[32];
    units_format_size(site->default_mem, 1, given, sizeof given);
    uint64_t per_node = q ? node_share_of_mem(q, spec) : 0;
    if (!per_node) {
        report(remarks, spec, "mem",
               "warning: not given, so site %s gives the job its default of %s in all: say what "
               "each node needs",
               site->name, given);
        return;
    }
    if (per_node >= (1ULL << 30))
        per_node -= per_node % (1ULL << 30); /* a figure to write, not to the byte */
    units_format_size(per_node, 1, share, sizeof share);
    report(remarks, spec, "mem",
           "warning: not given, so site %s gives the job its default of %s in all: write mem: %s "
           "(per node; what this job's share of a %s node holds)",
           site->name, given, share, q->name);
}

/* A job without project: is charged to the user's default project; a spec whose storage names
 * one project most likely meant that one. */
static void check_project(const job_spec_t *spec, diag_t *remarks)
{
    if (spec->project)
        return;
    for (size_t i = 0; i < spec->pbs.storage.count; i++) {
        const char *slash = strchr(spec->pbs.storage.items[i], '/');
        if (slash && slash[1]) {
            report(remarks, spec, "pbs.storage",
                   "note: no project:, so the job is charged to your default project; its "
                   "storage names %s: write project: %s if that is the one to charge",
                   slash + 1, slash + 1);
            return;
        }
    }
}

/* "10:00" is ten minutes to Slurm and PBS alike; a job of several nodes, GPUs or a checkpoint
 * contract was most likely meant to run ten hours. */
static void check_walltime_form(const job_spec_t *spec, diag_t *remarks)
{
    bool sized_for_hours = spec_alloc_nodes(spec) > 1 || spec->gpus_per_node > 0 ||
                           spec->checkpoint.signal || spec->requeue > 0;
    if (!spec->walltime_mm_ss || spec->walltime_s >= 3600 || !sized_for_hours)
        return;
    unsigned long minutes = (unsigned long)(spec->walltime_s / 60),
                  seconds = (unsigned long)(spec->walltime_s % 60);
    if (seconds)
        report(remarks, spec, "walltime",
               "note: \"%lu:%02lu\" is %lu minutes %lu seconds; for %lu hours %lu minutes write "
               "\"%lu:%02lu:00\"",
               minutes, seconds, minutes, seconds, minutes, seconds, minutes, seconds);
    else
        report(remarks, spec, "walltime",
               "note: \"%lu:00\" is %lu minutes; for %lu hours write \"%lu:00:00\"", minutes,
               minutes, minutes, minutes);
}

void site_rules_apply(const site_t *site, job_spec_t *spec, diag_t *problems, diag_t *remarks)
{
    if (spec->pbs.resources == PBS_RESOURCES_UNSET)
        spec->pbs.resources = site->pbs_resources;
    if (!spec->sge.pe && site->sge_pe)
        spec->sge.pe = strdup(site->sge_pe);
    if (!spec->sge.memory && site->sge_memory)
        spec->sge.memory = strdup(site->sge_memory);
    const site_queue_t *q = job_queue(site, spec);
    if (!q && spec->queue) {
        const char *names[64];
        size_t n = 0;
        for (; n < site->queue_count && n < 63; n++)
            names[n] = site->queues[n].name;
        names[n] = NULL;
        const char *hint = diag_suggest(spec->queue, names);
        char all[256];
        queue_names(site, all, sizeof all, -1);
        report(problems, spec, "queue", "\"%s\" is not a queue of site %s%s%s%s; its queues: %s",
               spec->queue, site->name, hint ? " (did you mean " : "", hint ? hint : "",
               hint ? "?)" : "", all);
    }
    if (q) {
        check_gpus_and_cpus(site, q, spec, problems, remarks);
        check_sizes_and_time(q, spec, problems);
    }
    check_default_mem(site, q, spec, remarks);
    check_walltime_form(spec, remarks);
    if (site->nci_storage) {
        check_project(spec, remarks);
        check_storage(spec, "workdir", spec->workdir, remarks);
        check_storage(spec, "setup", spec->setup, remarks);
        for (size_t i = 0; i < spec->command.count; i++)
            check_storage(spec, "command", spec->command.items[i], remarks);
    }
    for (size_t i = 0; i < spec->env_count && site->infiniband; i++)
        if (!strcmp(spec->env[i].key, "NCCL_IB_DISABLE") && strcmp(spec->env[i].value, "0")) {
            report(remarks, spec, "env.NCCL_IB_DISABLE",
                   "warning: turns InfiniBand off on a site that has it, so every inter-node "
                   "all_reduce goes over TCP sockets: leave it unset");
        }
}

int site_rules_cost(const site_t *site, const job_spec_t *spec, char *line, size_t size)
{
    const site_queue_t *q = job_queue(site, spec);
    if (!q) {
        snprintf(line, size, "cost: unknown (no queue of site %s)", site->name);
        return -1;
    }
    if (!spec->walltime_s) {
        snprintf(line, size, "cost: unknown without a walltime");
        return -1;
    }
    double cpus =
        (double)(spec->cpus_per_node ? spec->cpus_per_node : 1) * (double)spec_alloc_nodes(spec);
    double mem_per_cpu = q->mem_per_cpu ? (double)q->mem_per_cpu
                                        : (double)q->mem_per_node / (double)q->cores_per_node;
    double mem_cpus = mem_per_cpu > 0
                          ? (double)spec->mem_bytes * (double)spec_alloc_nodes(spec) / mem_per_cpu
                          : 0;
    double charged = mem_cpus > cpus ? mem_cpus : cpus;
    double hours = (double)spec->walltime_s / 3600.0;
    const char *unit = site->charge_unit ? site->charge_unit : "units";
    char basis[128];
    if (mem_cpus > cpus)
        snprintf(basis, sizeof basis, "%.2f CPUs' worth of memory (%.2f GiB per CPU)", mem_cpus,
                 mem_per_cpu / (double)(1ULL << 30));
    else
        snprintf(basis, sizeof basis, "%.0f CPUs", cpus);
    snprintf(line, size, "cost: at most %.2f %s (%s: %g %s per CPU-hour x %s x %.2f h)",
             q->charge_rate * charged * hours, unit, q->name, q->charge_rate, unit, basis, hours);
    return 0;
}
