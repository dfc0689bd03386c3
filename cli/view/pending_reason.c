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

void pending_explain(const sched_job_t *j, const char *id, const char *name, char *out, size_t size)
{
    pending_text_t t = {out, size};
    if (size)
        out[0] = 0;
    const sched_ops_t *q = j->found && j->state == JOB_PENDING ? sched_by_name(j->scheduler) : NULL;
    if (!q || (q->reason_needed && !j->reason[0]))
        return;
    q->explain_pending(&t, j, id, name);
    char at[64];
    pending_start_words(j->start, at, sizeof at);
    if (at[0] && q->starts_by_itself(j))
        pending_put(&t, "; %s estimates the start at %s", q->display, at);
}
