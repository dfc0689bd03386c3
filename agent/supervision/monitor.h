/* monitor: the agent's poll loops, where what the checks find is applied.
 *
 * One loop per attempt watches this node's workers (their pipes and exits), its signals, the
 * parked WAIT on the attempt's end, and the deadlines of the workers' phase (attempt.h); each
 * heartbeat it runs the checks (liveness.h, standby.h), each returning the failure it found,
 * and makes that the attempt's (attempt_fail). A standby's loop waits for the end alone. Private
 * to ddpjob-agent. */
#ifndef AGENT_MONITOR_H
#define AGENT_MONITOR_H

#include "agent/supervision/agent_state.h"

/* Reads pending signals: stop signals are remembered, USR1/USR2 go to the attempt's workers (t:
 * NULL outside an attempt). */
void monitor_read_signals(agent_t *a, attempt_t *t);
/* Returns when every worker has been reaped and the attempt's end is known. */
void monitor_attempt(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r);
/* A standby's attempt: returns once its end is known (or a stop signal came, or the store
 * went). */
void monitor_standby(agent_t *a, attempt_t *t);

#endif
