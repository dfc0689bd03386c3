#include "cli/sched/sched_sge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/sched/sched_query.h"

/* qacct reads the whole accounting file for each job it is asked of: only so many per call. */
#define SGE_QACCT_MAX 16
/* qstat -j for waiting jobs' reasons: so many per call. */
#define SGE_JOB_INFO_MAX 32

job_state_t sched_sge_state(const char *letters)
{
    if (strchr(letters, 'd'))
        return JOB_CANCELLED; /* being deleted */
    if (strchr(letters, 'E'))
        return JOB_PENDING; /* in error, waits for qmod -cj */
    if (strchr(letters, 'r') || strchr(letters, 't') || strchr(letters, 's') ||
        strchr(letters, 'S') || strchr(letters, 'T'))
        return strchr(letters, 'q') ? JOB_PENDING : JOB_RUNNING;
    if (strchr(letters, 'q') || strchr(letters, 'h') || strchr(letters, 'w'))
        return JOB_PENDING;
    return JOB_UNKNOWN;
}

job_state_t sched_sge_ended_state(int failed, int exit_status)
{
    /* 37: "qmaster enforced h_rt, h_cpu, or h_vmem limit". */
    if (failed == 37)
        return JOB_TIMEOUT;
    if (failed == 0 && exit_status == 0)
        return JOB_COMPLETED;
    if (exit_status == 75)
        return JOB_REQUEUED;
    /* qdel's kill: SIGKILL (after SIGTERM where the queue's terminate_method says so), the
     * shepherd reporting "assumedly after job". */
    if (failed == 100 && (exit_status == 128 + 9 || exit_status == 128 + 15))
        return JOB_CANCELLED;
    return JOB_FAILED;
}

/* The job an asked id names exactly: JOB, or JOB.TASK of an array. */
static sched_job_t *find_exact(sched_job_t *jobs, size_t n, const char *id)
{
    for (size_t i = 0; i < n; i++)
        if (!jobs[i].found && !strcmp(jobs[i].id, id))
            return &jobs[i];
    return NULL;
}

/* One job's line: job-ID prior name user state date time [queue] slots [ja-task-ID]. */
static int parse_qstat_line(char *line, sched_job_t *jobs, size_t n)
{
    char *f[12], *save = NULL;
    int nf = 0;
    for (char *w = strtok_r(line, " \t\r", &save); w && nf < 12; w = strtok_r(NULL, " \t\r", &save))
        f[nf++] = w;
    if (nf < 8 || strspn(f[0], "0123456789") != strlen(f[0]))
        return 0;
    int at = 7;
    const char *queue = strchr(f[at], '@') ? f[at++] : NULL;
    if (at >= nf)
        return 0;
    at++; /* slots */
    char id[128];
    if (at < nf && strspn(f[at], "0123456789") == strlen(f[at]))
        snprintf(id, sizeof id, "%s.%s", f[0], f[at]);
    else
        snprintf(id, sizeof id, "%s", f[0]);
    sched_job_t *j = find_exact(jobs, n, id);
    if (!j)
        return 0;
    j->found = 1;
    j->source = "qstat";
    j->scheduler = sched_sge_ops.name;
    j->exit_status = -1;
    j->partition_running = j->partition_running_nodes = -1;
    sched_copy(j->sched_state, sizeof j->sched_state, f[4]);
    j->state = sched_sge_state(f[4]);
    if (queue) {
        const char *host = strchr(queue, '@');
        snprintf(j->partition, sizeof j->partition, "%.*s", (int)(host - queue), queue);
        sched_copy(j->nodes, sizeof j->nodes, host + 1);
    }
    return 1;
}

size_t sched_sge_parse_qstat(const char *text, sched_job_t *jobs, size_t n)
{
    char *copy = strdup(text ? text : ""), *save = NULL;
    size_t found = 0;
    for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save))
        found += (size_t)parse_qstat_line(line, jobs, n);
    free(copy);
    return found;
}

/* "key   value" of qacct or qstat -j ("key: value"): the value, or NULL for another key. */
static const char *value_of(const char *line, const char *key)
{
    size_t len = strlen(key);
    if (strncmp(line, key, len) || (line[len] != ' ' && line[len] != ':'))
        return NULL;
    line += len + (line[len] == ':');
    return line + strspn(line, " \t");
}

int sched_sge_parse_qacct(const char *text, sched_job_t *j)
{
    /* Records are separated by a line of '='. A task the job started through qrsh -inherit has
     * its own, with the job's number and its own exit status, written as it ends: before the
     * job's, which ends last (the job waits for its tasks; 8.1.9 prints no pe_taskid to tell
     * them by). So the last record is the job's, and a job run again has one per run. */
    int have = 0, failed = 0, exit_status = -1;
    char host[256] = "", queue[64] = "";
    int found = 0;
    const char *line = text;
    for (;;) {
        const char *end = line ? strchr(line, '\n') : NULL;
        int last = !line || !*line;
        if (last || !strncmp(line, "=====", 5)) {
            if (have) {
                found = 1;
                j->exit_status = exit_status;
                j->state = sched_sge_ended_state(failed, exit_status);
                snprintf(j->sched_state, sizeof j->sched_state, "failed %d", failed);
                sched_copy(j->nodes, sizeof j->nodes, host);
                sched_copy(j->partition, sizeof j->partition, queue);
            }
            have = failed = 0;
            exit_status = -1;
            if (last)
                break;
        } else {
            char l[512];
            snprintf(l, sizeof l, "%.*s", (int)(end ? (size_t)(end - line) : strlen(line)), line);
            const char *v;
            if ((v = value_of(l, "hostname")))
                snprintf(host, sizeof host, "%.*s", (int)strcspn(v, " "), v);
            else if ((v = value_of(l, "qname")))
                snprintf(queue, sizeof queue, "%.*s", (int)strcspn(v, " "), v);
            else if ((v = value_of(l, "failed")))
                failed = atoi(v), have = 1;
            else if ((v = value_of(l, "exit_status")))
                exit_status = atoi(v), have = 1;
        }
        line = end ? end + 1 : NULL;
    }
    if (found) {
        j->found = 1;
        j->source = "qacct";
        j->scheduler = sched_sge_ops.name;
        j->partition_running = j->partition_running_nodes = -1;
    }
    return found;
}

void sched_sge_parse_job_info(const char *text, sched_job_t *j)
{
    int in_info = 0;
    for (const char *line = text; line && *line;) {
        const char *end = strchr(line, '\n');
        char l[512];
        snprintf(l, sizeof l, "%.*s", (int)(end ? (size_t)(end - line) : strlen(line)), line);
        const char *v;
        if ((v = value_of(l, "jid_predecessor_list"))) {
            j->has_dependency = 1;
        } else if ((v = value_of(l, "scheduling info"))) {
            in_info = 1;
        } else if (in_info && (l[0] == ' ' || l[0] == '\t')) {
            v = l + strspn(l, " \t");
        } else {
            in_info = 0;
            v = NULL;
        }
        /* The job's own line: the queue instances' lines say why each host was not taken. */
        if (in_info && v && *v && !j->reason[0] && !strstr(v, "queue instance") &&
            strncmp(v, "There are no messages", 21) && v[0] != '(')
            sched_copy(j->reason, sizeof j->reason, v);
        line = end ? end + 1 : NULL;
    }
}

/* Runs a query program whose failure means only that it knows none of the jobs. */
static char *ask(char **argv, ddp_error_t *err, int *rc)
{
    char *out = NULL;
    int failed;
    *rc = sched_run(argv, &out, 1, &failed, err);
    return *rc ? NULL : out;
}

static int ask_waiting_reasons(sched_job_t *jobs, size_t n, ddp_error_t *err)
{
    for (size_t i = 0, asked = 0; i < n && asked < SGE_JOB_INFO_MAX; i++) {
        if (!jobs[i].found || strcmp(jobs[i].source, "qstat") || jobs[i].state != JOB_PENDING)
            continue;
        char job[128];
        snprintf(job, sizeof job, "%.*s", (int)strcspn(jobs[i].id, "."), jobs[i].id);
        char *argv[] = {"qstat", "-j", job, NULL};
        int rc;
        char *out = ask(argv, err, &rc);
        if (rc)
            return -1;
        sched_sge_parse_job_info(out ? out : "", &jobs[i]);
        free(out);
        asked++;
    }
    return 0;
}

int sched_sge_query(sched_job_t *jobs, size_t n, ddp_error_t *err)
{
    size_t want = 0;
    for (size_t i = 0; i < n; i++)
        want += !jobs[i].found && jobs[i].id[0];
    if (!want)
        return 0;
    char *argv[] = {"qstat", "-u", "*", "-g", "d", NULL};
    int rc;
    char *out = ask(argv, err, &rc);
    if (rc)
        return -1;
    sched_sge_parse_qstat(out ? out : "", jobs, n);
    free(out);
    if (ask_waiting_reasons(jobs, n, err))
        return -1;
    /* Ended: from the accounting, once its flush time has passed (15 s by default). */
    for (size_t i = 0, asked = 0; i < n && asked < SGE_QACCT_MAX; i++) {
        if (jobs[i].found || !jobs[i].id[0])
            continue;
        char job[128], task[128];
        const char *dot = strchr(jobs[i].id, '.');
        snprintf(job, sizeof job, "%.*s", (int)strcspn(jobs[i].id, "."), jobs[i].id);
        snprintf(task, sizeof task, "%s", dot ? dot + 1 : "");
        char *qacct[] = {"qacct", "-j", job, task[0] ? "-t" : NULL, task, NULL};
        char *text = ask(qacct, err, &rc);
        if (rc)
            return -1;
        sched_sge_parse_qacct(text ? text : "", &jobs[i]);
        free(text);
        asked++;
    }
    return 0;
}
