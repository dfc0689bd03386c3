#include "cli/view/pending_reason.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/sched/sched_pending_text.h"

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

/* The scheduler whose query gave j: its row, else the first whose source word it has. */
static const sched_ops_t *querier_of(const sched_job_t *j)
{
    const sched_ops_t *q = sched_by_name(j->scheduler);
    if (q)
        return q;
    for (size_t row = 0; (q = sched_at(row)); row++)
        for (size_t k = 0; k < sizeof q->sources / sizeof *q->sources && q->sources[k]; k++)
            if (!strcmp(j->source, q->sources[k]))
                return q;
    return NULL;
}

void pending_explain(const sched_job_t *j, const char *id, const char *name, char *out, size_t size)
{
    pending_text_t t = {out, size};
    if (size)
        out[0] = 0;
    const sched_ops_t *q = j->found && j->state == JOB_PENDING ? querier_of(j) : NULL;
    if (!q || (q->reason_needed && !j->reason[0]))
        return;
    q->explain_pending(&t, j, id, name);
    char at[64];
    pending_start_words(j->start, at, sizeof at);
    if (at[0] && q->starts_by_itself(j))
        pending_put(&t, "; %s estimates the start at %s", q->display, at);
}
