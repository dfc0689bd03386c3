/* report: a job drawn as one self-contained HTML page (report_page) from its record, its
 * history and the scheduler's word on it (job_view). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands/commands.h"
#include "cli/jobs/pipeline_record.h"
#include "runtime/base/ddp_file.h"
#include "cli/jobs/job_history.h"
#include "cli/jobs/job_view.h"
#include "cli/jobs/sweep_record.h"
#include "cli/jobs/sweep_view.h"
#include "cli/report/report_page.h"
#include "cli/report/sweep_page.h"

static const char report_help[] =
    "usage: ddpjob report JOB|SWEEP [-o FILE.html]\n"
    "JOB (a spec name, a scheduler job id of any link of its chain, or a job record's folder)\n"
    "as one HTML page that needs nothing else (no script, no network): the chain of links on a\n"
    "time axis with the walltime signals, restarts and spare swaps; the attempts and their\n"
    "causes; every rank's steps over time, the slow or stalled rank named; busy time per step\n"
    "as a heat strip; throughput; rank 0's metrics; the failure in words. A SWEEP: its table\n"
    "and, for each metric, every trial's curve on one chart.\n"
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
        fprintf(stderr,
                "ddpjob report: %s is a pipeline: report one of its stages' jobs (ddpjob status "
                "%s names them)\n",
                argv[optind], argv[optind]);
        free(dir);
        return EXIT_USAGE;
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
