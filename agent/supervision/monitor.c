#include "agent/supervision/monitor.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent/supervision/attempt.h"
#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_signal.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_parse.h"
#include "agent/supervision/liveness.h"
#include "agent/workers/output.h"
#include "agent/supervision/preflight.h"
#include "agent/supervision/standby.h"
#include "agent/supervision/timeline.h"

static int sig_forwarded(int sig)
{
    return sig == SIGUSR1 || sig == SIGUSR2;
}

void monitor_read_signals(agent_t *a, attempt_t *t)
{
    worker_t *w = t ? t->workers : NULL;
    int n = t ? t->nworkers : 0;
    for (int sig; (sig = ddp_supervisor_signal_take(a->sigfd));) {
        if (sig == SIGCHLD)
            continue;
        if (sig_forwarded(sig)) {
            if (w && workers_running(w, n)) {
                workers_signal(w, n, sig);
                a->planned_stop = 1;
                a->forwarded_signal = sig;
                agent_say("forwarded SIG%s to %d worker(s)", ddp_signal_name(sig),
                          workers_running(w, n));
            }
            continue;
        }
        if (!a->stop_signal)
            a->stop_signal = sig;
        a->planned_stop = 1;
    }
}

/* The checkpoint signal, once, --checkpoint-before the deadline. */
static void send_checkpoint_signal(agent_t *a, attempt_t *t)
{
    worker_t *w = t->workers;
    int n = t->nworkers;
    int sig = a->o->checkpoint_signal;
    a->checkpoint_at = 0;
    a->planned_stop = 1;
    a->checkpoint_sent = sig;
    a->checkpoint_sent_before_s = ddp_ms_left(a->o->deadline_ms) / 1000.0;
    int running = workers_running(w, n);
    workers_signal(w, n, sig);
    agent_say("%.0f s before the walltime: sent SIG%s to %d worker(s) to checkpoint",
              a->checkpoint_sent_before_s, ddp_signal_name(sig), running);
    timeline_event(a, "walltime_signal", t->round, -1, "SIG%s sent %.0f s before the walltime",
                   ddp_signal_name(sig), a->checkpoint_sent_before_s);
}

/* The poll set of one pass: the signalfd, the watch (while the end is unknown), the agent's
 * streams that hold a queue, and the workers' pipes that feed a stream without one. */
typedef struct {
    struct pollfd *pfd;
    int n, watch_at, workers_at;
} poll_set_t;

static void fill_poll_set(const agent_t *a, const attempt_t *t, poll_set_t *ps)
{
    const worker_t *w = t->workers;
    int n = t->nworkers;
    ps->n = 0;
    ps->pfd[ps->n++] = (struct pollfd){.fd = a->sigfd, .events = POLLIN};
    ps->watch_at = ps->n;
    ps->pfd[ps->n++] = (struct pollfd){
        .fd = t->end != END_UNKNOWN ? -1 : ddp_store_client_fd(a->watch), .events = POLLIN};
    /* Backpressure: a stream whose pipe is full is waited on, and the workers feeding it are not
     * read until it drains (output.h). */
    int backlogged[2] = {output_backlogged(STDOUT_FILENO), output_backlogged(STDERR_FILENO)};
    for (int s = 0; s < 2; s++)
        ps->pfd[ps->n++] = (struct pollfd){.fd = backlogged[s] ? 1 + s : -1, .events = POLLOUT};
    ps->workers_at = ps->n;
    for (int i = 0; i < n; i++)
        for (int s = 0; s < 2; s++)
            if (w[i].fds[s] >= 0 && !backlogged[s])
                ps->pfd[ps->n++] = (struct pollfd){.fd = w[i].fds[s], .events = POLLIN};
}

/* The next deadline of the attempt's timers. */
static int64_t next_wake(const agent_t *a, const attempt_t *t)
{
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
    if (t->held_until && t->held_until < wake)
        wake = t->held_until;
    return wake;
}

/* A stop signal came: the attempt fails for it on this node, whose workers get the signal. */
static void on_stop_signal(agent_t *a, attempt_t *t)
{
    failure_t f = node_failure(FAIL_SIGNAL, 128 + a->stop_signal, a->node_rank, a->host,
                               "the agent received SIG%s", ddp_signal_name(a->stop_signal));
    if (t->end == END_UNKNOWN)
        attempt_publish_end(a, t, &f, END_FAILED);
    attempt_stop_signalled(t, &f);
    attempt_begin_stop(a, t, a->stop_signal);
}

/* Each heartbeat: the checks, each failure they find made the attempt's. */
static void heartbeat(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r)
{
    failure_t f;
    if (a->o->hang_timeout_ms && liveness_check_hangs(a, t, &f))
        attempt_fail(a, t, &f);
    preflight_beside(a, 0);
    if (liveness_heartbeat(a, t, r, &f))
        attempt_fail(a, t, &f);
    if (a->node_rank != 0)
        return;
    if (t->end == END_UNKNOWN && standby_check_growth(a, t, &f))
        attempt_fail(a, t, &f);
    if (t->job.ranks && t->end == END_UNKNOWN && liveness_check_progress(a, t, r, &f))
        attempt_fail(a, t, &f);
}

/* The timers that are due: a consequence's hold, the checkpoint signal and the others' grace
 * after a checkpoint, SIGKILL after --grace, --exit-timeout, the heartbeat. */
static void run_timers(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r)
{
    worker_t *w = t->workers;
    int n = t->nworkers;
    const agent_options_t *o = a->o;
    int64_t now = ddp_now_ms();
    if (t->held_until && now >= t->held_until)
        attempt_release_held(a, t, r);
    if (a->checkpoint_at && now >= a->checkpoint_at)
        send_checkpoint_signal(a, t);
    if (t->checkpoint_wait && t->end == END_UNKNOWN && now >= t->checkpoint_wait &&
        workers_running(w, n))
        attempt_check_checkpoint_wait(a, t);
    if (t->phase == PHASE_STOPPING && now >= t->kill_at) {
        int left = workers_running(w, n);
        if (left)
            agent_say("%d worker(s) still running after %.1f s: SIGKILL", left,
                      o->grace_ms / 1000.0);
        workers_signal(w, n, SIGKILL);
        attempt_enter_phase(a, t, PHASE_KILLED);
    }
    if (t->phase == PHASE_SETTLED && t->end == END_UNKNOWN && now >= t->finish_deadline) {
        failure_t f = node_failure(FAIL_TIMEOUT, 1, a->node_rank, a->host,
                                   "node %d finished, but other nodes were still running %d s "
                                   "later (--exit-timeout)",
                                   a->node_rank, o->exit_timeout_s);
        attempt_publish_end(a, t, &f, END_FAILED);
    }
    if (t->end == END_UNKNOWN && now >= t->next_heartbeat) {
        heartbeat(a, t, r);
        t->next_heartbeat = now + o->heartbeat_ms;
    }
}

void monitor_attempt(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r)
{
    worker_t *w = t->workers;
    int n = t->nworkers;
    poll_set_t ps = {.pfd = ddp_xcalloc((size_t)(2 * n + 4), sizeof *ps.pfd)};
    t->next_heartbeat = ddp_deadline_in(a->o->heartbeat_ms);
    while (workers_running(w, n) || t->end == END_UNKNOWN) {
        fill_poll_set(a, t, &ps);
        /* SIGCHLD arrives through the signalfd; the short cap covers one that raced the mask. */
        int timeout = ddp_ms_left(next_wake(a, t));
        if (poll(ps.pfd, (nfds_t)ps.n, timeout > 200 ? 200 : timeout) < 0 && errno != EINTR)
            break;
        if (ps.pfd[0].revents) {
            monitor_read_signals(a, t);
            if (a->stop_signal && t->phase < PHASE_STOPPING)
                on_stop_signal(a, t);
        }
        output_service();
        if (a->probe)
            preflight_beside(a, 0);
        for (int i = ps.workers_at; i < ps.n; i++)
            if (ps.pfd[i].revents)
                workers_pump(w, n, ps.pfd[i].fd);
        if (ps.pfd[ps.watch_at].fd >= 0 && ps.pfd[ps.watch_at].revents)
            attempt_on_watch(a, t);
        if (workers_reap(w, n) || (t->phase == PHASE_RUNNING && !workers_running(w, n)))
            attempt_on_reaped(a, t, r);
        run_timers(a, t, r);
    }
    free(ps.pfd);
}

void monitor_standby(agent_t *a, attempt_t *t)
{
    agent_say("node rank %d (%s) stands by in attempt %d while %d node(s) run workers", a->slot,
              a->host, t->round, a->nnodes);
    int64_t next_ping = ddp_deadline_in(a->o->heartbeat_ms);
    while (t->end == END_UNKNOWN && !a->stop_signal && !a->store_lost) {
        struct pollfd pfd[2] = {{.fd = a->sigfd, .events = POLLIN},
                                {.fd = ddp_store_client_fd(a->watch), .events = POLLIN}};
        if (poll(pfd, 2, ddp_ms_left(next_ping)) < 0 && errno != EINTR)
            break;
        if (pfd[0].revents)
            monitor_read_signals(a, NULL);
        if (pfd[1].revents)
            attempt_on_watch(a, t);
        ddp_error_t err;
        if (t->end == END_UNKNOWN && ddp_now_ms() >= next_ping) {
            if (ddp_store_ping(a->client, &err))
                attempt_lose_store(a, t, err.msg);
            next_ping = ddp_deadline_in(a->o->heartbeat_ms);
        }
    }
    failure_t f = node_failure(FAIL_SIGNAL, 128 + a->stop_signal, -1, a->host,
                               "standby node rank %d received SIG%s", a->slot,
                               ddp_signal_name(a->stop_signal));
    attempt_take_end(t, END_FAILED, &f);
    if (t->end == END_FAILED && !attempt_will_restart(a, t)) {
        char line[1024];
        failure_line(&t->first, line, sizeof line);
        agent_say("job failed (exit %d): %s; this node stood by", t->first.code, line);
    }
}
