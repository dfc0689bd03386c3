#include "agent_state.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ddp_clock.h"
#include "standby.h"
/* Node i's value of r<round>/<what>/<i> for every node but 0, read in one pipelined request:
 * an array of nnodes - 1 (entry i - 1 for node i, NULL where absent), or NULL when it cannot
 * be read. Free with free_node_values. */
static char **read_node_values(agent_t *a, int round, const char *what)
{
    int others = a->o->nnodes - 1;
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
        ddp_store_get_many(a->client, (const char *const *)keys, (size_t)others, vals, &err))
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
    for (int i = 0; vals && i < a->o->nnodes - 1; i++)
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
    char **vals = read_node_values(a, round, "gone");
    if (!vals)
        return -1;
    int count = 0;
    for (int i = 0; i < a->o->nnodes - 1; i++)
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
    return node_failure(a, FAIL_LOST, 1, node, node_host(r, node),
                        "agent lost: its connection to node 0's store closed (the agent was "
                        "killed, or its host went down)");
}

void liveness_lose_store(agent_t *a, attempt_t *t, worker_t *w, int n, const char *why)
{
    a->store_lost = 1;
    if (t->end != END_UNKNOWN)
        return;
    failure_t f = node_failure(a, FAIL_LOST, 1, 0, a->o->master_addr,
                               "lost the rendezvous store of node 0 (%s:%d): %s", a->o->master_addr,
                               a->o->store_port, why);
    attempt_set_end(t, END_FAILED, &f);
    attempt_begin_stop(a, t, w, n, SIGTERM);
}

/* Node 0: an agent whose heartbeat count has not moved for two intervals is lost. */
static void check_heartbeats(agent_t *a, attempt_t *t, worker_t *w, int n,
                             const ddp_rdzv_result_t *r)
{
    /* One pipelined read of every node's count: this runs every interval on node 0's loop. */
    char **vals = read_node_values(a, t->round, "hb");
    if (!vals)
        return;
    int64_t now = ddp_now_ms();
    int gone;
    if (liveness_gone_nodes(a, t->round, 0, &gone) > 0) {
        failure_t f = liveness_lost_node(a, gone, r);
        attempt_publish_end(a, t, &f, END_FAILED);
        attempt_begin_stop(a, t, w, n, SIGTERM);
    }
    char **figures = t->job.ranks ? read_node_values(a, t->round, "prog") : NULL;
    for (int i = 1; figures && i < a->o->nnodes; i++)
        if (figures[i - 1])
            progress_job_update(&t->job, i, figures[i - 1], now);
    free_node_values(a, figures);
    for (int i = 1; i < a->o->nnodes && t->end == END_UNKNOWN; i++) {
        char *val = vals[i - 1];
        if (val && (!t->hb_value[i] || strcmp(val, t->hb_value[i]) != 0)) {
            free(t->hb_value[i]);
            t->hb_value[i] = val;
            vals[i - 1] = NULL;
            t->hb_since[i] = now;
        } else if (now - t->hb_since[i] > 2 * (int64_t)a->o->heartbeat_ms) {
            const char *host = node_host(r, i);
            failure_t f =
                node_failure(a, FAIL_LOST, 1, i, host, "agent lost: no heartbeat for %.1f s",
                             (now - t->hb_since[i]) / 1000.0);
            t->silent_node = i;
            attempt_publish_end(a, t, &f, END_FAILED);
            attempt_begin_stop(a, t, w, n, SIGTERM);
        }
    }
    free_node_values(a, vals);
}

/* This node's workers' steps and busy time, sampled now: "RANK/LOCAL:STEP:BUSY ..." in buf
 * (progress.h); its length, 0 when no worker reports its step. */
static size_t sample_progress(attempt_t *t, const worker_t *w, int n, char *buf, size_t size)
{
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

/* Node 0: every rank's figures against the median's; with --hang-timeout, the rank the others
 * wait for when no step moves (progress.h). */
static void check_progress(agent_t *a, attempt_t *t, worker_t *w, int n, const ddp_rdzv_result_t *r)
{
    const agent_options_t *o = a->o;
    progress_event_t ev[16];
    int events = progress_judge(&t->job, o->slow_factor, ev, 16);
    char who[512];
    for (int k = 0; k < events; k++) {
        rank_name(t, r, ev[k].rank, who, sizeof who);
        const char *how = ev[k].kind == PROGRESS_SLOW     ? "is slow"
                          : ev[k].kind == PROGRESS_SLOWER ? "is slower still"
                                                          : "is no longer slow";
        agent_say("%s %s: busy %.1f ms per step, %.1fx the median rank's %.1f ms (over %.0f s, "
                  "at step %lld; --slow-factor %.2g)",
                  who, how, ev[k].busy_us / 1000.0, ev[k].ratio, ev[k].median_us / 1000.0,
                  o->slow_window_ms / 1000.0, t->job.ranks[ev[k].rank].fig.step, o->slow_factor);
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
        return;
    double idle = (now - t->job.moved_at) / 1000.0;
    failure_t f;
    if (stalled == 1) {
        const progress_rank_t *x = &t->job.ranks[rank];
        f = node_failure(a, FAIL_WORKER, 1, x->node, node_host(r, x->node),
                         "stalled: at step %lld while the others wait at step %lld, no step "
                         "anywhere for %.1f s (--hang-timeout)",
                         x->fig.step, t->job.max_step, idle);
        f.rank = rank;
        f.local_rank = x->local_rank;
    } else {
        f = node_failure(a, FAIL_WORKER, 1, -1, "-",
                         "hung: every rank at step %lld, no step anywhere for %.1f s "
                         "(--hang-timeout)",
                         t->job.max_step, idle);
    }
    char line[1024];
    failure_line(&f, line, sizeof line);
    agent_say("%s", line);
    attempt_publish_end(a, t, &f, END_FAILED);
    attempt_begin_stop(a, t, w, n, SIGTERM);
}

void liveness_heartbeat(agent_t *a, attempt_t *t, worker_t *w, int n, const ddp_rdzv_result_t *r)
{
    preflight_beside(a, 0);
    char figures[8192];
    size_t len = sample_progress(t, w, n, figures, sizeof figures);
    if (a->o->node_rank == 0) {
        if (len && t->job.ranks)
            progress_job_update(&t->job, 0, figures, ddp_now_ms());
        check_heartbeats(a, t, w, n, r);
        if (t->end == END_UNKNOWN)
            standby_check_growth(a, t, w, n);
        if (t->job.ranks && t->end == END_UNKNOWN)
            check_progress(a, t, w, n, r);
        return;
    }
    char key[128], name[64];
    snprintf(name, sizeof name, "hb/%d", a->o->node_rank);
    attempt_key(t, key, sizeof key, name);
    ddp_error_t err;
    int failed = ddp_store_add(a->client, key, 1, NULL, &err);
    snprintf(name, sizeof name, "prog/%d", a->o->node_rank);
    attempt_key(t, key, sizeof key, name);
    if (!failed && len)
        failed = ddp_store_set(a->client, key, figures, len, &err);
    if (failed)
        liveness_lose_store(a, t, w, n, err.msg);
}

/* --hang-timeout: a worker whose process group has written nothing and used under 1% of a CPU for
 * that long is hung (blocked for ever in a collective, say: an idle process still wakes now and
 * then, so "no CPU at all" would never hold), and fails the attempt; one blocked in a write the
 * agent holds back (output.h) is waiting for the reader, not hung. A stopped one (SIGSTOP)
 * is hung after half of that, so that it, not the ranks left waiting for it, is named. */
void liveness_check_hangs(agent_t *a, attempt_t *t, worker_t *w, int n)
{
    int64_t now = ddp_now_ms(), timeout = a->o->hang_timeout_ms;
    unsigned long long allowance =
        (unsigned long long)(timeout / 100) * sysconf(_SC_CLK_TCK) / 1000;
    worker_activity_t *act = calloc((size_t)n, sizeof *act);
    if (!act)
        return;
    workers_activity(w, n, act);
    for (int i = 0; i < n && t->end == END_UNKNOWN; i++) {
        /* A worker that reports its steps is judged by them, on node 0, job-wide: idle in a
         * collective, it may be waiting for the rank that is hung. */
        if (w[i].reaped || w[i].stopped ||
            (t->progress && progress_local_figure(t->progress, i).step >= 0))
            continue;
        if (w[i].output_at > w[i].active_at || act[i].cpu_ticks > w[i].cpu_ticks + allowance ||
            workers_held_back(&w[i])) {
            w[i].cpu_ticks = act[i].cpu_ticks;
            w[i].active_at = now;
            continue;
        }
        int64_t silent = now - w[i].active_at;
        if (silent < (act[i].stopped ? timeout / 2 : timeout))
            continue;
        failure_t f = act[i].stopped
                          ? worker_failure(a, &w[i], 1,
                                           "hung: stopped by a signal, silent for %.1f s "
                                           "(--hang-timeout)",
                                           silent / 1000.0)
                          : worker_failure(a, &w[i], 1,
                                           "hung: no output and under 1%% of a CPU for %.1f s "
                                           "(--hang-timeout)",
                                           silent / 1000.0);
        char line[1024];
        failure_line(&f, line, sizeof line);
        agent_say("%s", line);
        attempt_publish_end(a, t, &f, END_FAILED);
        attempt_begin_stop(a, t, w, n, SIGTERM);
    }
    free(act);
}

void liveness_write_progress(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r)
{
    ddp_error_t err;
    if (a->o->progress_file && t->job.ranks &&
        progress_job_write(&t->job, a->o->progress_file, t->round, r->node_hosts, a->membership,
                           &err))
        agent_say("--progress-file: %s", err.msg);
}
