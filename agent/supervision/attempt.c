#include "agent/supervision/attempt.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_parse.h"
#include "agent/supervision/liveness.h"
#include "agent/workers/output.h"
#include "agent/supervision/preflight.h"
#include "agent/supervision/timeline.h"

void attempt_key(const attempt_t *t, char *buf, size_t size, const char *name)
{
    ddp_rdzv_key(buf, size, t->round, name);
}

/* Whether `end` (with `first`, for END_FAILED) may replace t's: the first end wins, but a
 * failure that is a consequence (cause.h) gives way to another failure: its cause, or the one the
 * store holds. */
static int end_may_change(const attempt_t *t, end_kind_t end, const failure_t *first)
{
    if (t->end == END_UNKNOWN)
        return end != END_UNKNOWN;
    return t->end == END_FAILED && t->first.cause == CAUSE_CONSEQUENCE && end == END_FAILED &&
           first;
}

int attempt_take_end(attempt_t *t, end_kind_t end, const failure_t *first)
{
    if (!end_may_change(t, end, first))
        return 0;
    t->end = end;
    if (end == END_FAILED)
        t->first = *first;
    return 1;
}

void attempt_stop_signalled(attempt_t *t, const failure_t *f)
{
    if (t->end == END_UNKNOWN || t->end == END_DONE) {
        t->end = END_FAILED;
        t->first = *f;
    }
}

/* Takes the end record `text` (from the store) as the attempt's end. */
static void read_end(attempt_t *t, const char *text)
{
    end_kind_t end = !strcmp(text, "done")           ? END_DONE
                     : !strcmp(text, "checkpointed") ? END_CHECKPOINTED
                                                     : END_FAILED;
    failure_t first = {0};
    if (end == END_FAILED && failure_decode(text, &first))
        first = node_failure(FAIL_LOST, 1, -1, "-", "unreadable end record");
    attempt_take_end(t, end, &first);
}

/* Records the attempt's end (f for END_FAILED) unless another agent got there first; either
 * way t takes the end the store holds. Errors leave f as this agent's view. */
void attempt_publish_end(agent_t *a, attempt_t *t, const failure_t *f, end_kind_t kind)
{
    char key[128], text[1024], *current = NULL;
    attempt_key(t, key, sizeof key, "end");
    int n = kind == END_DONE           ? snprintf(text, sizeof text, "done")
            : kind == END_CHECKPOINTED ? snprintf(text, sizeof text, "checkpointed")
                                       : failure_encode(f, text, sizeof text);
    ddp_error_t err = {0};
    int swapped = n < 0 ? ddp_error_set(&err, "its record does not fit in %zu bytes", sizeof text)
                        : ddp_store_cas(a->client, key, NULL, 0, text, (size_t)n, &current, &err);
    failure_t there;
    /* A consequence published ahead of its cause gives way to it; a cause stays. */
    if (swapped == 0 && current && kind == END_FAILED && f->cause != CAUSE_CONSEQUENCE &&
        !failure_decode(current, &there) && there.cause == CAUSE_CONSEQUENCE) {
        char *expected = current;
        current = NULL;
        swapped = ddp_store_cas(a->client, key, expected, strlen(expected), text, (size_t)n,
                                &current, &err);
        free(expected);
    }
    if (swapped < 0) {
        if (kind == END_FAILED)
            attempt_take_end(t, END_FAILED, f);
        agent_say("cannot publish the end of the attempt: %s", err.msg);
    } else if (current) {
        read_end(t, current);
    }
    free(current);
}

void attempt_refresh_end(agent_t *a, attempt_t *t)
{
    char key[128], *text = NULL;
    attempt_key(t, key, sizeof key, "end");
    ddp_error_t err;
    if (!a->store_lost && ddp_store_get(a->client, key, &text, NULL, &err) == 1 && text)
        read_end(t, text);
    free(text);
}

/* The one way the workers' phase changes: forward only, each phase's deadline set on entry.
 * Returns 0 when the phase was already `next` or later. */
int attempt_enter_phase(const agent_t *a, attempt_t *t, workers_phase_t next)
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

void attempt_begin_stop(agent_t *a, attempt_t *t, int sig)
{
    worker_t *w = t->workers;
    int n = t->nworkers;
    if (!attempt_enter_phase(a, t, PHASE_STOPPING))
        return;
    for (int i = 0; i < n; i++)
        if (!w[i].reaped)
            w[i].stopped = 1;
    int running = workers_running(w, n);
    if (running) {
        workers_signal(w, n, sig);
        /* A stopped worker (SIGSTOP, Ctrl-Z) would hold the signal until the grace ran out. */
        workers_signal(w, n, SIGCONT);
        agent_say("stopping %d worker(s) on node %d (SIG%s, SIGKILL after %.1f s)", running,
                  a->node_rank, ddp_signal_name(sig), a->o->grace_ms / 1000.0);
    }
}

static int exit_code_of(const worker_t *w)
{
    return WIFEXITED(w->status) ? WEXITSTATUS(w->status) : -1;
}

/* This node's workers have all ended well (0, or checkpointed on request): counts it as
 * settled one way or the other; the node that settles last publishes the job's end. */
static void settle_node(agent_t *a, attempt_t *t, int checkpointed)
{
    char key[128];
    int64_t settled = 0, counts[2] = {0, 0};
    ddp_error_t err;
    /* Its fingerprint and last steps first: once the last node has settled, node 0 reports on
     * every node's. */
    preflight_beside(a, PREFLIGHT_SETTLE_MS);
    liveness_publish_last_steps(a, t);
    attempt_key(t, key, sizeof key, checkpointed ? "checkpointed" : "finished");
    int failed = ddp_store_add(a->client, key, 1, NULL, &err);
    attempt_key(t, key, sizeof key, "settled");
    failed = failed || ddp_store_add(a->client, key, 1, &settled, &err);
    if (failed) {
        attempt_lose_store(a, t, err.msg);
        return;
    }
    attempt_enter_phase(a, t, PHASE_SETTLED);
    if (settled < a->nnodes)
        return;
    const char *kinds[2] = {"finished", "checkpointed"};
    for (int i = 0; i < 2; i++) {
        attempt_key(t, key, sizeof key, kinds[i]);
        if (ddp_store_add(a->client, key, 0, &counts[i], &err)) {
            attempt_lose_store(a, t, err.msg);
            return;
        }
    }
    if (counts[0] == a->nnodes) {
        attempt_publish_end(a, t, NULL, END_DONE);
    } else if (counts[1] == a->nnodes) {
        attempt_publish_end(a, t, NULL, END_CHECKPOINTED);
    } else {
        failure_t f =
            node_failure(FAIL_WORKER, WORKER_EXIT_CHECKPOINTED, -1, "-",
                         "%lld node(s) checkpointed on request (exit %d) while %lld "
                         "finished: the job neither finished nor stopped as one",
                         (long long)counts[1], WORKER_EXIT_CHECKPOINTED, (long long)counts[0]);
        attempt_publish_end(a, t, &f, END_FAILED);
    }
}

/* What more than its status says of a worker that failed by itself (cause.h): an OOM kill
 * counted since the start, or its last words saying its GPU ran out of memory or blaming a
 * peer. */
static void judge(const agent_t *a, attempt_t *t, worker_t *w)
{
    if (w->judged)
        return;
    w->judged = 1;
    w->mem_limit = w->mem_peak = -1;
    /* The default action of the signal this agent sent for the checkpoint: a program without a
     * handler for it, which the summary says in those words, not as a plain signal death. */
    if (a->checkpoint_sent && WIFSIGNALED(w->status) && WTERMSIG(w->status) == a->checkpoint_sent) {
        w->cause = CAUSE_CHECKPOINT_SIGNAL;
        snprintf(w->cause_detail, sizeof w->cause_detail,
                 "killed by SIG%s, the checkpoint signal this agent sent %.0f s before the "
                 "walltime: the program has no handler for it (ddpjob-agent(1), CHECKPOINT: "
                 "save, then exit 75)",
                 ddp_signal_name(a->checkpoint_sent), a->checkpoint_sent_before_s);
        return;
    }
    if (WIFSIGNALED(w->status) && WTERMSIG(w->status) == SIGKILL) {
        oom_kill_t k;
        if (oom_explain(&t->oom, &k)) {
            w->cause = CAUSE_OUT_OF_MEMORY;
            oom_describe(&k, w->cause_detail, sizeof w->cause_detail);
            w->mem_limit = k.limit;
            w->mem_peak = k.peak;
        }
        return;
    }
    workers_drain(w, 1);
    size_t kept;
    relay_tail_line(&w->relay[1], 0, &kept);
    /* A GPU out of memory is the root cause even where the worker's library then blames a peer
     * for the collective it abandoned. */
    for (size_t k = 0; k < kept && w->cause == CAUSE_OWN; k++)
        if (cause_gpu_out_of_memory(relay_tail_line(&w->relay[1], k, NULL), w->cause_detail,
                                    sizeof w->cause_detail))
            w->cause = CAUSE_GPU_OUT_OF_MEMORY;
    if (w->cause == CAUSE_GPU_OUT_OF_MEMORY && !*w->gpu)
        binding_worker_gpu(w->local_rank, w->gpu, sizeof w->gpu, w->gpu_pci, sizeof w->gpu_pci);
    for (size_t k = 0; k < kept && w->cause == CAUSE_OWN; k++)
        if (cause_peer_lost(relay_tail_line(&w->relay[1], k, NULL), w->cause_detail,
                            sizeof w->cause_detail))
            w->cause = CAUSE_CONSEQUENCE;
}

/* The node (other than this one) whose agent is gone, or -1. */
static int gone_elsewhere(agent_t *a, const attempt_t *t)
{
    int gone;
    return liveness_gone_nodes(a, t->round, 0, &gone) > 0 && gone != a->node_rank ? gone : -1;
}

void attempt_fail(agent_t *a, attempt_t *t, const failure_t *f)
{
    if (a->store_lost) {
        if (attempt_take_end(t, END_FAILED, f))
            attempt_begin_stop(a, t, SIGTERM);
        return;
    }
    attempt_publish_end(a, t, f, END_FAILED);
    attempt_begin_stop(a, t, SIGTERM);
}

void attempt_lose_store(agent_t *a, attempt_t *t, const char *why)
{
    failure_t f = liveness_store_lost(a, why);
    attempt_fail(a, t, &f);
}

/* A worker's failure stands for the job; node `gone`, whose agent is gone, explains it when
 * there is one (a worker whose peer vanished fails too). */
static void fail_for_worker(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r, failure_t f,
                            int gone)
{
    if (gone >= 0)
        f = liveness_lost_node(a, gone, r);
    attempt_fail(a, t, &f);
}

void attempt_release_held(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r)
{
    t->held_until = 0;
    if (t->end == END_UNKNOWN)
        fail_for_worker(a, t, r, t->held, gone_elsewhere(a, t));
}

/* A worker has exited: its failure ends the attempt, a consequence (cause.h) once its cause has
 * had CONSEQUENCE_HOLD_MS to come first. One that checkpointed on request gives the others the
 * grace to do the same. All of them ending well settles the node. */
void attempt_on_reaped(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r)
{
    worker_t *w = t->workers;
    int n = t->nworkers;
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
        int seen = w[i].judged;
        judge(a, t, &w[i]);
        failure_t f = failure_of_worker(&w[i], a->node_rank, a->host);
        char line[1024];
        failure_line(&f, line, sizeof line);
        int gone = gone_elsewhere(a, t);
        if (f.cause != CAUSE_CONSEQUENCE || gone >= 0) {
            agent_say("%s", line);
            fail_for_worker(a, t, r, f, gone);
            return;
        }
        if (!seen && !t->held_until) {
            agent_say("%s: a consequence (its stderr says \"%s\"); waiting up to %.0f s for the "
                      "failure that caused it",
                      line, w[i].cause_detail, CONSEQUENCE_HOLD_MS / 1000.0);
            t->held = f;
            t->held_until = ddp_deadline_in(CONSEQUENCE_HOLD_MS);
        }
    }
    if (t->held_until || t->phase != PHASE_RUNNING || workers_running(w, n))
        return;
    int first_checkpointed = -1, first_finished = -1;
    for (int i = 0; i < n; i++) {
        if (exit_code_of(&w[i]) == 0 && first_finished < 0)
            first_finished = i;
        if (exit_code_of(&w[i]) == WORKER_EXIT_CHECKPOINTED && first_checkpointed < 0)
            first_checkpointed = i;
    }
    if (first_checkpointed >= 0 && first_finished >= 0) {
        failure_t f = worker_failure(
            &w[first_checkpointed], a->node_rank, a->host, WORKER_EXIT_CHECKPOINTED,
            "exited with code %d (checkpointed on request) while rank %d finished (exit 0)",
            WORKER_EXIT_CHECKPOINTED, w[first_finished].rank);
        attempt_publish_end(a, t, &f, END_FAILED);
        return;
    }
    settle_node(a, t, first_checkpointed >= 0);
}

/* A rank checkpointed on request and the grace for the others ran out: the first still
 * running fails the attempt. */
void attempt_check_checkpoint_wait(agent_t *a, attempt_t *t)
{
    worker_t *w = t->workers;
    int n = t->nworkers;
    for (int i = 0; i < n && t->end == END_UNKNOWN; i++) {
        if (w[i].reaped)
            continue;
        failure_t f = worker_failure(
            &w[i], a->node_rank, a->host, 1,
            "still running %.1f s after another rank checkpointed on request (--grace)",
            a->o->grace_ms / 1000.0);
        attempt_fail(a, t, &f);
    }
}

void attempt_on_watch(agent_t *a, attempt_t *t)
{
    char *val = NULL;
    ddp_error_t err;
    int got = ddp_store_wait_recv(a->watch, NULL, &val, &err);
    if (got < 0) {
        attempt_lose_store(a, t, err.msg);
        return;
    }
    if (got == 0) {
        char key[128];
        attempt_key(t, key, sizeof key, "end");
        const char *k = key;
        if (ddp_store_wait_send(a->watch, &k, 1, WATCH_MS, &err))
            attempt_lose_store(a, t, err.msg);
        return;
    }
    read_end(t, val);
    free(val);
    if (t->end == END_FAILED)
        attempt_begin_stop(a, t, SIGTERM);
}

int attempt_stopped_with_checkpoints(const attempt_t *t)
{
    const worker_t *w = t->workers;
    int n = t->nworkers;
    /* The stop reaches the workers too (PBS signals the whole job at its walltime): a rank may
     * have checkpointed and exited 75 before this agent took its own signal. */
    int stopped = t->first.kind == FAIL_SIGNAL ||
                  (t->first.kind == FAIL_WORKER && t->first.code == WORKER_EXIT_CHECKPOINTED);
    if (t->end != END_FAILED || !stopped || n == 0)
        return 0;
    for (int i = 0; i < n; i++)
        if (exit_code_of(&w[i]) != WORKER_EXIT_CHECKPOINTED)
            return 0;
    return 1;
}

/* Whether a failed attempt is followed by another: a worker's failure (or a node lost or
 * waiting to join, below), restarts left, and the agent not told to stop. */
int attempt_will_restart(const agent_t *a, const attempt_t *t)
{
    /* With spares or an elastic world a lost node (not node 0: the store goes with it) is
     * replaced, or the world goes on without it; the next rendezvous says whether it can. */
    int restartable = t->first.kind == FAIL_WORKER ||
                      (agent_options_elastic(a->o) &&
                       ((t->first.kind == FAIL_LOST && t->first.node > 0 && !a->store_lost) ||
                        t->first.kind == FAIL_MEMBERSHIP));
    return t->end == END_FAILED && restartable && t->round < a->o->max_restarts && !a->stop_signal;
}

/* The job failed for good: its summary on stderr, and the report file when asked for. */
void attempt_report_failure(agent_t *a, const attempt_t *t)
{
    const worker_t *w = t->workers;
    int n = t->nworkers;
    const agent_options_t *o = a->o;
    char *summary = NULL;
    size_t summary_len = 0;
    FILE *f = open_memstream(&summary, &summary_len);
    if (f) {
        report_summary(f, &t->first, w, n, a->node_rank, a->host);
        fclose(f);
        output_write(STDERR_FILENO, OUTPUT_AGENT, summary, summary_len);
    }
    free(summary);
    ddp_error_t err;
    char *error_file = agent_options_error_file(o, a->node_rank);
    if (error_file &&
        report_error_file(error_file, &t->first, w, n, a->node_rank, a->host, a->membership, &err))
        agent_say("%s", err.msg);
    free(error_file);
}

/* What the attempt's end means for this node, said once its workers are gone. */
void attempt_say_outcome(agent_t *a, attempt_t *t)
{
    const agent_options_t *o = a->o;
    if (t->end == END_CHECKPOINTED) {
        /* Why it stopped: this agent's own walltime signal, one asked from outside and passed on
         * here, or (on another node) the job's end as the store said it. */
        if (a->checkpoint_sent)
            agent_say(
                "stopped for the walltime: checkpoint written by every rank; requeue to resume");
        else if (a->forwarded_signal)
            agent_say("stopped as asked (SIG%s from outside, as `ddpjob cancel --checkpoint` "
                      "sends it): checkpoint written by every rank",
                      ddp_signal_name(a->forwarded_signal));
        else
            agent_say("stopped with a checkpoint asked on another node: checkpoint written by "
                      "every rank");
        timeline_event(a, "checkpoint", t->round, -1, "checkpoint written by every rank");
    } else if (attempt_stopped_with_checkpoints(t)) {
        t->end = END_CHECKPOINTED; /* agent.h: the second override */
        char how[64] = "by its ranks (each exited 75)";
        if (t->first.kind == FAIL_SIGNAL)
            snprintf(how, sizeof how, "by SIG%s", ddp_signal_name(t->first.code - 128));
        agent_say("stopped %s: checkpoint written by every rank of node %d; requeue to resume", how,
                  a->node_rank);
        timeline_event(a, "checkpoint", t->round, -1, "stopped %s: checkpoint written", how);
    } else if (attempt_will_restart(a, t)) {
        char line[1024];
        failure_line(&t->first, line, sizeof line);
        agent_say("attempt %d failed: %s; restarting every worker (restart %d of %d)", t->round,
                  line, t->round + 1, o->max_restarts);
        timeline_event(a, "restart", t->round, t->first.rank, "restart %d of %d after: %s",
                       t->round + 1, o->max_restarts, line);
    } else if (t->end != END_DONE) {
        /* A job that failed early is where the nodes' differences matter most. */
        preflight_beside(a, PREFLIGHT_SETTLE_MS);
        attempt_report_failure(a, t);
    } else {
        preflight_beside(a, 0); /* every node settled with its fingerprint in */
    }
}
