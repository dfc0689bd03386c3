#include "cli/sched/sched_pending_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void pending_put(pending_text_t *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->p, t->left, fmt, ap);
    va_end(ap);
    size_t used = n < 0 ? 0 : (size_t)n >= t->left ? (t->left ? t->left - 1 : 0) : (size_t)n;
    t->p += used;
    t->left -= used;
}

void pending_put_filled(pending_text_t *t, const char *words, const sched_job_t *j, const char *id,
                        const char *name)
{
    static const char *const keys[] = {"{id}", "{name}", "{partition}"};
    const char *values[] = {id, name, j->partition[0] ? j->partition : "?"};
    for (const char *p = words; *p;) {
        size_t k = 0;
        while (k < 3 && strncmp(p, keys[k], strlen(keys[k])))
            k++;
        if (k < 3) {
            pending_put(t, "%s", values[k]);
            p += strlen(keys[k]);
        } else {
            pending_put(t, "%c", *p++);
        }
    }
}

const char *pending_plural(int n)
{
    return n == 1 ? "" : "s";
}

void pending_put_running(pending_text_t *t, const sched_job_t *j)
{
    if (j->partition_running < 0)
        return;
    pending_put(t, " (%d running job%s hold%s %d node%s)", j->partition_running,
                pending_plural(j->partition_running), j->partition_running == 1 ? "s" : "",
                j->partition_running_nodes, pending_plural(j->partition_running_nodes));
}
