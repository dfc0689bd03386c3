/* history: the time series node 0 keeps of one link of a job (--history-file, in the job's
 * record beside progress.json), for `ddpjob report` and `status --watch`: one JSON line per
 * sample of every rank's step and busy time per step, and one per event (an attempt's start and
 * end with its cause, a restart, a spare or a joining node, a slow or stalled rank, the walltime's
 * checkpoint signal, a checkpoint).
 *
 * Bounded whatever the job's length: at most HISTORY_ROWS samples, taken at least `interval`
 * apart; when they are all used the file is rewritten with every other sample and the interval
 * doubles, so the samples always span the whole link, and a week of 1,024 ranks stays within a few
 * MiB (HISTORY_ROWS rows of ranks x about 16 bytes). Of the events, the first HISTORY_EVENTS are
 * kept, the last of them saying that later ones are left out. Lines are appended (O_APPEND, the
 * file opened O_NOFOLLOW, mode 0600): a line costs the training a write(2) at most once per
 * heartbeat. */
#ifndef AGENT_HISTORY_H
#define AGENT_HISTORY_H

#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "agent/findings/progress.h"

#define HISTORY_ROWS 200
#define HISTORY_EVENTS 2000

typedef struct history history_t;

/* A fresh history at path (an earlier file there is replaced), sampling every interval_ms at
 * first. NULL with err on failure. */
history_t *history_open(const char *path, int64_t interval_ms, ddp_error_t *err);
void history_close(history_t *h);

/* A sample of every rank of j in attempt `attempt`, when interval_ms (monotonic, now_ms) has
 * passed since the last one, or `force`. */
int history_sample(history_t *h, const progress_job_t *j, int attempt, int64_t now_ms, int force,
                   ddp_error_t *err);

/* An event: kind ("attempt_start", "attempt_end", "restart", "spare", "joined", "slow",
 * "recovered", "stalled", "walltime_signal", "checkpoint", "history"), the attempt, the rank it
 * concerns
 * (-1: none) and what the agent said of it. */
int history_event(history_t *h, const char *kind, int attempt, int rank, const char *text,
                  ddp_error_t *err);

#endif
