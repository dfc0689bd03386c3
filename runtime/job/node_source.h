/* node_source: what a process on a node learns from the scheduler or launcher it runs under,
 * one row per source in node_source.c's table, tried in order (a Slurm step, a PBS job, a Grid
 * Engine job, an mpirun world): for an agent, what its flags leave open (the job's nodes, this
 * node's rank among them, the job's id, mpirun's master); for anyone, the job's id and the node's
 * local disk. To add a scheduler: its row (how to tell its job is this process's, its node list,
 * this node's rank, its job id variable, its node-local disk variable). */
#ifndef DDP_NODE_SOURCE_H
#define DDP_NODE_SOURCE_H

#include <stdbool.h>

#include "runtime/base/ddp_error.h"
#include "runtime/job/hostlist.h"

typedef struct {
    const char *identity;  /* the source's name in messages ("Slurm") */
    ddp_hostlist_t *hosts; /* the job's nodes, the caller's to destroy; NULL: not said */
    int rank;              /* this node's; -1 not said */
    int nnodes;            /* 0: not said (the hosts' count stands) */
    const char *job_id;    /* NULL: none */
    const char *master_addr;
    int master_port; /* 0: not said */
} node_source_t;

/* The first source this process runs under into *found: 1; 0 when none (found untouched); -1
 * with err naming the source's variable when it is there but wrong. rank_given: the command
 * line names this node's rank, so a node list that does not name this host is no error. */
int node_source_find(bool rank_given, node_source_t *found, ddp_error_t *err);

/* The scheduler job this process runs in (its row's job id variable), or NULL. */
const char *node_source_job_id(void);

/* The node-local disk the scheduler gives the job (Gadi's jobfs), or NULL. */
const char *node_source_local_disk(void);

#endif
