/* pending_reason: why a pending job has not started, in plain words with what to do about it,
 * from the scheduler's own word, through the words of the scheduler whose query gave it (its
 * row's explain_pending, sched.h), and the start the scheduler estimates
 * (real examples: shared/notes/around-the-job.md and tests/agent/pending_pbs.sh). */
#ifndef DDPJOB_PENDING_REASON_H
#define DDPJOB_PENDING_REASON_H

#include <stddef.h>

#include "cli/sched/sched.h"

/* The explanation for job j (scheduler id `id`, ddpjob name `name`) into out; "" when the
 * scheduler says it is not pending or gives no reason. */
void pending_explain(const sched_job_t *j, const char *id, const char *name, char *out,
                     size_t size);

/* A scheduler's start time ("2026-11-27T14:20:00" from Slurm, "Fri Nov 27 14:20:00 2026" from
 * PBS) as people read it: "14:20" today, else "Sat 28 Nov 14:20"; "" when it is neither. */
void pending_start_words(const char *start, char *out, size_t size);

#endif
