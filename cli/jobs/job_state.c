#include "cli/jobs/job_state.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

static const char *const names[] = {
    [JOB_UNKNOWN] = "unknown",
    [JOB_PENDING] = "pending",
    [JOB_RUNNING] = "running",
    [JOB_REQUEUED] = "requeued",
    [JOB_COMPLETED] = "completed",
    [JOB_FAILED] = "failed",
    [JOB_CANCELLED] = "cancelled",
    [JOB_TIMEOUT] = "timeout",
    [JOB_OUT_OF_MEMORY] = "out of memory",
    [JOB_NODE_FAILURE] = "node failure",
};

const char *job_state_name(job_state_t s)
{
    return names[s];
}

job_state_t job_state_from_name(const char *name)
{
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(names[i], name))
            return (job_state_t)i;
    return JOB_UNKNOWN;
}

int job_state_final(job_state_t s)
{
    return s >= JOB_COMPLETED;
}

job_state_t job_state_from_exit(int status, int has_successor, int cancelled)
{
    if (status < 0)
        return JOB_RUNNING;
    if (status == 0)
        return JOB_COMPLETED;
    if (cancelled)
        return JOB_CANCELLED;
    /* Checkpointed at the walltime with no requeue left is a timeout all the same. */
    if (status == 75)
        return has_successor ? JOB_REQUEUED : JOB_TIMEOUT;
    return JOB_FAILED;
}
