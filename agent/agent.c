#include "agent.h"

#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ddp_alloc.h"
#include "ddp_clock.h"
#include "ddp_file.h"
#include "ddp_net.h"
#include "fingerprint.h"
#include "output.h"
#include "preflight.h"
#include "rendezvous.h"
#include "report.h"
#include "store_client.h"
#include "store_server.h"
#include "worker_env.h"
#include "workers.h"

/* How long node 0 keeps the store up for the others to read the outcome and say goodbye. */
#define GOODBYE_MS 5000
/* How long a node whose workers have ended waits for its own probe, so that its fingerprint is
 * in the store before it counts itself done (and node 0 reports on all) or says why it failed. */
#define PREFLIGHT_SETTLE_MS 3000
/* A parked WAIT on the end key is renewed after this long. */
#define WATCH_MS 3600000

typedef struct {
    agent_options_t *o;
    char host[256];
    char attempt_root[4096];
    int temp_root; /* attempt_root is ours to remove */
    int sigfd;
    int stop_signal; /* the signal that told this agent to stop, or 0 */
    /* The workers were asked to stop: the checkpoint signal, a forwarded USR1/USR2 or a stop
     * signal. A worker that exits WORKER_EXIT_CHECKPOINTED then has done what it was asked. */
    int planned_stop;
    int64_t checkpoint_at; /* when the checkpoint signal is due (ddp_now_ms); 0: never, or sent */
    guard_t guard;
    store_server_t *server;
    store_client_t *client, *watch;
    int store_lost; /* node 0's store stopped answering: nothing more is asked of it */
    fingerprint_probe_t *probe; /* this node's fingerprint, collected beside the workers */
    int preflight_pending;      /* node 0: the report beside the workers is yet to be printed */
} agent_t;

/* An attempt's end and this node's workers' phase: agent.h tells their states and transitions. */
typedef enum { END_UNKNOWN, END_FAILED, END_DONE, END_CHECKPOINTED } end_kind_t;
typedef enum { PHASE_RUNNING, PHASE_SETTLED, PHASE_STOPPING, PHASE_KILLED } workers_phase_t;

typedef struct {
    int round;
    end_kind_t end;
    failure_t first; /* END_FAILED: the first failure anywhere */
    workers_phase_t phase;
    int64_t kill_at;         /* PHASE_STOPPING: when SIGKILL follows (--grace) */
    int64_t finish_deadline; /* PHASE_SETTLED: how long the other nodes get (--exit-timeout) */
    int64_t checkpoint_wait; /* a rank checkpointed on request: the others' time to follow */
    int64_t next_heartbeat;
    char **hb_value;   /* node 0: each node's last heartbeat count */
    int64_t *hb_since; /* node 0: when it last changed */
    int silent_node;   /* node 0: the node it found lost for want of heartbeats (0: none) */
} attempt_t;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void preflight_beside(agent_t *a, int64_t wait_ms);

static void say(const char *fmt, ...)
{
    static const char prefix[] = "ddpjob-agent: ";
    char line[2048];
    memcpy(line, prefix, sizeof prefix - 1);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + sizeof prefix - 1, sizeof line - sizeof prefix, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = sizeof prefix - 1 + (size_t)n;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    /* One write, so the line stays whole beside the workers' relayed lines. */
    output_write(STDERR_FILENO, OUTPUT_AGENT, line, len);
}

static void log_store(void *ctx, const char *line)
{
    say("%s", line);
}

static int sig_forwarded(int sig)
{
    return sig == SIGUSR1 || sig == SIGUSR2;
}

/* Reads pending signals. Stop signals are remembered; USR1/USR2 go to the workers. */
static void read_signals(agent_t *a, worker_t *w, int n)
{
    struct signalfd_siginfo si;
    while (read(a->sigfd, &si, sizeof si) == sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD)
            continue;
        if (sig_forwarded(sig)) {
            if (w && workers_running(w, n)) {
                workers_signal(w, n, sig);
                a->planned_stop = 1;
                say("forwarded SIG%s to %d worker(s)", sigabbrev_np(sig), workers_running(w, n));
            }
            continue;
        }
        if (!a->stop_signal)
            a->stop_signal = sig;
        a->planned_stop = 1;
    }
}

static void say_waiting(void *ctx, const char *line)
{
    const agent_t *a = ctx;
    if (a->o->node_rank < 0)
        say("node (rank not yet handed out): %s", line);
    else
        say("node %d: %s", a->o->node_rank, line);
}

static int stop_requested(void *ctx)
{
    agent_t *a = ctx;
    read_signals(a, NULL, 0);
    return a->stop_signal != 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

/* ---- attempt state in the store ---- */

static void key_for(const attempt_t *t, char *buf, size_t size, const char *name)
{
    ddp_rdzv_key(buf, size, t->round, name);
}

static failure_t node_failure(agent_t *a, failure_kind_t kind, int code, int node,
                              const char *host, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* Takes the end record `text` (from the store) as the attempt's end. */
static void read_end(agent_t *a, attempt_t *t, const char *text)
{
    t->end = !strcmp(text, "done")           ? END_DONE
             : !strcmp(text, "checkpointed") ? END_CHECKPOINTED
                                             : END_FAILED;
    if (t->end == END_FAILED && failure_decode(text, &t->first))
        t->first = node_failure(a, FAIL_LOST, 1, -1, "-", "unreadable end record");
}

/* Records the attempt's end (f for END_FAILED) unless another agent got there first; either
 * way t takes the end the store holds. Errors leave f as this agent's view. */
static void publish_end(agent_t *a, attempt_t *t, const failure_t *f, end_kind_t kind)
{
    char key[128], text[1024], *current = NULL;
    key_for(t, key, sizeof key, "end");
    int n = kind == END_DONE           ? snprintf(text, sizeof text, "done")
            : kind == END_CHECKPOINTED ? snprintf(text, sizeof text, "checkpointed")
                                       : failure_encode(f, text, sizeof text);
    ddp_error_t err;
    int swapped =
        n < 0 ? -1 : ddp_store_cas(a->client, key, NULL, 0, text, (size_t)n, &current, &err);
    if (swapped < 0) {
        if (kind == END_FAILED) {
            t->first = *f;
            t->end = END_FAILED;
        }
        say("cannot publish the end of the attempt: %s", err.msg);
    } else if (current) {
        read_end(a, t, current);
    }
    free(current);
}

/* The one way the workers' phase changes: forward only, each phase's deadline set on entry.
 * Returns 0 when the phase was already `next` or later. */
static int enter_phase(const agent_t *a, attempt_t *t, workers_phase_t next)
{
    if (t->phase >= next)
        return 0;
    t->phase = next;
    if (next == PHASE_SETTLED)
        t->finish_deadline = ddp_deadline_in((int64_t)a->o->exit_timeout_s * 1000);
    else if (next == PHASE_STOPPING)
        t->kill_at = ddp_deadline_in(a->o->grace_ms);
    return 1;
}

static void begin_stop(agent_t *a, attempt_t *t, worker_t *w, int n, int sig)
{
    if (!enter_phase(a, t, PHASE_STOPPING))
        return;
    for (int i = 0; i < n; i++)
        if (!w[i].reaped)
            w[i].stopped = 1;
    int running = workers_running(w, n);
    if (running) {
        workers_signal(w, n, sig);
        /* A stopped worker (SIGSTOP, Ctrl-Z) would hold the signal until the grace ran out. */
        workers_signal(w, n, SIGCONT);
        say("stopping %d worker(s) on node %d (SIG%s, SIGKILL after %.1f s)", running,
            a->o->node_rank, sigabbrev_np(sig), a->o->grace_ms / 1000.0);
    }
}

static failure_t node_failure(agent_t *a, failure_kind_t kind, int code, int node,
                              const char *host, const char *fmt, ...)
{
    failure_t f = {.kind = kind, .code = code, .node = node, .rank = -1, .local_rank = -1};
    snprintf(f.host, sizeof f.host, "%s", host && *host ? host : "-");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f.what, sizeof f.what, fmt, ap);
    va_end(ap);
    failure_stamp(&f);
    return f;
}

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
static int gone_nodes(agent_t *a, int round, int silent, int *first)
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

static failure_t lost_node(agent_t *a, int node, const rdzv_result_t *r)
{
    return node_failure(a, FAIL_LOST, 1, node, r->node_hosts ? r->node_hosts[node] : "?",
                        "agent lost: its connection to node 0's store closed (the agent was "
                        "killed, or its host went down)");
}

static void lose_store(agent_t *a, attempt_t *t, worker_t *w, int n, const char *why)
{
    a->store_lost = 1;
    if (t->end != END_UNKNOWN)
        return;
    t->first = node_failure(a, FAIL_LOST, 1, 0, a->o->master_addr,
                            "lost the rendezvous store of node 0 (%s:%d): %s", a->o->master_addr,
                            a->o->store_port, why);
    t->end = END_FAILED;
    begin_stop(a, t, w, n, SIGTERM);
}

/* Node 0: an agent whose heartbeat count has not moved for two intervals is lost. */
static void check_heartbeats(agent_t *a, attempt_t *t, worker_t *w, int n, const rdzv_result_t *r)
{
    /* One pipelined read of every node's count: this runs every interval on node 0's loop. */
    char **vals = read_node_values(a, t->round, "hb");
    if (!vals)
        return;
    int64_t now = ddp_now_ms();
    int gone;
    if (gone_nodes(a, t->round, 0, &gone) > 0) {
        failure_t f = lost_node(a, gone, r);
        publish_end(a, t, &f, END_FAILED);
        begin_stop(a, t, w, n, SIGTERM);
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
            failure_t f = node_failure(a, FAIL_LOST, 1, i, host,
                                       "agent lost: no heartbeat for %.1f s",
                                       (now - t->hb_since[i]) / 1000.0);
            t->silent_node = i;
            publish_end(a, t, &f, END_FAILED);
            begin_stop(a, t, w, n, SIGTERM);
        }
    }
    free_node_values(a, vals);
}

static void heartbeat(agent_t *a, attempt_t *t, worker_t *w, int n, const rdzv_result_t *r)
{
    if (a->probe || a->preflight_pending)
        preflight_beside(a, 0);
    if (a->o->node_rank == 0) {
        check_heartbeats(a, t, w, n, r);
        return;
    }
    char key[128], name[64];
    snprintf(name, sizeof name, "hb/%d", a->o->node_rank);
    key_for(t, key, sizeof key, name);
    ddp_error_t err;
    if (ddp_store_add(a->client, key, 1, NULL, &err))
        lose_store(a, t, w, n, err.msg);
}

/* --hang-timeout: a worker whose process group has written nothing and used under 1% of a CPU for
 * that long is hung (blocked for ever in a collective, say: an idle process still wakes now and
 * then, so "no CPU at all" would never hold), and fails the attempt; one blocked in a write the
 * agent holds back (output.h) is waiting for the reader, not hung. A stopped one (SIGSTOP)
 * is hung after half of that, so that it, not the ranks left waiting for it, is named. */
static void check_hangs(agent_t *a, attempt_t *t, worker_t *w, int n)
{
    int64_t now = ddp_now_ms(), timeout = a->o->hang_timeout_ms;
    unsigned long long allowance = (unsigned long long)(timeout / 100) * sysconf(_SC_CLK_TCK) / 1000;
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
        failure_t f = {.kind = FAIL_WORKER, .code = 1, .node = a->o->node_rank, .rank = w[i].rank,
                       .local_rank = w[i].local_rank};
        snprintf(f.host, sizeof f.host, "%s", a->host);
        if (act[i].stopped)
            snprintf(f.what, sizeof f.what,
                     "hung: stopped by a signal, silent for %.1f s (--hang-timeout)", silent / 1000.0);
        else
            snprintf(f.what, sizeof f.what,
                     "hung: no output and under 1%% of a CPU for %.1f s (--hang-timeout)",
                     silent / 1000.0);
        failure_stamp(&f);
        char line[1024];
        failure_line(&f, line, sizeof line);
        say("%s", line);
        publish_end(a, t, &f, END_FAILED);
        begin_stop(a, t, w, n, SIGTERM);
    }
    free(act);
}

static int exit_code_of(const worker_t *w)
{
    return WIFEXITED(w->status) ? WEXITSTATUS(w->status) : -1;
}

/* This node's workers have all ended well (0, or checkpointed on request): counts it as
 * settled one way or the other; the node that settles last publishes the job's end. */
static void settle_node(agent_t *a, attempt_t *t, worker_t *w, int n, int checkpointed)
{
    char key[128];
    int64_t settled = 0, counts[2] = {0, 0};
    ddp_error_t err;
    /* Its fingerprint first: once the last node has settled, node 0 reports on every node's. */
    if (a->probe || a->preflight_pending)
        preflight_beside(a, PREFLIGHT_SETTLE_MS);
    key_for(t, key, sizeof key, checkpointed ? "checkpointed" : "finished");
    int failed = ddp_store_add(a->client, key, 1, NULL, &err);
    key_for(t, key, sizeof key, "settled");
    failed = failed || ddp_store_add(a->client, key, 1, &settled, &err);
    if (failed) {
        lose_store(a, t, w, n, err.msg);
        return;
    }
    enter_phase(a, t, PHASE_SETTLED);
    if (settled < a->o->nnodes)
        return;
    const char *kinds[2] = {"finished", "checkpointed"};
    for (int i = 0; i < 2; i++) {
        key_for(t, key, sizeof key, kinds[i]);
        if (ddp_store_add(a->client, key, 0, &counts[i], &err)) {
            lose_store(a, t, w, n, err.msg);
            return;
        }
    }
    if (counts[0] == a->o->nnodes) {
        publish_end(a, t, NULL, END_DONE);
    } else if (counts[1] == a->o->nnodes) {
        publish_end(a, t, NULL, END_CHECKPOINTED);
    } else {
        failure_t f = node_failure(a, FAIL_WORKER, WORKER_EXIT_CHECKPOINTED, -1, "-",
                                   "%lld node(s) checkpointed on request (exit %d) while %lld "
                                   "finished: the job neither finished nor stopped as one",
                                   (long long)counts[1], WORKER_EXIT_CHECKPOINTED,
                                   (long long)counts[0]);
        publish_end(a, t, &f, END_FAILED);
    }
}

/* A worker has exited: its failure ends the attempt (unless a node that is gone explains it: a
 * worker whose peer vanished fails too). One that checkpointed on request gives the others the
 * grace to do the same. All of them ending well settles the node. */
static void on_reaped(agent_t *a, attempt_t *t, worker_t *w, int n, const rdzv_result_t *r)
{
    for (int i = 0; i < n; i++) {
        if (!w[i].reaped || w[i].stopped || t->end != END_UNKNOWN)
            continue;
        int code = exit_code_of(&w[i]);
        if (code == 0)
            continue;
        if (code == WORKER_EXIT_CHECKPOINTED && a->planned_stop) {
            if (!t->checkpoint_wait)
                t->checkpoint_wait = ddp_deadline_in(a->o->grace_ms);
            continue;
        }
        failure_t f = {.kind = FAIL_WORKER, .node = a->o->node_rank, .rank = w[i].rank,
                       .local_rank = w[i].local_rank};
        snprintf(f.host, sizeof f.host, "%s", a->host);
        failure_from_status(w[i].status, f.what, sizeof f.what, &f.code);
        failure_stamp(&f);
        char line[1024];
        failure_line(&f, line, sizeof line);
        say("%s", line);
        int gone;
        if (gone_nodes(a, t->round, 0, &gone) > 0 && gone != a->o->node_rank)
            f = lost_node(a, gone, r);
        publish_end(a, t, &f, END_FAILED);
        begin_stop(a, t, w, n, SIGTERM);
        return;
    }
    if (t->phase != PHASE_RUNNING || workers_running(w, n))
        return;
    int first_checkpointed = -1, first_finished = -1;
    for (int i = 0; i < n; i++) {
        if (exit_code_of(&w[i]) == 0 && first_finished < 0)
            first_finished = i;
        if (exit_code_of(&w[i]) == WORKER_EXIT_CHECKPOINTED && first_checkpointed < 0)
            first_checkpointed = i;
    }
    if (first_checkpointed >= 0 && first_finished >= 0) {
        const worker_t *c = &w[first_checkpointed];
        failure_t f = {.kind = FAIL_WORKER, .code = WORKER_EXIT_CHECKPOINTED,
                       .node = a->o->node_rank, .rank = c->rank, .local_rank = c->local_rank};
        snprintf(f.host, sizeof f.host, "%s", a->host);
        snprintf(f.what, sizeof f.what,
                 "exited with code %d (checkpointed on request) while rank %d finished (exit 0)",
                 WORKER_EXIT_CHECKPOINTED, w[first_finished].rank);
        failure_stamp(&f);
        publish_end(a, t, &f, END_FAILED);
        return;
    }
    settle_node(a, t, w, n, first_checkpointed >= 0);
}

/* A rank checkpointed on request and the grace for the others ran out: the first still
 * running fails the attempt. */
static void check_checkpoint_wait(agent_t *a, attempt_t *t, worker_t *w, int n)
{
    for (int i = 0; i < n && t->end == END_UNKNOWN; i++) {
        if (w[i].reaped)
            continue;
        failure_t f = {.kind = FAIL_WORKER, .code = 1, .node = a->o->node_rank, .rank = w[i].rank,
                       .local_rank = w[i].local_rank};
        snprintf(f.host, sizeof f.host, "%s", a->host);
        snprintf(f.what, sizeof f.what,
                 "still running %.1f s after another rank checkpointed on request (--grace)",
                 a->o->grace_ms / 1000.0);
        failure_stamp(&f);
        publish_end(a, t, &f, END_FAILED);
        begin_stop(a, t, w, n, SIGTERM);
    }
}

/* The checkpoint signal, once, --checkpoint-before the deadline. */
static void send_checkpoint_signal(agent_t *a, worker_t *w, int n)
{
    int sig = a->o->checkpoint_signal;
    a->checkpoint_at = 0;
    a->planned_stop = 1;
    int running = workers_running(w, n);
    workers_signal(w, n, sig);
    say("%.0f s before the walltime: sent SIG%s to %d worker(s) to checkpoint",
        ddp_ms_left(a->o->deadline_ms) / 1000.0, sigabbrev_np(sig), running);
}

static void on_watch(agent_t *a, attempt_t *t, worker_t *w, int n)
{
    char *val = NULL;
    ddp_error_t err;
    int got = ddp_store_wait_recv(a->watch, NULL, &val, &err);
    if (got < 0) {
        lose_store(a, t, w, n, err.msg);
        return;
    }
    if (got == 0) {
        char key[128];
        key_for(t, key, sizeof key, "end");
        const char *k = key;
        if (ddp_store_wait_send(a->watch, &k, 1, WATCH_MS, &err))
            lose_store(a, t, w, n, err.msg);
        return;
    }
    read_end(a, t, val);
    free(val);
    if (t->end == END_FAILED)
        begin_stop(a, t, w, n, SIGTERM);
}

/* The poll loop of one attempt; returns when every worker has been reaped and the attempt's end
 * is known. */
static void monitor(agent_t *a, attempt_t *t, worker_t *w, int n, const rdzv_result_t *r)
{
    const agent_options_t *o = a->o;
    struct pollfd *pfd = ddp_xcalloc((size_t)(2 * n + 4), sizeof *pfd);
    t->next_heartbeat = ddp_deadline_in(o->heartbeat_ms);
    while (workers_running(w, n) || t->end == END_UNKNOWN) {
        int npfd = 0;
        pfd[npfd++] = (struct pollfd){.fd = a->sigfd, .events = POLLIN};
        int watch_at = npfd;
        pfd[npfd++] = (struct pollfd){
            .fd = t->end != END_UNKNOWN ? -1 : ddp_store_client_fd(a->watch), .events = POLLIN};
        /* Backpressure: a stream whose pipe is full is waited on, and the workers feeding it
         * are not read until it drains (output.h). */
        int backlogged[2] = {output_backlogged(STDOUT_FILENO), output_backlogged(STDERR_FILENO)};
        for (int s = 0; s < 2; s++)
            pfd[npfd++] = (struct pollfd){.fd = backlogged[s] ? 1 + s : -1, .events = POLLOUT};
        int workers_at = npfd;
        for (int i = 0; i < n; i++)
            for (int s = 0; s < 2; s++)
                if (w[i].fds[s] >= 0 && !backlogged[s])
                    pfd[npfd++] = (struct pollfd){.fd = w[i].fds[s], .events = POLLIN};
        int end_known = t->end != END_UNKNOWN;
        int64_t wake = end_known ? ddp_deadline_in(200) : t->next_heartbeat;
        if (t->phase == PHASE_STOPPING && t->kill_at < wake)
            wake = t->kill_at;
        if (t->phase == PHASE_SETTLED && !end_known && t->finish_deadline < wake)
            wake = t->finish_deadline;
        if (t->checkpoint_wait && !end_known && t->checkpoint_wait < wake)
            wake = t->checkpoint_wait;
        if (a->checkpoint_at && a->checkpoint_at < wake)
            wake = a->checkpoint_at;
        /* SIGCHLD arrives through the signalfd; the short cap covers one that raced the mask. */
        int timeout = ddp_ms_left(wake);
        if (poll(pfd, (nfds_t)npfd, timeout > 200 ? 200 : timeout) < 0 && errno != EINTR)
            break;
        if (pfd[0].revents) {
            read_signals(a, w, n);
            if (a->stop_signal && t->phase < PHASE_STOPPING) {
                failure_t f = node_failure(a, FAIL_SIGNAL, 128 + a->stop_signal, o->node_rank,
                                           a->host, "the agent received SIG%s",
                                           sigabbrev_np(a->stop_signal));
                if (t->end == END_UNKNOWN)
                    publish_end(a, t, &f, END_FAILED);
                /* Told to stop, this node did not finish, whatever the others did. */
                if (t->end == END_UNKNOWN || t->end == END_DONE) {
                    t->first = f;
                    t->end = END_FAILED;
                }
                begin_stop(a, t, w, n, a->stop_signal);
            }
        }
        output_service();
        if (a->probe)
            preflight_beside(a, 0);
        for (int i = workers_at; i < npfd; i++)
            if (pfd[i].revents)
                workers_pump(w, n, pfd[i].fd);
        if (pfd[watch_at].fd >= 0 && pfd[watch_at].revents)
            on_watch(a, t, w, n);
        if (workers_reap(w, n) || (t->phase == PHASE_RUNNING && !workers_running(w, n)))
            on_reaped(a, t, w, n, r);
        int64_t now = ddp_now_ms();
        if (a->checkpoint_at && now >= a->checkpoint_at)
            send_checkpoint_signal(a, w, n);
        if (t->checkpoint_wait && t->end == END_UNKNOWN && now >= t->checkpoint_wait &&
            workers_running(w, n))
            check_checkpoint_wait(a, t, w, n);
        if (t->phase == PHASE_STOPPING && now >= t->kill_at) {
            int left = workers_running(w, n);
            if (left)
                say("%d worker(s) still running after %.1f s: SIGKILL", left, o->grace_ms / 1000.0);
            workers_signal(w, n, SIGKILL);
            enter_phase(a, t, PHASE_KILLED);
        }
        if (t->phase == PHASE_SETTLED && t->end == END_UNKNOWN && now >= t->finish_deadline) {
            failure_t f = node_failure(a, FAIL_TIMEOUT, 1, o->node_rank, a->host,
                                       "node %d finished, but other nodes were still running "
                                       "%d s later (--exit-timeout)",
                                       o->node_rank, o->exit_timeout_s);
            publish_end(a, t, &f, END_FAILED);
        }
        if (t->end == END_UNKNOWN && now >= t->next_heartbeat) {
            if (o->hang_timeout_ms)
                check_hangs(a, t, w, n);
            heartbeat(a, t, w, n, r);
            t->next_heartbeat = now + o->heartbeat_ms;
        }
    }
    free(pfd);
}

static int connect_store(agent_t *a, store_client_t **out, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    /* Node 0 reaches its own store on loopback, whatever name the others use for it. */
    const char *host = o->node_rank == 0 ? "127.0.0.1" : o->master_addr;
    int port = a->server ? ddp_store_server_port(a->server) : o->store_port;
    const store_connect_hooks_t hooks = {stop_requested, say_waiting, a};
    *out =
        ddp_store_client_connect(host, port, o->token, o->token_len,
                                 ddp_deadline_in((int64_t)o->rdzv_timeout_s * 1000), &hooks, err);
    if (!*out && err->code == ECANCELED)
        return ddp_error_set(err, "node %d: interrupted by SIG%s while connecting to the store",
                             o->node_rank, sigabbrev_np(a->stop_signal));
    if (!*out)
        return ddp_error_prefix(err, "node %d", o->node_rank);
    ddp_store_client_set_timeout(*out, o->heartbeat_ms * 2 > 2000 ? o->heartbeat_ms * 2 : 2000);
    return 0;
}

/* Whether the preflight comes before the workers: doctor's (only), and strict on several nodes,
 * whose verdict may stop the job. report on several nodes runs beside the workers, which never
 * wait for it; one node has nothing to compare. */
static int preflight_first(const agent_options_t *o)
{
    return o->preflight == PREFLIGHT_ONLY || (o->preflight == PREFLIGHT_STRICT && o->nnodes > 1);
}

/* This node's fingerprint into the store, counted in (fp NULL: out of memory). */
static int publish_fingerprint(agent_t *a, const char *fp, ddp_error_t *err)
{
    char key[128], name[64];
    snprintf(name, sizeof name, "fingerprint/%d", a->o->node_rank);
    ddp_rdzv_key(key, sizeof key, 0, name);
    int rc = !fp ? ddp_error_set(err, "out of memory")
                 : ddp_store_set(a->client, key, fp, strlen(fp), err);
    ddp_rdzv_key(key, sizeof key, 0, "fingerprints");
    rc = rc || ddp_store_add(a->client, key, 1, NULL, err);
    return rc ? ddp_error_prefix(err, "node %d: publishing its fingerprint", a->o->node_rank) : 0;
}

/* Every node's fingerprint into fp[0..nnodes) (malloc'd; the caller frees them); 0, or -1 with
 * err set. */
static int read_fingerprints(agent_t *a, char **fp, ddp_error_t *err)
{
    int n = a->o->nnodes, rc = 0;
    char **keys = ddp_xcalloc((size_t)n, sizeof *keys);
    for (int i = 0; i < n; i++) {
        char name[64], key[128];
        snprintf(name, sizeof name, "fingerprint/%d", i);
        ddp_rdzv_key(key, sizeof key, 0, name);
        keys[i] = ddp_xstrdup(key);
    }
    rc = ddp_store_get_many(a->client, (const char *const *)keys, (size_t)n, fp, err);
    for (int i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    return rc;
}

static void free_fingerprints(char **fp, int n)
{
    for (int i = 0; i < n; i++)
        free(fp[i]);
    free(fp);
}

/* Node 0's report of the nodes' fingerprints, on its stderr. */
static void print_preflight(const agent_options_t *o, char **fp)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f) {
        preflight_report(f, fp, o->nnodes, o->preflight == PREFLIGHT_ONLY);
        fclose(f);
        output_write(STDERR_FILENO, OUTPUT_AGENT, text, len);
    }
    free(text);
}

/* The preflight that comes first (preflight_first), every fingerprint being in the store: node 0
 * prints the report; every node takes the same verdict from the same facts. Returns 1 when no
 * worker is to start (doctor; strict, with the nodes differing: the job's end is then
 * published). */
static int preflight(agent_t *a, attempt_t *t)
{
    const agent_options_t *o = a->o;
    char **fp = ddp_xcalloc((size_t)o->nnodes, sizeof *fp);
    ddp_error_t err = {0};
    int ok = read_fingerprints(a, fp, &err) == 0;
    if (!ok)
        say("preflight: cannot read the nodes' fingerprints: %s", err.msg);
    if (ok && o->node_rank == 0)
        print_preflight(o, fp);
    int differ = ok ? preflight_differences(fp, o->nnodes) : 0, stop = 0;
    if (o->preflight == PREFLIGHT_ONLY) {
        stop = 1;
    } else if (differ || !ok) {
        failure_t f = ok ? node_failure(a, FAIL_PREFLIGHT, 1, -1, "-",
                                        "preflight: strict, and the nodes differ in %d fact(s) "
                                        "(node 0's output lists them): no worker was started",
                                        differ)
                         : node_failure(a, FAIL_PREFLIGHT, 1, -1, "-",
                                        "preflight: strict, and the nodes' fingerprints could "
                                        "not be read: no worker was started");
        publish_end(a, t, &f, END_FAILED);
        stop = 1;
    }
    free_fingerprints(fp, o->nnodes);
    return stop;
}

/* The preflight beside the workers (report on several nodes). Each node publishes its
 * fingerprint once its probe is done (wait_ms: how long to wait for that now; the probe's own
 * deadlines bound it); node 0 prints the report once every node's is in. A store that fails
 * here is the heartbeat's to notice. */
static void preflight_beside(agent_t *a, int64_t wait_ms)
{
    const agent_options_t *o = a->o;
    ddp_error_t err;
    int64_t give_up = ddp_deadline_in(wait_ms);
    char *mine = fingerprint_take(&a->probe);
    while (a->probe && !mine && ddp_now_ms() < give_up) {
        ddp_sleep_ms(20);
        mine = fingerprint_take(&a->probe);
    }
    if (mine && publish_fingerprint(a, mine, &err))
        say("preflight: %s", err.msg);
    free(mine);
    if (!a->preflight_pending || a->store_lost)
        return;
    char key[128];
    int64_t published = 0;
    ddp_rdzv_key(key, sizeof key, 0, "fingerprints");
    if (ddp_store_add(a->client, key, 0, &published, &err) || published < o->nnodes)
        return;
    a->preflight_pending = 0;
    char **fp = ddp_xcalloc((size_t)o->nnodes, sizeof *fp);
    if (read_fingerprints(a, fp, &err))
        say("preflight: cannot read the nodes' fingerprints: %s", err.msg);
    else
        print_preflight(o, fp);
    free_fingerprints(fp, o->nnodes);
}

/* The job failed for good: its summary on stderr, and the report file when asked for. */
static void report_failure(agent_t *a, const attempt_t *t, const worker_t *w, int n)
{
    const agent_options_t *o = a->o;
    char *summary = NULL;
    size_t summary_len = 0;
    FILE *f = open_memstream(&summary, &summary_len);
    if (f) {
        report_summary(f, &t->first, w, n, o->node_rank, a->host);
        fclose(f);
        output_write(STDERR_FILENO, OUTPUT_AGENT, summary, summary_len);
    }
    free(summary);
    ddp_error_t err;
    if (o->error_file && report_error_file(o->error_file, &t->first, w, n, o->node_rank, a->host, &err))
        say("%s", err.msg);
}

static int stopped_with_checkpoints(const attempt_t *t, const worker_t *w, int n)
{
    if (t->end != END_FAILED || t->first.kind != FAIL_SIGNAL || n == 0)
        return 0;
    for (int i = 0; i < n; i++)
        if (exit_code_of(&w[i]) != WORKER_EXIT_CHECKPOINTED)
            return 0;
    return 1;
}

/* Whether a failed attempt is followed by another: a worker's failure, restarts left, and the
 * agent not told to stop. */
static int will_restart(const agent_t *a, const attempt_t *t)
{
    return t->end == END_FAILED && t->first.kind == FAIL_WORKER &&
           t->round < a->o->max_restarts && !a->stop_signal;
}

/* Node 0: the workers' MASTER_PORT: --master-port, which must be free for rank 0's store (a
 * taken one is said here, not as a worker's "Address already in use"), or any free port. */
static int workers_port(const agent_options_t *o, ddp_error_t *err)
{
    if (!o->master_port)
        return ddp_net_free_port(err);
    int fd = ddp_net_listen(NULL, o->master_port, 1, NULL, err);
    if (fd < 0)
        return ddp_error_prefix(err, "node 0: the workers' MASTER_PORT (--master-port)");
    close(fd);
    return o->master_port;
}

/* Runs one attempt: rendezvous, workers, monitor. Fills t; returns -1 when the rendezvous
 * failed (err says why). */
static int run_attempt(agent_t *a, attempt_t *t, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    int worker_port = 0;
    if (o->node_rank == 0 && (worker_port = workers_port(o, err)) < 0)
        return -1;
    rdzv_join_t join = {.round = t->round, .node_rank = o->node_rank, .nnodes = o->nnodes,
                        .nproc = o->nproc, .host = a->host, .run_id = o->run_id,
                        .worker_port = worker_port,
                        .hosts = (const char *const *)o->hosts,
                        .deadline = ddp_deadline_in((int64_t)o->rdzv_timeout_s * 1000),
                        .cancelled = stop_requested, .waiting = say_waiting, .ctx = a};
    rdzv_result_t r;
    if (t->round == 0 && o->preflight == PREFLIGHT_REPORT && o->nnodes > 1) {
        a->probe = fingerprint_start(o->command, o->nproc);
        a->preflight_pending = o->node_rank == 0;
        if (!a->probe)
            say("preflight: cannot start this node's probe: no report");
    } else if (t->round == 0 && preflight_first(o)) {
        char *fp = fingerprint_collect(o->command, o->nproc);
        int failed = publish_fingerprint(a, fp, err);
        free(fp);
        if (failed)
            return -1;
    }
    if (ddp_rdzv_join(a->client, &join, &r, err))
        return -1;
    if (o->node_rank > 0) {
        char gone_key[128], name[64];
        snprintf(name, sizeof name, "gone/%d", o->node_rank);
        key_for(t, gone_key, sizeof gone_key, name);
        if (ddp_store_set_on_close(a->client, gone_key, a->host, strlen(a->host), err))
            return ddp_error_prefix(err, "node %d", o->node_rank);
    }
    say("node %d of %d (%s): ranks %d-%d of %d, workers' master %s:%d, attempt %d",
        o->node_rank, o->nnodes, a->host, r.rank_base, r.rank_base + o->nproc - 1, r.world_size,
        o->master_addr, r.worker_port, t->round);
    char attempt_dir[4200], worker_token[WORKER_TOKEN_HEX + 1];
    snprintf(attempt_dir, sizeof attempt_dir, "%s/attempt_%d", a->attempt_root, t->round);
    ddp_worker_token_derive(o->token, o->token_len, o->run_id, t->round, worker_token);
    worker_launch_t launch = {.env = {.world_size = r.world_size, .local_world_size = o->nproc,
                                      .group_rank = o->node_rank, .group_world_size = o->nnodes,
                                      .restart_count = o->requeue_count + t->round,
                                      .max_restarts = o->max_restarts,
                                      .master_addr = o->master_addr, .master_port = r.worker_port,
                                      .run_id = o->run_id, .worker_token = worker_token},
                              .rank_base = r.rank_base, .attempt_dir = attempt_dir,
                              .write_logs = o->log_dir || o->redirects || o->tee,
                              .redirects = o->redirects, .local_ranks_filter = o->local_ranks_filter,
                              .prefix_template = o->prefix_template,
                              .command = o->command, .local_rank_arg = o->local_rank_arg,
                              .gpu_binding = o->gpu_binding, .cpu_binding = o->cpu_binding,
                              .guard = &a->guard};
    worker_t *w = calloc((size_t)o->nproc, sizeof *w);
    t->hb_value = calloc((size_t)o->nnodes, sizeof *t->hb_value);
    t->hb_since = calloc((size_t)o->nnodes, sizeof *t->hb_since);
    for (int i = 0; i < o->nnodes && t->hb_since; i++)
        t->hb_since[i] = ddp_now_ms();
    char key[128];
    key_for(t, key, sizeof key, "end");
    const char *end_key = key;
    if (!w || !t->hb_value || !t->hb_since) {
        ddp_error_set(err, "out of memory");
    } else if (ddp_store_wait_send(a->watch, &end_key, 1, WATCH_MS, err)) {
        ddp_error_prefix(err, "watching the job's end");
    } else if (t->round == 0 && preflight_first(o) && preflight(a, t)) {
        /* No worker: the node settles at once, or takes the end the preflight published. */
        monitor(a, t, w, 0, &r);
        if (t->end != END_DONE)
            report_failure(a, t, w, 0);
    } else if (workers_start(w, &launch, err)) {
        say("%s", err->msg);
        /* A worker that could not be started here (not one whose program is missing: that one
         * exits 127 by itself) is a failure of the job on this node. */
        failure_t f = node_failure(a, FAIL_WORKER, 1, o->node_rank, a->host, "%s", err->msg);
        publish_end(a, t, &f, END_FAILED);
        monitor(a, t, w, 0, &r);
    } else {
        monitor(a, t, w, o->nproc, &r);
        workers_close(w, o->nproc);
        workers_kill_groups(w, o->nproc);
        if (t->end == END_CHECKPOINTED) {
            say("stopped for the walltime: checkpoint written by every rank; requeue to resume");
        } else if (stopped_with_checkpoints(t, w, o->nproc)) {
            t->end = END_CHECKPOINTED;
            say("stopped by SIG%s: checkpoint written by every rank of node %d; requeue to resume",
                sigabbrev_np(t->first.code - 128), o->node_rank);
        } else if (will_restart(a, t)) {
            char line[1024];
            failure_line(&t->first, line, sizeof line);
            say("attempt %d failed: %s; restarting every worker (restart %d of %d)", t->round,
                line, t->round + 1, o->max_restarts);
        } else if (t->end != END_DONE) {
            /* A job that failed early is where the nodes' differences matter most. */
            preflight_beside(a, PREFLIGHT_SETTLE_MS);
            report_failure(a, t, w, o->nproc);
        } else if (a->preflight_pending) {
            preflight_beside(a, 0); /* every node settled with its fingerprint in */
        }
    }
    int rc = t->end != END_UNKNOWN ? 0 : -1;
    for (int i = 0; i < o->nnodes && t->hb_value; i++)
        free(t->hb_value[i]);
    free(t->hb_value);
    free(t->hb_since);
    free(w);
    ddp_rdzv_result_free(&r);
    return rc;
}

/* Says goodbye through the store; node 0 waits (briefly) for the `expected` agents' goodbyes
 * before it closes it. */
static void goodbye(agent_t *a, int round, int expected)
{
    char key[128], all[128];
    int64_t count = 0;
    ddp_error_t err;
    ddp_rdzv_key(key, sizeof key, round, "exited");
    ddp_rdzv_key(all, sizeof all, round, "all_exited");
    if (ddp_store_add(a->client, key, 1, &count, &err))
        return;
    if (count == expected)
        ddp_store_set(a->client, all, "1", 1, &err);
    const char *k = all;
    if (a->o->node_rank == 0 && count < expected)
        ddp_store_wait(a->client, &k, 1, GOODBYE_MS, NULL, NULL, &err);
}

/* --log-dir's folder for this run, which never holds an earlier run's logs: DIR/RUN_ID (with
 * .requeueN for a requeued job, whose id is its predecessor's). A job's nodes share it (their
 * ranks' folders differ); a one-node run whose id was used before (`ddpjob run` again, a
 * standalone agent) takes the next free DIR/RUN_ID.K. */
static int make_run_dir(agent_t *a, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    char base[sizeof a->attempt_root - 16];
    if (o->requeue_count)
        snprintf(base, sizeof base, "%s/%s.requeue%d", o->log_dir, o->run_id, o->requeue_count);
    else
        snprintf(base, sizeof base, "%s/%s", o->log_dir, o->run_id);
    snprintf(a->attempt_root, sizeof a->attempt_root, "%s", base);
    for (int k = 1; mkdir(a->attempt_root, 0700) != 0; k++) {
        if (errno != EEXIST)
            return ddp_error_set(err, "cannot make %s: %s", a->attempt_root, strerror(errno));
        if (o->nnodes > 1)
            return 0;
        if (k > 9999)
            return ddp_error_set(err, "%s.1 to .9999 are all taken", base);
        snprintf(a->attempt_root, sizeof a->attempt_root, "%s.%d", base, k);
    }
    return 0;
}

/* Node 0's rendezvous store. */
static int serve_store(agent_t *a, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    const char *bind = o->nnodes == 1 ? "127.0.0.1" : NULL;
    a->server = ddp_store_server_start(bind, o->store_port, o->token, o->token_len, log_store, a, err);
    if (!a->server)
        return ddp_error_prefix(err, "node 0 cannot serve the rendezvous store (port %d, the one "
                                     "after --master-port %d)",
                                o->store_port, o->master_port);
    return 0;
}

/* torchrun's c10d rendezvous without node ranks: the agent on the endpoint's host that gets the
 * store's port serves the store and is node 0; the others take ranks 1, 2, ... in the order they
 * ask the store for one. */
static int claim_node_rank(agent_t *a, ddp_error_t *err)
{
    agent_options_t *o = a->o;
    int rank = -1;
    /* A taken port means another agent here serves it: this one asks, as the others do. */
    if (ddp_net_is_local(o->master_addr)) {
        if (serve_store(a, err) == 0)
            rank = 0;
        else if (err->code != EADDRINUSE)
            return -1;
    }
    if (rank < 0) {
        char key[128];
        int64_t taken = 0;
        ddp_rdzv_key(key, sizeof key, 0, "node_ranks_taken");
        if (connect_store(a, &a->client, err) || ddp_store_add(a->client, key, 1, &taken, err))
            return ddp_error_prefix(err, "asking the store for a node rank");
        if (taken >= o->nnodes)
            return ddp_error_set(err, "every node rank of --nnodes %d is taken: more agents than "
                                      "nodes joined run %s",
                                 o->nnodes, o->run_id);
        rank = (int)taken;
    }
    say("node rank %d, handed out by the c10d rendezvous at %s:%d", rank, o->master_addr,
        o->store_port);
    return agent_options_set_node_rank(o, rank, err);
}

static int setup(agent_t *a, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    sigset_t mask;
    sigemptyset(&mask);
    int sigs[] = {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        sigaddset(&mask, sigs[i]);
    /* Blocked before any thread starts, so the store's thread never takes them. */
    sigprocmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    ddp_net_raise_descriptor_limit();
    if ((a->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
        return ddp_error_set(err, "signalfd: %s", strerror(errno));
    ddp_net_hostname(a->host, sizeof a->host);
    /* Before any socket or thread exists, so the guard holds none of them. */
    if (guard_start(&a->guard, err))
        return -1;
    if (o->log_dir) {
        if (ddp_make_dirs(o->log_dir, 0700, err) || make_run_dir(a, err))
            return ddp_error_prefix(err, "--log-dir");
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(a->attempt_root, sizeof a->attempt_root, "%s/ddpjob-agent.XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(a->attempt_root))
            return ddp_error_set(err, "cannot make a folder under %s: %s", tmp ? tmp : "/tmp",
                                 strerror(errno));
        /* As torchrun's, the log files asked for without a folder stay in a temporary one. */
        a->temp_root = !o->redirects && !o->tee;
        if (!a->temp_root)
            say("the workers' log files: %s/attempt_N/rank_R/{stdout,stderr}.log", a->attempt_root);
    }
    if (o->node_rank < 0) {
        if (claim_node_rank(a, err))
            return -1;
    } else if (o->node_rank == 0 && serve_store(a, err)) {
        return -1;
    }
    if ((!a->client && connect_store(a, &a->client, err)) || connect_store(a, &a->watch, err))
        return -1;
    if (o->checkpoint_signal && o->deadline_ms) {
        a->checkpoint_at = o->deadline_ms - o->checkpoint_before_ms;
        if (a->checkpoint_at <= ddp_now_ms()) {
            say("the walltime leaves %.0f s, less than --checkpoint-before (%.0f s): no checkpoint "
                "signal will be sent",
                ddp_ms_left(o->deadline_ms) / 1000.0, o->checkpoint_before_ms / 1000.0);
            a->checkpoint_at = 0;
        }
    }
    return 0;
}

static void teardown(agent_t *a)
{
    fingerprint_cancel(&a->probe);
    ddp_store_client_close(a->watch);
    ddp_store_client_close(a->client);
    ddp_store_server_stop(a->server);
    if (a->temp_root)
        nftw(a->attempt_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (a->sigfd >= 0)
        close(a->sigfd);
    guard_stop(&a->guard);
}

int agent_run(agent_options_t *o)
{
    agent_t a = {.o = o, .sigfd = -1, .guard = {.fd = -1, .pid = -1}};
    ddp_error_t err = {0};
    int status = 1;
    if (output_start(o->output_stall_ms, &err))
        say("%s (writing to the real outputs, which may block)", err.msg);
    for (int i = 0; i < 2; i++)
        if (o->ignored_notes[i])
            say("%s", o->ignored_notes[i]);
    if (setup(&a, &err)) {
        say("%s", err.msg);
        status = a.stop_signal ? 128 + a.stop_signal : 1;
        goto out;
    }
    for (int round = 0;; round++) {
        attempt_t t = {.round = round};
        if (run_attempt(&a, &t, &err)) {
            say("%s", err.msg);
            status = a.stop_signal ? 128 + a.stop_signal : 1;
            break;
        }
        if (t.end == END_DONE) {
            status = 0;
            if (round > 0)
                say("job succeeded after %d restart(s)", round);
            goodbye(&a, round, o->nnodes);
            break;
        }
        if (will_restart(&a, &t)) {
            /* A fresh watch connection: the old one may still hold the last attempt's answer. */
            ddp_store_client_close(a.watch);
            a.watch = NULL;
            if (connect_store(&a, &a.watch, &err) == 0)
                continue;
            say("%s", err.msg);
        }
        status = t.end == END_CHECKPOINTED ? WORKER_EXIT_CHECKPOINTED : t.first.code ? t.first.code : 1;
        if (a.store_lost)
            break;
        /* Agents that are gone, or silent, will not say goodbye. */
        int gone, lost = gone_nodes(&a, round, t.silent_node, &gone);
        if (lost < 0)
            lost = t.first.kind == FAIL_LOST && t.first.node > 0;
        goodbye(&a, round, o->nnodes - lost);
        break;
    }
out:
    teardown(&a);
    output_finish();
    return status;
}
