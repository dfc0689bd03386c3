/* status, list, wait, cancel: what comes after submit, from the job records (job_record)
 * and the schedulers (their rows' queries, sched.h), seen together (job_view). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands/commands.h"
#include "cli/commands/pipeline_run.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"
#include "cli/view/job_view.h"
#include "cli/jobs/pipeline_record.h"
#include "cli/jobs/sweep_record.h"
#include "cli/sched/sched.h"
#include "runtime/base/spawn.h"

/* How often wait looks again. */
#define POLL_MS 2000
/* How long cancel waits for the job to be gone. */
#define CANCEL_WAIT_MS 120000

char **find_records(int argc, char **argv, int all_if_none, size_t *n)
{
    if (argc == 0 && all_if_none) {
        char **dirs = job_index_records();
        for (*n = 0; dirs && dirs[*n]; (*n)++)
            ;
        return dirs;
    }
    char **dirs = calloc((size_t)argc + 1, sizeof *dirs);
    *n = 0;
    for (int i = 0; dirs && i < argc; i++) {
        ddp_error_t err;
        if (job_record_find(argv[i], &dirs[*n], &err)) {
            fprintf(stderr, "ddpjob: %s\n", err.msg);
            job_index_free(dirs);
            return NULL;
        }
        (*n)++;
    }
    return dirs;
}

/* Loads the views; a scheduler that could not be asked is reported, its jobs left to their
 * records. */
static job_view_t *load(char **dirs, size_t n)
{
    job_view_t *views = calloc(n + 1, sizeof *views);
    ddp_error_t err;
    if (views && job_views_load(dirs, n, views, &err))
        fprintf(stderr, "ddpjob: %s (the job records answer for its jobs)\n", err.msg);
    return views;
}

static void print_views(const job_view_t *views, size_t n, int json)
{
    if (json)
        printf("{\"version\": %d, \"jobs\": [", JOB_RECORD_VERSION);
    for (size_t i = 0; i < n; i++) {
        if (!views[i].rec.dir)
            continue;
        if (json) {
            printf("%s\n  ", i ? "," : "");
            job_view_json(stdout, &views[i]);
        } else {
            job_view_print(stdout, &views[i]);
        }
    }
    if (json)
        printf("\n]}\n");
}

static const char status_help[] =
    "usage: ddpjob status [JOB...] [--json]\n"
    "       ddpjob status JOB --watch\n"
    "       ddpjob status SWEEP [--sort METRIC [--desc]] [--json]\n"
    "       ddpjob status PIPELINE [--json]\n"
    "The state of each JOB (a spec name, a scheduler job id of any link of its chain, or a job\n"
    "record's folder; default: every job in this user's index): pending, running, requeued,\n"
    "completed, failed, cancelled, timeout, out of memory, node failure or unknown, with the\n"
    "scheduler's own word, the exit status, the chain's link, nodes, elapsed and walltime, and\n"
    "the failed ranks with host and cause. One scheduler call per scheduler, however many jobs.\n"
    "A sweep: one row per trial (parameters, state, link, elapsed, each metric's last value),\n"
    "ordered by --sort METRIC (ascending; --desc), and its best completed trial.\n"
    "A pipeline (its name or record's folder): one row per stage, its job and state, or why it\n"
    "never ran; the stages that can start now are submitted first.\n"
    "--watch: JOB's live view until it ends, redrawn every 2 s (a plain line per change when\n"
    "not a terminal): state, link, steps done of the total with steps/s, the time to the end\n"
    "against the walltime left (and the requeues that needs), each node's step as a bar, the\n"
    "slow rank, rank 0's last lines; exits as wait does.\n" ON_CLUSTER_HELP
    "Exit: 0 ok, 2 usage, 3 a job not found.\n";

static const char list_help[] =
    "usage: ddpjob list [--all] [--json] [--here]\n"
    "This user's submitted jobs, newest first, with their state: those not ended and those that\n"
    "ended within a day; --all: every job of the index. Then, on a laptop, those of each cluster\n"
    "this machine submitted to with --on in that time, under a line naming it (not with --json;\n"
    "--here: this machine's alone).\n" ON_CLUSTER_HELP;

static int status_or_list(int argc, char **argv, int list)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"all", no_argument, NULL, 'a'},
        {"here", no_argument, NULL, 'H'}, {"sort", required_argument, NULL, 's'},
        {"desc", no_argument, NULL, 'd'}, {"watch", no_argument, NULL, 'w'},
        {"help", no_argument, NULL, 'h'}, {0}};
    int json = 0, all = 0, desc = 0, watch = 0, c;
    const char *sort = NULL;
    const char *help = list ? list_help : status_help;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'j')
            json = 1;
        else if (c == 'a' && list)
            all = 1;
        else if (c == 'H' && list)
            continue;
        else if (c == 's' && !list)
            sort = optarg;
        else if (c == 'd' && !list)
            desc = 1;
        else if (c == 'w' && !list)
            watch = 1;
        else if (c == 'h')
            return fputs(help, stdout), EXIT_OK;
        else
            return fputs(help, stderr), EXIT_USAGE;
    }
    if ((list && optind != argc) || (watch && (optind + 1 != argc || json || sort)))
        return fputs(help, stderr), EXIT_USAGE;
    size_t n;
    char **dirs = find_records(argc - optind, argv + optind, 1, &n);
    if (!dirs)
        return EXIT_SYSTEM;
    if (watch && !sweep_record_is(dirs[0])) {
        int rc = status_watch(dirs[0]);
        job_index_free(dirs);
        return rc;
    }
    if (!list && n == 1 && sweep_record_is(dirs[0])) {
        int rc = sweep_status(dirs[0], sort, desc, json);
        job_index_free(dirs);
        return rc;
    }
    if (!list && n == 1 && pipeline_record_is(dirs[0])) {
        int rc = watch || sort ? (fputs(help, stderr), EXIT_USAGE) : pipeline_status(dirs[0], json);
        job_index_free(dirs);
        return rc;
    }
    job_view_t *views = load(dirs, n);
    if (views && list && !all) {
        time_t day_ago = time(NULL) - 86400;
        for (size_t i = 0; i < n; i++) {
            job_view_t *v = &views[i];
            int64_t ended = v->link < v->rec.nlinks ? v->rec.links[v->link].end_time : 0;
            if (v->rec.dir && job_state_final(v->state) &&
                (ended ? ended : v->rec.submitted) < day_ago) {
                job_record_free(&v->rec);
            }
        }
    }
    if (views)
        print_views(views, n, json);
    for (size_t i = 0; views && !json && i < n; i++)
        if (sweep_record_is(dirs[i]))
            sweep_list_line(dirs[i]);
        else if (pipeline_record_is(dirs[i]))
            pipeline_list_line(dirs[i]);
    job_views_free(views, views ? n : 0);
    free(views);
    job_index_free(dirs);
    return views ? EXIT_OK : EXIT_SYSTEM;
}

int cmd_status(int argc, char **argv)
{
    return status_or_list(argc, argv, 0);
}

int cmd_list(int argc, char **argv)
{
    return status_or_list(argc, argv, 1);
}

/* ---- wait ----------------------------------------------------------------------------- */

static const char wait_help[] =
    "usage: ddpjob wait JOB [--timeout SECONDS]\n"
    "Blocks until JOB (its whole chain of requeues) has ended, printing each change of state on\n"
    "a terminal, and exits with its status: 0 when it completed, else the job's own non-zero\n"
    "status where known (75 for a job cancelled with --checkpoint), else 1 (a plain cancel too).\n"
    "124 when SECONDS passed first; 3 when the job cannot be found, or neither its scheduler nor\n"
    "its record has accounted for it for 120 s. --on: a lost link is said and tried again\n"
    "(for 10 minutes), never taken for the job's end. A sweep: 0 when every trial completed,\n"
    "else 1. A pipeline: its stages started as they can; 0 when every stage that ran\n"
    "completed and none was cancelled, else 1.\n" ON_CLUSTER_HELP;

int cmd_wait(int argc, char **argv)
{
    static const struct option opts[] = {
        {"timeout", required_argument, NULL, 't'}, {"help", no_argument, NULL, 'h'}, {0}};
    double timeout_s = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 't') {
            if (ddp_parse_double(optarg, 0.001, 1e9, &timeout_s)) {
                fprintf(stderr, "ddpjob wait: --timeout %s: expected seconds > 0\n", optarg);
                return EXIT_USAGE;
            }
        } else if (c == 'h') {
            return fputs(wait_help, stdout), EXIT_OK;
        } else {
            return fputs(wait_help, stderr), EXIT_USAGE;
        }
    }
    if (optind + 1 != argc)
        return fputs(wait_help, stderr), EXIT_USAGE;
    size_t n;
    char **dirs = find_records(1, argv + optind, 0, &n);
    if (!dirs)
        return EXIT_SYSTEM;
    int64_t deadline = timeout_s > 0 ? ddp_deadline_in((int64_t)(timeout_s * 1000)) : 0;
    if (sweep_record_is(dirs[0]) || pipeline_record_is(dirs[0])) {
        int rc = sweep_record_is(dirs[0]) ? sweep_wait(dirs[0], deadline)
                                          : pipeline_wait(dirs[0], deadline);
        job_index_free(dirs);
        return rc;
    }
    int64_t unaccounted_since = 0;
    int tty = isatty(2), rc = -1;
    char said[256] = "", progress[1024] = "";
    while (rc < 0) {
        job_view_t v;
        int vanished, over = job_look(dirs[0], &v, &unaccounted_since, &vanished);
        char now[256];
        snprintf(now, sizeof now, "%s, link %d of %d", job_state_name(v.state), v.link + 1,
                 v.rec.nlinks ? v.rec.nlinks : 1);
        if (tty && strcmp(now, said))
            fprintf(stderr, "%sddpjob wait: %s (job %s): %s\n", progress[0] ? "\n" : "", v.rec.name,
                    job_view_id(&v), now);
        snprintf(said, sizeof said, "%s", now);
        if (tty && v.state == JOB_RUNNING) {
            /* One line, rewritten in place: the one status --watch shows. */
            job_progress_for(&v, progress, sizeof progress);
            if (progress[0])
                fprintf(stderr, "\r\033[K  %s", progress);
        }
        if (vanished) {
            fprintf(stderr,
                    "ddpjob wait: job %s (%s): its scheduler no longer knows it and its "
                    "record %s has no end after %d s\n",
                    job_view_id(&v), v.rec.name, v.rec.dir, VANISHED_MS / 1000);
            rc = EXIT_SYSTEM;
        } else if (over) {
            rc = job_view_exit(&v);
            /* What ended it, as status would say: the reason for the exit status. */
            if (v.state != JOB_COMPLETED) {
                if (!tty)
                    fprintf(stderr, "ddpjob wait: %s (job %s): %s\n", v.rec.name, job_view_id(&v),
                            now);
                job_view_print_cause(stderr, &v);
            }
        }
        job_views_free(&v, 1);
        if (rc < 0 && deadline && ddp_ms_left(deadline) == 0) {
            fprintf(stderr, "ddpjob wait: %s still %s after %.0f s\n", argv[optind], said,
                    timeout_s);
            rc = 124;
        }
        if (rc < 0)
            ddp_sleep_ms(POLL_MS);
    }
    job_index_free(dirs);
    return rc;
}

/* ---- cancel --------------------------------------------------------------------------- */

static const char cancel_help[] =
    "usage: ddpjob cancel JOB [--checkpoint]\n"
    "       ddpjob cancel SWEEP [--trial K]\n"
    "       ddpjob cancel PIPELINE\n"
    "Ends JOB and any queued successor in its chain, so nothing of it runs again,\n"
    "and waits (up to 120 s) until the scheduler has ended it. --checkpoint first asks the\n"
    "workers to checkpoint (the spec's checkpoint signal), so the job stops with every rank's\n"
    "checkpoint written (exit 75) and is not requeued; one not ended 60 s later is cancelled.\n"
    "A sweep: every trial not ended; with --trial K, trial K alone (the others go "
    "on).\nA pipeline: every stage not ended, and those not started are never "
    "started.\n" ON_CLUSTER_HELP
    "Exit: 0 when the job has ended, 1 when it had not within 120 s, 2 usage, 3 not found,\n"
    "4 the scheduler's command failed.\n";

/* A link's scheduler id, copied out of a view (which is freed before the fallback cancel). */
typedef char job_id_t[sizeof(((job_link_t *)0)->id)];

/* The ids of the chain's links that may still run or wait, without repeats. */
static size_t live_ids(const job_view_t *v, job_id_t *ids, size_t max)
{
    size_t n = 0;
    for (int k = 0; k < v->rec.nlinks && n < max; k++) {
        const job_link_t *l = &v->rec.links[k];
        int seen = 0;
        for (size_t i = 0; i < n; i++)
            seen |= !strcmp(ids[i], l->id);
        if (l->id[0] && !seen && !(l->ended && k + 1 < v->rec.nlinks))
            snprintf(ids[n++], sizeof ids[0], "%s", l->id);
    }
    return n;
}

/* Asks the running job's workers to checkpoint, with its spec's signal, as its scheduler does. */
static int ask_checkpoint(const job_view_t *v, const sched_ops_t *ops)
{
    const char *sig = v->rec.checkpoint_signal;
    ddp_error_t err;
    if (ops->ask_checkpoint(job_view_id(v), v->rec.dir, sig, &err)) {
        fprintf(stderr, "ddpjob cancel: %s\n", err.msg);
        return EXIT_SUBMITTER;
    }
    printf("asked job %s to checkpoint (SIG%s); waiting for it to end\n", job_view_id(v), sig);
    return EXIT_OK;
}

/* The cancel of the links that may still run or wait. */
static int end_links(const sched_ops_t *ops, job_id_t *ids, size_t nids)
{
    char *argv_ids[64]; /* nids <= 64: live_ids */
    for (size_t i = 0; i < nids; i++)
        argv_ids[i] = ids[i];
    ddp_error_t err;
    if (sched_cancel(ops, argv_ids, nids, &err) == 0)
        return EXIT_OK;
    fprintf(stderr, "ddpjob cancel: %s\n", err.msg);
    return EXIT_SUBMITTER;
}

/* Waits until the job in `dir` has ended, saying how; -1 when it has not within `ms`. */
static int wait_ended(char *dir, int ms)
{
    int64_t deadline = ddp_deadline_in(ms);
    for (;;) {
        job_view_t v;
        ddp_error_t err;
        job_views_load(&dir, 1, &v, &err);
        int ended = job_state_final(v.state) ||
                    (!v.sched.found && !v.allocation_alive && v.state != JOB_RUNNING);
        /* A run in a held allocation (a packed trial) shares the allocation's id. */
        if (ended && v.rec.held_in[0])
            printf("%s (a run in job %s, which goes on): %s\n", v.rec.name, job_view_id(&v),
                   job_state_name(v.state));
        else if (ended)
            printf("job %s (%s): %s\n", job_view_id(&v), v.rec.name, job_state_name(v.state));
        job_views_free(&v, 1);
        if (ended)
            return 0;
        if (ddp_ms_left(deadline) == 0)
            return -1;
        ddp_sleep_ms(500);
    }
}

/* cancel of a sweep: every trial, or with --trial K that trial's job alone (in dirs[0]'s place,
 * -1: the job's cancel goes on with it, --checkpoint too); -1 for a job's record. */
static int cancel_sweep(char **dirs, const char *asked, int trial, int checkpoint)
{
    int sweep = sweep_record_is(dirs[0]);
    if (!sweep && trial < 0)
        return -1;
    if (!sweep || (checkpoint && trial < 0)) {
        fprintf(stderr, "ddpjob cancel: %s: %s\n", asked,
                sweep ? "--checkpoint asks one trial: --trial K" : "--trial is for a sweep");
        return EXIT_USAGE;
    }
    if (trial < 0)
        return sweep_cancel(dirs[0]);
    char *record = sweep_trial_record(dirs[0], trial);
    if (!record)
        return EXIT_USAGE;
    free(dirs[0]);
    dirs[0] = record;
    return -1;
}

/* Whether cancel --checkpoint can ask the job in v (`asked` on the command line) to checkpoint;
 * the reason said when not. */
static int checkpoint_askable(const job_view_t *v, const char *asked)
{
    if (v->rec.held_in[0]) {
        fprintf(stderr,
                "ddpjob cancel: %s runs in an allocation `ddpjob dev` holds (%s): --checkpoint "
                "asks a batch job; cancel it without, or stop its workers' program yourself\n",
                asked, v->rec.held_in);
        return 0;
    }
    if (!v->rec.checkpoint_signal[0]) {
        fprintf(stderr,
                "ddpjob cancel: %s: its spec (%s) names no checkpoint signal, so its workers "
                "cannot be asked to checkpoint; cancel it without --checkpoint\n",
                asked, v->rec.spec);
        return 0;
    }
    return 1;
}

/* cancel of one job (its record in dir, `asked` on the command line): its exit code. */
static int cancel_job(char *dir, const char *asked, int checkpoint)
{
    char *dirs[] = {dir};
    job_view_t v;
    ddp_error_t err;
    job_views_load(dirs, 1, &v, &err);
    if (checkpoint && !checkpoint_askable(&v, asked)) {
        job_views_free(&v, 1);
        return EXIT_USAGE;
    }
    int rc = EXIT_OK;
    /* First, so that a link ending now submits no successor. */
    if (job_record_mark_cancelled(v.rec.dir, &err)) {
        fprintf(stderr, "ddpjob cancel: %s\n", err.msg);
        rc = EXIT_SYSTEM;
    }
    /* A run in a held allocation shares its job id with the allocation: its holder sees the
     * record's mark and ends the run alone (dev_record.h). */
    job_id_t ids[64];
    size_t nids = v.rec.held_in[0] ? 0 : live_ids(&v, ids, 64);
    const sched_ops_t *ops = sched_by_name(v.rec.scheduler);
    if (!ops && rc == EXIT_OK && nids) {
        fprintf(stderr, "ddpjob cancel: %s: a record of no scheduler this ddpjob knows (%s)\n",
                v.rec.dir, v.rec.scheduler);
        rc = EXIT_SYSTEM;
    }
    int requested = rc == EXIT_OK && nids && checkpoint && v.state == JOB_RUNNING;
    if (requested)
        rc = ask_checkpoint(&v, ops);
    else if (rc == EXIT_OK && nids)
        rc = end_links(ops, ids, nids);
    job_views_free(&v, 1);
    if (rc == EXIT_OK && wait_ended(dir, requested ? CANCEL_WAIT_MS / 2 : CANCEL_WAIT_MS)) {
        if (requested) {
            /* The workers did not checkpoint in time (a job started over SSH has no one to
             * take the request, a worker ignores the signal): the job ends all the same. */
            fprintf(stderr,
                    "ddpjob cancel: %s did not end within %d s of the checkpoint request; "
                    "cancelling it\n",
                    asked, CANCEL_WAIT_MS / 2000);
            rc = end_links(ops, ids, nids);
        }
        if (rc == EXIT_OK && (!requested || wait_ended(dir, CANCEL_WAIT_MS))) {
            fprintf(stderr, "ddpjob cancel: %s has not ended %d s after the cancel\n", asked,
                    CANCEL_WAIT_MS / 1000);
            rc = 1;
        }
    }
    return rc;
}

/* cancel of a pipeline: marked first, so that a stage ending now starts nothing more; then its
 * stages that run or wait in a queue, each as its own cancel. */
static int cancel_pipeline(const char *dir)
{
    ddp_error_t err;
    int lock = pipeline_record_lock(dir, CANCEL_WAIT_MS, &err);
    if (lock < 0 || pipeline_record_mark_cancelled(dir, &err)) {
        fprintf(stderr, "ddpjob cancel: %s\n", err.msg);
        if (lock >= 0)
            close(lock);
        return EXIT_SYSTEM;
    }
    close(lock);
    pipeline_look_t v;
    if (pipeline_advance(dir, &v, &err)) {
        fprintf(stderr, "ddpjob cancel: %s\n", err.msg);
        return EXIT_SYSTEM;
    }
    int rc = EXIT_OK;
    for (size_t i = 0; i < v.p.nstages; i++) {
        stage_look_t *s = &v.stages[i];
        if (s->rec.fate != STAGE_SUBMITTED || s->ended)
            continue;
        int one = sweep_record_is(s->rec.record) ? sweep_cancel(s->rec.record)
                                                 : cancel_job(s->rec.record, s->rec.record, 0);
        rc = one > rc ? one : rc;
    }
    if (rc == EXIT_OK)
        printf("pipeline %s: cancelled\n", v.rec.name);
    pipeline_look_free(&v);
    return rc;
}

int cmd_cancel(int argc, char **argv)
{
    static const struct option opts[] = {{"checkpoint", no_argument, NULL, 'c'},
                                         {"trial", required_argument, NULL, 't'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    int checkpoint = 0, c, trial = -1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'c')
            checkpoint = 1;
        else if (c == 't' && ddp_parse_int(optarg, 0, 1 << 24, &trial))
            return fprintf(stderr, "ddpjob cancel: --trial %s: expected a number >= 0\n", optarg),
                   EXIT_USAGE;
        else if (c == 't')
            continue;
        else if (c == 'h')
            return fputs(cancel_help, stdout), EXIT_OK;
        else
            return fputs(cancel_help, stderr), EXIT_USAGE;
    }
    if (optind + 1 != argc)
        return fputs(cancel_help, stderr), EXIT_USAGE;
    size_t n;
    char **dirs = find_records(1, argv + optind, 0, &n);
    if (!dirs)
        return EXIT_SYSTEM;
    if (pipeline_record_is(dirs[0])) {
        int rc = trial >= 0 || checkpoint
                     ? (fprintf(stderr, "ddpjob cancel: %s is a pipeline: it is cancelled whole\n",
                                argv[optind]),
                        EXIT_USAGE)
                     : cancel_pipeline(dirs[0]);
        job_index_free(dirs);
        return rc;
    }
    int rc = cancel_sweep(dirs, argv[optind], trial, checkpoint);
    if (rc >= 0) {
        job_index_free(dirs);
        return rc;
    }
    rc = cancel_job(dirs[0], argv[optind], checkpoint);
    job_index_free(dirs);
    return rc;
}
