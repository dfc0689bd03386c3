/* render and submit of a whole sweep (a spec with sweep:, no --trial): every trial loaded, checked
 * and rendered as a job of its own, its script kept in its record (a dry run's written into its
 * folder); then, packed (pack:), held allocations that run the trials inside (sweep_pack.h);
 * else one array job (Slurm --array, PBS -J, sweep_script.h) where the site allows arrays of
 * that size, else one job per trial in `parallel` lanes, each trial waiting for the one before it
 * in its lane (depend=afterany); the sweep's record holds each trial's job record
 * (sweep_record.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands/commands.h"
#include "cli/commands/submit_steps.h"
#include "cli/commands/sweep_pack.h"
#include "cli/jobs/job_record.h"
#include "cli/sched/sched.h"
#include "cli/jobs/sweep_record.h"
#include "cli/view/sweep_view.h"
#include "cli/script/sweep_script.h"
#include "cli/spec/sweep.h"
#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_file.h"

typedef struct {
    job_spec_t *spec;
    char *text;   /* its script */
    char *script; /* where it was written */
    char file[256];
    const char *jobdir;
    char *record; /* its job record, trial-K of the sweep's */
    char id[128]; /* its first job id */
} trial_t;

typedef struct {
    const char *path;
    const load_opts_t *load;
    const sched_ops_t *ops;
    const sched_ops_t *sched;
    const char *how; /* "array", "lanes", "packed" or "job" */
    trial_t *trials;
    size_t ntrials;
    long parallel;
    char *dir; /* the sweep's record */
    /* Where every trial's output file goes: the sweep's record, unless others could change it. */
    job_output_t output;
    const char *after; /* what the sweep waits for (job_after.h); "" nothing */
    size_t nalloc;     /* packed: the allocations held at once */
    char *packed0;     /* packed: trial 0's script as a run in them (the caller's is a job's) */
    long pack_requeue; /* packed: the spec's requeue, the allocations' (the runs take none) */
} sweep_run_t;

/* How the sweep goes to the scheduler: packed where the spec says so; one trial is a plain job;
 * an array where the site allows one of this size (a profile's arrays:), else lanes. */
static const char *how_for(const job_spec_t *spec, const site_t *site)
{
    size_t ntrials = spec->sweep.ntrials;
    if (spec->sweep.pack_nodes)
        return "packed";
    if (ntrials == 1)
        return "job";
    long max = site ? site->array_max : -1;
    return max == 0 || (max > 0 && ntrials > (size_t)max) ? "lanes" : "array";
}

/* Trials 1.. loaded (their notes said once, by trial 0) and rendered; packed, each (trial 0
 * too) as a run in a held allocation, whose requeue is the allocation's to ask. */
static int load_trials(sweep_run_t *s, const render_opts_t *job_ro)
{
    load_opts_t load = *s->load;
    load.quiet = true;
    render_opts_t ro = *job_ro;
    ro.held_run = !strcmp(s->how, "packed");
    int code = EXIT_OK;
    if (ro.held_run) {
        s->pack_requeue = s->trials[0].spec->requeue;
        s->trials[0].spec->requeue = 0;
        if (!(s->packed0 = render_to_string(s->trials[0].spec, &ro, &code)))
            return code;
        s->trials[0].text = s->packed0;
    }
    for (size_t k = 1; k < s->ntrials; k++) {
        const sched_ops_t *target;
        load.trial = k;
        trial_t *t = &s->trials[k];
        if (!(t->spec = load_for_scheduler(s->path, &load, &target, NULL, &code)))
            return code;
        if (ro.held_run)
            t->spec->requeue = 0;
        if (!(t->text = render_to_string(t->spec, &ro, &code)))
            return code;
    }
    return EXIT_OK;
}

/* Where each trial's script is: for a dry run written into its folder (the spec's workdir, else
 * here) to be seen; for a submit only in its record (trial-K/script, make_records), so that a
 * sweep leaves no file of its own in the folder it was submitted from. */
static int place_trials(sweep_run_t *s, int dry_run)
{
    for (size_t k = 0; k < s->ntrials; k++) {
        trial_t *t = &s->trials[k];
        t->jobdir = t->spec->workdir ? t->spec->workdir : ".";
        char *written = NULL, *dir = realpath(t->jobdir, NULL);
        int code = !dir      ? EXIT_SYSTEM
                   : dry_run ? write_job_script(t->spec, s->ops, t->jobdir, t->text, t->file,
                                                sizeof t->file, &written)
                             : EXIT_OK;
        if (!dir)
            fprintf(stderr, "ddpjob: %s: %s\n", t->jobdir, strerror(errno));
        if (code == EXIT_OK && !dry_run)
            sched_script_file(s->ops, t->spec, t->file, sizeof t->file);
        /* Its folder's copy's name, as a trial's PBS_O_WORKDIR comes from it (sweep_script.h). */
        if (code == EXIT_OK && asprintf(&t->script, "%s/%s", dir, t->file) < 0)
            t->script = NULL, code = EXIT_SYSTEM;
        free(written);
        free(dir);
        if (code)
            return code;
    }
    return EXIT_OK;
}

/* The trial's parameters as JSON, from its workers' environment. */
static const char *trial_params(const job_spec_t *spec)
{
    for (size_t i = 0; i < spec->env_count; i++)
        if (!strcmp(spec->env[i].key, SWEEP_PARAMS_ENV))
            return spec->env[i].value;
    return "{}";
}

/* The sweep's record, and each trial's in it. */
static int make_records(sweep_run_t *s)
{
    const job_spec_t *first = s->trials[0].spec;
    sweep_record_t r = {
        .submitted = (int64_t)time(NULL), .parallel = s->parallel, .ntrials = s->ntrials};
    snprintf(r.name, sizeof r.name, "%s", first->name);
    snprintf(r.scheduler, sizeof r.scheduler, "%s", s->ops->name);
    snprintf(r.how, sizeof r.how, "%s", s->how);
    r.pack_nodes = s->nalloc ? first->sweep.pack_nodes : 0;
    r.pack_allocations = (long)s->nalloc;
    snprintf(r.objective, sizeof r.objective, "%s", first->sweep.objective);
    r.maximize = first->sweep.maximize;
    char *spec_path = realpath(s->path, NULL);
    snprintf(r.spec, sizeof r.spec, "%s", spec_path ? spec_path : s->path);
    free(spec_path);
    r.params = calloc(s->ntrials, sizeof *r.params);
    for (size_t k = 0; r.params && k < s->ntrials; k++)
        r.params[k] = (char *)trial_params(s->trials[k].spec);
    ddp_error_t err;
    int group = first->share_record && !strcmp(first->share_record, "group");
    /* Absolute, as the index must hold it. */
    char *workdir = realpath(s->trials[0].jobdir, NULL);
    int rc = r.params && workdir ? sweep_record_create(&r, workdir, group, &s->dir, &err)
                                 : ddp_error_set(&err, "%s: %s", s->trials[0].jobdir,
                                                 workdir ? "out of memory" : strerror(errno));
    free(workdir);
    free(r.params);
    for (size_t k = 0; rc == 0 && k < s->ntrials; k++) {
        char at[8192];
        sweep_trial_dir(s->dir, k, at, sizeof at);
        trial_t *t = &s->trials[k];
        /* Packed: a run of allocation k mod nalloc. */
        job_record_t run = {0};
        if (s->nalloc)
            sweep_pack_dir(s->dir, k % s->nalloc, run.held_in, sizeof run.held_in);
        rc = make_record(t->spec, s->ops, t->jobdir, t->text, at, s->nalloc ? &run : NULL,
                         &t->record, &err);
        /* What a lane submits: the record's script. */
        if (rc == 0 && snprintf(t->file, sizeof t->file, "%s/script", at) >= (int)sizeof t->file)
            rc = ddp_error_set(&err, "%s: a path too long", at);
    }
    if (rc)
        fprintf(stderr, "ddpjob: %s: cannot make the sweep's record: %s\n", s->path, err.msg);
    return rc ? EXIT_SYSTEM : EXIT_OK;
}

/* Cancels what was submitted when a later submission failed: nothing of a half-submitted sweep
 * is left to run. */
static void undo_submitted(sweep_run_t *s)
{
    char **ids = calloc(s->ntrials + 1, sizeof *ids);
    size_t n = 0;
    if (!ids)
        return;
    for (size_t k = 0; k < s->ntrials; k++)
        if (s->trials[k].id[0])
            ids[n++] = s->trials[k].id;
    ddp_error_t err;
    if (n && sched_cancel(s->ops, ids, n, &err))
        fprintf(stderr, "ddpjob: cancelling the trials already submitted: %s\n", err.msg);
    else if (n)
        fprintf(stderr, "ddpjob: cancelled the %zu trial job(s) already submitted\n", n);
    free(ids);
}

/* The array's script file: trial 0's file name with ".array" for its ".t0". */
static void array_file(const sweep_run_t *s, char *out, size_t size)
{
    char t0[256];
    sched_script_file(s->ops, s->trials[0].spec, t0, sizeof t0);
    size_t stem = strlen(t0) - strlen(s->ops->script_suffix) - strlen(".t0");
    snprintf(out, size, "%.*s.array%s", (int)stem, t0, s->ops->script_suffix);
}

static int submit_array(sweep_run_t *s, int dry, char *array_id, size_t size)
{
    sweep_trial_script_t *list = calloc(s->ntrials, sizeof *list);
    if (!list)
        return EXIT_SYSTEM;
    for (size_t k = 0; k < s->ntrials; k++)
        list[k] = (sweep_trial_script_t){s->trials[k].script, s->trials[k].record};
    char *text = sweep_array_script(s->sched, s->trials[0].text, list, s->ntrials, s->parallel);
    free(list);
    char file[300], path[8192], output_arg[4200], depend[4200], *extra[7] = {NULL};
    size_t e = 0;
    if (!dry)
        s->ops->output_args(s->output.dir, 1, output_arg, sizeof output_arg, extra, &e);
    if (*s->after)
        s->ops->after_args(s->after, depend, sizeof depend, extra, &e);
    /* In the sweep's record; a dry run's in trial 0's folder, beside the trials', to be seen. */
    array_file(s, file, sizeof file);
    snprintf(path, sizeof path, "%s/%s", dry ? s->trials[0].jobdir : s->dir, file);
    ddp_error_t err;
    int code = EXIT_OK;
    if (!text || ddp_write_file_atomic(path, text, strlen(text), 0700, &err) < 0) {
        fprintf(stderr, "ddpjob: %s\n", text ? err.msg : "out of memory");
        code = EXIT_SYSTEM;
    }
    /* Each task's record is the dispatcher's to give, never the submitter's environment's. */
    unsetenv(JOB_RECORD_ENV);
    if (code == EXIT_OK)
        code = submit_script(s->ops, s->trials[0].jobdir, dry ? file : path, text, extra, dry,
                             array_id, size);
    free(text);
    for (size_t k = 0; code == EXIT_OK && !dry && k < s->ntrials; k++) {
        trial_t *t = &s->trials[k];
        if (s->sched->array_task_id(array_id, k, t->id, sizeof t->id)) {
            fprintf(stderr, "ddpjob: %s printed an array job id of an unknown shape: %s\n",
                    s->ops->submit_program, array_id);
            snprintf(s->trials[0].id, sizeof s->trials[0].id, "%s", array_id);
            undo_submitted(s);
            return EXIT_SUBMITTER;
        }
        record_submitted(t->record, t->id, 0);
    }
    return code;
}

static int submit_lanes(sweep_run_t *s, int dry)
{
    for (size_t k = 0; k < s->ntrials; k++) {
        trial_t *t = &s->trials[k];
        char after[160], depend[4200] = "", record[8192], output_arg[4200], *extra[10] = {NULL};
        size_t e = 0;
        if (t->record) {
            s->ops->output_args(s->output.dir, 0, output_arg, sizeof output_arg, extra, &e);
            record_handoff(s->ops, t->record, &s->output, record, sizeof record, extra, &e);
        }
        /* A lane's first trial waits for what the sweep waits for; the next, for the one before. */
        if (k >= (size_t)s->parallel) {
            snprintf(after, sizeof after, "afterany:%s", s->trials[k - (size_t)s->parallel].id);
            s->ops->after_args(after, depend, sizeof depend, extra, &e);
        } else if (*s->after) {
            s->ops->after_args(s->after, depend, sizeof depend, extra, &e);
        }
        int code =
            submit_script(s->ops, t->jobdir, t->file, t->text, extra, dry, t->id, sizeof t->id);
        if (dry)
            snprintf(t->id, sizeof t->id, "<trial %zu's job>", k);
        if (code) {
            undo_submitted(s);
            return code;
        }
        if (!dry)
            record_submitted(t->record, t->id, 0);
    }
    return EXIT_OK;
}

/* Packed: the allocations held for the trials (sweep_pack.h), the first's id into first_id. */
static int submit_packed(sweep_run_t *s, const render_opts_t *ro, int dry, char *first_id,
                         size_t size)
{
    char **records = calloc(s->ntrials + 1, sizeof *records),
         (*ids)[128] = calloc(s->nalloc, sizeof *ids);
    long *nodes = calloc(s->ntrials + 1, sizeof *nodes);
    if (!records || !ids || !nodes) {
        free(records);
        free(ids);
        free(nodes);
        return EXIT_SYSTEM;
    }
    for (size_t k = 0; k < s->ntrials; k++) {
        records[k] = s->trials[k].record;
        nodes[k] = spec_alloc_nodes(s->trials[k].spec);
    }
    sweep_pack_t p = {.spec = s->trials[0].spec,
                      .ro = ro,
                      .ops = s->ops,
                      .sweep_dir = s->dir,
                      .jobdir = s->trials[0].jobdir,
                      .trials = records,
                      .nodes = nodes,
                      .ntrials = s->ntrials,
                      .nalloc = s->nalloc,
                      .requeue = s->pack_requeue,
                      .after = s->after,
                      .output = &s->output,
                      .dry_run = dry};
    /* Each run's record is the holder's to give, never the submitter's environment's. */
    unsetenv(JOB_RECORD_ENV);
    int code = sweep_pack_submit(&p, ids);
    if (code == EXIT_OK)
        snprintf(first_id, size, "%s", ids[0]);
    free(records);
    free(ids);
    free(nodes);
    return code;
}

/* The sweep into the index, what went where to stderr, its first id to stdout (`print_id`). */
static void say_submitted(const sweep_run_t *s, const char *first_id, int print_id)
{
    job_record_t r = {.dir = s->dir, .submitted = (int64_t)time(NULL)};
    snprintf(r.name, sizeof r.name, "%s", s->trials[0].spec->name);
    snprintf(r.scheduler, sizeof r.scheduler, "%s", s->ops->name);
    ddp_error_t err;
    if (job_index_add(&r, first_id, &err))
        fprintf(stderr, "ddpjob: warning: sweep %s is not in the index of jobs: %s\n", r.name,
                err.msg);
    if (!strcmp(s->how, "array"))
        fprintf(stderr, "ddpjob: sweep %s: %zu trials as array job %s, at most %ld at once\n",
                r.name, s->ntrials, first_id, s->parallel);
    else if (s->nalloc)
        fprintf(stderr,
                "ddpjob: sweep %s: %zu trial%s packed into %zu allocation%s of %ld node%s (job "
                "%s%s), at most %ld at once\n",
                r.name, s->ntrials, s->ntrials == 1 ? "" : "s", s->nalloc,
                s->nalloc == 1 ? "" : "s", s->trials[0].spec->sweep.pack_nodes,
                s->trials[0].spec->sweep.pack_nodes == 1 ? "" : "s", first_id,
                s->nalloc > 1 ? ", ..." : "", s->parallel);
    else
        fprintf(stderr,
                "ddpjob: sweep %s: %zu trial%s as %zu job%s in %ld lane%s (each trial after "
                "the one before it in its lane)\n",
                r.name, s->ntrials, s->ntrials == 1 ? "" : "s", s->ntrials,
                s->ntrials == 1 ? "" : "s", s->parallel, s->parallel == 1 ? "" : "s");
    fprintf(stderr, "ddpjob: its record: %s\n", s->dir);
    job_output_tell(s->dir, &s->output);
    if (print_id)
        printf("%s\n", first_id);
}

static void sweep_run_free(sweep_run_t *s, int keep_records)
{
    for (size_t k = 0; k < s->ntrials; k++) {
        trial_t *t = &s->trials[k];
        if (t->record && !keep_records)
            job_record_remove(t->record);
        free(t->record);
        free(t->script);
        if (k > 0) { /* trial 0 is the caller's */
            free(t->text);
            spec_destroy(t->spec);
        }
    }
    if (s->dir && !keep_records) {
        char path[8192];
        snprintf(path, sizeof path, "%s/sweep.json", s->dir);
        unlink(path);
        rmdir(s->dir);
    }
    free(s->dir);
    free(s->trials);
    free(s->packed0);
}

static sweep_run_t sweep_run_of(const char *path, const load_opts_t *load, const site_t *site,
                                job_spec_t *spec, const render_opts_t *ro)
{
    /* A site that takes no such array packs the trials where its profile says so (pack:): one
     * allocation of its nodes at most, as many as `parallel` trials take, one trial's at least.
     * A trial with spares cannot be packed. */
    if (site && site->pack_nodes && !spec->sweep.pack_nodes && !spec->spares &&
        spec->sweep.ntrials > 1 && strcmp(how_for(spec, site), "array")) {
        long trial = spec_alloc_nodes(spec), wide = trial * spec->sweep.parallel;
        wide = wide < site->pack_nodes ? wide : site->pack_nodes;
        spec->sweep.pack_nodes = wide > trial ? wide : trial;
        spec->sweep.pack_allocations = 1;
    }
    return (sweep_run_t){.path = path,
                         .load = load,
                         .ops = ro->sched,
                         .sched = ro->sched,
                         .how = how_for(spec, site),
                         .ntrials = spec->sweep.ntrials,
                         .parallel = spec->sweep.parallel,
                         .after = ""};
}

int sweep_submit(const char *path, const load_opts_t *load, const site_t *site, job_spec_t *spec,
                 char *text, const render_opts_t *ro, const char *after, int dry_run,
                 submit_context_t *ctx)
{
    sweep_run_t s = sweep_run_of(path, load, site, spec, ro);
    s.after = after;
    if (!(s.trials = calloc(s.ntrials, sizeof *s.trials)))
        return EXIT_SYSTEM;
    s.trials[0].spec = spec;
    s.trials[0].text = text;
    if (!strcmp(s.how, "packed"))
        s.nalloc = sweep_pack_count(spec, s.ntrials);
    int code = load_trials(&s, ro);
    if (code == EXIT_OK)
        code = place_trials(&s, dry_run);
    if (code == EXIT_OK && !dry_run)
        code = make_records(&s);
    if (code == EXIT_OK && !dry_run)
        code = place_output(s.dir, &s.output);
    char first_id[128] = "";
    if (code == EXIT_OK && s.nalloc)
        code = submit_packed(&s, ro, dry_run, first_id, sizeof first_id);
    else if (code == EXIT_OK && !strcmp(s.how, "array"))
        code = submit_array(&s, dry_run, first_id, sizeof first_id);
    else if (code == EXIT_OK)
        code = submit_lanes(&s, dry_run);
    if (code == EXIT_OK && !dry_run)
        say_submitted(&s, first_id[0] ? first_id : s.trials[0].id, !ctx);
    if (code == EXIT_OK && !dry_run && ctx) {
        ctx->record = ddp_xstrdup(s.dir);
        snprintf(ctx->id, sizeof ctx->id, "%s", first_id[0] ? first_id : s.trials[0].id);
    }
    sweep_run_free(&s, code == EXIT_OK && !dry_run);
    return code;
}

char *sweep_render(const char *path, const load_opts_t *load, const site_t *site, job_spec_t *spec,
                   const char *text, const render_opts_t *ro, int *exit_code)
{
    sweep_run_t s = sweep_run_of(path, load, site, spec, ro);
    if (!strcmp(s.how, "packed")) {
        fprintf(stderr,
                "ddpjob: %s: submit holds %zu allocation%s of %ld node%s and runs the %zu trials "
                "inside, each on the nodes it asks; this is trial 0's script as run there "
                "(--trial K for another)\n",
                path, sweep_pack_count(spec, s.ntrials),
                sweep_pack_count(spec, s.ntrials) == 1 ? "" : "s", spec->sweep.pack_nodes,
                spec->sweep.pack_nodes == 1 ? "" : "s", s.ntrials);
        render_opts_t run_ro = *ro;
        run_ro.held_run = true;
        spec->requeue = 0;
        return render_to_string(spec, &run_ro, exit_code);
    }
    if (strcmp(s.how, "array")) {
        if (!strcmp(s.how, "lanes"))
            fprintf(stderr,
                    "ddpjob: %s: the site takes no array of %zu trials: submit sends each as a "
                    "job of its own, in %ld lanes; this is trial 0's script (--trial K for "
                    "another)\n",
                    path, s.ntrials, s.parallel);
        return strdup(text);
    }
    if (!(s.trials = calloc(s.ntrials, sizeof *s.trials)))
        return NULL;
    s.trials[0].spec = spec;
    s.trials[0].text = (char *)text;
    *exit_code = load_trials(&s, ro);
    sweep_trial_script_t *list = calloc(s.ntrials, sizeof *list);
    char *out = NULL;
    for (size_t k = 0; list && *exit_code == EXIT_OK && k < s.ntrials; k++) {
        trial_t *t = &s.trials[k];
        /* Where submit would write it: a workdir as written when absolute (it need not exist
         * on this machine), else made absolute. */
        const char *workdir = t->spec->workdir ? t->spec->workdir : ".";
        char *dir = *workdir == '/' ? strdup(workdir) : realpath(workdir, NULL);
        sched_script_file(s.ops, t->spec, t->file, sizeof t->file);
        if (dir && asprintf(&t->script, "%s/%s", dir, t->file) < 0)
            t->script = NULL;
        free(dir);
        list[k].script = t->script ? t->script : t->file;
    }
    if (list && *exit_code == EXIT_OK)
        out = sweep_array_script(s.sched, text, list, s.ntrials, s.parallel);
    free(list);
    sweep_run_free(&s, 1);
    return out;
}

/* trial-K's record put aside as trial-K.try-N (the first N free) and made again, fresh, with the
 * same spec and script (a run of the allocation held_in, when not NULL): its first link the
 * retry's. *script: the record's script (what is
 * submitted again), *text its text, both malloc'd. */
static int renew_trial(const char *trial, const char *held_in, job_record_t *r, char **script,
                       char **text, ddp_error_t *err)
{
    char aside[8300], path[8400];
    struct stat st;
    for (int n = 1;; n++) {
        snprintf(aside, sizeof aside, "%s.try-%d", trial, n);
        if (lstat(aside, &st) != 0)
            break;
    }
    if (job_record_read(trial, r, err))
        return -1;
    if (held_in)
        snprintf(r->held_in, sizeof r->held_in, "%s", held_in);
    snprintf(path, sizeof path, "%s/spec.yaml", trial);
    char *spec_text = ddp_read_file(path, NULL, err);
    snprintf(path, sizeof path, "%s/script", trial);
    char *script_text = spec_text ? ddp_read_file(path, NULL, err) : NULL;
    int rc = script_text ? 0 : -1;
    if (rc == 0 && rename(trial, aside))
        rc = ddp_error_set(err, "cannot put %s aside as %s: %s", trial, aside, strerror(errno));
    if (rc == 0 && job_record_create_at(trial, r, spec_text, script_text, err))
        rc = -1;
    snprintf(path, sizeof path, "%s/script", trial);
    if (rc == 0 && !(*script = strdup(path)))
        rc = ddp_error_set(err, "out of memory");
    free(spec_text);
    if (rc == 0)
        *text = script_text;
    else
        free(script_text);
    return rc;
}

/* The trials to retry: ended, and not completed. */
static size_t failed_trials(const sweep_view_t *v, size_t *which)
{
    size_t n = 0;
    for (size_t k = 0; k < v->rec.ntrials; k++)
        if (job_state_final(v->trials[k].state) && v->trials[k].state != JOB_COMPLETED)
            which[n++] = k;
    return n;
}

/* Submits one trial again, from its workdir, after the retry `after` in its lane ("": none). */
static int resubmit(const sweep_view_t *v, size_t k, const char *after, int dry, char *id,
                    size_t size)
{
    const sched_ops_t *ops = sched_by_name(v->rec.scheduler);
    if (!ops) {
        fprintf(stderr, "ddpjob: sweep %s: unknown scheduler \"%s\"\n", v->rec.name,
                v->rec.scheduler);
        return EXIT_SYSTEM;
    }
    char trial[8192], *script = NULL, *text = NULL, depend[256] = "", record[8300];
    char output_arg[4200], *extra[10] = {NULL};
    sweep_trial_dir(v->rec.dir, k, trial, sizeof trial);
    job_record_t fresh = {0};
    ddp_error_t err;
    if (dry) {
        snprintf(trial + strlen(trial), sizeof trial - strlen(trial), "/script");
        script = strdup(trial);
    } else if (renew_trial(trial, NULL, &fresh, &script, &text, &err)) {
        fprintf(stderr, "ddpjob: sweep %s: trial %zu: %s\n", v->rec.name, k, err.msg);
        job_record_free(&fresh);
        return EXIT_SYSTEM;
    }
    job_record_free(&fresh);
    size_t e = 0;
    job_output_t output;
    if (place_output(v->rec.dir, &output)) {
        free(script);
        free(text);
        return EXIT_SYSTEM;
    }
    ops->output_args(output.dir, 0, output_arg, sizeof output_arg, extra, &e);
    record_handoff(ops, trial, &output, record, sizeof record, extra, &e);
    char any[160];
    snprintf(any, sizeof any, "afterany:%s", after);
    if (*after)
        ops->after_args(any, depend, sizeof depend, extra, &e);
    int code = submit_script(ops, v->trials[k].rec.workdir, script, text, extra, dry, id, size);
    if (code == EXIT_OK && !dry)
        record_submitted(trial, id, 0);
    free(script);
    free(text);
    return code;
}

/* The failed trials of a packed sweep, renewed as runs of one more allocation held for them. */
static int retry_packed(const sweep_view_t *v, const size_t *which, size_t n, int dry)
{
    const sched_ops_t *ops = sched_by_name(v->rec.scheduler);
    char **records = calloc(n + 1, sizeof *records), like[8192], held_in[8192], id[128] = "";
    sweep_pack_t p = {.ops = ops,
                      .sweep_dir = v->rec.dir,
                      .jobdir = v->trials[which[0]].rec.workdir,
                      .trials = records,
                      .ntrials = n,
                      .nalloc = 1,
                      .first = sweep_pack_next(v->rec.dir),
                      .after = "",
                      .dry_run = dry};
    job_output_t output;
    int code = !ops || !records ? EXIT_SYSTEM : place_output(v->rec.dir, &output);
    p.output = &output;
    sweep_pack_dir(v->rec.dir, 0, like, sizeof like);
    sweep_pack_dir(v->rec.dir, p.first, held_in, sizeof held_in);
    for (size_t i = 0; code == EXIT_OK && i < n; i++) {
        char trial[8192], *script = NULL, *text = NULL;
        job_record_t fresh = {0};
        ddp_error_t err;
        sweep_trial_dir(v->rec.dir, which[i], trial, sizeof trial);
        if (!dry && renew_trial(trial, held_in, &fresh, &script, &text, &err)) {
            fprintf(stderr, "ddpjob: sweep %s: trial %zu: %s\n", v->rec.name, which[i], err.msg);
            code = EXIT_SYSTEM;
        }
        job_record_free(&fresh);
        free(script);
        free(text);
        records[i] = strdup(trial);
    }
    if (code == EXIT_OK)
        code = sweep_pack_resubmit(&p, like, id, sizeof id);
    for (size_t i = 0; code == EXIT_OK && i < n; i++)
        fprintf(stderr, "ddpjob: sweep %s: trial %zu (%s) packed again into job %s\n", v->rec.name,
                which[i], job_state_name(v->trials[which[i]].state), dry ? "<its allocation>" : id);
    for (size_t i = 0; records && i < n; i++)
        free(records[i]);
    free(records);
    return code;
}

int sweep_retry(const char *sweep, int dry_run)
{
    char *dir = NULL;
    ddp_error_t err;
    if (job_record_find(sweep, &dir, &err) || !sweep_record_is(dir)) {
        fprintf(stderr, "ddpjob submit --retry-failed: %s\n",
                dir ? "takes a sweep; this is a job's record" : err.msg);
        free(dir);
        return EXIT_USAGE;
    }
    sweep_view_t v;
    if (sweep_view_load(dir, &v, &err) && !v.rec.dir) {
        fprintf(stderr, "ddpjob: %s\n", err.msg);
        free(dir);
        return EXIT_SYSTEM;
    }
    free(dir);
    size_t *which = calloc(v.rec.ntrials + 1, sizeof *which), n = failed_trials(&v, which);
    if (v.rec.pack_nodes && n) {
        int code = retry_packed(&v, which, n, dry_run);
        free(which);
        sweep_view_free(&v);
        return code;
    }
    char(*ids)[128] = calloc(n + 1, sizeof *ids);
    long lanes = v.rec.parallel > 0 ? v.rec.parallel : (long)n;
    int code = EXIT_OK;
    for (size_t i = 0; ids && code == EXIT_OK && i < n; i++) {
        code = resubmit(&v, which[i], i >= (size_t)lanes ? ids[i - (size_t)lanes] : "", dry_run,
                        ids[i], sizeof ids[i]);
        if (code == EXIT_OK)
            fprintf(stderr, "ddpjob: sweep %s: trial %zu (%s) submitted again as job %s\n",
                    v.rec.name, which[i], job_state_name(v.trials[which[i]].state), ids[i]);
    }
    if (n == 0)
        fprintf(stderr, "ddpjob: sweep %s: no trial to retry (none failed or was cancelled)\n",
                v.rec.name);
    free(which);
    free(ids);
    sweep_view_free(&v);
    return code;
}
