#include "cli/sched/sched_sge.h"

#include <string.h>

void sched_sge_explain_pending(pending_text_t *t, const sched_job_t *j, const char *id,
                               const char *name)
{
    const char *s = j->sched_state;
    if (strchr(s, 'E')) {
        pending_put(t,
                    "in Grid Engine's error state (`qstat -j %s` says why under error reason): "
                    "`qmod -cj %s` lets it start again once that is mended, or `ddpjob cancel %s`",
                    id, id, name);
        return;
    }
    if (strchr(s, 'h') && j->has_dependency) {
        pending_put(t, "waiting for the job it depends on to end (the earlier link of a requeue "
                       "chain, a sweep's lane, or a dependency you gave)");
        return;
    }
    if (strchr(s, 'h')) {
        pending_put(t, "held: `qrls %s` lets it start", id);
        return;
    }
    if (j->reason[0])
        pending_put(t, "waiting for slots: %s", j->reason);
    else
        pending_put(t, "waiting for the scheduler to find it slots");
}

bool sched_sge_starts_by_itself(const sched_job_t *j)
{
    return !strchr(j->sched_state, 'E') && (!strchr(j->sched_state, 'h') || j->has_dependency);
}
