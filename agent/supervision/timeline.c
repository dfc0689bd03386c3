#include "agent/supervision/timeline.h"

#include <stdarg.h>
#include <stdio.h>

#include "runtime/base/ddp_clock.h"
#include "agent/findings/history.h"
#include "agent/supervision/report.h"
#include "agent/workers/output.h"

/* Said once, then the history is left off. */
static void give_up(agent_t *a, const ddp_error_t *err)
{
    agent_say("--history-file: %s; the job's history stops here", err->msg);
    history_close(a->history);
    a->history = NULL;
    a->history_failed = 1;
}

void timeline_start(agent_t *a)
{
    if (a->history || a->history_failed || a->node_rank != 0 || !a->o->history_file)
        return;
    ddp_error_t err;
    a->history = history_open(a->o->history_file, a->o->heartbeat_ms, &err);
    if (!a->history) {
        agent_say("--history-file: %s; the job goes on without its history", err.msg);
        a->history_failed = 1;
    }
}

void timeline_sample(agent_t *a, const attempt_t *t, int force)
{
    ddp_error_t err;
    if (a->history && history_sample(a->history, &t->job, t->round, ddp_now_ms(), force, &err))
        give_up(a, &err);
}

void timeline_event(agent_t *a, const char *kind, int attempt, int rank, const char *fmt, ...)
{
    if (!a->history)
        return;
    char text[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    ddp_error_t err;
    if (history_event(a->history, kind, attempt, rank, text, &err))
        give_up(a, &err);
}

void timeline_attempt_end(agent_t *a, const attempt_t *t)
{
    char line[1024] = "completed";
    if (t->end == END_CHECKPOINTED)
        snprintf(line, sizeof line, "checkpointed");
    else if (t->end != END_DONE)
        failure_line(&t->first, line, sizeof line);
    timeline_event(a, "attempt_end", t->round, t->end == END_FAILED ? t->first.rank : -1, "%s",
                   line);
}

void timeline_close(agent_t *a)
{
    history_close(a->history);
    a->history = NULL;
}
