/* status, wait, cancel and logs of a sweep (sweep_view.h): the table of its trials, waiting for all
 * of them, cancelling all or one, one trial's logs. cmd_jobs.c hands a sweep's folder here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands/commands.h"
#include "cli/view/sweep_view.h"
#include "cli/sched/sched.h"
#include "runtime/base/ddp_clock.h"

/* How often wait looks again, and how long cancel waits for the trials to be gone. */
#define SWEEP_POLL_MS 2000
#define SWEEP_CANCEL_WAIT_MS 120000

static int load(const char *dir, sweep_view_t *v, int quiet)
{
    ddp_error_t err;
    int rc = sweep_view_load(dir, v, &err);
    if (rc && !v->rec.dir) {
        fprintf(stderr, "ddpjob: %s\n", err.msg);
        return -1;
    }
    if (rc && !quiet)
        fprintf(stderr, "ddpjob: %s\n", err.msg);
    return 0;
}

int sweep_status(const char *dir, const char *metric, int desc, int json)
{
    sweep_view_t v;
    if (load(dir, &v, 0))
        return EXIT_SYSTEM;
    sweep_order_t order = {metric, desc};
    if (json)
        sweep_view_json(stdout, &v, &order);
    else
        sweep_view_print(stdout, &v, &order);
    sweep_view_free(&v);
    return EXIT_OK;
}

void sweep_list_line(const char *dir)
{
    sweep_view_t v;
    if (load(dir, &v, 1) == 0)
        sweep_view_line(stdout, &v);
    sweep_view_free(&v);
}

int sweep_wait(const char *dir, int64_t deadline)
{
    char said[512] = "";
    for (;;) {
        sweep_view_t v;
        if (load(dir, &v, !isatty(2)))
            return EXIT_SYSTEM;
        size_t done = 0, n = v.rec.ntrials;
        for (size_t k = 0; k < n; k++)
            done += job_state_final(v.trials[k].state);
        char now[512];
        snprintf(now, sizeof now, "%zu of %zu trials ended", done, n);
        if (isatty(2) && strcmp(now, said))
            fprintf(stderr, "ddpjob wait: sweep %s: %s\n", v.rec.name, now);
        snprintf(said, sizeof said, "%s", now);
        int ended = sweep_view_ended(&v);
        size_t bad = sweep_view_unsuccessful(&v);
        if (ended && bad)
            fprintf(stderr,
                    "ddpjob wait: sweep %s: %zu of %zu trials did not complete (ddpjob "
                    "status %s)\n",
                    v.rec.name, bad, n, v.rec.name);
        sweep_view_free(&v);
        if (ended)
            return bad ? 1 : EXIT_OK;
        if (deadline && ddp_ms_left(deadline) == 0) {
            fprintf(stderr, "ddpjob wait: sweep in %s: %s so far\n", dir, said);
            return 124;
        }
        ddp_sleep_ms(SWEEP_POLL_MS);
    }
}

/* Marks the trials cancelled (so that no link of them submits a successor) and gathers the ids
 * that may still run or wait. */
static size_t cancel_marks(const sweep_view_t *v, char ***ids)
{
    size_t n = 0;
    *ids = calloc(v->rec.ntrials * 4 + 1, sizeof **ids);
    for (size_t k = 0; *ids && k < v->rec.ntrials; k++) {
        const job_view_t *t = &v->trials[k];
        ddp_error_t err;
        if (!t->rec.dir || job_state_final(t->state))
            continue;
        if (job_record_mark_cancelled(t->rec.dir, &err))
            fprintf(stderr, "ddpjob cancel: trial %zu: %s\n", k, err.msg);
        for (int l = t->rec.nlinks - 1; l >= 0 && l >= t->rec.nlinks - 4; l--) {
            const char *id = t->rec.links[l].id;
            int seen = 0;
            for (size_t i = 0; i < n; i++)
                seen |= !strcmp((*ids)[i], id);
            if (id[0] && !seen && !(t->rec.links[l].ended && l + 1 < t->rec.nlinks))
                (*ids)[n++] = strdup(id);
        }
    }
    return n;
}

/* Whether every trial has ended. */
static int cancelled_all(const char *dir)
{
    sweep_view_t v;
    if (load(dir, &v, 1))
        return 1;
    int ended = 1;
    for (size_t k = 0; k < v.rec.ntrials; k++)
        ended &= job_state_final(v.trials[k].state) || !v.trials[k].sched.found;
    sweep_view_free(&v);
    return ended;
}

int sweep_cancel(const char *dir)
{
    sweep_view_t v;
    if (load(dir, &v, 1))
        return EXIT_SYSTEM;
    char **ids;
    size_t n = cancel_marks(&v, &ids);
    const sched_ops_t *ops = sched_by_name(v.rec.scheduler);
    char name[256];
    snprintf(name, sizeof name, "%s", v.rec.name);
    sweep_view_free(&v);
    int rc = EXIT_OK;
    ddp_error_t err;
    if (n && !ops) {
        fprintf(stderr, "ddpjob cancel: %s: a sweep of no scheduler this ddpjob knows\n", dir);
        rc = EXIT_SYSTEM;
    } else if (n && sched_cancel(ops, ids, n, &err)) {
        fprintf(stderr, "ddpjob cancel: %s\n", err.msg);
        rc = EXIT_SUBMITTER;
    }
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
    int64_t deadline = ddp_deadline_in(SWEEP_CANCEL_WAIT_MS);
    while (rc == EXIT_OK && !cancelled_all(dir)) {
        if (ddp_ms_left(deadline) == 0) {
            fprintf(stderr, "ddpjob cancel: sweep %s has not ended %d s after the cancel\n", name,
                    SWEEP_CANCEL_WAIT_MS / 1000);
            return 1;
        }
        ddp_sleep_ms(500);
    }
    if (rc == EXIT_OK)
        printf("sweep %s: cancelled\n", name);
    return rc;
}

char *sweep_trial_record(const char *dir, long trial)
{
    sweep_record_t r;
    ddp_error_t err;
    if (sweep_record_read(dir, &r, &err)) {
        fprintf(stderr, "ddpjob: %s\n", err.msg);
        return NULL;
    }
    char path[8192];
    if (trial < 0 || (size_t)trial >= r.ntrials) {
        if (trial < 0)
            fprintf(stderr, "ddpjob: %s is a sweep of %zu trials: say which with --trial K\n",
                    r.name, r.ntrials);
        else
            fprintf(stderr, "ddpjob: --trial %ld: sweep %s has %zu trials\n", trial, r.name,
                    r.ntrials);
        sweep_record_free(&r);
        return NULL;
    }
    sweep_trial_dir(dir, (size_t)trial, path, sizeof path);
    sweep_record_free(&r);
    return strdup(path);
}
