#include "cli/sched/sched_pbs_tasks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pbs_task_status(const char *text, int *status)
{
    static const char prefix[] = "pbsdsh: task ";
    static const char marker[] = " exit status ";
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > sizeof prefix - 1 && !strncmp(line, prefix, sizeof prefix - 1)) {
            const char *at = NULL;
            for (const char *p = line; p + sizeof marker - 1 <= line + len; p++)
                if (!strncmp(p, marker, sizeof marker - 1))
                    at = p + sizeof marker - 1;
            char *stop = NULL;
            long v = at ? strtol(at, &stop, 10) : -1;
            if (at && stop > at && stop == line + len && v >= 0 && v < 1024) {
                *status = (int)v;
                return 1;
            }
        }
        line = end ? end + 1 : NULL;
    }
    return 0;
}

int64_t pbs_task_grace_ms(int status, bool started, char *why, size_t size)
{
    if (!started || status == 126 || status == 127 || status == 254) {
        snprintf(why, size, "could not start (status %d; its output is above)", status);
        return 0;
    }
    snprintf(why, size, "ended with status %d, yet node 0's did not follow", status);
    return PBS_TASK_FOLLOW_MS;
}

int pbs_shell_status(int status)
{
    return status >= 256 ? status - 128 : status;
}

int pbs_job_status(int agent_status, int failed_status, int stopped)
{
    int status = agent_status;
    if (failed_status >= 0 && (stopped || agent_status == 0))
        status = failed_status;
    return pbs_shell_status(status);
}
