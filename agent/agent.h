/* agent: one node's part of a job, from rendezvous to exit.
 *
 * The node-0 agent serves the store; every agent joins it, starts its workers and watches
 * them, its store connection and its signals in one poll loop. The first failure anywhere is
 * published under the attempt's "end" key with compare-and-set, so every agent sees the same
 * first failure; a parked WAIT on that key tells each agent at once, and heartbeats catch an
 * agent that vanished without closing its connection. Success is published the same way when
 * the last node's workers have all exited 0, so nobody waits at the end. */
#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

#include "options.h"

/* Runs the job on this node; returns the agent's exit status (see --help). */
int agent_run(agent_options_t *o);

#endif
