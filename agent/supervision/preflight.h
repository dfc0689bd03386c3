/* preflight: the nodes' fingerprints (fingerprint.h) side by side.
 *
 * Node 0 prints what differs across the nodes (each fact that must agree, with its values and
 * the nodes that have each) and advice for the traps that make a multi-node job fail or crawl
 * on hosts without a scheduler's care: no InfiniBand while NCCL_IB_DISABLE is unset,
 * NCCL_SOCKET_IFNAME naming an interface a node lacks, no network every node is on, fewer GPUs
 * than workers. `ddpjob doctor` prints every fact. Under `preflight: strict` a difference fails
 * the job; every node decides that alike from the same fingerprints. Its store side carries
 * them: each node publishes its own, node 0 reads them all, before the
 * workers (strict, doctor) or beside them (report, which the workers never wait for). */
#ifndef AGENT_PREFLIGHT_H
#define AGENT_PREFLIGHT_H

#include <stdio.h>

#include "agent/supervision/agent_state.h"

typedef enum {
    PREFLIGHT_REPORT, /* print what differs and the advice, then run the job */
    PREFLIGHT_STRICT, /* and fail it, before any worker starts, when the nodes differ */
    PREFLIGHT_ONLY,   /* `ddpjob doctor`: print every fact and the advice; start no worker */
} preflight_mode_t;

/* How many facts that must agree differ across fingerprints fp[0..nnodes-1]. */
int preflight_differences(char *const *fp, int nnodes);

/* Prints the report to out: every fact when `all`, else only what differs; then the advice. */
void preflight_report(FILE *out, char *const *fp, int nnodes, int all);

/* ---- the store side ---- */

typedef enum {
    PREFLIGHT_RUN_WORKERS,
    PREFLIGHT_NO_WORKERS, /* doctor's: the report was all */
    PREFLIGHT_FAILS_JOB,  /* strict, and the nodes differ (or cannot be compared) */
} preflight_verdict_t;

/* Whether the preflight comes before the workers (doctor's; strict on several nodes). */
int preflight_first(const agent_options_t *o);
/* This node's fingerprint into the store, counted in (fp NULL: out of memory). */
int preflight_publish_fingerprint(agent_t *a, const char *fp, ddp_error_t *err);
/* The preflight that comes first, every fingerprint being in the store: node 0 prints the
 * report; every node takes the same verdict from the same facts (*f: the job's failure). */
preflight_verdict_t preflight_before_workers(agent_t *a, failure_t *f);
/* The verdict from what was read (read: the fingerprints could be; differ: how many facts). */
preflight_verdict_t preflight_verdict(int mode, int read, int differ, failure_t *f);
/* The preflight beside the workers (report on several nodes): this node's fingerprint published
 * once its probe is done (waiting up to wait_ms for it now); node 0 prints the report once every
 * node's is in. */
void preflight_beside(agent_t *a, int64_t wait_ms);

#endif
