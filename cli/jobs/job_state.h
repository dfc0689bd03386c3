/* job_state: one vocabulary for a job's state, whatever the scheduler says (documented in
 * ddpjob(1), STATES). Each scheduler maps its own words to it in its row of the scheduler seam
 * (cli/sched/); the job's record maps its batch shell's status here. */
#ifndef DDPJOB_JOB_STATE_H
#define DDPJOB_JOB_STATE_H

typedef enum {
    JOB_UNKNOWN,
    JOB_PENDING,
    JOB_RUNNING,
    JOB_REQUEUED, /* a link ended checkpointed; its successor is queued or starting */
    JOB_COMPLETED,
    JOB_FAILED,
    JOB_CANCELLED,
    JOB_TIMEOUT,
    JOB_OUT_OF_MEMORY,
    JOB_NODE_FAILURE,
} job_state_t;

/* The state's word ("pending", "out of memory", ...), as status prints it and its JSON holds. */
const char *job_state_name(job_state_t s);

/* The state job_state_name names; JOB_UNKNOWN for any other word. */
job_state_t job_state_from_name(const char *name);

/* Whether the job has ended for good (nothing of it runs or waits in a queue). */
int job_state_final(job_state_t s);

/* From the job's own record: the batch shell's final status (75: checkpointed, requeued when a
 * later link exists), or -1 while the link has not ended. */
job_state_t job_state_from_exit(int status, int has_successor, int cancelled);

#endif
