/* report: a job drawn as one self-contained HTML page (report_page) from its record, its
 * history and the scheduler's word on it (job_view); a sweep's (sweep_page); a pipeline's
 * stages' table linking each stage's page, written beside it. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands/commands.h"
#include "cli/commands/pipeline_run.h"
#include "cli/jobs/pipeline_record.h"
#include "cli/report/svg.h"
#include "runtime/base/ddp_file.h"
#include "cli/jobs/job_history.h"
#include "cli/view/job_view.h"
#include "cli/jobs/sweep_record.h"
#include "cli/view/sweep_view.h"
#include "cli/report/report_page.h"
#include "cli/report/sweep_page.h"

static const char report_help[] =
    "usage: ddpjob report JOB|SWEEP|PIPELINE [-o FILE.html]\n"
    "JOB (a spec name, a scheduler job id of any link of its chain, or a job record's folder)\n"
    "as one HTML page that needs nothing else (no script, no network): the chain of links on a\n"
    "time axis with the walltime signals, restarts and spare swaps; the attempts and their\n"
    "causes; every rank's steps over time, the slow or stalled rank named; busy time per step\n"
    "as a heat strip; throughput; rank 0's metrics; the failure in words. A SWEEP: its table\n"
    "and, for each metric, every trial's curve on one chart. A PIPELINE: its stages' table,\n"
    "each submitted stage's name linking its own page, written beside (FILE less .html, then\n"
    ".STAGE.html).\n"
    "  -o FILE  where to write it (default NAME.report.html here; -: standard "
    "output)\n" ON_CLUSTER_HELP
    "Exit: 0 written, 2 usage, 3 the job not found or the file not written.\n";

/* The page of the sweep in dir: its table, and its trials' metric curves. */
static int render_sweep(const char *dir, char **text, size_t *len, char *name, size_t size)
{
    sweep_view_t sv;
    ddp_error_t err;
    /* A scheduler that cannot be asked leaves the trials' records to answer, as for one job. */
    if (sweep_view_load(dir, &sv, &err)) {
        fprintf(stderr, "ddpjob: report: %s\n", err.msg);
        if (!sv.rec.dir)
            return -1;
    }
    snprintf(name, size, "%s", sv.rec.name);
    job_history_t *hs = calloc(sv.rec.ntrials + 1, sizeof *hs);
    for (size_t k = 0; hs && k < sv.rec.ntrials; k++)
        if (sv.trials[k].rec.dir)
            job_history_read(&sv.trials[k].rec, -1, &hs[k]);
    FILE *f = hs ? open_memstream(text, len) : NULL;
    if (f) {
        sweep_page_write(f, &sv, hs);
        fclose(f);
    }
    for (size_t k = 0; hs && k < sv.rec.ntrials; k++)
        job_history_free(&hs[k]);
    free(hs);
    sweep_view_free(&sv);
    return f && *text ? 0 : -1;
}

/* The page of the job in dir, into *text. */
static int render_page(char *dir, char **text, size_t *len, job_view_t *v)
{
    ddp_error_t err;
    if (job_views_load(&dir, 1, v, &err))
        fprintf(stderr, "ddpjob: %s (the job record answers for the job)\n", err.msg);
    if (!v->rec.dir)
        return -1;
    job_history_t h;
    job_history_read(&v->rec, -1, &h);
    FILE *f = open_memstream(text, len);
    if (f) {
        report_page_write(f, v, &h);
        fclose(f);
    }
    job_history_free(&h);
    return f && *text ? 0 : -1;
}

/* A page written where asked (private, as the record it is drawn from): 0, or -1 said. */
static int write_page(const char *path, const char *text, size_t len)
{
    ddp_error_t err;
    if (ddp_write_file_atomic(path, text, len, 0600, &err) == 0)
        return 0;
    fprintf(stderr, "ddpjob: report: %s\n", err.msg);
    return -1;
}

/* Stage i's own page beside the pipeline's (base.STAGE.html); its file's name into page ("":
 * none, the stage has no job). -1 when it could not be made (said). */
static int write_stage_page(const pipeline_look_t *v, size_t i, const char *base, char *page,
                            size_t size)
{
    const stage_look_t *s = &v->stages[i];
    page[0] = '\0';
    if (s->rec.fate != STAGE_SUBMITTED)
        return 0;
    char *text = NULL, name[256], path[4400], record[sizeof s->rec.record];
    size_t len = 0;
    job_view_t jv = {0};
    snprintf(record, sizeof record, "%s", s->rec.record);
    int rc = s->is_sweep ? render_sweep(record, &text, &len, name, sizeof name)
                         : render_page(record, &text, &len, &jv);
    if (rc)
        fprintf(stderr, "ddpjob: report: cannot read the record %s\n", s->rec.record);
    snprintf(path, sizeof path, "%s.%s.html", base, v->p.stages[i].name);
    if (rc == 0 && (rc = write_page(path, text, len)) == 0) {
        const char *slash = strrchr(path, '/');
        snprintf(page, size, "%s", slash ? slash + 1 : path);
    }
    if (!s->is_sweep)
        job_views_free(&jv, 1);
    free(text);
    return rc;
}

/* The pipeline in dir: its stages' table at path (default NAME.report.html), each submitted
 * stage's page beside it. */
static int write_pipeline(const char *dir, const char *output)
{
    pipeline_look_t v;
    ddp_error_t err;
    if (pipeline_look_load(dir, &v, &err)) {
        fprintf(stderr, "ddpjob: report: %s\n", err.msg);
        return EXIT_SYSTEM;
    }
    char path[4096], base[4096], pages[PIPELINE_STAGES_MAX][4400];
    snprintf(path, sizeof path, "%s", output ? output : "");
    if (!output)
        snprintf(path, sizeof path, "%s.report.html", v.rec.name);
    size_t len = strlen(path);
    snprintf(base, sizeof base, "%.*s",
             (int)(len > 5 && !strcmp(path + len - 5, ".html") ? len - 5 : len), path);
    int rc = EXIT_OK;
    for (size_t i = 0; i < v.p.nstages; i++)
        if (write_stage_page(&v, i, base, pages[i], sizeof pages[i]))
            rc = EXIT_SYSTEM;
    char *text = NULL;
    size_t text_len = 0;
    FILE *f = open_memstream(&text, &text_len);
    if (f) {
        char title[300];
        snprintf(title, sizeof title, "pipeline %s", v.rec.name);
        html_begin(f, title);
        fputs("<h1>", f);
        html_text(f, title);
        fprintf(f,
                ": %s</h1>\n<table class=\"stages\"><tr><th>stage</th><th>job</th>"
                "<th>state</th></tr>\n",
                job_state_name(v.state));
        for (size_t k = 0; k < v.p.nstages; k++) {
            size_t i = v.p.order[k];
            fprintf(f, "<tr data-stage=\"%s\"><td>", v.p.stages[i].name);
            if (pages[i][0]) {
                fputs("<a href=\"", f);
                html_text(f, pages[i]);
                fputs("\">", f);
            }
            html_text(f, v.p.stages[i].name);
            fprintf(f, "%s</td><td>", pages[i][0] ? "</a>" : "");
            html_text(f, v.stages[i].rec.id[0] ? v.stages[i].rec.id : "-");
            fputs("</td><td>", f);
            html_text(f, v.stages[i].said);
            fputs("</td></tr>\n", f);
        }
        fputs("</table>\n", f);
        html_end(f);
        fclose(f);
    }
    if (!f || !text || write_page(path, text, text_len))
        rc = EXIT_SYSTEM;
    else if (rc == EXIT_OK)
        printf("%s\n", path);
    free(text);
    pipeline_look_free(&v);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, {0}};
    const char *output = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        if (c == 'o')
            output = optarg;
        else if (c == 'h')
            return fputs(report_help, stdout), EXIT_OK;
        else
            return fputs(report_help, stderr), EXIT_USAGE;
    }
    if (optind + 1 != argc)
        return fputs(report_help, stderr), EXIT_USAGE;
    ddp_error_t err;
    char *dir = NULL, *text = NULL, path[4096];
    if (job_record_find(argv[optind], &dir, &err)) {
        fprintf(stderr, "ddpjob: %s\n", err.msg);
        return EXIT_SYSTEM;
    }
    if (pipeline_record_is(dir)) {
        int code = output && !strcmp(output, "-")
                       ? (fprintf(stderr,
                                  "ddpjob report: %s is a pipeline: its pages are files "
                                  "(-o FILE.html)\n",
                                  argv[optind]),
                          EXIT_USAGE)
                       : write_pipeline(dir, output);
        free(dir);
        return code;
    }
    job_view_t v = {0};
    size_t len = 0;
    int rc = EXIT_SYSTEM, sweep = sweep_record_is(dir);
    char name[256] = "";
    if (sweep ? render_sweep(dir, &text, &len, name, sizeof name)
              : render_page(dir, &text, &len, &v)) {
        fprintf(stderr, "ddpjob: report: cannot read the record %s\n", dir);
    } else if (output && !strcmp(output, "-")) {
        rc = fwrite(text, 1, len, stdout) == len ? EXIT_OK : EXIT_SYSTEM;
    } else {
        snprintf(path, sizeof path, "%s", output ? output : "");
        if (!output)
            snprintf(path, sizeof path, "%s.report.html",
                     sweep           ? name
                     : v.rec.name[0] ? v.rec.name
                                     : "job");
        /* Private, as the record it is drawn from. */
        if (ddp_write_file_atomic(path, text, len, 0600, &err))
            fprintf(stderr, "ddpjob: report: %s\n", err.msg);
        else
            rc = printf("%s\n", path) < 0 ? EXIT_SYSTEM : EXIT_OK;
    }
    if (!sweep)
        job_views_free(&v, 1);
    free(text);
    free(dir);
    return rc;
}
