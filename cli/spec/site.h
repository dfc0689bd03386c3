/* site: a site profile, the data file that describes one cluster's queues (nodes, rules, charge
 * rates) so that a spec can be checked and costed before it waits in a queue.
 *
 * Profiles are YAML files (share/sites/gadi.yaml documents the fields). `site: NAME` in a spec, or
 * --site NAME, finds NAME.yaml in $DDPJOB_SITE_DIR, then ~/.config/ddpjob/sites (the user's own),
^ * then the installed share/ddpjob/sites; a value with a '/' is a file path. What a profile says
 * about a given spec is site_rules' job. */
#ifndef DDPJOB_SITE_H
#define DDPJOB_SITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "cli/spec/spec.h"

typedef struct {
    long max_cores; /* the limit holds for jobs of up to this many CPUs in all */
    uint64_t walltime_s;
} site_walltime_t;

typedef struct {
    char *name;
    long cores_per_node;
    long gpus_per_node;      /* 0: a CPU queue */
    long cpus_per_gpu;       /* 0: no rule */
    uint64_t mem_per_node;   /* the most a job may ask of one node */
    uint64_t mem_per_cpu;    /* the memory charged as one CPU; 0: mem_per_node / cores_per_node */
    uint64_t jobfs_per_node; /* 0: not limited */
    bool whole_nodes;        /* a job of more than one node must take whole nodes */
    double charge_rate;      /* per CPU-hour; 0: not charged */
    site_walltime_t *walltimes; /* by ascending max_cores */
    size_t walltime_count;
} site_queue_t;

typedef struct {
    char *name;
    char *path;
    pbs_resources_t pbs_resources;
    char *sge_pe;     /* Grid Engine: the parallel environment that gives whole nodes */
    char *sge_memory; /* ... and the per-slot resource memory is asked as (h_vmem, mem_free) */
    bool infiniband;
    bool nci_storage;
    char *charge_unit;
    char *default_queue;
    uint64_t default_mem;    /* what a job that asks no memory is given, in all; 0: not known */
    char *container_runtime; /* what a spec's container: runs with when it names no runtime */
    long array_max;          /* a sweep's trials in one array job at most: -1 no limit said,
                                0 arrays refused (each trial its own job, in lanes) */
    long pack_nodes;         /* a sweep it takes no array of is packed into allocations of this
                                many nodes (at least a trial's), not lanes; 0: lanes */
    site_queue_t *queues;
    size_t queue_count;
    /* How a spec or a cluster is known to be this site's without `site:` (site_detect.h): its
     * PBS server's names, queues and spec pbs: fields only it has, path prefixes only it has. */
    strv_t recognise_servers, recognise_queues, recognise_pbs_fields, recognise_paths;
} site_t;

/* Finds and reads the profile `name_or_path`; NULL with err saying which file and line is
 * wrong, or where it was looked for. */
site_t *site_load(const char *name_or_path, ddp_error_t *err);
void site_destroy(site_t *site);

const site_queue_t *site_find_queue(const site_t *site, const char *name);
/* The folders profiles are looked for in, in order (NULL entries: none there); free each. */
size_t site_dirs(char *dirs[4]);

#endif
