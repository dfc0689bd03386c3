/* agent_state: what one agent keeps while it runs a job (agent_t) and the state of one attempt
 * (attempt_t; agent.h tells its states and transitions), shared by the agent's modules, each
 * with its own header: attempt.h (the attempt's end and phase), liveness.h, standby.h,
 * preflight.h, monitor.h (the poll loops), and run_dir.c (the run's folder, below). Private to
 * ddpjob-agent. */
#ifndef AGENT_AGENT_STATE_H
#define AGENT_AGENT_STATE_H

#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "agent/supervision/fingerprint.h"
#include "agent/workers/guard.h"
#include "runtime/job/membership.h"
#include "agent/findings/oom.h"
#include "agent/supervision/options.h"
#include "agent/findings/progress.h"
#include "runtime/job/rendezvous.h"
#include "agent/supervision/report.h"
#include "runtime/job/store_client.h"
#include "runtime/job/store_server.h"
#include "agent/workers/workers.h"

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
    const agent_options_t *o; /* as parsed: never written after */
    /* This attempt's node rank (-1 until handed out at the rendezvous) and node count: with spares
     * or an elastic world, each round's (standby.h); else the options'. */
    int node_rank, nnodes;
    char host[256];
    char attempt_root[4096]; /* the run's log folder (run_dir.c), as named in messages */
    int attempt_root_fd;     /* held open from when it was made; -1 none */
    int temp_root;           /* attempt_root is ours to remove */
    char worker_root[4096];  /* the workers' own files (run_dir.c); "" none */
    int sigfd;
    int stop_signal; /* the signal that told this agent to stop, or 0 */
    /* The workers were asked to stop: the checkpoint signal, a forwarded USR1/USR2 or a stop
     * signal. A worker that exits WORKER_EXIT_CHECKPOINTED then has done what it was asked. */
    int planned_stop;
    int64_t checkpoint_at; /* when the checkpoint signal is due (ddp_now_ms); 0: never, or sent */
    int checkpoint_sent;   /* the checkpoint signal, once sent; 0: not sent */
    double checkpoint_sent_before_s; /* how long before the walltime it was sent */
    int forwarded_signal; /* the last USR1/USR2 passed on to the workers (a checkpoint asked from
                           * outside: `ddpjob cancel --checkpoint`, scancel --signal); 0: none */
    guard_t guard;
    /* The container the workers run in: the options', its image the staged copy once staged
     * (staged_folder, staged_image: ours to remove; container.h). */
    container_t container;
    char *staged_folder, *staged_image;
    int container_ready; /* staged and checked, once (prepare_container) */
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
    failure_t lost;          /* node 0: the failure that ended the last attempt */
    char *membership;        /* node 0: the job's membership changes, JSON objects (progress.h) */
    struct history *history; /* node 0: the link's history (timeline.h), NULL: none */
    int history_failed;      /* it could not be written: said, and left off */
} agent_t;

typedef enum { END_UNKNOWN, END_FAILED, END_DONE, END_CHECKPOINTED } end_kind_t;
typedef enum { PHASE_RUNNING, PHASE_SETTLED, PHASE_STOPPING, PHASE_KILLED } workers_phase_t;

typedef struct {
    int round;
    int standby;       /* this agent stands by in this attempt: no worker */
    worker_t *workers; /* this node's, nworkers of them started (0: none, or a standby) */
    int nworkers;
    end_kind_t end;          /* written by attempt.c alone (attempt.h) */
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

/* run_dir.c */
int run_dir_make(agent_t *a, ddp_error_t *err);
/* The log folder's attempt_ROUND, made (or taken, where another node of the job made it) and
 * held: its descriptor, or -1 with err set. */
int run_dir_attempt(agent_t *a, int round, ddp_error_t *err);
void run_dir_remove(agent_t *a);

#endif
