/* worker_env: the environment contract between an agent and its workers (docs/design.md, "The job
 * contract").
 *
 * What current torchrun gives each worker, so that an unmodified PyTorch script works: ranks,
 * sizes, master address and port, the TORCHELASTIC_* variables, and a few defaults that are
 * only set when the user has not set them (OMP_NUM_THREADS, NCCL's error handling, and
 * PYTHONUNBUFFERED, as torchrun's python -u). Everything else of the agent's environment passes
 * through, except the job token: workers get their own secret instead (DDPJOB_WORKER_TOKEN,
 * derived from the job token, the run and the attempt), which authenticates the store rank 0
 * of ddp-train serves, so no stranger and no worker of another attempt can join the group. */
#ifndef DDP_WORKER_ENV_H
#define DDP_WORKER_ENV_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"

typedef struct {
    int rank, local_rank, world_size, local_world_size;
    int group_rank, group_world_size; /* node rank, number of nodes */
    int restart_count;                /* restarts in this job plus the requeues before it */
    int max_restarts;
    const char *master_addr;
    int master_port;
    const char *run_id;
    const char *error_file;           /* TORCHELASTIC_ERROR_FILE; NULL leaves it unset */
    const char *progress_file;        /* DDP_PROGRESS_ENV's value; NULL leaves it unset */
    const char *metrics_file;         /* DDP_METRICS_ENV's value; NULL leaves it unset */
    const char *worker_token;         /* DDPJOB_WORKER_TOKEN; NULL leaves it unset */
    const char *cuda_visible_devices; /* this worker's GPU; NULL: the inherited value stays */
} ddp_worker_env_t;

#define WORKER_TOKEN_HEX 64

/* The restarts before this worker (the job's and its requeues'), as torchrun names them. */
#define DDP_RESTART_COUNT_ENV "TORCHELASTIC_RESTART_COUNT"

/* Names the file where a worker may write how far it has got: its step count, as text, each
 * step, written over the last (agent/findings/progress.h reads it). */
#define DDP_PROGRESS_ENV "DDPJOB_PROGRESS_FILE"

/* Names the file where a worker may append its metrics, one JSON object per line ({"step": 120,
 * "loss": 0.41}); rank 0's are the job's, and a sweep's status shows each metric's last value.
 * Beside the rank's logs, so a job's record keeps them with its logs. */
#define DDP_METRICS_ENV "DDPJOB_METRICS_FILE"

/* A worker's exit status for "stopped on request with a checkpoint written; run me again to
 * resume" (sysexits' EX_TEMPFAIL). After a checkpoint signal or a stop, every rank exiting with
 * it makes the job end with it too, and a requeue resumes the job. */
#define WORKER_EXIT_CHECKPOINTED 75

/* HMAC-SHA256(job token, "ddpjob workers RUN_ID ATTEMPT") in hex: every agent of the attempt
 * computes the same, nobody without the job token can. */
void ddp_worker_token_derive(const void *job_token, size_t len, const char *run_id, int attempt,
                             char out[WORKER_TOKEN_HEX + 1]);

/* A new NULL-terminated environment: `base` without the variables the contract owns, then the
 * contract's values. Free with ddp_worker_env_free. */
char **ddp_worker_env_build(const ddp_worker_env_t *w, char *const *base, ddp_error_t *err);
void ddp_worker_env_free(char **env);
/* Whether the contract sets variable `name` (NAME or NAME=value) for every worker. */
int ddp_worker_env_owns(const char *name);

#endif
