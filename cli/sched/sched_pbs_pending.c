#include "cli/sched/sched_pbs.h"

#include <stdio.h>
#include <string.h>

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

static void pbs_comment_explain(pending_text_t *t, const sched_job_t *j, const char *name)
{
    const char *c = j->reason;
    char resource[64];
    long asked, free_now, total;
    int never = !strncmp(c, "Can Never Run", 13);
    if (pbs_resource(c, resource, sizeof resource, &asked, &free_now, &total)) {
        if (never)
            pending_put(t,
                        "it can never run: it asks for %ld %s and there are %ld in all; `ddpjob "
                        "cancel %s`, ask for less and submit again",
                        asked, resource, total, name);
        else
            pending_put(t, "waiting for %s: it asks for %ld, %ld of %ld are free", resource, asked,
                        free_now, total);
    } else if (strstr(c, "Not enough free nodes")) {
        pending_put(t, "waiting for %d free node%s in queue %s", j->nodes_asked,
                    pending_plural(j->nodes_asked), j->partition[0] ? j->partition : "?");
    } else if (strstr(c, "limit reached")) {
        pending_put(t, "held back by a limit of the server or queue: it starts as other jobs end");
    } else if (strstr(c, "conflict with reservation or top job")) {
        pending_put(t,
                    "waiting: started now, it would delay a reservation or the job at the head of "
                    "the queue");
    } else if (never) {
        pending_put(t,
                    "it can never run as asked: `ddpjob cancel %s`, fix the spec and submit again",
                    name);
    } else {
        pending_put(t, "queued");
    }
    if (*c)
        pending_put(t, " (PBS: %s)", c);
}

void sched_pbs_explain_pending(pending_text_t *t, const sched_job_t *j, const char *id,
                               const char *name)
{
    if (!strcmp(j->sched_state, "H")) {
        if (strchr(j->hold_types, 'u'))
            pending_put(t, "held by you: `qrls -h u %s` lets it start", id);
        else if (strchr(j->hold_types, 'o'))
            pending_put(t, "held by an operator: ask them to release it");
        else if (j->has_dependency)
            pending_put(t,
                        "waiting for the job it depends on to end (the earlier link of a requeue "
                        "chain, a sweep's lane, or a dependency you gave)");
        else
            pending_put(t,
                        "held by the system (often after failed starts): ask the administrators "
                        "(PBS: %s)",
                        j->reason[0] ? j->reason : "no comment");
        return;
    }
    if (!strcmp(j->sched_state, "W")) {
        pending_put(t, "waiting for the start time it was given");
        return;
    }
    pbs_comment_explain(t, j, name);
}

bool sched_pbs_starts_by_itself(const sched_job_t *j)
{
    return !strcmp(j->sched_state, "Q") && strncmp(j->reason, "Can Never Run", 13);
}
