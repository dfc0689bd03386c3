/* dev_record: an allocation `ddpjob dev` holds, and the runs asked of it. The allocation is a
 * batch job whose script, instead of starting the agents, runs the holder (`ddpjob dev-hold`);
 * each `ddpjob run --in` (and each trial of a packed sweep) is a job script of its own with a
 * record of its own (job.json's held_in names the allocation's, its nodes how many it takes),
 * which the holder runs inside the allocation on as many of its nodes, several at once where
 * they fit, so that its agents start as a batch job's do: a step of the allocation (Slurm), the
 * job's tasks (PBS), on those nodes alone (HELD_NODES_ENV).
 * Beside the files of every job record (job_record.h), the allocation's holds:
 *
 *   ready        "EPOCH HOST..." written by the holder when it starts: the held nodes
 *   holder       "idle SINCE" or "run K SINCE": what the holder does now (replaced whole; K
 *                one of the runs going)
 *   released     "EPOCH WHY" when the holder let the allocation go (WHY: idle, walltime, signal,
 *                done); gone again when a next link of it holds the nodes anew
 *   notice       a line for open shells (the walltime near), replaced whole; each shell's node
 *                side shows each new one
 *   runs/K/      run K, reserved by `run --in` (made with mkdir: two at once get two numbers);
 *                its file `failed` says why the holder could not start it, `ended` its status
 *                once it ended for good (not asked again), in whichever link of the allocation
 *   requests/K   run K asked: its record's folder; the holder takes (removes) the lowest first
 *   node-env     what a shell on a held node runs first: the batch shell's environment and the
 *                spec's node setup (written by the allocation's script)
 *   shells/S/    a shell `ddpjob shell` asked for (made with mkdir, as runs are): token (the
 *                client's secret), node (its index), argv (the command, NUL-separated; empty:
 *                an interactive shell), asked (last, once the rest is there); then taken (the
 *                holder started the node's side), endpoint ("HOST PORT", from the node's side)
 *                or failed (why not)
 *
 * Every file is the user's own in the record's private folders; what the holder runs, it reads
 * through a descriptor checked as the user's own (never the name again). */
#ifndef DDPJOB_DEV_RECORD_H
#define DDPJOB_DEV_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "cli/jobs/job_record.h"
#include "runtime/base/ddp_error.h"

/* What the holder tells a run it starts: its nodes ("host,host"), its number, the link of its
 * own record it runs as (0; more for a run asked again), and the allocation's end (epoch s,
 * where known). A run's job script (rendered with held_run) reads them instead of the
 * scheduler's node list, restart count and walltime. */
#define HELD_NODES_ENV "DDPJOB_HELD_NODES"
#define HELD_RUN_ENV "DDPJOB_HELD_RUN"
#define HELD_LINK_ENV "DDPJOB_HELD_LINK"
#define HELD_DEADLINE_ENV "DDPJOB_HELD_DEADLINE"

typedef struct {
    int ready; /* the holder started: the nodes are held */
    int64_t ready_at;
    char hosts[4096]; /* the held nodes, blank-separated */
    int nhosts;
    int run;       /* the run going now (K), 0: idle */
    int64_t since; /* since when the holder is idle or runs it */
    int released;  /* the holder let the allocation go */
    int64_t released_at;
    char why[32];
} dev_state_t;

/* The allocation that `name` names (a name, job id or record folder), read into r: its record
 * folder (malloc'd), when it is one `ddpjob dev` holds; NULL with err. */
char *dev_record_find(const char *name, job_record_t *r, ddp_error_t *err);

/* What the holder of the allocation recorded in dev says now; missing files leave it zero. */
void dev_state_read(const char *dev, dev_state_t *s);

/* run --in's and shell's side. The next number of `kind` ("runs", "shells"), reserved (KIND/K
 * made); -1 with err. */
int dev_reserve(const char *dev, const char *kind, int *k, ddp_error_t *err);
/* Asks the holder for run k, whose record is run_record; -1 with err. */
int dev_run_request(const char *dev, int k, const char *run_record, ddp_error_t *err);
/* Withdraws run k's request: 1 when it was still waiting (now gone), 0 when the holder took it. */
int dev_run_withdraw(const char *dev, int k);
/* Why the holder could not start run k (malloc'd), or NULL when it did not say so. */
char *dev_run_failed(const char *dev, int k);

/* The holder's side. The lowest run asked: 1 with *k and run_record set, 0 when none waits; the
 * holder takes it with dev_run_withdraw (0: withdrawn by run --in meanwhile). */
int dev_request_peek(const char *dev, int *k, char *run_record, size_t size);
/* Whether any run is asked and not yet taken. */
int dev_requests_waiting(const char *dev);
int dev_ready_write(const char *dev, char *const *hosts, int nhosts, ddp_error_t *err);
/* run: the run K going now, 0 when idle. */
int dev_holder_write(const char *dev, int run, int64_t since, ddp_error_t *err);
int dev_released_write(const char *dev, const char *why, ddp_error_t *err);
int dev_notice_write(const char *dev, const char *text, ddp_error_t *err);
void dev_run_fail(const char *dev, int k, const char *why);
/* Run k ended for good with `status` (runs/K/ended); -1 with err. */
int dev_run_ended_write(const char *dev, int k, int status, ddp_error_t *err);
/* Whether any run of the allocation, in any of its links, ended with a status other than 0 or
 * could not start. */
int dev_runs_unsuccessful(const char *dev);
/* The lowest shell asked and not yet taken: 1 with *k and *node set (now taken), 0 when none. */
int dev_shell_next(const char *dev, int *k, int *node);
/* The same for shells/K: why its node's side could not start. */
void dev_shell_fail(const char *dev, int k, const char *why);

#endif
