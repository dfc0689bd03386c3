/* report: what went wrong in a job, told the same way by every agent.
 *
 * A failure_t is the first failure of an attempt: which node, host and rank, what happened
 * (an exit code, a signal, a lost agent, a signal to the agent, a straggler) and when, why where
 * the agent found out (cause.h), and the status the job exits with. It travels between agents
 * through the store as text. At the end, each agent prints the job's first failure and the failed
 * ranks of its own node (with the last lines of their stderr), and writes the same facts as JSON to
 * --error-file when asked. */
#ifndef AGENT_REPORT_H
#define AGENT_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "agent/findings/cause.h"
#include "runtime/base/ddp_error.h"
#include "agent/workers/workers.h"

typedef enum {
    FAIL_WORKER,     /* a worker exited non-zero or died of a signal: restartable */
    FAIL_LOST,       /* an agent or the store went away */
    FAIL_SIGNAL,     /* an agent was told to stop (SIGTERM, SIGINT, SIGHUP) */
    FAIL_TIMEOUT,    /* a finished node waited too long for the others */
    FAIL_PREFLIGHT,  /* the nodes differ and the preflight is strict */
    FAIL_MEMBERSHIP, /* an elastic world grows: agents wait to join at a restart */
} failure_kind_t;

typedef struct {
    failure_kind_t kind;
    int code;                   /* the job's exit status */
    int node, rank, local_rank; /* -1 where it does not apply */
    failure_cause_t cause;      /* a worker's: its own, out of memory, or a consequence */
    char host[256];
    char when[32];
    char what[512];
} failure_t;

/* Fills f->when with the current UTC time. */
void failure_stamp(failure_t *f);
/* "exited with code 3" / "killed by SIGKILL" for a wait status; *code gets 3 / 137. */
void failure_from_status(int status, char *what, size_t size, int *code);
/* What ended worker w, as a failure of this node's (node, host): its status, or, where the agent
 * found more, the out-of-memory kill. */
failure_t failure_of_worker(const worker_t *w, int node, const char *host);
/* A failure of node `node` (or of the job: -1) on host, stamped now. */
failure_t node_failure(failure_kind_t kind, int code, int node, const char *host, const char *fmt,
                       ...) __attribute__((format(printf, 5, 6)));
/* A failure of worker w (of node `node` on host), stamped now. */
failure_t worker_failure(const worker_t *w, int node, const char *host, int code, const char *fmt,
                         ...) __attribute__((format(printf, 5, 6)));
int failure_encode(const failure_t *f, char *buf, size_t size);
int failure_decode(const char *text, failure_t *f);
/* One line: "rank 3 (node 1, host n2, local rank 1) exited with code 7 at ...". */
void failure_line(const failure_t *f, char *buf, size_t size);

/* Prints the summary of a failed job to `out`. */
void report_summary(FILE *out, const failure_t *first, const worker_t *w, int n, int node,
                    const char *host);
/* Writes the JSON report to path (atomically); membership: node 0's list of the nodes that
 * took a lost one's place (progress.h), or NULL. */
int report_error_file(const char *path, const failure_t *first, const worker_t *w, int n, int node,
                      const char *host, const char *membership, ddp_error_t *err);

#endif
