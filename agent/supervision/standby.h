/* standby: spare nodes and elastic worlds on the agent's side (standby.c says how). Private to
 * ddpjob-agent; used only when agent_options_elastic(). */
#ifndef AGENT_STANDBY_H
#define AGENT_STANDBY_H

#include "agent/supervision/agent_state.h"

/* The rendezvous settings from the options; this agent's slot is its node rank. */
void standby_setup(agent_t *a);
/* Before each round's join: the slot and the settings into join (a late agent's first round is
 * the one after the last formed, into t->round). */
int standby_before_join(agent_t *a, attempt_t *t, ddp_rdzv_join_t *join, ddp_error_t *err);
/* After the join: the attempt's round, node count and this agent's node rank, or standby. */
int standby_after_join(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r, ddp_error_t *err);
/* Node 0, after a failed attempt: the nodes it lost are excluded. */
void standby_after_attempt(agent_t *a, const attempt_t *t);
/* Node 0, each heartbeat: agents waiting to join a world below its most end the attempt (1,
 * with *f). */
int standby_check_growth(agent_t *a, const attempt_t *t, failure_t *f);
/* The decision: `waiting` agents for the next round of a world of nnodes (at most max_nodes). */
int standby_growth_failure(int elastic, int nnodes, int max_nodes, int waiting, failure_t *f);
void standby_teardown(agent_t *a);

#endif
