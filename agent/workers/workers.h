/* workers: this node's worker processes for one attempt.
 *
 * Each worker runs in its own process group (so a stop reaches whatever it started), with
 * PR_SET_PDEATHSIG set before exec (so a SIGKILLed agent leaves no worker behind), stdin from
 * /dev/null, and stdout/stderr on pipes that the agent relays line by line. Workers are forked
 * from the agent's main thread only: the parent-death signal follows the forking thread. */
#ifndef AGENT_WORKERS_H
#define AGENT_WORKERS_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "agent/workers/binding.h"
#include "agent/findings/cause.h"
#include "runtime/base/ddp_error.h"
#include "agent/workers/guard.h"
#include "agent/workers/relay.h"
#include "runtime/job/worker_env.h"

typedef struct {
    int local_rank, rank;
    pid_t pid;  /* the group leader; the group id is the same */
    int fds[2]; /* read ends of its stdout and stderr pipes; -1 once closed */
    relay_t relay[2];
    int reaped, status; /* status: as from waitpid */
    time_t start_time, exit_time;
    int stopped; /* the agent had told it to stop before it exited */
    /* What the agent found out of its end beyond its status (cause.h), looked for once. */
    int judged;
    failure_cause_t cause;
    char cause_detail[512];        /* out of memory: what oom_describe says; a consequence: the
                                      words of its stderr that say so */
    long long mem_limit, mem_peak; /* an out-of-memory kill's figures (bytes; -1 unknown) */
    char gpu[BINDING_GPU_ID_MAX];  /* the GPU it works on (binding.h), "" none or not looked up */
    char gpu_pci[BINDING_PCI_MAX]; /* that GPU's PCI address, "" unknown */
    char dir[4096];        /* its folder of the attempt's, with its logs (as named in messages) */
    int dir_fd;            /* that folder, held; -1 when it writes no logs */
    char error_file[4200]; /* these three in its folder of the workers' own (run_dir.c) */
    char progress_file[4200]; /* where it may write its step (progress.h) */
    char metrics_file[4200];  /* where it may append its metrics (worker_env.h) */
    long long metrics_kept;   /* how much of its metrics file is copied into dir */
    int metrics_fd;           /* that copy, once made; -1 before */
    guard_t *guard;
    int64_t output_at;            /* ddp_now_ms of its last output */
    int64_t active_at;            /* when its current stretch of silence began (--hang-timeout) */
    unsigned long long cpu_ticks; /* its process group's CPU time when that stretch began */
} worker_t;

/* What /proc says of a worker's process group at one moment. */
typedef struct {
    unsigned long long cpu_ticks; /* CPU time (clock ticks) of its live processes */
    int stopped;                  /* its leader is stopped by a signal (state T) */
} worker_activity_t;

typedef struct {
    /* What every worker of the attempt is told (worker_env.h), filled once by the agent:
     * env.local_world_size workers start, each given its own rank, local rank, error file and
     * GPU on top. */
    ddp_worker_env_t env;
    int rank_base; /* the first worker's rank */
    /* With write_logs, each rank's folder for its logs is made in attempt_fd (the attempt's
     * folder, held: attempt_dir names it); each worker's own files are in worker_dir's (made
     * here), which a container's workers are given. */
    const char *attempt_dir, *worker_dir;
    int attempt_fd;
    int write_logs;
    /* console.h: the streams only written to the log files, those teed to the console as well,
     * the local ranks on the console, the lines' prefix (NULL: each its default). */
    const char *redirects, *tees, *local_ranks_filter, *prefix_template;
    char **command;
    int local_rank_arg;                /* append --local_rank=N to the command */
    int gpu_binding, cpu_binding;      /* binding.h */
    guard_t *guard;                    /* told of every worker's process group */
    const struct container *container; /* container.h: the image each worker runs in; NULL none */
} worker_launch_t;

/* Starts l->env.local_world_size workers into w[0..that). On failure the ones started are killed
 * and reaped. */
int workers_start(worker_t *w, const worker_launch_t *l, ddp_error_t *err);
/* Sends sig to the process group of every worker not yet reaped. */
void workers_signal(worker_t *w, int n, int sig);
/* SIGKILLs the group of every worker not yet reaped. */
void workers_kill_groups(worker_t *w, int n);
/* Collects exited workers without blocking, first killing what each left in its group (the
 * worker is gone, so nothing of it may stay); returns how many were newly reaped. */
int workers_reap(worker_t *w, int n);
int workers_running(const worker_t *w, int n);
/* Reads what is available on fd (one of a worker's pipes) and relays it; closes it at EOF. */
void workers_pump(worker_t *w, int n, int fd);
/* Whether w has written output that the agent holds back in its pipe while the agent's own
 * output is backlogged (output.h): it is waiting for the reader. */
int workers_held_back(const worker_t *w);
/* Each worker's activity into act[0..n), from one pass over /proc. */
void workers_activity(const worker_t *w, int n, worker_activity_t *act);
/* Relays what an exited worker left in its pipe for stream s (0 stdout, 1 stderr), without
 * waiting for the end of the stream. */
void workers_drain(worker_t *w, int s);
/* Copies the whole lines each worker appended to its metrics file since the last call into its
 * folder's metrics.jsonl (for the sweep's table). */
void workers_keep_metrics(worker_t *w, int n);
/* Relays what is left on every pipe, keeps the last metrics, then closes pipes, relays and
 * folders. */
void workers_close(worker_t *w, int n);

#endif
