/* attempt: one attempt's end and its workers' phase on this node (agent.h tells the states and
 * transitions).
 *
 * This module is the one writer of an attempt's end: the first end wins (attempt_take_end), a
 * failure that is a consequence (cause.h) giving way to another failure; agent.h's two overrides
 * are attempt_stop_signalled and the checkpoints written on a stop signal (attempt_say_outcome).
 * Checks elsewhere return the failures they find; attempt_fail makes one the attempt's. Private
 * to ddpjob-agent. */
#ifndef AGENT_ATTEMPT_H
#define AGENT_ATTEMPT_H

#include "agent/supervision/agent_state.h"

/* The store key r<round>/name of the attempt. */
void attempt_key(const attempt_t *t, char *buf, size_t size, const char *name);
/* Takes `end` (with `first`, for END_FAILED) as the attempt's when it may: no end yet, or a
 * failure replacing a consequence. Returns whether it did. */
int attempt_take_end(attempt_t *t, end_kind_t end, const failure_t *first);
/* This node was told to stop (f): an end unknown or done becomes that failure. */
void attempt_stop_signalled(attempt_t *t, const failure_t *f);
/* Records the attempt's end (f for END_FAILED) unless another agent got there first; either
 * way t takes the end the store holds. Errors leave f as this agent's view. */
void attempt_publish_end(agent_t *a, attempt_t *t, const failure_t *f, end_kind_t kind);
/* f stands for the job: published (or, the store lost, taken here), and this node's workers
 * stopped. */
void attempt_fail(agent_t *a, attempt_t *t, const failure_t *f);
/* The store stopped answering (why): the attempt fails here. */
void attempt_lose_store(agent_t *a, attempt_t *t, const char *why);
/* The one way the workers' phase changes: forward only, each phase's deadline set on entry.
 * Returns 0 when the phase was already `next` or later. */
int attempt_enter_phase(const agent_t *a, attempt_t *t, workers_phase_t next);
/* Stops this node's workers (sig, then SIGKILL after --grace). */
void attempt_begin_stop(agent_t *a, attempt_t *t, int sig);
void attempt_on_reaped(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r);
void attempt_check_checkpoint_wait(agent_t *a, attempt_t *t);
/* A consequence held for its cause until now: it stands for the job. */
void attempt_release_held(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r);
/* Reads the attempt's end again: a consequence published first may have been replaced by the
 * failure that caused it. */
void attempt_refresh_end(agent_t *a, attempt_t *t);
/* The parked WAIT on the end key answered: its end taken (a failure stops the workers). */
void attempt_on_watch(agent_t *a, attempt_t *t);
int attempt_stopped_with_checkpoints(const attempt_t *t);
int attempt_will_restart(const agent_t *a, const attempt_t *t);
/* The job failed for good: its summary on stderr, and --error-file when asked for. */
void attempt_report_failure(agent_t *a, const attempt_t *t);
/* What the attempt's end means for this node, said once its workers are gone. */
void attempt_say_outcome(agent_t *a, attempt_t *t);

#endif
