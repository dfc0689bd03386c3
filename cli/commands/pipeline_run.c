#include "cli/commands/pipeline_run.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands/commands.h"
#include "cli/view/job_view.h"
#include "cli/jobs/json_doc.h"
#include "cli/view/sweep_view.h"
#include "cli/sched/sched.h"
#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_file.h"

/* How long a decision waits for another's: one stage's submit, many trials ending at once. */
#define PIPELINE_LOCK_MS 180000
/* A link that ended checkpointed (75) goes on in its successor, unless none comes. */
#define EXIT_CHECKPOINTED 75

/* A stage that never ran says why: "skipped: ..." when it was not to (a notok stage after one that
 * completed), else "cancelled: ..." (something before it failed, or the pipeline was cancelled). */
#define WHY_SKIPPED "skipped"

static int never_skipped(const stage_record_t *r)
{
    return r->fate == STAGE_NEVER && !strncmp(r->why, WHY_SKIPPED, strlen(WHY_SKIPPED));
}

/* A job's state for the stages after it: its batch shell's own end counts before the scheduler
 * has noticed, since that shell asks the pipeline on its way out. */
static job_state_t settled(job_view_t *v, int *ended)
{
    const job_link_t *l = v->link < v->rec.nlinks ? &v->rec.links[v->link] : NULL;
    *ended = job_state_final(v->state);
    if (!*ended && l && l->ended && l->status != EXIT_CHECKPOINTED) {
        *ended = 1;
        v->state = job_state_from_exit(l->status, 0, v->rec.cancelled);
        v->exit_status = l->status;
    }
    return v->state;
}

static void look_job(stage_look_t *s)
{
    job_view_t v;
    ddp_error_t err;
    char *dirs[] = {s->rec.record};
    job_views_load(dirs, 1, &v, &err); /* a scheduler not asked: the record answers */
    if (!v.rec.dir) {
        s->state = JOB_UNKNOWN;
        snprintf(s->said, sizeof s->said, "unknown: its record %.900s cannot be read",
                 s->rec.record);
    } else {
        s->state = settled(&v, &s->ended);
        job_view_state_text(&v, s->said, sizeof s->said);
    }
    job_views_free(&v, 1);
}

static void look_sweep(stage_look_t *s)
{
    sweep_view_t v;
    ddp_error_t err;
    s->is_sweep = 1;
    if (sweep_view_load(s->rec.record, &v, &err) && !v.rec.dir) {
        s->state = JOB_UNKNOWN;
        snprintf(s->said, sizeof s->said, "unknown: %.900s", err.msg);
        return;
    }
    size_t ended = 0;
    long first_bad = -1;
    s->trials = v.rec.ntrials;
    for (size_t k = 0; k < v.rec.ntrials; k++) {
        int trial_ended = 0;
        job_state_t st = settled(&v.trials[k], &trial_ended);
        ended += trial_ended;
        s->completed += st == JOB_COMPLETED;
        if (trial_ended && st != JOB_COMPLETED && first_bad < 0)
            first_bad = (long)k;
    }
    s->ended = ended == s->trials;
    char cause[600] = "";
    if (first_bad >= 0) {
        char text[512];
        job_view_state_text(&v.trials[first_bad], text, sizeof text);
        snprintf(cause, sizeof cause, " (trial %ld %s)", first_bad, text);
    }
    if (!s->ended) {
        s->state = JOB_RUNNING;
        snprintf(s->said, sizeof s->said, "running: %zu of %zu trials ended, %zu completed%s",
                 ended, s->trials, s->completed, cause);
    } else if (s->completed == s->trials) {
        s->state = JOB_COMPLETED;
        long best = sweep_view_best(&v);
        snprintf(s->said, sizeof s->said, "completed: %zu trials", s->trials);
        if (best >= 0)
            snprintf(s->said + strlen(s->said), sizeof s->said - strlen(s->said),
                     "; best trial %ld %s", best, v.rec.params[best]);
    } else {
        s->state = s->completed ? JOB_FAILED : v.trials[first_bad].state;
        snprintf(s->said, sizeof s->said, "%s: %zu of %zu trials completed%s",
                 job_state_name(s->state), s->completed, s->trials, cause);
    }
    sweep_view_free(&v);
}

/* Each stage as it is now, and the pipeline's state from them. */
static void look_all(pipeline_look_t *v)
{
    int failed = 0, ended = 1;
    for (size_t i = 0; i < v->p.nstages; i++) {
        stage_look_t *s = &v->stages[i];
        memset(s, 0, sizeof *s);
        pipeline_stage_read(v->rec.dir, v->p.stages[i].name, &s->rec);
        if (s->rec.fate == STAGE_NEVER) {
            s->ended = 1;
            s->state = JOB_CANCELLED;
            snprintf(s->said, sizeof s->said, "%s", s->rec.why);
            failed |= !never_skipped(&s->rec);
        } else if (s->rec.fate == STAGE_SUBMITTED) {
            if (sweep_record_is(s->rec.record))
                look_sweep(s);
            else
                look_job(s);
            failed |= s->ended && s->state != JOB_COMPLETED;
        } else {
            s->state = JOB_PENDING;
            snprintf(s->said, sizeof s->said, "waiting");
        }
        ended &= s->ended;
    }
    v->ended = ended;
    v->state = !ended             ? JOB_RUNNING
               : v->rec.cancelled ? JOB_CANCELLED
               : failed           ? JOB_FAILED
                                  : JOB_COMPLETED;
}

int pipeline_look_load(const char *dir, pipeline_look_t *v, ddp_error_t *err)
{
    memset(v, 0, sizeof *v);
    if (pipeline_record_read(dir, &v->rec, err))
        return -1;
    char file[8192];
    pipeline_record_path(dir, "pipeline.yaml", file, sizeof file);
    diag_t *diag = diag_create(file);
    size_t problems = diag ? pipeline_read_copies(file, dir, &v->p, diag) : 1;
    if (problems)
        ddp_error_set(err, "%s: %s", dir,
                      diag && diag->count ? diag->lines[0]
                                          : "the pipeline it keeps no longer reads whole");
    diag_destroy(diag);
    if (problems) {
        pipeline_look_free(v);
        return -1;
    }
    look_all(v);
    return 0;
}

void pipeline_look_free(pipeline_look_t *v)
{
    pipeline_record_free(&v->rec);
    pipeline_free(&v->p);
}

/* ---- values ------------------------------------------------------------------------------ */

/* The parameter `name` of the params JSON text, as a spec would say it; NULL when absent. */
static char *param_text(const char *params, const char *name)
{
    json_t *o = json_loads(params, 0, NULL), *x = json_object_get(o, name);
    char *text = !x ? NULL
                 : json_is_string(x)
                     ? strdup(json_string_value(x))
                     : json_dumps(x, JSON_ENCODE_ANY | JSON_COMPACT | JSON_DOC_REAL_DIGITS);
    json_decref(o);
    return text;
}

/* The value {STAGE.KIND} stands for, malloc'd; NULL with why. The validator made sure STAGE is
 * a stage this one waits for and KIND a kind there is. */
static char *value_of(const pipeline_look_t *v, const char *name, char *why, size_t size)
{
    const char *dot = strchr(name, '.'), *kind = dot + 1;
    size_t i = 0;
    while (i < v->p.nstages && (strlen(v->p.stages[i].name) != (size_t)(dot - name) ||
                                strncmp(v->p.stages[i].name, name, (size_t)(dot - name))))
        i++;
    const stage_look_t *s = i < v->p.nstages ? &v->stages[i] : NULL;
    if (!s || s->rec.fate != STAGE_SUBMITTED) {
        snprintf(why, size, "{%s}: stage %.*s did not run", name, (int)(dot - name), name);
        return NULL;
    }
    if (!strcmp(kind, "record"))
        return ddp_xstrdup(s->rec.record);
    int best_kind = !strncmp(kind, "best.", 5);
    if (best_kind != s->is_sweep) {
        snprintf(why, size, "{%s}: stage %.*s is %s", name, (int)(dot - name), name,
                 s->is_sweep ? "a sweep: its best trial's (best.checkpoint, best.params.NAME)"
                             : "no sweep: it has no best trial");
        return NULL;
    }
    char *text = NULL;
    ddp_error_t err;
    if (!best_kind) {
        job_record_t r;
        if (job_record_read(s->rec.record, &r, &err) == 0) {
            text = r.checkpoint_dir[0] ? ddp_xstrdup(r.checkpoint_dir) : NULL;
            job_record_free(&r);
        }
        if (!text)
            snprintf(why, size, "{%s}: stage %.*s's workload names no --checkpoint-dir", name,
                     (int)(dot - name), name);
        return text;
    }
    sweep_view_t sv;
    if (sweep_view_load(s->rec.record, &sv, &err) && !sv.rec.dir) {
        snprintf(why, size, "{%s}: %.700s", name, err.msg);
        return NULL;
    }
    long best = sweep_view_best(&sv);
    if (best < 0) {
        snprintf(why, size, "{%s}: stage %.*s has no completed trial with a metric to judge by",
                 name, (int)(dot - name), name);
    } else if (!strncmp(kind, "best.params.", 12)) {
        if (!(text = param_text(sv.rec.params[best], kind + 12)))
            snprintf(why, size, "{%s}: its best trial, %ld, has no parameter %s", name, best,
                     kind + 12);
    } else if (sv.trials[best].rec.checkpoint_dir[0]) {
        text = ddp_xstrdup(sv.trials[best].rec.checkpoint_dir);
    } else {
        snprintf(why, size, "{%s}: its best trial, %ld, names no --checkpoint-dir", name, best);
    }
    sweep_view_free(&sv);
    return text;
}

/* Each {STAGE.KIND} in text not in values yet, added as STAGE.KIND=VALUE. -1 with why. */
static int add_values(const pipeline_look_t *v, const char *text, strv_t *values, char *why,
                      size_t size)
{
    for (const char *c = text; *c; c++) {
        if (c[0] == '{' && c[1] == '{') {
            c++;
            continue;
        }
        size_t n = pipeline_value_at(c);
        if (!n)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)n, c + 1);
        int known = 0;
        for (size_t i = 0; i < values->count && !known; i++)
            known = !strncmp(values->items[i], name, n) && values->items[i][n] == '=';
        char *value = known ? NULL : value_of(v, name, why, size);
        if (!known && !value)
            return -1;
        if (value) {
            size_t len = n + 1 + strlen(value);
            char *item = ddp_xcalloc(len + 1, 1);
            snprintf(item, len + 1, "%s=%s", name, value);
            free(value);
            spec_strv_push(values, item, len);
            free(item);
        }
        c += n + 1;
    }
    return 0;
}

/* ---- decisions --------------------------------------------------------------------------- */

/* What stage i waits for, now: 1 ready, 0 still waiting, -1 never (why). */
static int readiness(const pipeline_look_t *v, size_t i, char *why, size_t size)
{
    const pipeline_stage_t *st = &v->p.stages[i];
    int ready = 1;
    for (int kind = 0; kind < STAGE_AFTER_KINDS; kind++)
        for (size_t a = 0; a < st->nafter[kind]; a++) {
            size_t j = (size_t)st->after[kind][a];
            const stage_look_t *s = &v->stages[j];
            const char *name = v->p.stages[j].name;
            if (s->rec.fate == STAGE_NEVER) {
                /* The first cause travels down the stages waiting on it. */
                if (never_skipped(&s->rec))
                    snprintf(why, size, WHY_SKIPPED ": stage %s did not run (%s)", name,
                             s->rec.why);
                else
                    snprintf(why, size, "%s", s->rec.why);
                return -1;
            }
            if (!s->ended) {
                ready = 0;
                continue;
            }
            int completed = s->state == JOB_COMPLETED,
                as_asked =
                    kind == STAGE_AFTER_ANY || (kind == STAGE_AFTER_OK && completed) ||
                    (kind == STAGE_AFTER_NOTOK && !completed) ||
                    (kind == STAGE_AFTER_BEST && (s->is_sweep ? s->completed > 0 : completed));
            if (as_asked)
                continue;
            if (kind == STAGE_AFTER_NOTOK)
                snprintf(why, size,
                         WHY_SKIPPED ": stage %s completed (this stage runs after it does not)",
                         name);
            else
                snprintf(why, size, "cancelled: stage %s %s", name, s->said);
            return -1;
        }
    return ready;
}

/* What a submit's exit code says of why a stage was not submitted. */
static const char *submit_failure(int code)
{
    return code == EXIT_INVALID_SPEC ? "its spec, with the values put in, has problems"
           : code == EXIT_SUBMITTER  ? "the scheduler's submit command failed"
           : code == EXIT_SYSTEM     ? "a file could not be read or written"
                                     : "its submit failed";
}

/* Stage i submitted from the pipeline's folder, with the values it asks: 0 (s->rec filled), or
 * -1 with why. Its submit's lines go to stderr, among the pipeline's. */
static int submit_stage(pipeline_look_t *v, size_t i, char *why, size_t size)
{
    const pipeline_stage_t *st = &v->p.stages[i];
    strv_t values = {0};
    char *text = ddp_read_file(st->path, NULL, &(ddp_error_t){0});
    int rc = text ? add_values(v, text, &values, why, size)
                  : (snprintf(why, size, "cancelled: its spec %s cannot be read", st->path), -1);
    free(text);
    char **sets = ddp_xcalloc(st->nsets + 1, sizeof *sets);
    for (size_t k = 0; rc == 0 && k < st->nsets; k++) {
        char missing[256];
        rc = add_values(v, st->sets[k], &values, why, size);
        if (rc == 0 &&
            !(sets[k] = pipeline_with_values(st->sets[k], &values, missing, sizeof missing)))
            rc = -1, snprintf(why, size, "cancelled: {%s}: no value", missing);
    }
    if (rc) {
        char cause[1024];
        snprintf(cause, sizeof cause, "%s", why);
        if (strncmp(cause, "cancelled", 9))
            snprintf(why, size, "cancelled: %.900s", cause);
    }
    char *argv[8 + 2 * PIPELINE_STAGES_MAX + 64];
    int argc = 0;
    argv[argc++] = "submit";
    argv[argc++] = st->path;
    if (v->rec.scheduler[0]) {
        argv[argc++] = "--scheduler";
        argv[argc++] = v->rec.scheduler;
    }
    if (v->rec.site[0]) {
        argv[argc++] = "--site";
        argv[argc++] = v->rec.site;
    }
    if (v->rec.bindir[0]) {
        argv[argc++] = "--bindir";
        argv[argc++] = v->rec.bindir;
    }
    for (size_t k = 0; k < st->nsets && argc + 3 < (int)(sizeof argv / sizeof *argv); k++) {
        argv[argc++] = "--set";
        argv[argc++] = sets[k];
    }
    argv[argc] = NULL;
    submit_context_t within = {.pipeline = v->rec.dir, .values = &values};
    /* From where submit was run, as each stage's relative paths mean; what submit prints is said
     * on stderr: stdout is the pipeline's own. */
    int here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), out = dup(1);
    fflush(stdout);
    if (rc == 0 && (here < 0 || out < 0 || chdir(v->rec.cwd) || dup2(2, 1) < 0))
        rc = -1, snprintf(why, size, "cancelled: cannot work in %.900s", v->rec.cwd);
    /* The stages join the index the pipeline's submit used, wherever their shell runs (a PBS
     * job gets none of the submitter's environment). */
    if (rc == 0 && (v->rec.state_home[0] ? setenv("XDG_STATE_HOME", v->rec.state_home, 1)
                                         : unsetenv("XDG_STATE_HOME")))
        rc = -1, snprintf(why, size, "cancelled: out of memory");
    if (rc == 0) {
        sched_leave_job_env();
        optind = 0;
        int code = submit_within(argc, argv, &within);
        if (code != EXIT_OK || !within.record)
            rc = -1, snprintf(why, size, "cancelled: not submitted: %s (exit %d)",
                              submit_failure(code), code);
    }
    fflush(stdout);
    if (out >= 0)
        dup2(out, 1), close(out);
    if (here >= 0 && fchdir(here))
        fprintf(stderr, "ddpjob: cannot return to the folder this ddpjob ran in\n");
    if (here >= 0)
        close(here);
    if (rc == 0) {
        v->stages[i].rec.fate = STAGE_SUBMITTED;
        snprintf(v->stages[i].rec.id, sizeof v->stages[i].rec.id, "%s", within.id);
        snprintf(v->stages[i].rec.record, sizeof v->stages[i].rec.record, "%s", within.record);
    }
    free(within.record);
    for (size_t k = 0; k < st->nsets; k++)
        free(sets[k]);
    free(sets);
    spec_strv_free(&values);
    return rc;
}

/* Stage i's fate decided, written and said; 1 when it was (it changes what comes after). */
static int decide(pipeline_look_t *v, size_t i)
{
    stage_look_t *s = &v->stages[i];
    const char *name = v->p.stages[i].name;
    char why[1024] = "";
    int ready = v->rec.cancelled ? (snprintf(why, sizeof why, "cancelled: the pipeline was"), -1)
                                 : readiness(v, i, why, sizeof why);
    if (ready == 0)
        return 0;
    if (ready > 0 && submit_stage(v, i, why, sizeof why) == 0) {
        ddp_error_t err;
        if (pipeline_stage_write(v->rec.dir, name, &s->rec, &err))
            fprintf(stderr, "ddpjob: pipeline %s: stage %s: %s\n", v->rec.name, name, err.msg);
        fprintf(stderr, "ddpjob: pipeline %s: stage %s submitted: job %s\n", v->rec.name, name,
                s->rec.id);
        return 1;
    }
    s->rec.fate = STAGE_NEVER;
    snprintf(s->rec.why, sizeof s->rec.why, "%s", why);
    ddp_error_t err;
    if (pipeline_stage_write(v->rec.dir, name, &s->rec, &err))
        fprintf(stderr, "ddpjob: pipeline %s: stage %s: %s\n", v->rec.name, name, err.msg);
    fprintf(stderr, "ddpjob: pipeline %s: stage %s: %s\n", v->rec.name, name, why);
    return 1;
}

int pipeline_advance(const char *dir, pipeline_look_t *out, ddp_error_t *err)
{
    pipeline_look_t v;
    int lock = pipeline_record_lock(dir, PIPELINE_LOCK_MS, err);
    if (lock < 0)
        return -1;
    if (pipeline_look_load(dir, &v, err)) {
        close(lock);
        return -1;
    }
    /* In order, so that a stage decided is seen by those after it in the same pass. */
    int changed = 0;
    for (size_t k = 0; k < v.p.nstages; k++) {
        size_t i = v.p.order[k];
        if (v.stages[i].rec.fate == STAGE_WAITING)
            changed |= decide(&v, i);
    }
    if (changed)
        look_all(&v);
    close(lock);
    if (out)
        *out = v;
    else
        pipeline_look_free(&v);
    return 0;
}

/* ---- what status says -------------------------------------------------------------------- */

void pipeline_look_print(FILE *f, const pipeline_look_t *v)
{
    size_t ended = 0, width = 5;
    for (size_t i = 0; i < v->p.nstages; i++) {
        ended += v->stages[i].ended;
        width = strlen(v->p.stages[i].name) > width ? strlen(v->p.stages[i].name) : width;
    }
    fprintf(f, "pipeline %s: %s, %zu of %zu stages ended (record %s)\n", v->rec.name,
            job_state_name(v->state), ended, v->p.nstages, v->rec.dir);
    fprintf(f, "  %-*s  %-14s  %s\n", (int)width, "STAGE", "JOB", "STATE");
    for (size_t k = 0; k < v->p.nstages; k++) {
        size_t i = v->p.order[k];
        const stage_look_t *s = &v->stages[i];
        fprintf(f, "  %-*s  %-14s  %s\n", (int)width, v->p.stages[i].name,
                s->rec.id[0] ? s->rec.id : "-", s->said);
    }
}

void pipeline_look_json(FILE *f, const pipeline_look_t *v)
{
    json_t *o = json_object(), *stages = json_array();
    json_object_set_new(o, "version", json_integer(PIPELINE_RECORD_VERSION));
    json_object_set_new(o, "pipeline", json_shown_string(v->rec.name));
    json_object_set_new(o, "record", json_shown_string(v->rec.dir));
    json_object_set_new(o, "state", json_string(job_state_name(v->state)));
    json_object_set_new(o, "ended", json_boolean(v->ended));
    for (size_t k = 0; k < v->p.nstages; k++) {
        size_t i = v->p.order[k];
        const stage_look_t *s = &v->stages[i];
        json_t *st = json_object();
        json_object_set_new(st, "name", json_shown_string(v->p.stages[i].name));
        json_object_set_new(st, "state",
                            json_string(s->rec.fate == STAGE_WAITING ? "waiting"
                                        : s->rec.fate == STAGE_NEVER
                                            ? (never_skipped(&s->rec) ? WHY_SKIPPED : "cancelled")
                                            : job_state_name(s->state)));
        json_object_set_new(st, "said", json_shown_string(s->said));
        json_object_set_new(st, "kind", json_string(s->is_sweep ? "sweep" : "job"));
        json_object_set_new(st, "job", s->rec.id[0] ? json_string(s->rec.id) : json_null());
        json_object_set_new(st, "record",
                            s->rec.record[0] ? json_shown_string(s->rec.record) : json_null());
        json_array_append_new(stages, st);
    }
    json_object_set_new(o, "stages", stages);
    char *text = json_dump_text(o);
    if (text)
        fprintf(f, "%s\n", text);
    free(text);
}

void pipeline_look_line(FILE *f, const pipeline_look_t *v)
{
    size_t ended = 0;
    for (size_t i = 0; i < v->p.nstages; i++)
        ended += v->stages[i].ended;
    fprintf(f, "%s (pipeline of %zu stages): %s, %zu ended\n  record %s\n", v->rec.name,
            v->p.nstages, job_state_name(v->state), ended, v->rec.dir);
}
