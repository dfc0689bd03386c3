/* sched_pbs: PBS Pro's (OpenPBS's) row of the scheduler seam (sched.h), in three files:
 * sched_pbs.c (rendering, submitting, cancelling, array ids, the job-name rule),
 * sched_pbs_query.c (qstat -x -f; PBS's states in ours), sched_pbs_pending.c (its comment,
 * Hold_Types and depend in words). What they share, and the parser the unit tests reach. */
#ifndef DDPJOB_SCHED_PBS_H
#define DDPJOB_SCHED_PBS_H

#include "cli/sched/sched.h"

extern const sched_ops_t sched_pbs_ops;

int sched_pbs_query(sched_job_t *jobs, size_t n, ddp_error_t *err);

/* From PBS's job_state letter and, for a finished job (F or X), its Exit_status (-1 unknown):
 * PBS reports a job killed by signal S as 256+S (265: SIGKILL, which qdel of a running job
 * ends with; some sites say 128+S), a walltime kill as -29 (JOB_EXEC_KILL_WALLTIME); a job
 * finished without an exit status was deleted before it ran. */
job_state_t sched_pbs_state(char state, int exit_status);

/* qstat -x -f output: fills the jobs it finds that are not found yet; returns how many. */
size_t sched_pbs_parse_qstat(const char *text, sched_job_t *jobs, size_t n);

/* A pending job's state, Hold_Types, depend and comment in words. */
void sched_pbs_explain_pending(pending_text_t *t, const sched_job_t *j, const char *id,
                               const char *name);
bool sched_pbs_starts_by_itself(const sched_job_t *j);

#endif
