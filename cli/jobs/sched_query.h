/* sched_query: what the scheduler says of many jobs, in one call per source (not one per job):
 * Slurm's squeue (jobs it still holds), then sacct for the rest where accounting exists; PBS's
 * qstat -x -f (finished jobs too, while the server keeps its history). The parsers are apart
 * from the calls, for the unit tests. Text formats, not JSON, because the JSON is wrong on the
 * real thing, checked on the suite's clusters: Slurm 22.05's sacct --json gives a job whose
 * script exited 3 (text ExitCode 3:0) exit_code SUCCESS, return_code 0; OpenPBS 23.06's
 * qstat -f -F json given several job ids prints the first one only. (Slurm's JSON field names
 * also change with its OpenAPI versions: job_state a string before 23.11, a list after.) */
#ifndef DDPJOB_SCHED_QUERY_H
#define DDPJOB_SCHED_QUERY_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"
#include "cli/jobs/pending_text.h"
#include "cli/jobs/sched_job.h"

/* Each scheduler's query, by the name its records keep ("slurm", "pbs"); the list ends with a
 * NULL name. Callers loop over it rather than name a scheduler. A query fills each of the n jobs
 * whose id is set as the scheduler knows it (found 0 where it does not); a scheduler command
 * that cannot run or fails is named in err with its stderr (-1); sacct failing because
 * accounting is off is not an error. */
typedef struct {
    const char *name;
    int (*query)(sched_job_t *jobs, size_t n, ddp_error_t *err);
    const char *display;    /* its name in messages */
    const char *sources[3]; /* the source words its query writes into sched_job_t */
    /* A pending job in words (pending_sched.h): a reason is needed for any (Slurm's squeue gives
     * one whenever it has something to say); whether it starts without anyone acting. */
    int reason_needed;
    void (*explain_pending)(pending_text_t *t, const sched_job_t *j, const char *id,
                            const char *name);
    int (*starts_by_itself)(const sched_job_t *j);
} sched_querier_t;
extern const sched_querier_t sched_queriers[];

/* squeue -h -r -o '%i|%T|%r|%M|%l|%N|%S|%P|%D' lines; sacct -n -P -X -o
 * JobID,State,ExitCode,Elapsed,Timelimit,NodeList,Reason lines (an array task as ARRAY_TASK in
 * both, as a sweep's trial records it); qstat -x -f output. Each
 * fills the jobs it finds that are not found yet; returns how many. */
size_t sched_parse_squeue(const char *text, sched_job_t *jobs, size_t n);
size_t sched_parse_sacct(const char *text, sched_job_t *jobs, size_t n);
size_t sched_parse_qstat(const char *text, sched_job_t *jobs, size_t n);
/* squeue -h -t RUNNING -o '%P|%D' lines (every user's running jobs): counted into the jobs that
 * wait for resources or priority in those partitions. */
void sched_parse_running(const char *text, sched_job_t *jobs, size_t n);

/* Runs a scheduler command (argv[0] looked up on PATH); its stdout into *out unless out is
 * NULL. -1 with err naming the command (and its stderr, trimmed) when it cannot run, or when it
 * fails and `failure_ok` is 0; *failed says whether it exited non-zero. */
int sched_run(char **argv, char **out, int failure_ok, int *failed, ddp_error_t *err);

#endif
