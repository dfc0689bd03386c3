/* liveness: whether the job's nodes and this node's workers are still alive and moving.
 *
 * Each agent keeps a store connection that sets gone/<node> when it closes, and beats a
 * heartbeat count; node 0 finds a node whose agent is gone or silent for two intervals lost.
 * With --hang-timeout a worker silent and idle that long is hung, and node 0 names the rank the
 * others wait for when no step moves (progress.h). Each check returns the failure it found; the
 * caller makes it the attempt's (attempt.h). Private to ddpjob-agent. */
#ifndef AGENT_LIVENESS_H
#define AGENT_LIVENESS_H

#include "agent/supervision/agent_state.h"

/* Nodes (other than 0) whose agent is gone in this round, and node `silent` (0: none): their
 * count and, in *first, the lowest (-1: none); -1 when the store cannot be read. */
int liveness_gone_nodes(agent_t *a, int round, int silent, int *first);
/* The failure of node `node`, whose agent is gone. */
failure_t liveness_lost_node(agent_t *a, int node, const ddp_rdzv_result_t *r);
/* Node 0's store stopped answering (why): nothing more is asked of it; the failure that is. */
failure_t liveness_store_lost(agent_t *a, const char *why);
/* Each heartbeat: this node's workers' progress sampled; node 0 checks the others' heartbeats,
 * the others beat theirs. Returns 1 with *f when a node is lost (or, not node 0, the store). */
int liveness_heartbeat(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r, failure_t *f);
/* Node 0, each heartbeat: slow ranks said; with --hang-timeout, 1 with *f when no step moves. */
int liveness_check_progress(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r, failure_t *f);
/* --hang-timeout: 1 with *f for the first of this node's workers that is hung. */
int liveness_check_hangs(agent_t *a, attempt_t *t, failure_t *f);
/* A node whose workers have all ended: their last steps (written after the last heartbeat's
 * sample) to node 0, before it counts the node settled; and node 0 reads every node's once
 * more before its last --progress-file. So a short job's last steps are not lost. */
void liveness_publish_last_steps(agent_t *a, attempt_t *t);
void liveness_collect_last_steps(agent_t *a, attempt_t *t);
/* Node 0: every rank's progress into --progress-file, now. */
void liveness_write_progress(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r);

/* The decisions, apart from the store and /proc (the unit tests drive them). */
/* Takes node i's heartbeat vals[i - 1] (a new value is kept: vals' entry becomes NULL);
 * returns the first node silent for over two intervals (*silent_ms: how long), or 0. */
int liveness_note_heartbeats(attempt_t *t, char **vals, int nnodes, int64_t now, int heartbeat_ms,
                             int64_t *silent_ms);
/* How long worker w has been hung by its activity act (held_back: it waits on the agent's
 * output), or 0 when it is not (its silence restarts when it was active). */
int64_t liveness_hung_for(worker_t *w, const worker_activity_t *act, int held_back, int64_t now,
                          int64_t timeout_ms, long ticks_per_s);

#endif
