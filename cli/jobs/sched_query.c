#include "cli/jobs/sched_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jobs/job_record.h"
#include "cli/jobs/pending_sched.h"
#include "runtime/base/spawn.h"

#define QUERY_TIMEOUT_MS 60000
#define SQUEUE_FORMAT "%i|%T|%r|%M|%l|%N|%S|%P|%D"
#define SQUEUE_FIELDS 9

/* The job not found yet that the scheduler's `id` (id_len bytes) is. */
static sched_job_t *find(sched_job_t *jobs, size_t n, const char *id, size_t id_len)
{
    for (size_t i = 0; i < n; i++)
        if (!jobs[i].found && job_id_names(jobs[i].id, id, id_len))
            return &jobs[i];
    return NULL;
}

/* The '|'-separated fields of one line into f (at most max); how many. */
static int split_bars(char *line, char **f, int max)
{
    int n = 0;
    for (char *p = line; n < max; p++) {
        f[n++] = p;
        p = strchr(p, '|');
        if (!p)
            break;
        *p = 0;
    }
    return n;
}

/* The lines of text with exactly `nfields` '|'-separated fields, in order: each line's fields
 * at lines[k * nfields ...] (pointers into *buf, which the caller frees with the array). */
static char **bar_lines(const char *text, int nfields, size_t *count, char **buf)
{
    char *save = NULL, **lines = NULL;
    *count = 0;
    *buf = strdup(text ? text : "");
    for (char *line = *buf ? strtok_r(*buf, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        char **more = realloc(lines, (*count + 1) * (size_t)nfields * sizeof *lines);
        if (!more)
            break;
        lines = more;
        if (split_bars(line, lines + *count * (size_t)nfields, nfields) == nfields)
            (*count)++;
    }
    return lines;
}

static void copy(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

size_t sched_parse_squeue(const char *text, sched_job_t *jobs, size_t n)
{
    char *buf;
    size_t count, found = 0;
    char **lines = bar_lines(text, SQUEUE_FIELDS, &count, &buf);
    for (size_t k = 0; k < count; k++) {
        char **f = lines + k * SQUEUE_FIELDS;
        sched_job_t *j = find(jobs, n, f[0], strlen(f[0]));
        if (!j)
            continue;
        j->found = 1;
        j->partition_running = j->partition_running_nodes = -1;
        j->source = "squeue";
        j->state = job_state_from_slurm(f[1]);
        copy(j->sched_state, sizeof j->sched_state, f[1]);
        copy(j->reason, sizeof j->reason, strcmp(f[2], "None") ? f[2] : "");
        copy(j->elapsed, sizeof j->elapsed, f[3]);
        copy(j->walltime, sizeof j->walltime, f[4]);
        copy(j->nodes, sizeof j->nodes, f[5]);
        copy(j->start, sizeof j->start, strcmp(f[6], "N/A") ? f[6] : "");
        copy(j->partition, sizeof j->partition, f[7]);
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

void sched_parse_running(const char *text, sched_job_t *jobs, size_t n)
{
    char *buf;
    size_t count;
    char **lines = bar_lines(text, 2, &count, &buf);
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
size_t sched_parse_sacct(const char *text, sched_job_t *jobs, size_t n)
{
    char *buf;
    size_t count, found = 0;
    char **lines = bar_lines(text, 7, &count, &buf);
    while (count > 0) {
        char **f = lines + --count * 7;
        sched_job_t *j = find(jobs, n, f[0], strlen(f[0]));
        if (!j)
            continue;
        j->found = 1;
        j->partition_running = j->partition_running_nodes = -1;
        j->source = "sacct";
        j->state = job_state_from_slurm(f[1]);
        copy(j->sched_state, sizeof j->sched_state, f[1]);
        /* ExitCode is CODE:SIGNAL. */
        int code = -1, sig = 0;
        if (sscanf(f[2], "%d:%d", &code, &sig) >= 1)
            j->exit_status = sig ? 128 + sig : code;
        copy(j->elapsed, sizeof j->elapsed, f[3]);
        copy(j->walltime, sizeof j->walltime, f[4]);
        copy(j->nodes, sizeof j->nodes, f[5]);
        copy(j->reason, sizeof j->reason, strcmp(f[6], "None") ? f[6] : "");
        found++;
    }
    free(lines);
    free(buf);
    return found;
}

/* One "    key = value" of qstat -f, with its continuation lines (a tab first) joined. */
static void pbs_attribute(sched_job_t *j, const char *key, const char *value)
{
    if (!strcmp(key, "job_state")) {
        copy(j->sched_state, sizeof j->sched_state, value);
    } else if (!strcmp(key, "Exit_status")) {
        j->exit_status = atoi(value);
    } else if (!strcmp(key, "comment")) {
        copy(j->reason, sizeof j->reason, value);
    } else if (!strcmp(key, "resources_used.walltime")) {
        copy(j->elapsed, sizeof j->elapsed, value);
    } else if (!strcmp(key, "Resource_List.walltime")) {
        copy(j->walltime, sizeof j->walltime, value);
    } else if (!strcmp(key, "exec_host")) {
        copy(j->nodes, sizeof j->nodes, value);
    } else if (!strcmp(key, "queue")) {
        copy(j->partition, sizeof j->partition, value);
    } else if (!strcmp(key, "estimated.start_time")) {
        copy(j->start, sizeof j->start, value);
    } else if (!strcmp(key, "Hold_Types")) {
        copy(j->hold_types, sizeof j->hold_types, value);
    } else if (!strcmp(key, "depend")) {
        j->has_dependency = 1;
    } else if (!strcmp(key, "Resource_List.nodect")) {
        j->nodes_asked = atoi(value);
    }
}

size_t sched_parse_qstat(const char *text, sched_job_t *jobs, size_t n)
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
            if ((j = find(jobs, n, id, id_len))) {
                j->found = 1;
                j->partition_running = j->partition_running_nodes = -1;
                j->source = "qstat";
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
            jobs[i].state = job_state_from_pbs(jobs[i].sched_state[0], jobs[i].exit_status);
    return found;
}

int sched_run(char **argv, char **out, int failure_ok, int *failed, ddp_error_t *err)
{
    ddp_spawn_result_t res = {0};
    if (out)
        *out = NULL;
    *failed = 0;
    if (ddp_spawn_capture(argv, NULL, QUERY_TIMEOUT_MS, &res, err) < 0)
        return ddp_error_prefix(err, "%s", argv[0]);
    if (res.status != 0) {
        *failed = 1;
        if (!failure_ok) {
            size_t len = strlen(res.err);
            while (len && res.err[len - 1] == '\n')
                res.err[--len] = 0;
            ddp_error_set(err, "%s failed (exit status %d): %s", argv[0], res.status,
                          *res.err ? res.err : "(no output)");
            ddp_spawn_result_free(&res);
            return -1;
        }
    }
    if (out) {
        *out = res.out;
        res.out = NULL;
    }
    ddp_spawn_result_free(&res);
    return 0;
}

/* The ids of the jobs not found yet, comma-separated (malloc'd); NULL when none. */
static char *missing_ids(const sched_job_t *jobs, size_t n)
{
    char *list = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&list, &len);
    int any = 0;
    for (size_t i = 0; f && i < n; i++)
        if (!jobs[i].found && jobs[i].id[0])
            fprintf(f, "%s%s", any++ ? "," : "", jobs[i].id);
    if (f)
        fclose(f);
    if (!any) {
        free(list);
        return NULL;
    }
    return list;
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
    sched_parse_running(out, jobs, n);
    free(out);
    return 0;
}

static int sched_query_slurm(sched_job_t *jobs, size_t n, ddp_error_t *err)
{
    char *ids = missing_ids(jobs, n), *out = NULL;
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
    sched_parse_squeue(out, jobs, n);
    free(out);
    free(ids);
    if (slurm_count_running(jobs, n, err))
        return -1;
    if (!(ids = missing_ids(jobs, n)))
        return 0;
    char *sacct[] = {"sacct", "-n", "-P", "-X",
                     "-j",    ids,  "-o", "JobID,State,ExitCode,Elapsed,Timelimit,NodeList,Reason",
                     NULL};
    /* Without accounting sacct fails: the record answers for those jobs. */
    if (sched_run(sacct, &out, 1, &failed, err) == 0 && !failed)
        sched_parse_sacct(out, jobs, n);
    free(out);
    free(ids);
    return 0;
}

static int sched_query_pbs(sched_job_t *jobs, size_t n, ddp_error_t *err)
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
    sched_parse_qstat(out, jobs, n);
    free(out);
    return 0;
}

const sched_querier_t sched_queriers[] = {
    {"slurm",
     sched_query_slurm,
     "Slurm",
     {"squeue", "sacct"},
     1,
     pending_slurm_explain,
     pending_slurm_starts_by_itself},
    {"pbs",
     sched_query_pbs,
     "PBS",
     {"qstat"},
     0,
     pending_pbs_explain,
     pending_pbs_starts_by_itself},
    {NULL, NULL, NULL, {NULL}, 0, NULL, NULL},
};
