/* remote_index: the jobs this laptop submitted to clusters (`ddpjob submit --on`), so that the
 * commands after submit find a job's cluster from its name or scheduler id without --on. One line
 * per job, oldest first, in ${XDG_STATE_HOME:-~/.local/state}/ddpjob/remote-jobs (beside the
 * local jobs' index, job_record.h):
 *
 *   SUBMITTED\tCLUSTER\tJOBID\tNAME\tREMOTE_JOBDIR\tLOCAL_DIR
 *
 * The job's record stays on the cluster; this says only where it is. Each field read back is
 * checked before it reaches a command: a line with a field of the wrong shape is passed over. */
#ifndef DDPJOB_REMOTE_INDEX_H
#define DDPJOB_REMOTE_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"

typedef struct {
    int64_t submitted;
    char cluster[64];
    char id[128];          /* the scheduler's id; "" when submit printed none (a sweep's lanes) */
    char name[256];        /* the spec's name */
    char remote_dir[1024]; /* the job's folder there, as the profile's remote_dir writes it */
    char local_dir[4096];  /* the folder uploaded from, where `ddpjob fetch` puts what it gets */
} remote_job_t;

/* Whether each field of j has its shape (the checks a line read back passes). */
int remote_job_valid(const remote_job_t *j);

int remote_index_add(const remote_job_t *j, ddp_error_t *err);

/* The newest job whose name is `job`, or whose id `job` names (job_id_names): 1 found, 0 none. */
int remote_index_find(const char *job, remote_job_t *j);

/* The clusters of the jobs submitted at or after `since` (0: all), each once, in the order of
 * their newest job, newest first: how many were put in names (at most max). */
size_t remote_index_clusters(int64_t since, char (*names)[64], size_t max);

#endif
