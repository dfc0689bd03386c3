/* job_contract: the facts about a job that ddpjob (validating a spec, launching), the job
 * scripts and ddpjob-agent (parsing its options) must agree on, each stated once: the limits of
 * a job's numbers, and where node 0's rendezvous store listens when nobody says. A new limit or
 * port rule is a change here alone; the variables the workers get are worker_env's. */
#ifndef DDP_JOB_CONTRACT_H
#define DDP_JOB_CONTRACT_H

#include <stdint.h>

/* Limits, inclusive: the spec's fields and the agent's options both accept exactly these. */
enum {
    JOB_NODES_MAX = 100000,
    JOB_PROCS_PER_NODE_MAX = 1024,
    JOB_MAX_RESTARTS_MAX = 1000,
    JOB_REQUEUES_MAX = 1000,            /* a chain's links; the agent's --requeue-count too */
    JOB_TIMEOUT_MAX_S = 7 * 86400,      /* rendezvous, hang, exit and checkpoint-before */
};

/* Node 0's rendezvous port inside a scheduler job (SLURM_JOB_ID, PBS_JOBID) when none is given:
 * 10000 + (the id's leading number mod 20000), below the ephemeral range, so that jobs sharing
 * a first node differ. */
int ddp_job_port_from_id(const char *job_id);
/* The port of the store that rank 0 of ddp-train serves when it is started straight by srun
 * (no agent, no MASTER_PORT): the next one, so that it never meets the agents'. */
int ddp_job_workers_port_from_id(const char *job_id);
/* The scheduler job this process runs in (SLURM_JOB_ID, else PBS_JOBID), or NULL. */
const char *ddp_job_scheduler_id(void);
/* A rendezvous port for a job outside any scheduler (ddpjob launch), from 16 random bits:
 * 20000-31999, below the ephemeral range, where the workers' own sockets live. */
int ddp_job_port_random(uint16_t random_bits);

#endif
