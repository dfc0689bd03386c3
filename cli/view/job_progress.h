/* job_progress: how far a running job has got and when it will be done, from its record (node
 * 0's history of the current link, the total steps a metrics line gave, the walltime) for
 * `status --watch` and `wait`: the step every rank has reached, steps per second over the last
 * PROGRESS_RATE_WINDOW_S seconds of samples, the time to the end against the walltime left, and
 * the requeues that takes (none of these once the job has ended); each node's lowest step; the
 * rank named slow and not yet recovered. */
#ifndef DDPJOB_JOB_PROGRESS_H
#define DDPJOB_JOB_PROGRESS_H

#include <stddef.h>

#include "cli/jobs/job_history.h"
#include "cli/view/job_view.h"

#define PROGRESS_RATE_WINDOW_S 30.0

typedef struct {
    long long step;         /* the lowest step of any rank in the last sample; -1: none */
    long long total;        /* the steps the job takes; -1 unknown */
    double steps_per_s;     /* 0: not known yet */
    double eta_s;           /* -1: unknown */
    double walltime_left_s; /* of the current link; -1 unknown */
    int more_requeues;      /* links needed beyond the current one; -1 unknown */
    int requeues_left;      /* of the spec's requeue: */
    long long *node_steps;  /* each node's lowest step (-1: none), nnodes of them */
    int nnodes;
    char slow[1024]; /* what the agent said of a rank still slow; "" none */
} job_progress_t;

/* From v and h (its current link's history, job_history_read) at `now` (seconds since the
 * epoch). */
void job_progress_compute(const job_view_t *v, const job_history_t *h, double now,
                          job_progress_t *p);
void job_progress_free(job_progress_t *p);

/* "812 of 4,000 steps; 2.1 steps/s: done in 25 min; 31 min of walltime left" (or "...: needs 1
 * more requeue"); "" when no rank has reported a step. */
void job_progress_line(const job_progress_t *p, char *out, size_t size);

/* A duration as people say it: "40 s", "25 min", "2 h 5 min". */
void duration_words(double s, char *out, size_t size);

#endif
