/* sweep_view: a sweep as status, list, wait, cancel and logs see it: each trial's job view
 * (job_view.h; all of them with one scheduler call) beside its parameters and the last value of
 * each metric its rank 0 wrote to DDPJOB_METRICS_FILE (worker_env.h), and the table, JSON and
 * list line made of them (ddpjob(1), SWEEPS). */
#ifndef DDPJOB_SWEEP_VIEW_H
#define DDPJOB_SWEEP_VIEW_H

#include <stdio.h>

#include "cli/view/job_view.h"
#include "cli/jobs/sweep_record.h"

typedef struct {
    sweep_record_t rec;
    job_view_t *trials; /* [rec.ntrials]; one whose record cannot be read has rec.dir NULL */
    char **metrics;     /* [trial]: {"loss": 0.41, ...}, each metric's last value, JSON text;
                           NULL: none written */
} sweep_view_t;

/* How status orders the trials: by a metric (ascending unless desc), else by index. The best
 * completed trial is the first in that order; without a metric, the best by the spec's
 * objective, else the highest test_acc, else the lowest loss, where the trials wrote one. */
typedef struct {
    const char *metric; /* NULL: by index */
    int desc;
} sweep_order_t;

int sweep_view_load(const char *dir, sweep_view_t *v, ddp_error_t *err);
void sweep_view_free(sweep_view_t *v);

/* The table: one row per trial (index, parameters, state with the cause, link, elapsed, each
 * metric), its counts and the best trial. */
void sweep_view_print(FILE *f, const sweep_view_t *v, const sweep_order_t *order);
/* The same as one JSON object: {"sweep": ..., "trials": [...], "best": K|null}. */
void sweep_view_json(FILE *f, const sweep_view_t *v, const sweep_order_t *order);
/* list's line: the sweep's name, how it went, its counts by state. */
void sweep_view_line(FILE *f, const sweep_view_t *v);

/* The best completed trial, as status names it (by the spec's objective, else the highest
 * test_acc, else the lowest loss); -1 when no completed trial wrote that metric. */
long sweep_view_best(const sweep_view_t *v);

/* Whether every trial has ended for good. */
int sweep_view_ended(const sweep_view_t *v);
/* How many trials ended other than completed. */
size_t sweep_view_unsuccessful(const sweep_view_t *v);

#endif
