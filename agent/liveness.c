#include "agent_state.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ddp_clock.h"
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

failure_t liveness_lost_node(agent_t *a, int node, const ddp_rdzv_result_t *r)
{
    return node_failure(a, FAIL_LOST, 1, node, r->node_hosts ? r->node_hosts[node] : "?",
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
    for (int i = 1; i < a->o->nnodes && t->end == END_UNKNOWN; i++) {
        char *val = vals[i - 1];
        if (val && (!t->hb_value[i] || strcmp(val, t->hb_value[i]) != 0)) {
            free(t->hb_value[i]);
            t->hb_value[i] = val;
            vals[i - 1] = NULL;
            t->hb_since[i] = now;
        } else if (now - t->hb_since[i] > 2 * (int64_t)a->o->heartbeat_ms) {
            const char *host = r->node_hosts ? r->node_hosts[i] : "?";
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

void liveness_heartbeat(agent_t *a, attempt_t *t, worker_t *w, int n, const ddp_rdzv_result_t *r)
{
    preflight_beside(a, 0);
    if (a->o->node_rank == 0) {
        check_heartbeats(a, t, w, n, r);
        return;
    }
    char key[128], name[64];
    snprintf(name, sizeof name, "hb/%d", a->o->node_rank);
    attempt_key(t, key, sizeof key, name);
    ddp_error_t err;
    if (ddp_store_add(a->client, key, 1, NULL, &err))
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
        if (w[i].reaped || w[i].stopped)
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
