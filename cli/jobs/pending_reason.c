#include "cli/jobs/pending_reason.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Slurm's reasons (squeue %r) that need no more than the job's own figures; {id}, {name} and
 * {partition} are filled in. Resources, Priority and the partition limits are said apart. */
static const struct {
    const char *reason, *words;
} slurm_words[] = {
    {"Dependency", "waiting for the job it depends on to end (the earlier link of a requeue "
                   "chain, a sweep's lane, or a dependency you gave)"},
    {"DependencyNeverSatisfied", "its dependency can never be met (the job it waits for ended in "
                                 "a way it does not accept): `ddpjob cancel {name}`"},
    {"JobHeldUser", "held by you: `scontrol release {id}` lets it start"},
    {"JobHeldAdmin", "held by an administrator: ask them to release it"},
    {"BeginTime", "not to start before its begin time (Slurm holds a requeued job for about 2 "
                  "minutes)"},
    {"Reservation", "waiting for its reservation to start"},
    {"PartitionDown", "partition {partition} is down: ask the administrators, or submit to "
                      "another partition"},
    {"PartitionInactive", "partition {partition} is inactive: ask the administrators, or submit "
                          "to another partition"},
    {"NodeDown", "a node it needs is down: ask the administrators"},
    {"BadConstraints", "no node of partition {partition} has what it asks for (features, GPUs, "
                       "memory): `ddpjob cancel {name}`, fix the spec and submit again"},
    {"JobArrayTaskLimit", "its array already runs as many tasks at once as it allows (the "
                          "sweep's parallel:)"},
    {"Licenses", "waiting for licenses"},
    {"InvalidAccount", "Slurm refuses its account: `ddpjob cancel {name}` and fix the spec's "
                       "account:"},
    {"InvalidQOS", "Slurm refuses its QOS: `ddpjob cancel {name}` and fix the spec's qos:"},
    {"launch failed requeued held", "held after its launch failed on a node: `scontrol release "
                                    "{id}` once the node is fixed"},
    {"Cleaning", "waiting for the nodes of its last run to be cleaned up"},
    {"PartitionTimeLimit", "its walltime is over partition {partition}'s limit (`sinfo -p "
                           "{partition} -o %l` shows it): it will not start unless the limit "
                           "is raised; `ddpjob cancel {name}`, lower walltime: and submit again"},
    {"PartitionNodeLimit", "it asks for more nodes than partition {partition} allows or has "
                           "(`sinfo -p {partition}`): it will not start; `ddpjob cancel {name}`, "
                           "lower nodes: and submit again"},
};

typedef struct {
    char *p;
    size_t left;
} text_t;

static void put(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->p, t->left, fmt, ap);
    va_end(ap);
    size_t used = n < 0 ? 0 : (size_t)n >= t->left ? (t->left ? t->left - 1 : 0) : (size_t)n;
    t->p += used;
    t->left -= used;
}

/* words with {id}, {name} and {partition} filled in. */
static void put_filled(text_t *t, const char *words, const sched_job_t *j, const char *id,
                       const char *name)
{
    static const char *const keys[] = {"{id}", "{name}", "{partition}"};
    const char *values[] = {id, name, j->partition[0] ? j->partition : "?"};
    for (const char *p = words; *p;) {
        size_t k = 0;
        while (k < 3 && strncmp(p, keys[k], strlen(keys[k])))
            k++;
        if (k < 3) {
            put(t, "%s", values[k]);
            p += strlen(keys[k]);
        } else {
            put(t, "%c", *p++);
        }
    }
}

static const char *plural(int n)
{
    return n == 1 ? "" : "s";
}

/* " (3 running jobs hold 4 nodes)" where squeue was asked. */
static void put_running(text_t *t, const sched_job_t *j)
{
    if (j->partition_running < 0)
        return;
    put(t, " (%d running job%s hold%s %d node%s)", j->partition_running,
        plural(j->partition_running), j->partition_running == 1 ? "s" : "",
        j->partition_running_nodes, plural(j->partition_running_nodes));
}

static void slurm_explain(text_t *t, const sched_job_t *j, const char *id, const char *name)
{
    const char *part = j->partition[0] ? j->partition : "?";
    if (!strcmp(j->reason, "Resources")) {
        put(t, "waiting for %d free node%s in partition %s", j->nodes_asked, plural(j->nodes_asked),
            part);
        put_running(t, j);
        return;
    }
    if (!strcmp(j->reason, "Priority")) {
        put(t, "waiting behind jobs of higher priority in partition %s", part);
        put_running(t, j);
        return;
    }
    if (!strncmp(j->reason, "ReqNodeNotAvail", 15)) {
        put(t,
            "nodes it needs are down, drained or reserved (%s): ask the administrators, or "
            "`ddpjob cancel %s` and submit without naming them",
            j->reason, name);
        return;
    }
    if (!strncmp(j->reason, "QOS", 3) || !strncmp(j->reason, "Assoc", 5)) {
        put(t,
            "held back by a limit of your QOS or account (%s): it starts as your other jobs "
            "end; `sacctmgr show assoc user=$USER` and `sacctmgr show qos` show the limits",
            j->reason);
        return;
    }
    for (size_t k = 0; k < sizeof slurm_words / sizeof *slurm_words; k++)
        if (!strcmp(j->reason, slurm_words[k].reason)) {
            put_filled(t, slurm_words[k].words, j, id, name);
            return;
        }
    put(t, "Slurm's reason: %s", j->reason);
}

/* PBS's "... resource: ncpus (R: 4 A: 2 T: 2)": what it asks for, what is free, what there is. */
static int pbs_resource(const char *comment, char *resource, size_t size, long *asked,
                        long *free_now, long *total)
{
    const char *p = strstr(comment, "resource: ");
    if (!p)
        return 0;
    p += strlen("resource: ");
    size_t len = strcspn(p, " (");
    snprintf(resource, size, "%.*s", (int)len, p);
    *asked = *free_now = *total = -1;
    const char *figures = strchr(p, '(');
    if (figures)
        sscanf(figures, "(R: %ld A: %ld T: %ld", asked, free_now, total);
    return 1;
}

static void pbs_comment_explain(text_t *t, const sched_job_t *j, const char *name)
{
    const char *c = j->reason;
    char resource[64];
    long asked, free_now, total;
    int never = !strncmp(c, "Can Never Run", 13);
    if (pbs_resource(c, resource, sizeof resource, &asked, &free_now, &total)) {
        if (never)
            put(t,
                "it can never run: it asks for %ld %s and there are %ld in all; `ddpjob "
                "cancel %s`, ask for less and submit again",
                asked, resource, total, name);
        else
            put(t, "waiting for %s: it asks for %ld, %ld of %ld are free", resource, asked,
                free_now, total);
    } else if (strstr(c, "Not enough free nodes")) {
        put(t, "waiting for %d free node%s in queue %s", j->nodes_asked, plural(j->nodes_asked),
            j->partition[0] ? j->partition : "?");
    } else if (strstr(c, "limit reached")) {
        put(t, "held back by a limit of the server or queue: it starts as other jobs end");
    } else if (strstr(c, "conflict with reservation or top job")) {
        put(t, "waiting: started now, it would delay a reservation or the job at the head of "
               "the queue");
    } else if (never) {
        put(t, "it can never run as asked: `ddpjob cancel %s`, fix the spec and submit again",
            name);
    } else {
        put(t, "queued");
    }
    if (*c)
        put(t, " (PBS: %s)", c);
}

static void pbs_explain(text_t *t, const sched_job_t *j, const char *id, const char *name)
{
    if (!strcmp(j->sched_state, "H")) {
        if (strchr(j->hold_types, 'u'))
            put(t, "held by you: `qrls -h u %s` lets it start", id);
        else if (strchr(j->hold_types, 'o'))
            put(t, "held by an operator: ask them to release it");
        else if (j->has_dependency)
            put(t, "waiting for the job it depends on to end (the earlier link of a requeue "
                   "chain, a sweep's lane, or a dependency you gave)");
        else
            put(t,
                "held by the system (often after failed starts): ask the administrators "
                "(PBS: %s)",
                j->reason[0] ? j->reason : "no comment");
        return;
    }
    if (!strcmp(j->sched_state, "W")) {
        put(t, "waiting for the start time it was given");
        return;
    }
    pbs_comment_explain(t, j, name);
}

/* Whether it starts without anyone acting: only then is an estimated start worth saying (Slurm
 * keeps the estimate it made before a hold). */
static int starts_by_itself(const sched_job_t *j, int slurm)
{
    static const char *const waits[] = {"Resources", "Priority",    "Dependency",
                                        "BeginTime", "Reservation", "JobArrayTaskLimit",
                                        "Licenses",  "Cleaning"};
    if (!slurm)
        return !strcmp(j->sched_state, "Q") && strncmp(j->reason, "Can Never Run", 13);
    for (size_t k = 0; k < sizeof waits / sizeof *waits; k++)
        if (!strcmp(j->reason, waits[k]))
            return 1;
    return !strncmp(j->reason, "QOS", 3) || !strncmp(j->reason, "Assoc", 5);
}

void pending_start_words(const char *start, char *out, size_t size)
{
    struct tm when = {0};
    const char *end = strptime(start, "%Y-%m-%dT%H:%M:%S", &when);
    if (!end || *end) {
        memset(&when, 0, sizeof when);
        end = strptime(start, "%a %b %d %H:%M:%S %Y", &when);
    }
    if (!end || *end) {
        snprintf(out, size, "%s", "");
        return;
    }
    time_t now = time(NULL);
    struct tm today;
    localtime_r(&now, &today);
    when.tm_isdst = -1;
    time_t at = mktime(&when);
    struct tm local;
    localtime_r(&at, &local);
    int same_day = today.tm_year == local.tm_year && today.tm_yday == local.tm_yday;
    strftime(out, size, same_day ? "%H:%M" : "%a %d %b %H:%M", &local);
}

void pending_explain(const sched_job_t *j, const char *id, const char *name, char *out, size_t size)
{
    text_t t = {out, size};
    if (size)
        out[0] = 0;
    if (!j->found || j->state != JOB_PENDING)
        return;
    int slurm = !strcmp(j->source, "squeue");
    if (slurm && !j->reason[0])
        return;
    if (slurm)
        slurm_explain(&t, j, id, name);
    else if (!strcmp(j->source, "qstat"))
        pbs_explain(&t, j, id, name);
    char at[64];
    pending_start_words(j->start, at, sizeof at);
    if (at[0] && starts_by_itself(j, slurm))
        put(&t, "; %s estimates the start at %s", slurm ? "Slurm" : "PBS", at);
}
