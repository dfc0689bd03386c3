#include "cli/sched/sched_pbs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/sched/sched_query.h"

job_state_t sched_pbs_state(char state, int exit_status)
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

/* One "    key = value" of qstat -f, with its continuation lines (a tab first) joined. */
static void pbs_attribute(sched_job_t *j, const char *key, const char *value)
{
    if (!strcmp(key, "job_state")) {
        sched_copy(j->sched_state, sizeof j->sched_state, value);
    } else if (!strcmp(key, "Exit_status")) {
        j->exit_status = atoi(value);
    } else if (!strcmp(key, "comment")) {
        sched_copy(j->reason, sizeof j->reason, value);
    } else if (!strcmp(key, "resources_used.walltime")) {
        sched_copy(j->elapsed, sizeof j->elapsed, value);
    } else if (!strcmp(key, "Resource_List.walltime")) {
        sched_copy(j->walltime, sizeof j->walltime, value);
    } else if (!strcmp(key, "exec_host")) {
        sched_copy(j->nodes, sizeof j->nodes, value);
    } else if (!strcmp(key, "queue")) {
        sched_copy(j->partition, sizeof j->partition, value);
    } else if (!strcmp(key, "estimated.start_time")) {
        sched_copy(j->start, sizeof j->start, value);
    } else if (!strcmp(key, "Hold_Types")) {
        sched_copy(j->hold_types, sizeof j->hold_types, value);
    } else if (!strcmp(key, "depend")) {
        j->has_dependency = 1;
    } else if (!strcmp(key, "Resource_List.nodect")) {
        j->nodes_asked = atoi(value);
    }
}

size_t sched_pbs_parse_qstat(const char *text, sched_job_t *jobs, size_t n)
{
    size_t found = 0;
    sched_job_t *j = NULL;
    char key[128], value[4096];
    key[0] = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (!strncmp(line, "Job Id: ", 8)) {
            if (j && key[0])
                pbs_attribute(j, key, value);
            key[0] = 0;
            const char *id = line + 8;
            size_t id_len = len - 8;
            while (id_len && (id[id_len - 1] == '\r' || id[id_len - 1] == ' '))
                id_len--;
            if ((j = sched_query_find(jobs, n, id, id_len))) {
                j->found = 1;
                j->partition_running = j->partition_running_nodes = -1;
                j->source = "qstat";
                j->scheduler = sched_pbs_ops.name;
                j->exit_status = -1;
                found++;
            }
        } else if (j && line[0] == '\t' && key[0]) {
            size_t have = strlen(value);
            snprintf(value + have, sizeof value - have, "%.*s", (int)(len - 1), line + 1);
        } else if (j && len > 4 && !strncmp(line, "    ", 4)) {
            if (key[0])
                pbs_attribute(j, key, value);
            const char *eq = memchr(line, '=', len);
            key[0] = 0;
            if (eq && eq > line + 5) {
                snprintf(key, sizeof key, "%.*s", (int)(eq - 1 - (line + 4)), line + 4);
                const char *v = eq + 1 + (eq[1] == ' ');
                snprintf(value, sizeof value, "%.*s", (int)(line + len - v), v);
            }
        }
        line = end ? end + 1 : NULL;
    }
    if (j && key[0])
        pbs_attribute(j, key, value);
    for (size_t i = 0; i < n; i++)
        if (jobs[i].found && !strcmp(jobs[i].source, "qstat"))
            jobs[i].state = sched_pbs_state(jobs[i].sched_state[0], jobs[i].exit_status);
    return found;
}

int sched_pbs_query(sched_job_t *jobs, size_t n, ddp_error_t *err)
{
    size_t want = 0;
    for (size_t i = 0; i < n; i++)
        want += !jobs[i].found && jobs[i].id[0];
    if (!want)
        return 0;
    char **argv = calloc(want + 5, sizeof *argv);
    if (!argv)
        return ddp_error_set(err, "out of memory");
    size_t a = 0;
    argv[a++] = "qstat";
    argv[a++] = "-x";
    argv[a++] = "-f";
    argv[a++] = "--";
    for (size_t i = 0; i < n; i++)
        if (!jobs[i].found && jobs[i].id[0])
            argv[a++] = jobs[i].id;
    char *out = NULL;
    int failed;
    /* qstat fails when any id is unknown (purged from the history) yet prints the others. */
    int rc = sched_run(argv, &out, 1, &failed, err);
    free(argv);
    if (rc)
        return -1;
    sched_pbs_parse_qstat(out, jobs, n);
    free(out);
    return 0;
}
