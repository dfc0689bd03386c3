/* sched_sge: Grid Engine's row of the scheduler seam (sched.h), for Son of Grid Engine, Debian's
 * gridengine 8.1, Altair Grid Engine and Open Cluster Scheduler, in three files: sched_sge.c
 * (rendering, submitting, cancelling, array ids, the parallel environment the spec needs),
 * sched_sge_query.c (qstat, then qacct for a job qstat no longer knows; its states in ours),
 * sched_sge_pending.c (a waiting job in words). What they share, and the parsers the unit tests
 * reach.
 *
 * Grid Engine names an array task JOB.TASK (qstat's ja-task-ID, qacct -j JOB -t TASK), tasks
 * counted from 1: trial k of a sweep is task k+1. */
#ifndef DDPJOB_SCHED_SGE_H
#define DDPJOB_SCHED_SGE_H

#include "cli/sched/sched.h"

extern const sched_ops_t sched_sge_ops;

/* What a job submitted after others must find in their accounting as it starts, which
 * -hold_jid does not check: "afterok:1:2+afternotok:3" (templates/sge.sh reads it). */
#define SGE_AFTER_ENV "DDPJOB_SGE_AFTER"

int sched_sge_query(sched_job_t *jobs, size_t n, ddp_error_t *err);

/* From qstat's state letters ("qw", "hqw", "r", "Eqw", "dr", ...). */
job_state_t sched_sge_state(const char *letters);

/* From qacct's failed and exit_status of a job that ended: 0 and 0 completed; failed 37 the
 * walltime's kill (h_rt, or h_vmem); failed 100 with 137 or 143 qdel's; 75 a requeue link. */
job_state_t sched_sge_ended_state(int failed, int exit_status);

/* `qstat -u '*' -g d` output: fills the jobs (JOB or JOB.TASK) it lists; returns how many. */
size_t sched_sge_parse_qstat(const char *text, sched_job_t *jobs, size_t n);

/* `qacct -j JOB [-t TASK]` output: fills job j from its last record (the job's: its qrsh tasks'
 * end before it; a job run again has one per run); 1 when one was there. */
int sched_sge_parse_qacct(const char *text, sched_job_t *j);

/* `qstat -j JOB` output of a pending job: its scheduling info and predecessors into j. */
void sched_sge_parse_job_info(const char *text, sched_job_t *j);

void sched_sge_explain_pending(pending_text_t *t, const sched_job_t *j, const char *id,
                               const char *name);
bool sched_sge_starts_by_itself(const sched_job_t *j);

#endif
