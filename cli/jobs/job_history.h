/* job_history: what a job's record holds over time, read back for `ddpjob report` and `status
 * --watch`: node 0's history of each link (link-K/history.jsonl, the agent's history.h: samples
 * of every rank's step and busy time per step, and events) and rank 0's metrics
 * (DDPJOB_METRICS_FILE lines, over every link and attempt). A file cut short, too large or with
 * lines of the wrong shape gives what is whole in it, never an error. */
#ifndef DDPJOB_JOB_HISTORY_H
#define DDPJOB_JOB_HISTORY_H

#include <glob.h>
#include <stddef.h>

#include "cli/jobs/job_record.h"

/* The metrics line's key that says the steps of the whole job, once: not a metric. */
#define METRICS_TOTAL_STEPS "total_steps"

/* What is read of one history or metrics file at most. */
#define JOB_HISTORY_MAX_BYTES (64u << 20)

typedef struct {
    double t; /* seconds since the epoch, node 0's clock */
    int link, attempt, nranks;
    long long *steps, *busy_us; /* per rank; -1 unknown */
} history_sample_t;

typedef struct {
    double t;
    int link, attempt, rank; /* rank -1: none */
    char kind[32];
    char text[1024];
} history_event_t;

/* One metric of rank 0's: its values in the order written, x the line's "step", else its
 * "epoch", else its place among the lines ("total_steps" is not a metric: see below). */
typedef struct {
    char name[64], x_name[8]; /* x_name: "step", "epoch" or "line" */
    double *x, *y;
    int n;
} metric_series_t;

typedef struct {
    history_sample_t *samples; /* in time order, link by link */
    int nsamples, max_ranks;
    history_event_t *events;
    int nevents;
    metric_series_t *metrics;
    int nmetrics;
    long long total_steps; /* the steps the whole job takes, where a metrics line said
                            * {"total_steps": N} (ddp-train does); -1 unknown */
} job_history_t;

/* Reads the history and metrics of every link of rec into h (all empty when there are none);
 * with `only_link` >= 0, that link's alone. */
void job_history_read(const job_record_t *rec, int only_link, job_history_t *h);
void job_history_free(job_history_t *h);

/* Rank 0's metrics files of the record in dir, link by link and attempt by attempt, into g
 * (globfree it); 0 when there are none. */
size_t job_metrics_files(const char *dir, glob_t *g);

/* One link's history file alone, appended to h (tests and the watch view). */
void job_history_read_link(const char *path, int link, job_history_t *h);

#endif
