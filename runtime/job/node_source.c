#include "runtime/job/node_source.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_net.h"
#include "runtime/base/ddp_parse.h"

#define SLURM_JOB_ID "SLURM_JOB_ID"
#define PBS_JOB_ID "PBS_JOBID"
#define SGE_JOB_ID "JOB_ID"

/* The nodes of this Slurm step: a step on some of the job's nodes (a run in a held allocation,
 * srun --nodelist) numbers its nodes (SLURM_NODEID) among its own; a step on all of them has the
 * job's list. */
static const char *slurm_nodelist(void)
{
    const char *step = getenv("SLURM_STEP_NODELIST");
    return step && *step && getenv("SLURM_STEP_ID") ? step : getenv("SLURM_JOB_NODELIST");
}

static int from_slurm(bool rank_given, node_source_t *f, ddp_error_t *err)
{
    (void)rank_given;
    const char *nodelist = slurm_nodelist();
    if (!nodelist)
        return 0;
    const char *localid = getenv("SLURM_LOCALID");
    if (localid && strcmp(localid, "0") != 0 && getenv("SLURM_STEP_ID"))
        return ddp_error_set(err,
                             "Slurm started more than one agent on this node (task %s): run "
                             "one agent per node (srun --ntasks-per-node=1)",
                             localid);
    if (!(f->hosts = ddp_hostlist_expand(nodelist, err)))
        return ddp_error_prefix(err, "SLURM_STEP_NODELIST or SLURM_JOB_NODELIST");
    const char *nodeid = getenv("SLURM_NODEID");
    if (nodeid && ddp_parse_int(nodeid, 0, INT_MAX, &f->rank))
        f->rank = -1;
    f->job_id = getenv(SLURM_JOB_ID);
    return 1;
}

/* This host's place among the job's: its rank, or an error (unless the rank is given). */
static int rank_of_this_host(bool rank_given, const char *var, const char *path, node_source_t *f,
                             ddp_error_t *err)
{
    char host[256];
    ddp_net_hostname(host, sizeof host);
    long at = ddp_hostlist_find(f->hosts, host);
    if (at < 0 && !rank_given) {
        ddp_hostlist_destroy(f->hosts);
        f->hosts = NULL;
        return ddp_error_set(err,
                             "%s %s does not name this host (%s): cannot tell this node's rank; "
                             "pass --node-rank",
                             var, path, host);
    }
    f->rank = (int)at;
    return 1;
}

/* PBS_NODEFILE names a host once per slot, in the order of the job's chunks: this host's first
 * place is its rank. */
static int from_pbs(bool rank_given, node_source_t *f, ddp_error_t *err)
{
    const char *nodefile = getenv("PBS_NODEFILE");
    if (!nodefile)
        return 0;
    if (!(f->hosts = ddp_hostlist_from_nodefile(nodefile, err)))
        return ddp_error_prefix(err, "PBS_NODEFILE");
    f->job_id = getenv(PBS_JOB_ID);
    return rank_of_this_host(rank_given, "PBS_NODEFILE", nodefile, f, err);
}

/* Grid Engine's job id, JOB.TASK for an array task (SGE_TASK_ID is "undefined" otherwise): the
 * tasks of one array share JOB_ID, and two on one node must not derive one port. */
static const char *sge_job_id(void)
{
    static char id[64];
    const char *job = getenv(SGE_JOB_ID), *task = getenv("SGE_TASK_ID");
    if (!job)
        return NULL;
    if (task && *task && strspn(task, "0123456789") == strlen(task))
        snprintf(id, sizeof id, "%s.%s", job, task);
    else
        snprintf(id, sizeof id, "%s", job);
    return id;
}

/* Grid Engine's PE_HOSTFILE: a line per host of the parallel job ("HOST SLOTS QUEUE PROCESSORS"),
 * the master's first. A task the job started on another node (qrsh -inherit) has no
 * PE_HOSTFILE, only the job's id (and its own spool folder): its rank comes from its flags. */
static int from_sge(bool rank_given, node_source_t *f, ddp_error_t *err)
{
    const char *hostfile = getenv("PE_HOSTFILE");
    if (!hostfile || !*hostfile) {
        if (!getenv("SGE_JOB_SPOOL_DIR") || !getenv(SGE_JOB_ID))
            return 0;
        f->job_id = sge_job_id();
        return 1;
    }
    char *text = ddp_read_file(hostfile, NULL, err);
    if (!text)
        return ddp_error_prefix(err, "PE_HOSTFILE");
    /* Its first words, one per line, as a node file. */
    size_t w = 0;
    for (const char *line = text; *line;) {
        size_t host = strcspn(line, " \t\n");
        memmove(text + w, line, host);
        w += host;
        text[w++] = '\n';
        line += strcspn(line, "\n");
        line += *line == '\n';
    }
    text[w] = 0;
    f->hosts = ddp_hostlist_from_nodefile_text(text, hostfile, err);
    free(text);
    if (!f->hosts)
        return ddp_error_prefix(err, "PE_HOSTFILE");
    f->job_id = sge_job_id();
    return rank_of_this_host(rank_given, "PE_HOSTFILE", hostfile, f, err);
}

/* One agent per node started by mpirun: its world is the nodes. */
static int from_mpirun(bool rank_given, node_source_t *f, ddp_error_t *err)
{
    (void)rank_given;
    const char *rank = getenv("OMPI_COMM_WORLD_RANK"), *size = getenv("OMPI_COMM_WORLD_SIZE");
    if (!rank)
        return 0;
    if (ddp_parse_int(rank, 0, INT_MAX, &f->rank) ||
        ddp_parse_int(size ? size : "", 1, INT_MAX, &f->nnodes))
        return ddp_error_set(err, "OMPI_COMM_WORLD_RANK/SIZE are not numbers");
    f->master_addr = getenv("MASTER_ADDR");
    const char *port = getenv("MASTER_PORT");
    if (port && ddp_parse_int(port, 1, 65535, &f->master_port))
        f->master_port = 0;
    return 1;
}

static const struct {
    const char *identity;
    int (*read)(bool rank_given, node_source_t *f, ddp_error_t *err);
    const char *job_id_var, *local_disk_var; /* NULL: none */
} sources[] = {
    {"Slurm", from_slurm, SLURM_JOB_ID, NULL},
    {"PBS", from_pbs, PBS_JOB_ID, "PBS_JOBFS"},
    {"Grid Engine", from_sge, SGE_JOB_ID, NULL},
    {"mpirun", from_mpirun, NULL, NULL},
};

/* The value of the first row's job id (or local disk) variable that is set and not empty; NULL
 * when none is. */
static const char *first_set(bool local_disk)
{
    for (size_t i = 0; i < sizeof sources / sizeof *sources; i++) {
        const char *var = local_disk ? sources[i].local_disk_var : sources[i].job_id_var;
        const char *value = var ? getenv(var) : NULL;
        if (value && *value)
            return value;
    }
    return NULL;
}

const char *node_source_job_id(void)
{
    return first_set(false);
}

const char *node_source_local_disk(void)
{
    return first_set(true);
}

int node_source_find(bool rank_given, node_source_t *found, ddp_error_t *err)
{
    for (size_t i = 0; i < sizeof sources / sizeof *sources; i++) {
        node_source_t f = {.identity = sources[i].identity, .rank = -1};
        int rc = sources[i].read(rank_given, &f, err);
        if (rc != 0) {
            *found = f;
            return rc;
        }
    }
    return 0;
}
