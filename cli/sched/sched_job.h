/* sched_job: what a scheduler says of one job, as its row's query (sched.h) fills it. */
#ifndef DDPJOB_SCHED_JOB_H
#define DDPJOB_SCHED_JOB_H

#include "cli/jobs/job_state.h"

typedef struct {
    char id[128];          /* asked for */
    int found;             /* the scheduler knows it */
    const char *source;    /* "squeue", "sacct", "qstat" */
    const char *scheduler; /* the name of the row whose query filled it ("sge") */
    job_state_t state;
    char sched_state[64]; /* the scheduler's own word */
    char reason[256];     /* Slurm's reason, PBS's comment */
    int exit_status;      /* -1 unknown */
    char elapsed[32], walltime[32], nodes[512];
    /* What a pending job waits in, asks for and may expect: its partition or queue, the nodes it
     * asks for (0 unknown), the start the scheduler estimates (its own text; "" none), PBS's
     * Hold_Types and whether it depends on another job. */
    char partition[64], start[64], hold_types[16];
    int nodes_asked, has_dependency;
    /* Running jobs, all users', in its partition and the nodes they hold (-1: not asked): asked
     * only for jobs that wait for resources or priority. */
    int partition_running, partition_running_nodes;
} sched_job_t;

#endif
