/* sched_pbs_tasks: what a PBS job's node 0 concludes from the pbsdsh tasks that run the other
 * nodes' agents (the decisions of `ddpjob pbs-agents`, apart from its processes).
 *
 * pbsdsh's own exit status means nothing (the real one always exits 0): it prints a task's
 * non-zero status ("pbsdsh: task 0x00000000 exit status 127") among the task's output. Node 0's
 * agent learns every joined node's outcome through the store, so its status is the job's; only a
 * node whose agent never joined is invisible to it, which is what these decisions cover. */
#ifndef DDPJOB_PBS_TASKS_H
#define DDPJOB_PBS_TASKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/job/job_contract.h"

/* How long node 0's agent may go on after a node's agent ended with a status: past the agent's
 * own 10 s grace for its workers, so an agent that follows by itself is never cut short. */
#define PBS_TASK_FOLLOW_MS 20000
/* How long the other nodes' tasks may outlive node 0's agent before they are stopped. */
#define PBS_TASK_DRAIN_MS JOB_DRAIN_MS

/* The status pbsdsh printed for a task in `text` (the task's captured output): 1 with *status
 * set, 0 when it printed none (the task ended with 0, or pbsdsh said nothing). */
int pbs_task_status(const char *text, int *status);

/* A node's agent ended with `status`: sets `why` (for "node R (HOST): its agent ...") and returns
 * how long node 0's agent may still run before the job is stopped (0: at once, when the agent
 * could not be run at all: 126 and 127 from bash, 254 from PBS, or a task that never said it
 * `started`, as a qrsh task whose status is its setup's). */
int64_t pbs_task_grace_ms(int status, bool started, char *why, size_t size);

/* The job's status from node 0's agent's `agent_status` and, when a node's task had failed
 * (failed_status >= 0), whether node 0 was stopped for it (`stopped`): the failed task's status
 * where node 0 was stopped for it or ended 0 regardless; then in the shell's terms (PBS reports a
 * task killed by signal S as 256+S, a shell 128+S). */
int pbs_job_status(int agent_status, int failed_status, int stopped);

/* A status as a shell reports it. */
int pbs_shell_status(int status);

#endif
