#include "agent/supervision/liveness.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "agent/workers/output.h"
#include "agent/supervision/timeline.h"

/* Node i's value of r<round>/<what>/<i> for every node but 0, read in one pipelined request:
 * an array of nnodes - 1 (entry i - 1 for node i, NULL where absent), or NULL when it cannot
 * be read; ages (NULL: not wanted) gets how long each has been in the store (µs). Free with
 * free_node_values. */
static char **read_node_values(agent_t *a, int round, const char *what, int64_t *ages)
{
    int others = a->nnodes - 1;
    char **keys = calloc((size_t)others + 1, sizeof *keys);
    char **vals = calloc((size_t)others + 1, sizeof *vals);
    int ok = keys && vals;
    for (int i = 0; ok && i < others; i++) {
        char key[128], name[64];
        snprintf(name, sizeof name, "%s/%d", what, i + 1);
        ddp_rdzv_key(key, sizeof key, round, name);
        ok = (keys[i] = strdup(key)) != NULL;
    }
    ddp_error_t err;
    if (ok && others > 0 &&
        (ages ? ddp_store_get_many_aged(a->client, (const char *const *)keys, (size_t)others, vals,
                                        ages, &err)
              : ddp_store_get_many(a->client, (const char *const *)keys, (size_t)others, vals,
                                   &err)))
        ok = 0;
    for (int i = 0; keys && i < others; i++)
        free(keys[i]);
    free(keys);
    if (!ok) {
        free(vals);
        return NULL;
    }
    return vals;
}

static void free_node_values(agent_t *a, char **vals)
{
    for (int i = 0; vals && i < a->nnodes - 1; i++)
        free(vals[i]);
    free(vals);
}

/* Nodes (other than 0) whose agent's store connection has closed in this round, and node
 * `silent` (0: none) too: each agent asks the store to set gone/<node> when its connection
 * closes, so a killed agent or a host gone down is known at once, not after missed heartbeats.
 * Returns their count and, in *first, the lowest (-1: none); -1 when the store cannot be read. */
int liveness_gone_nodes(agent_t *a, int round, int silent, int *first)
{
    *first = -1;
    char **vals = read_node_values(a, round, "gone", NULL);
    if (!vals)
        return -1;
    int count = 0;
    for (int i = 0; i < a->nnodes - 1; i++)
        if (vals[i] || i + 1 == silent) {
            if (*first < 0)
                *first = i + 1;
            count++;
        }
    free_node_values(a, vals);
    return count;
}

/* Node 0: the host of node `node`, as recorded at the rendezvous. */
static const char *node_host(const ddp_rdzv_result_t *r, int node)
{
    return r->node_hosts && node >= 0 && node < r->nnodes ? r->node_hosts[node] : "?";
}

failure_t liveness_lost_node(agent_t *a, int node, const ddp_rdzv_result_t *r)
{
    return node_failure(FAIL_LOST, 1, node, node_host(r, node),
                        "agent lost: its connection to node 0's store closed (the agent was "
                        "killed, or its host went down)");
}

failure_t liveness_store_lost(agent_t *a, const char *why)
{
    a->store_lost = 1;
    return node_failure(FAIL_LOST, 1, 0, a->o->master_addr,
                        "lost the rendezvous store of node 0 (%s:%d): %s", a->o->master_addr,
                        a->o->store_port, why);
}

int liveness_note_heartbeats(attempt_t *t, char **vals, int nnodes, int64_t now, int heartbeat_ms,
                             int64_t *silent_ms)
{
    int silent = 0;
    for (int i = 1; i < nnodes; i++) {
        char *val = vals[i - 1];
        if (val && (!t->hb_value[i] || strcmp(val, t->hb_value[i]) != 0)) {
            free(t->hb_value[i]);
            t->hb_value[i] = val;
            vals[i - 1] = NULL;
            t->hb_since[i] = now;
        } else if (!silent && now - t->hb_since[i] > 2 * (int64_t)heartbeat_ms) {
            silent = i;
            *silent_ms = now - t->hb_since[i];
        }
    }
    return silent;
}

/* Node 0: every other node's last published figures (prog/<node>) into the job's view, with how
 * long they have waited in the store, so that each rank's arrival is known on node 0's clock. */
static void read_node_figures(agent_t *a, attempt_t *t, int64_t now)
{
    int64_t *ages = t->job.ranks ? calloc((size_t)a->nnodes, sizeof *ages) : NULL;
    char **figures = ages ? read_node_values(a, t->round, "prog", ages) : NULL;
    for (int i = 1; figures && i < a->nnodes; i++)
        if (figures[i - 1])
            progress_job_update(&t->job, i, figures[i - 1], now, ages[i - 1]);
    free_node_values(a, figures);
    free(ages);
}

/* Another node: its figures where node 0 reads them (prog/<node>). */
static int publish_figures(agent_t *a, const attempt_t *t, const char *figures, size_t len,
                           ddp_error_t *err)
{
    char key[128], name[64];
    snprintf(name, sizeof name, "prog/%d", a->node_rank);
    ddp_rdzv_key(key, sizeof key, t->round, name);
    return ddp_store_set(a->client, key, figures, len, err);
}

/* Node 0: a node whose agent is gone (its store connection closed), or whose heartbeat count
 * has not moved for two intervals, is lost. */
static int check_heartbeats(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r, failure_t *f)
{
    /* One pipelined read of every node's count: this runs every interval on node 0's loop. */
    char **vals = read_node_values(a, t->round, "hb", NULL);
    if (!vals)
        return 0;
    int64_t now = ddp_now_ms(), silent_ms = 0;
    int gone, found = 0;
    if (liveness_gone_nodes(a, t->round, 0, &gone) > 0) {
        *f = liveness_lost_node(a, gone, r);
        found = 1;
    }
    read_node_figures(a, t, now);
    int silent = liveness_note_heartbeats(t, vals, a->nnodes, now, a->o->heartbeat_ms, &silent_ms);
    free_node_values(a, vals);
    if (found || !silent)
        return found;
    *f = node_failure(FAIL_LOST, 1, silent, node_host(r, silent),
                      "agent lost: no heartbeat for %.1f s", silent_ms / 1000.0);
    t->silent_node = silent;
    return 1;
}

/* This node's workers' steps and busy time, sampled now: "RANK/LOCAL:STEP:BUSY ..." in buf
 * (progress.h); its length, 0 when no worker reports its step. */
static size_t sample_progress(attempt_t *t, char *buf, size_t size)
{
    const worker_t *w = t->workers;
    int n = t->nworkers;
    buf[0] = '\0';
    int *ranks = t->progress ? calloc((size_t)n + 1, sizeof *ranks) : NULL;
    if (!ranks)
        return 0;
    int64_t now = ddp_now_ms();
    for (int i = 0; i < n; i++) {
        ranks[i] = w[i].rank;
        if (!w[i].reaped)
            progress_sample(t->progress, i, w[i].progress_file, w[i].pid, now);
    }
    size_t len = progress_encode(t->progress, ranks, buf, size);
    free(ranks);
    return len;
}

/* "rank 3 (node 1, host n2, local rank 1)" of rank r as node 0 knows it. */
static void rank_name(const attempt_t *t, const ddp_rdzv_result_t *r, int rank, char *buf,
                      size_t size)
{
    const progress_rank_t *x = &t->job.ranks[rank];
    snprintf(buf, size, "rank %d (node %d, host %s, local rank %d)", rank, x->node,
             node_host(r, x->node), x->local_rank);
}

/* What node 0 says of a slow rank's event: by its busy time where that is what holds the others
 * up, else by when it reaches each step. */
static void slow_line(const agent_options_t *o, const progress_event_t *e, long long step,
                      const char *who, char *line, size_t size)
{
    const char *how = e->kind == PROGRESS_SLOW     ? "is slow"
                      : e->kind == PROGRESS_SLOWER ? "is slower still"
                                                   : "is no longer slow";
    if (e->by_busy) {
        snprintf(line, size,
                 "%s %s: busy %.1f ms per step, %.1fx the median rank's %.1f ms (over %.0f s, at "
                 "step %lld; --slow-factor %.2g)",
                 who, how, e->busy_us / 1000.0,
                 e->busy_us / (e->median_us > 0 ? e->median_us : 1.0), e->median_us / 1000.0,
                 o->slow_window_ms / 1000.0, step, o->slow_factor);
        return;
    }
    snprintf(line, size,
             "%s %s: reaches each step %.1f ms after the median rank, of the job's %.1f ms per "
             "step (%.1fx what a step would take without waiting for it), busy %.1f ms per step "
             "(the median rank %.1f ms)%s (at step %lld; --slow-factor %.2g)",
             who, how, e->late_us / 1000.0, e->period_us / 1000.0, e->ratio, e->busy_us / 1000.0,
             e->median_us / 1000.0,
             e->kind == PROGRESS_RECOVERED
                 ? ""
                 : ": not computing but waiting, on I/O, a lock or a sleep",
             step, o->slow_factor);
}

int liveness_check_progress(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r, failure_t *f)
{
    const agent_options_t *o = a->o;
    progress_event_t ev[16];
    /* Lateness smoothed over about the window: each heartbeat's figure weighs one window's worth.
     */
    double weight = o->slow_window_ms > 0 ? (double)o->heartbeat_ms / (double)o->slow_window_ms : 1;
    int events = progress_judge(&t->job, o->slow_factor, weight > 1 ? 1 : weight, ev, 16);
    char who[512];
    for (int k = 0; k < events; k++) {
        rank_name(t, r, ev[k].rank, who, sizeof who);
        char line[1024];
        slow_line(o, &ev[k], t->job.ranks[ev[k].rank].fig.step, who, line, sizeof line);
        agent_say("%s", line);
        timeline_event(a, ev[k].kind == PROGRESS_RECOVERED ? "recovered" : "slow", t->round,
                       ev[k].rank, "%s", line);
    }
    int rank;
    int64_t now = ddp_now_ms();
    if (o->progress_file && now >= t->progress_due) {
        liveness_write_progress(a, t, r);
        t->progress_due = now + PROGRESS_WRITE_MS;
    }
    int stalled =
        o->hang_timeout_ms ? progress_stalled(&t->job, now, o->hang_timeout_ms, &rank) : 0;
    if (!stalled || t->end != END_UNKNOWN)
        return 0;
    double idle = (now - t->job.moved_at) / 1000.0;
    if (stalled == 1) {
        const progress_rank_t *x = &t->job.ranks[rank];
        *f = node_failure(FAIL_WORKER, 1, x->node, node_host(r, x->node),
                          "stalled: at step %lld while the others wait at step %lld, no step "
                          "anywhere for %.1f s (--hang-timeout)",
                          x->fig.step, t->job.max_step, idle);
        f->rank = rank;
        f->local_rank = x->local_rank;
    } else {
        *f = node_failure(FAIL_WORKER, 1, -1, "-",
                          "hung: every rank at step %lld, no step anywhere for %.1f s "
                          "(--hang-timeout)",
                          t->job.max_step, idle);
    }
    char line[1024];
    failure_line(f, line, sizeof line);
    agent_say("%s", line);
    timeline_event(a, "stalled", t->round, f->rank, "%s", line);
    return 1;
}

int liveness_heartbeat(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r, failure_t *f)
{
    char figures[8192];
    size_t len = sample_progress(t, figures, sizeof figures);
    workers_keep_metrics(t->workers, t->nworkers);
    if (a->node_rank == 0) {
        if (len && t->job.ranks)
            progress_job_update(&t->job, 0, figures, ddp_now_ms(), 0);
        /* The sample after the other nodes' figures are read: every rank's of this beat. */
        int lost = check_heartbeats(a, t, r, f);
        timeline_sample(a, t, 0);
        return lost;
    }
    char key[128], name[64];
    snprintf(name, sizeof name, "hb/%d", a->node_rank);
    ddp_rdzv_key(key, sizeof key, t->round, name);
    ddp_error_t err;
    int failed = ddp_store_add(a->client, key, 1, NULL, &err);
    if (!failed && len)
        failed = publish_figures(a, t, figures, len, &err);
    if (failed)
        *f = liveness_store_lost(a, err.msg);
    return failed;
}

void liveness_publish_last_steps(agent_t *a, attempt_t *t)
{
    if (!t->progress)
        return;
    for (int i = 0; i < t->nworkers; i++)
        progress_last_step(t->progress, i, t->workers[i].progress_file);
    char figures[8192];
    size_t len = sample_progress(t, figures, sizeof figures);
    if (!len)
        return;
    if (a->node_rank == 0) {
        if (t->job.ranks)
            progress_job_update(&t->job, 0, figures, ddp_now_ms(), 0);
        return;
    }
    ddp_error_t err;
    if (publish_figures(a, t, figures, len, &err))
        agent_say("cannot publish this node's last steps: %s", err.msg);
}

void liveness_collect_last_steps(agent_t *a, attempt_t *t)
{
    if (a->node_rank == 0 && !a->store_lost)
        read_node_figures(a, t, ddp_now_ms());
}

/* --hang-timeout: a worker whose process group has written nothing and used under 1% of a CPU for
 * that long is hung (blocked for ever in a collective, say: an idle process still wakes now and
 * then, so "no CPU at all" would never hold); one blocked in a write the agent holds back
 * (output.h) is waiting for the reader, not hung. A stopped one (SIGSTOP) is hung after half of
 * that, so that it, not the ranks left waiting for it, is named. */
int64_t liveness_hung_for(worker_t *w, const worker_activity_t *act, int held_back, int64_t now,
                          int64_t timeout_ms, long ticks_per_s)
{
    unsigned long long allowance = (unsigned long long)(timeout_ms / 100) * ticks_per_s / 1000;
    if (w->output_at > w->active_at || act->cpu_ticks > w->cpu_ticks + allowance || held_back) {
        w->cpu_ticks = act->cpu_ticks;
        w->active_at = now;
        return 0;
    }
    int64_t silent = now - w->active_at;
    return silent >= (act->stopped ? timeout_ms / 2 : timeout_ms) ? silent : 0;
}

int liveness_check_hangs(agent_t *a, attempt_t *t, failure_t *f)
{
    worker_t *w = t->workers;
    int n = t->nworkers;
    int64_t now = ddp_now_ms(), silent = 0;
    worker_activity_t *act = calloc((size_t)n, sizeof *act);
    if (!act)
        return 0;
    workers_activity(w, n, act);
    int i;
    for (i = 0; i < n && !silent; i++) {
        /* A worker that reports its steps is judged by them, on node 0, job-wide: idle in a
         * collective, it may be waiting for the rank that is hung. */
        if (w[i].reaped || w[i].stopped ||
            (t->progress && progress_local_figure(t->progress, i).step >= 0))
            continue;
        silent = liveness_hung_for(&w[i], &act[i], workers_held_back(&w[i]), now,
                                   a->o->hang_timeout_ms, sysconf(_SC_CLK_TCK));
    }
    if (silent)
        *f = act[i - 1].stopped ? worker_failure(&w[i - 1], a->node_rank, a->host, 1,
                                                 "hung: stopped by a signal, silent for %.1f s "
                                                 "(--hang-timeout)",
                                                 silent / 1000.0)
                                : worker_failure(&w[i - 1], a->node_rank, a->host, 1,
                                                 "hung: no output and under 1%% of a CPU for "
                                                 "%.1f s (--hang-timeout)",
                                                 silent / 1000.0);
    free(act);
    if (!silent)
        return 0;
    char line[1024];
    failure_line(f, line, sizeof line);
    agent_say("%s", line);
    return 1;
}

void liveness_write_progress(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r)
{
    ddp_error_t err;
    if (a->o->progress_file && t->job.ranks &&
        progress_job_write(&t->job, a->o->progress_file, t->round, r->node_hosts, a->membership,
                           &err))
        agent_say("--progress-file: %s", err.msg);
}
