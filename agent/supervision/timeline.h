/* timeline: node 0's history of its link (--history-file; history.h): opened when this agent
 * first is node 0, sampled at each heartbeat, and the events the agent's modules record in it
 * beside what they say. Every other node, and an agent without --history-file, records nothing.
 * A history that cannot be written is said once and left off: it never fails the job. Private to
 * ddpjob-agent. */
#ifndef AGENT_TIMELINE_H
#define AGENT_TIMELINE_H

#include "agent/supervision/agent_state.h"

/* Each attempt, once this agent's node rank is known: opens the history on node 0. */
void timeline_start(agent_t *a);
/* A sample of every rank, at most once per interval (force: now). */
void timeline_sample(agent_t *a, const attempt_t *t, int force);
/* An event (history.h's kinds) of attempt `attempt` about rank (-1: none). */
void timeline_event(agent_t *a, const char *kind, int attempt, int rank, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The attempt's end: completed, checkpointed, or its first failure. */
void timeline_attempt_end(agent_t *a, const attempt_t *t);
void timeline_close(agent_t *a);

#endif
