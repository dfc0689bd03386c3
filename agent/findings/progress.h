/* progress: how far each worker has got, how hard it worked for each step, and which rank the
 * others wait for.
 *
 * A worker says how far it has got by writing its step count, as text, into the file that
 * DDPJOB_PROGRESS_FILE names (worker_env.h), once per step just before the step's collectives
 * (in a PyTorch DDP loop, between the forward pass and backward; ddp-train does it itself):
 * then a rank stuck in its step is one step behind the ranks waiting for it. At each heartbeat the
 * agent reads it, and what the worker's threads spent on a CPU or waiting for one
 * (/proc/PID/task/TID/schedstat: a CPU quota's throttling counts as waiting). In a synchronous job
 * every rank takes its steps at the same rate: the rank the others wait for is the one busy for
 * more of each step, since the others sleep in the collective meanwhile. So each rank's figure is
 * its busy time per step over --slow-window; each agent sends its ranks' figures with its
 * heartbeat, and node 0 compares them all.
 *
 * Busy time misses a rank slowed by its data (a slow file system, a sleep, a lock): it is idle
 * while the others wait. So each rank's *arrival* is measured too: the file's mtime is when the
 * rank reached its step; the agent sends how long ago that was by its own clock, and node 0 adds
 * how long ago the figures reached its store by its own (store_client.h's aged GET): when each
 * rank reached its step on node 0's clock, with no two machines' clocks compared. Projected to
 * the job's newest step at the job's time per step, the ranks' arrivals say how much later than
 * the median rank each one comes to every collective: the time the others wait for it.
 * - slow: a rank late by PROGRESS_LATE_MIN_US or more that makes the job's step at least
 *   --slow-factor times what it would take without waiting for it (late by 1 - 1/factor of the
 *   step), or, where lateness is smaller or not known, one busy at least --slow-factor times the
 *   median rank per step, is said once, then again when it recovers or gets worse (by half as
 *   much again);
 * - stalled (with --hang-timeout): when no rank's step has moved for that long, the rank behind
 *   the others is the one they wait for; when all are at one step, the job is hung as a whole. */
#ifndef AGENT_PROGRESS_H
#define AGENT_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"

/* The least lateness judged by: a file's mtime ticks with the kernel's coarse clock (a jiffy,
 * 1 to 10 ms), so ranks that arrive together differ by that much; below it, busy time judges. */
#define PROGRESS_LATE_MIN_US 30000

/* One rank's figures. */
typedef struct {
    long long step;    /* its last step; -1: it reports none */
    long long busy_us; /* busy time per step over the window (µs); -1: not known yet */
    long long age_us;  /* how long ago it reached `step` (µs); -1: not known */
} progress_figure_t;

/* ---- one agent's workers ---- */
typedef struct progress_local progress_local_t;

progress_local_t *progress_local_new(int n, int64_t window_ms, int64_t heartbeat_ms);
void progress_local_free(progress_local_t *p);
/* At a heartbeat: worker i's step (from its file, path) and busy time (its pid's threads). */
void progress_sample(progress_local_t *p, int i, const char *path, int pid, int64_t now);
progress_figure_t progress_local_figure(const progress_local_t *p, int i);
/* Worker i's last step from its file alone, once it has ended: its busy time stays as it was. */
void progress_last_step(progress_local_t *p, int i, const char *path);
/* "RANK/LOCAL_RANK:STEP:BUSY_US:AGE_US ..." for the workers that report a step, the ages as of
 * now; worker i has rank ranks[i] and local rank i. Returns the length, 0 when none reports. */
size_t progress_encode(const progress_local_t *p, const int *ranks, char *buf, size_t size);

/* ---- node 0: the whole job ---- */
typedef struct {
    progress_figure_t fig;
    int node, local_rank;
    int slow;           /* said to be slow, at this ratio (x100) */
    int64_t step_at;    /* when node 0 last saw its step move */
    int64_t reached_us; /* when it reached fig.step, by node 0's ddp_now_us; 0: not known */
    double period_us;   /* its time per step, smoothed; 0: not known */
    double late_us;     /* how long after the median rank it reaches each step, smoothed; -1 */
} progress_rank_t;

typedef struct {
    int world;
    progress_rank_t *ranks;
    long long max_step; /* the highest step of any rank */
    int64_t moved_at;   /* when any rank's step last moved */
} progress_job_t;

int progress_job_init(progress_job_t *j, int world, int64_t now);
void progress_job_free(progress_job_t *j);
/* Takes node's figures as progress_encode wrote them, at `now` (ddp_now_ms), `aged_us` after
 * they were written (the time they spent in the store). */
void progress_job_update(progress_job_t *j, int node, const char *text, int64_t now,
                         int64_t aged_us);

/* Writes every rank's figures to path, atomically, as JSON: {"version": 1, "time": "...",
 * "attempt": A, "ranks": [{"rank", "node", "host", "step", "busy_us_per_step", "slow"}...],
 * "membership": [...]}, a rank without figures null (hosts[node]: each node's host);
 * membership: the objects of the job's membership changes, comma-separated (NULL: none). */
int progress_job_write(const progress_job_t *j, const char *path, int attempt, char *const *hosts,
                       const char *membership, ddp_error_t *err);

/* What node 0 says of a rank. */
typedef enum { PROGRESS_SLOW, PROGRESS_SLOWER, PROGRESS_RECOVERED } progress_event_kind_t;
typedef struct {
    progress_event_kind_t kind;
    int rank;
    double ratio; /* how much longer the job's step is for it (or its busy time over the median
                     rank's, where arrivals are not known) */
    int by_busy;  /* judged, and said, by its busy time (at least the factor over the median
                     rank's, or its lateness too small to measure), not by its lateness */
    long long busy_us, median_us;
    double late_us, period_us; /* its lateness and the job's time per step; -1: not known */
} progress_event_t;

/* Compares every rank's arrival at each step, and its busy time per step, with the median rank's
 * (the lower middle one, so that of two ranks the faster is the measure), its lateness smoothed
 * by `weight` (the share of the newest figure, 0 to 1); returns how many events it wrote into ev
 * (at most max), each said once. */
int progress_judge(progress_job_t *j, double factor, double weight, progress_event_t *ev, int max);
/* With no step anywhere for timeout_ms: the rank behind the others (lowest step, then lowest
 * rank) into *rank and 1; 2 when every reporting rank is at the same step (*rank -1); else 0. */
int progress_stalled(const progress_job_t *j, int64_t now, int64_t timeout_ms, int *rank);

#endif
