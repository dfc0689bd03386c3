/* sched_query: what the schedulers' queries (sched.h's query) share: finding the asked job a
 * line names, the '|'-separated lines of Slurm-like tools, and the ids still to ask for. The
 * queries read text formats, not JSON, because the JSON is wrong on the real thing, checked on
 * the suite's clusters: Slurm 22.05's sacct --json gives a job whose script exited 3 (text
 * ExitCode 3:0) exit_code SUCCESS, return_code 0; OpenPBS 23.06's qstat -f -F json given
 * several job ids prints the first one only. (Slurm's JSON field names also change with its
 * OpenAPI versions: job_state a string before 23.11, a list after.) */
#ifndef DDPJOB_SCHED_QUERY_H
#define DDPJOB_SCHED_QUERY_H

#include <stddef.h>

#include "cli/sched/sched_job.h"

/* The job not found yet that the scheduler's `id` (id_len bytes) names; NULL when none. */
sched_job_t *sched_query_find(sched_job_t *jobs, size_t n, const char *id, size_t id_len);

/* The lines of text with exactly `nfields` '|'-separated fields, in order: each line's fields
 * at lines[k * nfields ...] (pointers into *buf, which the caller frees with the array). */
char **sched_bar_lines(const char *text, int nfields, size_t *count, char **buf);

/* src (NULL: "") into dst, cut to size. */
void sched_copy(char *dst, size_t size, const char *src);

/* The ids of the jobs not found yet, comma-separated (malloc'd); NULL when none. */
char *sched_missing_ids(const sched_job_t *jobs, size_t n);

#endif
