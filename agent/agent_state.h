/* agent_state: what one agent keeps while it runs a job (agent_t), the state of one attempt
 * (attempt_t; agent.h tells its states and transitions), and the functions the agent's modules
 * share: attempt.c (the attempt's end, its workers' phase, the failures that end it), liveness.c
 * (heartbeats, nodes gone, hung workers), preflight.c's store side, run_dir.c (the run's folder)
 * and agent.c (setup, the poll loop, teardown). Private to ddpjob-agent. */
#ifndef AGENT_AGENT_STATE_H
#define AGENT_AGENT_STATE_H

#include <stdint.h>

#include "ddp_error.h"
#include "fingerprint.h"
#include "guard.h"
#include "membership.h"
#include "oom.h"
#include "options.h"
#include "progress.h"
#include "rendezvous.h"
#include "report.h"
#include "store_client.h"
#include "store_server.h"
#include "workers.h"

/* How long a node whose workers have ended waits for its own probe, so that its fingerprint is
 * in the store before it counts itself done (and node 0 reports on all) or says why it failed. */
#define PREFLIGHT_SETTLE_MS 3000
/* How long a failure that another one caused (cause.h) waits for that one to be published
 * before it stands for the job: the first failure's own exit reaches its agent within this, even
 * when it closed its connections (and so failed its peers) before it ended. */
#define CONSEQUENCE_HOLD_MS 3000
/* How often node 0 writes --progress-file while the workers run. */
#define PROGRESS_WRITE_MS 5000
/* A parked WAIT on the end key is renewed after this long. */
#define WATCH_MS 3600000

typedef struct agent {
    agent_options_t *o;
    char host[256];
    char attempt_root[4096];
    int temp_root; /* attempt_root is ours to remove */
    int sigfd;
    int stop_signal; /* the signal that told this agent to stop, or 0 */
    /* The workers were asked to stop: the checkpoint signal, a forwarded USR1/USR2 or a stop
     * signal. A worker that exits WORKER_EXIT_CHECKPOINTED then has done what it was asked. */
    int planned_stop;
    int64_t checkpoint_at; /* when the checkpoint signal is due (ddp_now_ms); 0: never, or sent */
    guard_t guard;
    ddp_store_server_t *server;
    ddp_store_client_t *client, *watch;
    int store_lost;             /* node 0's store stopped answering: nothing more is asked of it */
    fingerprint_probe_t *probe; /* this node's fingerprint, collected beside the workers */
    int preflight_pending;      /* node 0: the report beside the workers is yet to be printed */
    /* Spares and elastic worlds (standby.h) */
    int slot; /* this agent's node rank for the whole job; o->node_rank is the attempt's */
    int joined_before;
    char shape[64];
    ddp_rdzv_elastic_t elastic;
    ddp_members_t members; /* node 0 */
    char **hosts_before;   /* node 0: the last attempt's node hosts and slots, by node rank */
    int *slots_before, nranks_before;
    failure_t lost;   /* node 0: the failure that ended the last attempt */
    char *membership; /* node 0: the job's membership changes, JSON objects (progress.h) */
} agent_t;

typedef enum { END_UNKNOWN, END_FAILED, END_DONE, END_CHECKPOINTED } end_kind_t;
typedef enum { PHASE_RUNNING, PHASE_SETTLED, PHASE_STOPPING, PHASE_KILLED } workers_phase_t;

typedef struct {
    int round;
    int standby;             /* this agent stands by in this attempt: no worker */
    end_kind_t end;          /* written by attempt_set_end alone */
    failure_t first;         /* END_FAILED: the first failure anywhere */
    workers_phase_t phase;   /* written by attempt_enter_phase alone */
    int64_t kill_at;         /* PHASE_STOPPING: when SIGKILL follows (--grace) */
    int64_t finish_deadline; /* PHASE_SETTLED: how long the other nodes get (--exit-timeout) */
    int64_t checkpoint_wait; /* a rank checkpointed on request: the others' time to follow */
    int64_t next_heartbeat;
    char **hb_value;   /* node 0: each node's last heartbeat count */
    int64_t *hb_since; /* node 0: when it last changed */
    int silent_node;   /* node 0: the node it found lost for want of heartbeats (0: none) */
    oom_watch_t oom;   /* the OOM kills counted before the workers started */
    progress_local_t *progress; /* this node's workers' steps and busy time (progress.h) */
    progress_job_t job;         /* node 0: every rank's */
    int64_t progress_due;       /* node 0: when --progress-file is written next */
    failure_t held;             /* a consequence, waiting for its cause until held_until */
    int64_t held_until;
} attempt_t;

/* agent.c */
/* One line "ddpjob-agent: ..." on stderr, written whole. */
void agent_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Reads pending signals: stop signals are remembered, USR1/USR2 go to the workers. */
void agent_read_signals(agent_t *a, worker_t *w, int n);
int agent_connect_store(agent_t *a, ddp_store_client_t **out, ddp_error_t *err);

/* attempt.c */
/* The store key r<round>/name of the attempt. */
void attempt_key(const attempt_t *t, char *buf, size_t size, const char *name);
/* The one writer of t->end (and of t->first, for END_FAILED). */
void attempt_set_end(attempt_t *t, end_kind_t end, const failure_t *first);
/* Records the attempt's end (f for END_FAILED) unless another agent got there first; either
 * way t takes the end the store holds. Errors leave f as this agent's view. */
void attempt_publish_end(agent_t *a, attempt_t *t, const failure_t *f, end_kind_t kind);
/* The one way the workers' phase changes: forward only, each phase's deadline set on entry.
 * Returns 0 when the phase was already `next` or later. */
int attempt_enter_phase(const agent_t *a, attempt_t *t, workers_phase_t next);
/* Stops this node's workers (sig, then SIGKILL after --grace). */
void attempt_begin_stop(agent_t *a, attempt_t *t, worker_t *w, int n, int sig);
/* A failure of node `node` (or of the job: -1), stamped now. */
failure_t node_failure(agent_t *a, failure_kind_t kind, int code, int node, const char *host,
                       const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* A failure of worker w of this node, stamped now. */
failure_t worker_failure(const agent_t *a, const worker_t *w, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void attempt_on_reaped(agent_t *a, attempt_t *t, worker_t *w, int n, const ddp_rdzv_result_t *r);
void attempt_check_checkpoint_wait(agent_t *a, attempt_t *t, worker_t *w, int n);
/* A consequence held for its cause until now: it stands for the job. */
void attempt_release_held(agent_t *a, attempt_t *t, worker_t *w, int n, const ddp_rdzv_result_t *r);
/* Reads the attempt's end again: a consequence published first may have been replaced by the
 * failure that caused it. */
void attempt_refresh_end(agent_t *a, attempt_t *t);
void attempt_on_watch(agent_t *a, attempt_t *t, worker_t *w, int n);
int attempt_stopped_with_checkpoints(const attempt_t *t, const worker_t *w, int n);
int attempt_will_restart(const agent_t *a, const attempt_t *t);
/* The job failed for good: its summary on stderr, and --error-file when asked for. */
void attempt_report_failure(agent_t *a, const attempt_t *t, const worker_t *w, int n);
/* What the attempt's end means for this node, said once its workers are gone. */
void attempt_say_outcome(agent_t *a, attempt_t *t, const worker_t *w);

/* liveness.c */
int liveness_gone_nodes(agent_t *a, int round, int silent, int *first);
failure_t liveness_lost_node(agent_t *a, int node, const ddp_rdzv_result_t *r);
void liveness_lose_store(agent_t *a, attempt_t *t, worker_t *w, int n, const char *why);
void liveness_heartbeat(agent_t *a, attempt_t *t, worker_t *w, int n, const ddp_rdzv_result_t *r);
void liveness_check_hangs(agent_t *a, attempt_t *t, worker_t *w, int n);
/* Node 0: every rank's progress into --progress-file, now. */
void liveness_write_progress(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r);

/* preflight.c, the store side */
int preflight_first(const agent_options_t *o);
int preflight_publish_fingerprint(agent_t *a, const char *fp, ddp_error_t *err);
int preflight_before_workers(agent_t *a, attempt_t *t);
void preflight_beside(agent_t *a, int64_t wait_ms);

/* run_dir.c */
int run_dir_make(agent_t *a, ddp_error_t *err);
void run_dir_remove(agent_t *a);

#endif
