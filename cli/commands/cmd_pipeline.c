/* pipeline: a file of stages (cli/spec/pipeline.h) as the commands take it: validate (every
 * problem of the file and of each stage's spec, the order the stages go in), submit (its record
 * made, the files copied there, the first stages submitted), and status, list, wait and cancel
 * of a submitted one, each moving it on first (pipeline_run.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands/commands.h"
#include "cli/commands/pipeline_run.h"
#include "cli/jobs/job_record.h"
#include "cli/jobs/pipeline_record.h"
#include "cli/spec/pipeline.h"
#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"

static void print_problems(const diag_t *d)
{
    for (size_t i = 0; d && i < d->count; i++)
        fprintf(stderr, "%s\n", d->lines[i]);
}

/* Stage s's spec loaded as its job would be (its set: applied): EXIT_OK or the loader's code. A
 * spec asking values of other stages is loaded when they are known, as the stage starts. */
static int check_stage_spec(const pipeline_stage_t *s, const load_opts_t *load)
{
    if (s->asks_values)
        return EXIT_OK;
    load_opts_t one = {
        .sched = load->sched, .site = load->site, .validating = true, .silent = load->silent};
    for (size_t k = 0; k < s->nsets; k++)
        load_opts_add_set(&one, s->sets[k]);
    const sched_ops_t *target;
    int code = EXIT_OK;
    job_spec_t *spec = load_for_scheduler(s->path, &one, &target, NULL, &code);
    spec_destroy(spec);
    load_opts_free(&one);
    return spec ? EXIT_OK : code;
}

/* The pipeline at path read into *p and checked whole, each problem said, as validate does: an
 * exit code. pipeline_free(p) when *diag, which holds the file's problems, is not NULL. */
static int check_whole(const char *path, const load_opts_t *load, pipeline_t *p, diag_t **diag)
{
    *diag = diag_create(path);
    size_t problems = *diag ? pipeline_read(path, p, *diag) : 1;
    print_problems(*diag);
    for (size_t i = 0; *diag && i < p->nstages; i++)
        print_problems(p->stages[i].spec_diag);
    int worst = problems ? EXIT_INVALID_SPEC : EXIT_OK;
    for (size_t k = 0; !problems && k < p->nstages; k++) {
        int code = check_stage_spec(&p->stages[p->order[k]], load);
        worst = code > worst ? code : worst;
    }
    return worst;
}

int pipeline_validate(const char *path, const load_opts_t *load)
{
    pipeline_t p;
    diag_t *diag;
    int worst = check_whole(path, load, &p, &diag);
    if (worst == EXIT_OK) {
        printf("%s: ok: pipeline %s of %zu stage(s):", path, p.name, p.nstages);
        for (size_t k = 0; k < p.nstages; k++) {
            const pipeline_stage_t *s = &p.stages[p.order[k]];
            printf("%s %s (%s", k ? "," : "", s->name, s->spec);
            for (int kind = 0; kind < STAGE_AFTER_KINDS; kind++)
                for (size_t a = 0; a < s->nafter[kind]; a++)
                    printf(", after %s %s", p.stages[s->after[kind][a]].name,
                           pipeline_after_words[kind]);
            printf("%s)",
                   s->asks_values ? "; its values, and with them its spec, when it starts" : "");
        }
        printf("\n");
    }
    if (diag)
        pipeline_free(&p);
    diag_destroy(diag);
    return worst;
}

/* ---- submit ------------------------------------------------------------------------------ */

/* Everything the pipeline's record keeps: the file and each stage's spec, copied. -1 with the
 * problem said. */
static int copy_into_record(const pipeline_t *p, const char *dir)
{
    for (size_t i = 0; i < p->nstages; i++) {
        ddp_error_t err;
        char *text = ddp_read_file(p->stages[i].path, NULL, &err), copy[8192];
        int rc =
            text ? pipeline_record_add_spec(dir, p->stages[i].name, text, copy, sizeof copy, &err)
                 : -1;
        free(text);
        if (rc) {
            fprintf(stderr, "ddpjob: pipeline %s: stage %s: %s\n", p->name, p->stages[i].name,
                    err.msg);
            return -1;
        }
    }
    return 0;
}

/* The copies checked as the files were: a file changed in between is refused. */
static int copies_check(const char *dir, const load_opts_t *load)
{
    char file[8192];
    pipeline_record_path(dir, "pipeline.yaml", file, sizeof file);
    pipeline_t p;
    diag_t *diag = diag_create(file);
    size_t problems = diag ? pipeline_read_copies(file, dir, &p, diag) : 1;
    /* The problems were said of the files already. */
    load_opts_t silent = *load;
    silent.quiet = silent.silent = true;
    int worst = problems ? EXIT_INVALID_SPEC : EXIT_OK;
    for (size_t k = 0; worst == EXIT_OK && k < p.nstages; k++)
        worst = check_stage_spec(&p.stages[p.order[k]], &silent);
    if (diag)
        pipeline_free(&p);
    diag_destroy(diag);
    return worst;
}

int pipeline_submit(const char *path, const load_opts_t *load, const char *bindir, int dry_run)
{
    pipeline_t p;
    diag_t *diag;
    int code = check_whole(path, load, &p, &diag);
    if (code != EXIT_OK)
        fprintf(stderr, "ddpjob: pipeline %s: nothing was submitted\n", path);
    char *dir = NULL, *text = NULL;
    ddp_error_t err;
    pipeline_record_t r = {.submitted = (int64_t)time(NULL)};
    if (code == EXIT_OK && dry_run) {
        printf("pipeline %s: would submit", p.name);
        for (size_t k = 0; k < p.nstages; k++) {
            const pipeline_stage_t *s = &p.stages[p.order[k]];
            size_t waits = 0;
            for (int kind = 0; kind < STAGE_AFTER_KINDS; kind++)
                waits += s->nafter[kind];
            printf("%s %s %s", k ? "," : "", s->name, waits ? "as those before it end" : "now");
        }
        printf("\n");
    } else if (code == EXIT_OK) {
        char *cwd = realpath(".", NULL), *file = realpath(path, NULL);
        snprintf(r.name, sizeof r.name, "%s", p.name);
        snprintf(r.cwd, sizeof r.cwd, "%s", cwd ? cwd : ".");
        snprintf(r.file, sizeof r.file, "%s", file ? file : path);
        snprintf(r.scheduler, sizeof r.scheduler, "%s", load->sched ? load->sched->name : "");
        snprintf(r.site, sizeof r.site, "%s", load->site ? load->site : "");
        snprintf(r.bindir, sizeof r.bindir, "%s", bindir ? bindir : "");
        const char *state_home = getenv("XDG_STATE_HOME");
        snprintf(r.state_home, sizeof r.state_home, "%s",
                 state_home && state_home[0] == '/' ? state_home : "");
        free(cwd);
        free(file);
        if (!(text = ddp_read_file(path, NULL, &err)) ||
            pipeline_record_create(&r, text, &dir, &err)) {
            fprintf(stderr, "ddpjob: pipeline %s: cannot make its record: %s\n", path, err.msg);
            code = EXIT_SYSTEM;
        } else if (copy_into_record(&p, dir)) {
            code = EXIT_SYSTEM;
        } else if ((code = copies_check(dir, load)) != EXIT_OK) {
            fprintf(stderr,
                    "ddpjob: pipeline %s: its files changed while they were copied; nothing was "
                    "submitted\n",
                    path);
        }
    }
    if (code == EXIT_OK && dir) {
        job_record_t indexed = {.dir = dir, .submitted = r.submitted};
        snprintf(indexed.name, sizeof indexed.name, "%s", r.name);
        snprintf(indexed.scheduler, sizeof indexed.scheduler, "%s", r.scheduler);
        if (job_index_add(&indexed, "-", &err))
            fprintf(stderr, "ddpjob: warning: pipeline %s is not in the index of jobs: %s\n",
                    r.name, err.msg);
        fprintf(stderr, "ddpjob: pipeline %s: %zu stages; its record: %s\n", r.name, p.nstages,
                dir);
        pipeline_look_t v;
        if (pipeline_advance(dir, &v, &err)) {
            fprintf(stderr, "ddpjob: pipeline %s: %s\n", r.name, err.msg);
            code = EXIT_SYSTEM;
        } else {
            /* A first stage not submitted fails the submit, as a job's would. */
            for (size_t i = 0; i < v.p.nstages; i++)
                if (v.stages[i].rec.fate == STAGE_NEVER && code == EXIT_OK)
                    code = EXIT_SUBMITTER;
            pipeline_look_free(&v);
            printf("%s\n", dir);
        }
    } else if (dir) {
        job_record_remove(dir);
    }
    free(dir);
    free(text);
    if (diag)
        pipeline_free(&p);
    diag_destroy(diag);
    return code;
}

int pipeline_submit_here(int argc, char **argv, int *is_pipeline, job_spec_t **as_job)
{
    const char *path, *bindir;
    load_opts_t load;
    int dry_run, rc = submit_args_pipeline(argc, argv, &path, &load, &bindir, &dry_run);
    *is_pipeline = rc != 0;
    if (rc <= 0)
        return rc < 0 ? EXIT_USAGE : EXIT_OK;
    pipeline_t p;
    diag_t *diag;
    int code = check_whole(path, &load, &p, &diag);
    load_opts_free(&load);
    /* What the folder sent there is named after, and where the pipeline's file is. */
    if (code == EXIT_OK && (*as_job = calloc(1, sizeof **as_job))) {
        (*as_job)->path = ddp_xstrdup(path);
        (*as_job)->name = ddp_xstrdup(p.name);
    }
    if (diag)
        pipeline_free(&p);
    diag_destroy(diag);
    return code == EXIT_OK ? -1 : code;
}

/* ---- the commands after submit ------------------------------------------------------------ */

/* The pipeline in dir moved on and looked at; -1 with the problem said. */
static int advance(const char *command, const char *dir, pipeline_look_t *v)
{
    ddp_error_t err;
    if (pipeline_advance(dir, v, &err) == 0)
        return 0;
    fprintf(stderr, "ddpjob %s: %s\n", command, err.msg);
    return -1;
}

int pipeline_status(const char *dir, int json)
{
    pipeline_look_t v;
    if (advance("status", dir, &v))
        return EXIT_SYSTEM;
    if (json)
        pipeline_look_json(stdout, &v);
    else
        pipeline_look_print(stdout, &v);
    pipeline_look_free(&v);
    return EXIT_OK;
}

void pipeline_list_line(const char *dir)
{
    pipeline_look_t v;
    ddp_error_t err;
    if (pipeline_look_load(dir, &v, &err) == 0) {
        pipeline_look_line(stdout, &v);
        pipeline_look_free(&v);
    }
}

/* How often wait looks again. */
#define PIPELINE_POLL_MS 3000

int pipeline_wait(const char *dir, int64_t deadline)
{
    char said[PIPELINE_STAGES_MAX][64];
    memset(said, 0, sizeof said);
    for (;;) {
        pipeline_look_t v;
        if (advance("wait", dir, &v))
            return EXIT_SYSTEM;
        for (size_t i = 0; i < v.p.nstages; i++) {
            const stage_look_t *s = &v.stages[i];
            char now[64];
            snprintf(now, sizeof now, "%s",
                     s->rec.fate == STAGE_WAITING ? "waiting" : job_state_name(s->state));
            if (strcmp(now, said[i]) && (isatty(2) || s->ended))
                fprintf(stderr, "ddpjob wait: pipeline %s: stage %s: %s\n", v.rec.name,
                        v.p.stages[i].name, s->said);
            snprintf(said[i], sizeof said[i], "%s", now);
        }
        int ended = v.ended, completed = v.state == JOB_COMPLETED;
        if (ended)
            fprintf(stderr, "ddpjob wait: pipeline %s: %s\n", v.rec.name, job_state_name(v.state));
        pipeline_look_free(&v);
        if (ended)
            return completed ? EXIT_OK : 1;
        if (deadline && ddp_ms_left(deadline) == 0) {
            fprintf(stderr, "ddpjob wait: pipeline in %s has not ended\n", dir);
            return 124;
        }
        ddp_sleep_ms(PIPELINE_POLL_MS);
    }
}

char *pipeline_stage_record(const char *dir, const char *stage)
{
    pipeline_look_t v;
    ddp_error_t err;
    if (pipeline_look_load(dir, &v, &err)) {
        fprintf(stderr, "ddpjob: %s\n", err.msg);
        return NULL;
    }
    char *record = NULL;
    size_t i = 0;
    while (i < v.p.nstages && strcmp(v.p.stages[i].name, stage))
        i++;
    if (i == v.p.nstages)
        fprintf(stderr, "ddpjob: pipeline %s has no stage \"%s\"\n", v.rec.name, stage);
    else if (v.stages[i].rec.fate != STAGE_SUBMITTED)
        fprintf(stderr, "ddpjob: pipeline %s: stage %s has no job: %s\n", v.rec.name, stage,
                v.stages[i].said);
    else
        record = ddp_xstrdup(v.stages[i].rec.record);
    pipeline_look_free(&v);
    return record;
}

int cmd_pipeline_next(int argc, char **argv)
{
    static const char help[] =
        "usage: ddpjob pipeline-next PIPELINE_RECORD\n"
        "Run by each stage's batch shell as it ends: submits the pipeline's stages that can now\n"
        "start, and marks those that never will, with why. `ddpjob status` of the pipeline does\n"
        "the same. Exit: 0 done, 2 usage, 3 the record cannot be read or locked.\n";
    if (argc == 2 && !strcmp(argv[1], "--help"))
        return fputs(help, stdout), EXIT_OK;
    if (argc != 2 || argv[1][0] == '-')
        return fputs(help, stderr), EXIT_USAGE;
    ddp_error_t err;
    if (pipeline_advance(argv[1], NULL, &err)) {
        fprintf(stderr, "ddpjob pipeline-next: %s\n", err.msg);
        return EXIT_SYSTEM;
    }
    return EXIT_OK;
}
