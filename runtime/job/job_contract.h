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
    JOB_REQUEUES_MAX = 1000,       /* a chain's links; the agent's --requeue-count too */
    JOB_TIMEOUT_MAX_S = 7 * 86400, /* rendezvous, hang, exit and checkpoint-before */
};

/* How long the other nodes' launches (pbsdsh tasks, SSH sessions) may outlive node 0's agent,
 * which knows the job's outcome, before they are stopped or left: a frozen node never ends. */
#define JOB_DRAIN_MS 30000

/* The words a spec's gpu_binding:, cpu_binding: and preflight: take, which the agent's options of
 * the same names take too (its --preflight also takes "only", for ddpjob doctor);
 * NULL-terminated. */
extern const char *const job_gpu_binding_words[];
extern const char *const job_cpu_binding_words[];
extern const char *const job_preflight_words[];

/* A job's ports: the workers' MASTER_PORT is the master port, as torchrun's contract has it
 * (scripts use it in init_method=tcp://...: rank 0's own store listens there), and the agents'
 * rendezvous store listens on the next one, which every agent derives from the master port. */
int ddp_job_store_port(int master_port);
/* The master port inside a scheduler job (SLURM_JOB_ID, PBS_JOBID) when none is given: 10000 +
 * 2 x (the id's leading number mod 10000), below the ephemeral range, so that jobs sharing a
 * first node differ, and even, so that one job's store port is never another's master port. A
 * PBS array's subjobs (N[K].server) each have their own. */
int ddp_job_port_from_id(const char *job_id);
/* The port of the store that rank 0 of ddp-train serves when it is started straight by srun
 * (no agent, no MASTER_PORT): the store port, which no agent holds there. */
int ddp_job_workers_port_from_id(const char *job_id);
/* A master port for a job outside any scheduler (ddpjob launch), from 16 random bits: even,
 * 20000-31998, below the ephemeral range, where the workers' own sockets live. */
int ddp_job_port_random(uint16_t random_bits);

#endif
