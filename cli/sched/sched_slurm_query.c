#include "cli/sched/sched_slurm.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/sched/sched_query.h"

#define SQUEUE_FORMAT "%i|%T|%r|%M|%l|%N|%S|%P|%D"
#define SQUEUE_FIELDS 9

job_state_t sched_slurm_state(const char *state)
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

size_t sched_slurm_parse_squeue(const char *text, sched_job_t *jobs, size_t n)
{
    char *buf;
    size_t count, found = 0;
    char **lines = sched_bar_lines(text, SQUEUE_FIELDS, &count, &buf);
    for (size_t k = 0; k < count; k++) {
        char **f = lines + k * SQUEUE_FIELDS;
        sched_job_t *j = sched_query_find(jobs, n, f[0], strlen(f[0]));
        if (!j)
            continue;
        j->found = 1;
        j->partition_running = j->partition_running_nodes = -1;
        j->source = "squeue";
        j->scheduler = sched_slurm_ops.name;
        j->state = sched_slurm_state(f[1]);
        sched_copy(j->sched_state, sizeof j->sched_state, f[1]);
        sched_copy(j->reason, sizeof j->reason, strcmp(f[2], "None") ? f[2] : "");
        sched_copy(j->elapsed, sizeof j->elapsed, f[3]);
        sched_copy(j->walltime, sizeof j->walltime, f[4]);
        sched_copy(j->nodes, sizeof j->nodes, f[5]);
        sched_copy(j->start, sizeof j->start, strcmp(f[6], "N/A") ? f[6] : "");
        sched_copy(j->partition, sizeof j->partition, f[7]);
        j->nodes_asked = atoi(f[8]);
        j->exit_status = -1;
        found++;
    }
    free(lines);
    free(buf);
    return found;
}

/* Waits for others' jobs to end: what they hold is worth saying. */
static int waits_for_running(const sched_job_t *j)
{
    return j->found && !strcmp(j->source, "squeue") && j->state == JOB_PENDING &&
           (!strcmp(j->reason, "Resources") || !strcmp(j->reason, "Priority"));
}

void sched_slurm_parse_running(const char *text, sched_job_t *jobs, size_t n)
{
    char *buf;
    size_t count;
    char **lines = sched_bar_lines(text, 2, &count, &buf);
    for (size_t i = 0; i < n; i++) {
        if (!waits_for_running(&jobs[i]))
            continue;
        jobs[i].partition_running = jobs[i].partition_running_nodes = 0;
        for (size_t k = 0; k < count; k++) {
            if (strcmp(lines[k * 2], jobs[i].partition))
                continue;
            jobs[i].partition_running++;
            jobs[i].partition_running_nodes += atoi(lines[k * 2 + 1]);
        }
    }
    free(lines);
    free(buf);
}

/* A requeued job has a line per run, oldest first: the last one is its state now. */
size_t sched_slurm_parse_sacct(const char *text, sched_job_t *jobs, size_t n)
{
    char *buf;
    size_t count, found = 0;
    char **lines = sched_bar_lines(text, 7, &count, &buf);
    while (count > 0) {
        char **f = lines + --count * 7;
        sched_job_t *j = sched_query_find(jobs, n, f[0], strlen(f[0]));
        if (!j)
            continue;
        j->found = 1;
        j->partition_running = j->partition_running_nodes = -1;
        j->source = "sacct";
        j->scheduler = sched_slurm_ops.name;
        j->state = sched_slurm_state(f[1]);
        sched_copy(j->sched_state, sizeof j->sched_state, f[1]);
        /* ExitCode is CODE:SIGNAL. */
        int code = -1, sig = 0;
        if (sscanf(f[2], "%d:%d", &code, &sig) >= 1)
            j->exit_status = sig ? 128 + sig : code;
        sched_copy(j->elapsed, sizeof j->elapsed, f[3]);
        sched_copy(j->walltime, sizeof j->walltime, f[4]);
        sched_copy(j->nodes, sizeof j->nodes, f[5]);
        sched_copy(j->reason, sizeof j->reason, strcmp(f[6], "None") ? f[6] : "");
        found++;
    }
    free(lines);
    free(buf);
    return found;
}

/* For the jobs that wait on others: every user's running jobs, one more squeue. */
static int slurm_count_running(sched_job_t *jobs, size_t n, ddp_error_t *err)
{
    size_t waiting = 0;
    for (size_t i = 0; i < n; i++)
        waiting += waits_for_running(&jobs[i]);
    if (!waiting)
        return 0;
    char *out = NULL, *squeue[] = {"squeue", "-h", "-a", "-t", "RUNNING", "-o", "%P|%D", NULL};
    int failed;
    if (sched_run(squeue, &out, 0, &failed, err))
        return -1;
    sched_slurm_parse_running(out, jobs, n);
    free(out);
    return 0;
}

int sched_slurm_query(sched_job_t *jobs, size_t n, ddp_error_t *err)
{
    char *ids = sched_missing_ids(jobs, n), *out = NULL;
    if (!ids)
        return 0;
    int failed;
    /* Every job of this user that Slurm still holds, finished ones within MinJobAge too: no
     * error for an id it has forgotten, which squeue -j gives. */
    char *squeue[] = {"squeue", "-h", "-a", "-r", "-t", "all", "--me", "-o", SQUEUE_FORMAT, NULL};
    if (sched_run(squeue, &out, 0, &failed, err)) {
        free(ids);
        return -1;
    }
    sched_slurm_parse_squeue(out, jobs, n);
    free(out);
    free(ids);
    if (slurm_count_running(jobs, n, err))
        return -1;
    if (!(ids = sched_missing_ids(jobs, n)))
        return 0;
    char *sacct[] = {"sacct", "-n", "-P", "-X",
                     "-j",    ids,  "-o", "JobID,State,ExitCode,Elapsed,Timelimit,NodeList,Reason",
                     NULL};
    /* Without accounting sacct fails: the record answers for those jobs. */
    if (sched_run(sacct, &out, 1, &failed, err) == 0 && !failed)
        sched_slurm_parse_sacct(out, jobs, n);
    free(out);
    free(ids);
    return 0;
}
