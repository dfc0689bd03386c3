#include "cli/commands/job_after.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jobs/job_record.h"
#include "cli/view/job_view.h"
#include "cli/jobs/sweep_record.h"
#include "cli/view/sweep_view.h"

typedef enum { AFTER_OK, AFTER_ANY, AFTER_NOTOK, AFTER_KINDS } after_kind_t;

static const char *const after_words[AFTER_KINDS] = {"ok", "any", "notok"};
static const char *const after_conditions[AFTER_KINDS] = {"afterok", "afterany", "afternotok"};

/* What each condition waits for, ids joined by ':' (the shared words' list). */
typedef struct {
    char ids[AFTER_KINDS][2048];
} after_ids_t;

/* Adds id to kind's list, once. */
static int add_id(after_ids_t *a, after_kind_t kind, const char *id, ddp_error_t *err)
{
    char *list = a->ids[kind];
    size_t len = strlen(list), n = strlen(id);
    for (const char *at = strstr(list, id); at; at = strstr(at + 1, id))
        if ((at == list || at[-1] == ':') && (at[n] == ':' || !at[n]))
            return 0;
    if (len + strlen(id) + 2 > sizeof a->ids[kind])
        return ddp_error_set(err, "too many jobs to wait for");
    snprintf(list + len, sizeof a->ids[kind] - len, "%s%s", len ? ":" : "", id);
    return 0;
}

/* An ended job's state against what is asked: 1 when it holds nothing back, -1 when the new job
 * could never start (err says so). */
static int ended_as_asked(const char *job, job_state_t state, after_kind_t kind, ddp_error_t *err)
{
    int completed = state == JOB_COMPLETED;
    if (kind == AFTER_ANY || (kind == AFTER_OK) == completed)
        return 1;
    return ddp_error_set(err, "%s has ended %s: a job after it as `%s` would never start", job,
                         job_state_name(state), after_words[kind]);
}

/* A sweep: its unfinished trials' ids (an array's own id for all its tasks; a packed trial's is
 * its allocation's, which ends completed only when every trial it ran did), each ended trial
 * checked against `ok` (every trial completes) or `any`. */
static int add_sweep(after_ids_t *a, const char *job, const char *dir, after_kind_t kind,
                     const sched_ops_t *ops, ddp_error_t *err)
{
    if (kind == AFTER_NOTOK)
        return ddp_error_set(err,
                             "%s is a sweep: wait for it with ok (every trial completed) "
                             "or any, not notok",
                             job);
    sweep_view_t v;
    if (sweep_view_load(dir, &v, err))
        return -1;
    int rc = strcmp(v.rec.scheduler, ops->name)
                 ? ddp_error_set(err, "%s is a %s sweep; this job goes to %s", job, v.rec.scheduler,
                                 ops->name)
                 : 0;
    int array = !strcmp(v.rec.how, "array");
    for (size_t k = 0; rc == 0 && k < v.rec.ntrials; k++) {
        const job_view_t *t = &v.trials[k];
        const char *id = t->rec.dir ? job_view_id(t) : "";
        if (t->rec.dir && job_state_final(t->state))
            rc = ended_as_asked(job, t->state, kind, err) < 0 ? -1 : 0;
        else if (!*id || !job_id_valid(id))
            rc = ddp_error_set(err, "%s: trial %zu has no scheduler id to wait for", job, k);
        else if (array) {
            /* The array's own id waits for all its tasks, once. */
            char parent[128];
            rc = ops->array_job_id(id, parent, sizeof parent)
                     ? ddp_error_set(err, "%s: trial %zu's id %s is no array task's", job, k, id)
                     : add_id(a, kind, parent, err);
        } else {
            rc = add_id(a, kind, id, err);
        }
    }
    sweep_view_free(&v);
    return rc;
}

static int add_job(after_ids_t *a, const char *job, after_kind_t kind, const sched_ops_t *ops,
                   ddp_error_t *err)
{
    const char *sched = ops->name;
    char *dir = NULL;
    if (job_record_find(job, &dir, err))
        return -1;
    int rc;
    if (sweep_record_is(dir)) {
        rc = add_sweep(a, job, dir, kind, ops, err);
    } else {
        /* A scheduler that cannot be asked leaves the job to its record, as status does. */
        job_view_t v;
        char *dirs[1] = {dir};
        ddp_error_t ask_err;
        job_views_load(dirs, 1, &v, &ask_err);
        const char *id = job_view_id(&v);
        if (strcmp(v.rec.scheduler, sched))
            rc = ddp_error_set(err, "%s is a %s job; this job goes to %s", job, v.rec.scheduler,
                               sched);
        else if (job_state_final(v.state))
            rc = ended_as_asked(job, v.state, kind, err) < 0 ? -1 : 0;
        else if (!*id || !job_id_valid(id))
            rc = ddp_error_set(err, "%s has no scheduler id to wait for yet", job);
        else
            rc = add_id(a, kind, id, err);
        job_views_free(&v, 1);
    }
    free(dir);
    return rc;
}

/* "JOB[:ok|any|notok]": the job and the condition; -1 for another word after the last ':'. */
static int split_word(const char *word, char *job, size_t size, after_kind_t *kind)
{
    const char *colon = strrchr(word, ':');
    *kind = AFTER_OK;
    size_t len = strlen(word);
    for (int k = 0; colon && k < AFTER_KINDS; k++)
        if (!strcmp(colon + 1, after_words[k])) {
            *kind = (after_kind_t)k;
            len = (size_t)(colon - word);
        }
    if (len == strlen(word) && colon)
        return -1;
    snprintf(job, size, "%.*s", (int)len, word);
    return len ? 0 : -1;
}

int job_after_dependency(const job_spec_t *spec, const sched_ops_t *ops, char *const *words,
                         size_t nwords, char *depend, size_t size, ddp_error_t *err)
{
    after_ids_t *a = calloc(1, sizeof *a);
    if (!a)
        return ddp_error_set(err, "out of memory");
    const strv_t *lists[AFTER_KINDS] = {&spec->after.ok, &spec->after.any, &spec->after.notok};
    int rc = 0;
    for (int k = 0; rc == 0 && k < AFTER_KINDS; k++)
        for (size_t i = 0; rc == 0 && i < lists[k]->count; i++)
            rc = add_job(a, lists[k]->items[i], (after_kind_t)k, ops, err);
    for (size_t i = 0; rc == 0 && i < nwords; i++) {
        char job[1024];
        after_kind_t kind;
        rc = split_word(words[i], job, sizeof job, &kind)
                 ? ddp_error_set(err, "--after %s: expected JOB, JOB:ok, JOB:any or JOB:notok",
                                 words[i])
                 : add_job(a, job, kind, ops, err);
    }
    size_t len = 0;
    depend[0] = '\0';
    for (int k = 0; rc == 0 && k < AFTER_KINDS; k++)
        if (a->ids[k][0]) {
            int n = snprintf(depend + len, size - len, "%s%s:%s", len ? "," : "",
                             after_conditions[k], a->ids[k]);
            if (n < 0 || (size_t)n >= size - len)
                rc = ddp_error_set(err, "too many jobs to wait for");
            else
                len += (size_t)n;
        }
    free(a);
    return rc;
}
