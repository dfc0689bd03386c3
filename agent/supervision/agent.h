/* agent: one node's part of a job, from rendezvous to exit.
 *
 * The node-0 agent serves the store; every agent joins it, starts its workers and watches
 * them, its store connection and its signals in one poll loop. The first failure anywhere is
 * published under the attempt's "end" key with compare-and-set, so every agent sees the same
 * first failure; a parked WAIT on that key tells each agent at once, and heartbeats catch an
 * agent that vanished without closing its connection. Success is published the same way when
 * the last node's workers have all exited 0, so nobody waits at the end.
 *
 * An attempt (one rendezvous round and its workers) has two states on each agent:
 *   its end: unknown → failed (the first failure, from anywhere) | done | checkpointed (every
 *     rank exited 75 on request). Set once, by whichever agent wins the compare-and-set, and
 *     read by all; two local overrides: a stop signal turns unknown or done into failed (this
 *     node was told to stop), and a failure by a stop signal, or by a rank's exit 75 (the
 *     stop reached it first), whose workers all exited 75 becomes checkpointed.
 *   this node's workers' phase, forward only (a step may be skipped):
 *     running → settled (all ended well and counted in the store; the others get
 *     --exit-timeout) → stopping (asked to stop, once the end is known to be a failure or a
 *     signal came; SIGKILL after --grace) → killed.
 * The poll loop ends when every worker has been reaped and the end is known; a failed end with
 * restarts left and a worker to blame starts the next round. */
#ifndef AGENT_AGENT_H
#define AGENT_AGENT_H

#include "agent/supervision/options.h"

/* Runs the job on this node; returns the agent's exit status (see --help). */
int agent_run(const agent_options_t *o);

#endif
