/* pending_sched: each scheduler's pending job in words (pending_reason.h), bound in its row of
 * sched_queriers (sched_query.h): what its own word (Slurm's squeue Reason; PBS's state,
 * Hold_Types, depend and comment) means and what to do about it, and whether the job starts
 * without anyone acting (only then is an estimated start worth saying). */
#ifndef DDPJOB_PENDING_SCHED_H
#define DDPJOB_PENDING_SCHED_H

#include "cli/jobs/pending_text.h"

void pending_slurm_explain(pending_text_t *t, const sched_job_t *j, const char *id,
                           const char *name);
int pending_slurm_starts_by_itself(const sched_job_t *j);

void pending_pbs_explain(pending_text_t *t, const sched_job_t *j, const char *id, const char *name);
int pending_pbs_starts_by_itself(const sched_job_t *j);

#endif
