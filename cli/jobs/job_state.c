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

job_state_t job_state_from_slurm(const char *state)
{
    static const struct {
        const char *word;
        job_state_t state;
    } map[] = {
        {"PENDING", JOB_PENDING},        {"CONFIGURING", JOB_RUNNING},
        {"RUNNING", JOB_RUNNING},        {"COMPLETING", JOB_RUNNING},
        {"SUSPENDED", JOB_RUNNING},      {"STOPPED", JOB_RUNNING},
        {"RESIZING", JOB_RUNNING},       {"SIGNALING", JOB_RUNNING},
        {"STAGE_OUT", JOB_RUNNING},      {"REQUEUED", JOB_REQUEUED},
        {"REQUEUE_HOLD", JOB_REQUEUED},  {"REQUEUE_FED", JOB_REQUEUED},
        {"COMPLETED", JOB_COMPLETED},    {"FAILED", JOB_FAILED},
        {"BOOT_FAIL", JOB_NODE_FAILURE}, {"NODE_FAIL", JOB_NODE_FAILURE},
        {"CANCELLED", JOB_CANCELLED},    {"REVOKED", JOB_CANCELLED},
        {"PREEMPTED", JOB_CANCELLED},    {"DEADLINE", JOB_TIMEOUT},
        {"TIMEOUT", JOB_TIMEOUT},        {"OUT_OF_MEMORY", JOB_OUT_OF_MEMORY},
        {"SPECIAL_EXIT", JOB_FAILED},
    };
    if (!state)
        return JOB_UNKNOWN;
    while (isspace((unsigned char)*state))
        state++;
    size_t len = 0;
    while (state[len] && (isalnum((unsigned char)state[len]) || state[len] == '_'))
        len++;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strlen(map[i].word) == len && !strncasecmp(map[i].word, state, len))
            return map[i].state;
    return JOB_UNKNOWN;
}

job_state_t job_state_from_pbs(char state, int exit_status)
{
    switch (state) {
    case 'Q':
    case 'H':
    case 'W':
    case 'T':
    case 'S':
    case 'U':
        return JOB_PENDING;
    case 'R':
    case 'E':
    case 'B':
        return JOB_RUNNING;
    case 'F':
    case 'X':
        if (exit_status == 0)
            return JOB_COMPLETED;
        if (exit_status == -29)
            return JOB_TIMEOUT;
        if (exit_status == 256 + 9 || exit_status == 256 + 15 || exit_status == 128 + 9)
            return JOB_CANCELLED;
        if (exit_status == 75)
            return JOB_REQUEUED;
        /* Finished without an exit status: deleted before it ran. */
        return exit_status == -1 ? JOB_CANCELLED : JOB_FAILED;
    default:
        return JOB_UNKNOWN;
    }
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
