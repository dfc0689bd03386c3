/* sched_slurm: Slurm's row of the scheduler seam (sched.h), in three files: sched_slurm.c
 * (rendering, submitting, cancelling, array ids), sched_slurm_query.c (squeue, then sacct for
 * what squeue has forgotten; Slurm's states in ours), sched_slurm_pending.c (squeue's Reason in
 * words). What they share, and the parsers the unit tests reach. */
#ifndef DDPJOB_SCHED_SLURM_H
#define DDPJOB_SCHED_SLURM_H

#include "cli/sched/sched.h"

extern const sched_ops_t sched_slurm_ops;

int sched_slurm_query(sched_job_t *jobs, size_t n, ddp_error_t *err);

/* From a Slurm state word as squeue, scontrol and sacct print it ("COMPLETED", "CANCELLED by
 * 1000", "OUT_OF_MEMORY", "NODE_FAIL", also lower case and with a trailing '+'). */
job_state_t sched_slurm_state(const char *word);

/* squeue -h -r -o '%i|%T|%r|%M|%l|%N|%S|%P|%D' lines; sacct -n -P -X -o
 * JobID,State,ExitCode,Elapsed,Timelimit,NodeList,Reason lines (an array task as ARRAY_TASK in
 * both, as a sweep's trial records it). Each fills the jobs it finds that are not found yet;
 * returns how many. */
size_t sched_slurm_parse_squeue(const char *text, sched_job_t *jobs, size_t n);
size_t sched_slurm_parse_sacct(const char *text, sched_job_t *jobs, size_t n);
/* squeue -h -t RUNNING -o '%P|%D' lines (every user's running jobs): counted into the jobs that
 * wait for resources or priority in those partitions. */
void sched_slurm_parse_running(const char *text, sched_job_t *jobs, size_t n);

/* squeue's Reason for a pending job, in words with what to do about it. */
void sched_slurm_explain_pending(pending_text_t *t, const sched_job_t *j, const char *id,
                                 const char *name);
bool sched_slurm_starts_by_itself(const sched_job_t *j);

#endif
