/* preflight: the nodes' fingerprints (fingerprint.h) side by side.
 *
 * Node 0 prints what differs across the nodes (each fact that must agree, with its values and
 * the nodes that have each) and advice for the traps that make a multi-node job fail or crawl
 * on hosts without a scheduler's care: no InfiniBand while NCCL_IB_DISABLE is unset,
 * NCCL_SOCKET_IFNAME naming an interface a node lacks, no network every node is on, fewer GPUs
 * than workers. `ddpjob doctor` prints every fact. Under `preflight: strict` a difference fails
 * the job; every node decides that alike from the same fingerprints. Its store side (declared in
 * agent_state.h) carries them: each node publishes its own, node 0 reads them all, before the
 * workers (strict, doctor) or beside them (report, which the workers never wait for). */
#ifndef AGENT_PREFLIGHT_H
#define AGENT_PREFLIGHT_H

#include <stdio.h>

typedef enum {
    PREFLIGHT_REPORT, /* print what differs and the advice, then run the job */
    PREFLIGHT_STRICT, /* and fail it, before any worker starts, when the nodes differ */
    PREFLIGHT_ONLY,   /* `ddpjob doctor`: print every fact and the advice; start no worker */
} preflight_mode_t;

/* How many facts that must agree differ across fingerprints fp[0..nnodes-1]. */
int preflight_differences(char *const *fp, int nnodes);

/* Prints the report to out: every fact when `all`, else only what differs; then the advice. */
void preflight_report(FILE *out, char *const *fp, int nnodes, int all);

#endif
