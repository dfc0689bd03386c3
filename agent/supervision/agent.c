#include "agent/supervision/agent.h"
#include "agent/supervision/agent_state.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_parse.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_net.h"
#include "runtime/base/ddp_signal.h"
#include "agent/supervision/fingerprint.h"
#include "agent/supervision/attempt.h"
#include "agent/supervision/liveness.h"
#include "agent/supervision/monitor.h"
#include "agent/workers/output.h"
#include "agent/supervision/preflight.h"
#include "runtime/job/rendezvous.h"
#include "agent/supervision/report.h"
#include "runtime/job/store_client.h"
#include "runtime/job/store_server.h"
#include "runtime/job/worker_env.h"
#include "agent/supervision/standby.h"
#include "agent/workers/workers.h"
#include "agent/supervision/timeline.h"

/* How long node 0 keeps the store up for the others to read the outcome and say goodbye. */
#define GOODBYE_MS 5000

static void log_store(void *ctx, const char *line)
{
    agent_say("%s", line);
}

static void say_waiting(void *ctx, const char *line)
{
    const agent_t *a = ctx;
    if (a->node_rank < 0)
        agent_say("node (rank not yet handed out): %s", line);
    else
        agent_say("node %d: %s", a->node_rank, line);
}

static int stop_requested(void *ctx)
{
    agent_t *a = ctx;
    monitor_read_signals(a, NULL);
    return a->stop_signal != 0;
}

static int connect_store(agent_t *a, ddp_store_client_t **out, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    /* Node 0 reaches its own store on loopback, whatever name the others use for it. */
    const char *host = a->node_rank == 0 ? "127.0.0.1" : o->master_addr;
    int port = a->server ? ddp_store_server_port(a->server) : o->store_port;
    const ddp_store_connect_hooks_t hooks = {stop_requested, say_waiting, a};
    *out =
        ddp_store_client_connect(host, port, o->token, o->token_len,
                                 ddp_deadline_in((int64_t)o->rdzv_timeout_s * 1000), &hooks, err);
    if (!*out && err->code == ECANCELED)
        return ddp_error_set(err, "node %d: interrupted by SIG%s while connecting to the store",
                             a->node_rank, ddp_signal_name(a->stop_signal));
    if (!*out)
        return ddp_error_prefix(err, "node %d", a->node_rank);
    ddp_store_client_set_timeout(*out, o->heartbeat_ms * 2 > 2000 ? o->heartbeat_ms * 2 : 2000);
    return 0;
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

/* What every worker of this attempt is told and how it starts (workers.h). */
static worker_launch_t launch_for(agent_t *a, const attempt_t *t, const ddp_rdzv_result_t *rr,
                                  const char *attempt_dir, const char *worker_dir,
                                  const char *worker_token)
{
    const agent_options_t *o = a->o;
    return (worker_launch_t){.env = {.world_size = rr->world_size,
                                     .local_world_size = o->nproc,
                                     .group_rank = a->node_rank,
                                     .group_world_size = a->nnodes,
                                     .restart_count = o->requeue_count + t->round,
                                     .max_restarts = o->max_restarts,
                                     .master_addr = o->master_addr,
                                     .master_port = rr->worker_port,
                                     .run_id = o->run_id,
                                     .worker_token = worker_token},
                             .rank_base = rr->rank_base,
                             .attempt_dir = attempt_dir,
                             .attempt_fd = -1,
                             .worker_dir = worker_dir,
                             .write_logs = o->log_dir || o->redirects || o->tee,
                             .redirects = o->redirects,
                             .tees = o->tee,
                             .local_ranks_filter = o->local_ranks_filter,
                             .prefix_template = o->prefix_template,
                             .command = o->command,
                             .local_rank_arg = o->local_rank_arg,
                             .gpu_binding = o->gpu_binding,
                             .cpu_binding = o->cpu_binding,
                             .guard = &a->guard,
                             .container = &a->container};
}

/* The round's preflight, on the first: the probe beside the workers (report), or this node's
 * fingerprint published before them (preflight_first). */
static int start_preflight(agent_t *a, const attempt_t *t, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    if (t->round > 0)
        return 0;
    if (o->preflight == PREFLIGHT_REPORT && a->nnodes > 1 && !agent_options_elastic(o)) {
        a->probe = fingerprint_start(o->command, o->nproc, &o->container);
        a->preflight_pending = a->node_rank == 0;
        if (!a->probe)
            agent_say("preflight: cannot start this node's probe: no report");
        return 0;
    }
    if (!preflight_first(o))
        return 0;
    char *fp = fingerprint_collect(o->command, o->nproc, &o->container);
    int failed = preflight_publish_fingerprint(a, fp, err);
    free(fp);
    return failed;
}

/* The attempt's rendezvous: joins its round (spares and elastic worlds: standby.h) into *r, and
 * a node other than 0 leaves word in the store for when its connection closes. */
static int join_round(agent_t *a, attempt_t *t, ddp_rdzv_result_t *r, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    int elastic = agent_options_elastic(o);
    ddp_rdzv_join_t join = {.round = t->round,
                            .node_rank = a->node_rank,
                            .nnodes = a->nnodes,
                            .nproc = o->nproc,
                            .host = a->host,
                            .run_id = o->run_id,
                            .hosts = (const char *const *)o->hosts,
                            .deadline = ddp_deadline_in((int64_t)o->rdzv_timeout_s * 1000),
                            .cancelled = stop_requested,
                            .waiting = say_waiting,
                            .ctx = a};
    if (elastic && standby_before_join(a, t, &join, err))
        return -1;
    if (a->node_rank == 0 && (join.worker_port = workers_port(o, err)) < 0)
        return -1;
    if (start_preflight(a, t, err) || ddp_rdzv_join(a->client, &join, r, err))
        return -1;
    int failed = elastic && standby_after_join(a, t, r, err);
    if (!failed && a->node_rank > 0 && !t->standby) {
        char gone_key[128], name[64];
        snprintf(name, sizeof name, "gone/%d", a->node_rank);
        attempt_key(t, gone_key, sizeof gone_key, name);
        if (ddp_store_set_on_close(a->client, gone_key, a->host, strlen(a->host), err))
            failed = ddp_error_prefix(err, "node %d", a->node_rank);
    }
    if (failed)
        ddp_rdzv_result_free(r);
    return failed ? -1 : 0;
}

/* Once per node, before the first workers: the image copied to node-local storage
 * (--container-stage), and a GPU job's image seen to see the GPUs (--container-gpus). */
static int prepare_container(agent_t *a, ddp_error_t *err)
{
    const container_t *c = &a->o->container;
    if (c->runtime == CONTAINER_NONE || a->container_ready)
        return 0;
    int64_t start = ddp_now_ms();
    if (c->stage) {
        if (container_stage(c, &a->staged_folder, &a->staged_image, err))
            return -1;
        a->container.image = a->staged_image;
        agent_say("container: the image is staged to %s (%.1f s)", a->staged_image,
                  (double)(ddp_now_ms() - start) / 1000.0);
    }
    if (c->gpus &&
        (container_check(&a->container, err) || container_check_gpus(&a->container, err)))
        return -1;
    a->container_ready = 1;
    return 0;
}

/* The attempt's workers, their logs in its folder of the run's (run_dir.c), held meanwhile. */
static int start_workers(agent_t *a, attempt_t *t, worker_launch_t *l, ddp_error_t *err)
{
    if (l->write_logs && (l->attempt_fd = run_dir_attempt(a, t->round, err)) < 0)
        return -1;
    int rc = workers_start(t->workers, l, err);
    if (l->attempt_fd >= 0)
        close(l->attempt_fd);
    l->attempt_fd = -1;
    return rc;
}

/* This node's workers (none in a standby, or when the preflight or their start says so),
 * watched until the attempt's end. */
static void run_workers(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r,
                        worker_launch_t *launch, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    failure_t f;
    preflight_verdict_t verdict = !t->standby && t->round == 0 && preflight_first(o)
                                      ? preflight_before_workers(a, &f)
                                      : PREFLIGHT_RUN_WORKERS;
    if (t->standby) {
        monitor_standby(a, t);
    } else if (verdict != PREFLIGHT_RUN_WORKERS) {
        /* No worker: the node settles at once, or takes the end the preflight published. */
        if (verdict == PREFLIGHT_FAILS_JOB)
            attempt_publish_end(a, t, &f, END_FAILED);
        monitor_attempt(a, t, r);
        if (t->end != END_DONE)
            attempt_report_failure(a, t);
    } else if (prepare_container(a, err) || start_workers(a, t, launch, err)) {
        agent_say("%s", err->msg);
        /* A worker that could not be started here (not one whose program is missing: that one
         * exits 127 by itself) is a failure of the job on this node. */
        f = node_failure(FAIL_WORKER, 1, a->node_rank, a->host, "%s", err->msg);
        attempt_publish_end(a, t, &f, END_FAILED);
        monitor_attempt(a, t, r);
    } else {
        t->nworkers = o->nproc;
        t->progress = progress_local_new(o->nproc, o->slow_window_ms, o->heartbeat_ms);
        if (a->node_rank == 0 && progress_job_init(&t->job, r->world_size, ddp_now_ms()))
            agent_say("no memory to follow the ranks' progress");
        monitor_attempt(a, t, r);
        liveness_collect_last_steps(a, t);
        liveness_write_progress(a, t, r);
        timeline_sample(a, t, 1);
        progress_local_free(t->progress);
        progress_job_free(&t->job);
        t->progress = NULL;
        workers_close(t->workers, t->nworkers);
        workers_kill_groups(t->workers, t->nworkers);
        if (t->end == END_FAILED && t->first.cause == CAUSE_CONSEQUENCE)
            attempt_refresh_end(a, t);
        attempt_say_outcome(a, t);
    }
}

/* Runs one attempt: rendezvous, workers, monitor. Fills t; returns -1 when the rendezvous
 * failed (err says why). */
static int run_attempt(agent_t *a, attempt_t *t, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    ddp_rdzv_result_t r;
    if (join_round(a, t, &r, err))
        return -1;
    if (!t->standby)
        agent_say("node %d of %d (%s): ranks %d-%d of %d, workers' master %s:%d, attempt %d",
                  a->node_rank, a->nnodes, a->host, r.rank_base, r.rank_base + o->nproc - 1,
                  r.world_size, o->master_addr, r.worker_port, t->round);
    timeline_start(a);
    timeline_event(a, "attempt_start", t->round, -1, "%d node(s), %d rank(s)", r.nnodes,
                   r.world_size);
    char attempt_dir[4200], worker_dir[4200], worker_token[WORKER_TOKEN_HEX + 1];
    snprintf(attempt_dir, sizeof attempt_dir, "%s/attempt_%d", a->attempt_root, t->round);
    snprintf(worker_dir, sizeof worker_dir, "%s/attempt_%d", a->worker_root, t->round);
    ddp_worker_token_derive(o->token, o->token_len, o->run_id, t->round, worker_token);
    worker_launch_t launch = launch_for(a, t, &r, attempt_dir, worker_dir, worker_token);
    worker_t *w = t->workers = calloc((size_t)o->nproc, sizeof *w);
    t->hb_value = calloc((size_t)a->nnodes, sizeof *t->hb_value);
    t->hb_since = calloc((size_t)a->nnodes, sizeof *t->hb_since);
    for (int i = 0; i < a->nnodes && t->hb_since; i++)
        t->hb_since[i] = ddp_now_ms();
    char key[128];
    attempt_key(t, key, sizeof key, "end");
    const char *end_key = key;
    oom_watch_start(&t->oom);
    if (!w || !t->hb_value || !t->hb_since)
        ddp_error_set(err, "out of memory");
    else if (ddp_store_wait_send(a->watch, &end_key, 1, WATCH_MS, err))
        ddp_error_prefix(err, "watching the job's end");
    else
        run_workers(a, t, &r, &launch, err);
    int rc = t->end != END_UNKNOWN ? 0 : -1;
    for (int i = 0; i < a->nnodes && t->hb_value; i++)
        free(t->hb_value[i]);
    free(t->hb_value);
    free(t->hb_since);
    free(w);
    t->workers = NULL; /* the attempt's end outlives its workers */
    t->nworkers = 0;
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
    if (a->node_rank == 0 && count < expected)
        ddp_store_wait(a->client, &k, 1, GOODBYE_MS, NULL, NULL, &err);
}

/* Node 0's rendezvous store. */
static int serve_store(agent_t *a, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    const char *bind = o->nnodes == 1 ? "127.0.0.1" : NULL;
    /* Every agent keeps a connection to the store, spares too. */
    size_t agents = (size_t)o->nnodes + (size_t)o->spares;
    a->server = ddp_store_server_start(bind, o->store_port, o->token, o->token_len, agents,
                                       log_store, a, err);
    if (!a->server)
        return ddp_error_prefix(err,
                                "node 0 (%s) cannot serve the rendezvous store (port %d, the one "
                                "after --master-port %d)",
                                a->host, o->store_port, o->master_port);
    return 0;
}

/* torchrun's c10d rendezvous without node ranks: the agent on the endpoint's host that gets the
 * store's port serves the store and is node 0; the others take ranks 1, 2, ... in the order they
 * ask the store for one. */
static int claim_node_rank(agent_t *a, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
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
        if (taken >= o->nnodes + o->spares && o->min_nodes == o->nnodes)
            return ddp_error_set(err,
                                 "every node rank of --nnodes %d is taken: more agents than "
                                 "nodes joined run %s",
                                 o->nnodes, o->run_id);
        rank = (int)taken;
    }
    agent_say("node rank %d, handed out by the c10d rendezvous at %s:%d", rank, o->master_addr,
              o->store_port);
    a->node_rank = rank;
    return 0;
}

static int setup(agent_t *a, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    /* Before any thread starts, so the store's thread never takes them. */
    if ((a->sigfd = ddp_supervisor_signals(err)) < 0)
        return -1;
    signal(SIGPIPE, SIG_IGN);
    ddp_net_raise_descriptor_limit();
    ddp_net_hostname(a->host, sizeof a->host);
    /* Before any socket or thread exists, so the guard holds none of them. */
    if (guard_start(&a->guard, err))
        return -1;
    if (run_dir_make(a, err))
        return -1;
    if (a->node_rank < 0) {
        if (claim_node_rank(a, err))
            return -1;
    } else if (a->node_rank == 0 && serve_store(a, err)) {
        return -1;
    }
    if ((!a->client && connect_store(a, &a->client, err)) || connect_store(a, &a->watch, err))
        return -1;
    if (agent_options_elastic(o))
        standby_setup(a);
    if (o->checkpoint_signal && o->deadline_ms) {
        a->checkpoint_at = o->deadline_ms - o->checkpoint_before_ms;
        if (a->checkpoint_at <= ddp_now_ms()) {
            agent_say(
                "the walltime leaves %.0f s, less than --checkpoint-before (%.0f s): no checkpoint "
                "signal will be sent",
                ddp_ms_left(o->deadline_ms) / 1000.0, o->checkpoint_before_ms / 1000.0);
            a->checkpoint_at = 0;
        }
    }
    return 0;
}

static void teardown(agent_t *a)
{
    if (a->node_rank == 0 && agent_options_elastic(a->o) && a->client)
        ddp_rdzv_close(a->client, a->members.formed, "the job has ended");
    standby_teardown(a);
    timeline_close(a);
    fingerprint_cancel(&a->probe);
    ddp_store_client_close(a->watch);
    ddp_store_client_close(a->client);
    ddp_store_server_stop(a->server);
    run_dir_remove(a);
    container_unstage(a->staged_folder, a->staged_image);
    if (a->sigfd >= 0)
        close(a->sigfd);
    guard_stop(&a->guard);
}

int agent_run(const agent_options_t *o)
{
    if (o->container_exec) {
        ddp_error_t err;
        container_exec(&o->container, o->command, &err);
        agent_say("%s", err.msg);
        return 127;
    }
    agent_t a = {.o = o,
                 .container = o->container,
                 .node_rank = o->node_rank,
                 .nnodes = o->nnodes,
                 .sigfd = -1,
                 .attempt_root_fd = -1,
                 .guard = {.fd = -1, .pid = -1}};
    ddp_error_t err = {0};
    int status = 1;
    if (output_start(o->output_stall_ms, &err))
        agent_say("%s (writing to the real outputs, which may block)", err.msg);
    for (int i = 0; i < 2; i++)
        if (o->ignored_notes[i])
            agent_say("%s", o->ignored_notes[i]);
    if (setup(&a, &err)) {
        agent_say("%s", err.msg);
        status = a.stop_signal ? 128 + a.stop_signal : 1;
        goto out;
    }
    failure_t restarted_for = {.kind = FAIL_WORKER}; /* the failure the last restart followed */
    for (int round = 0;; round++) {
        attempt_t t = {.round = round};
        if (run_attempt(&a, &t, &err)) {
            agent_say("%s", err.msg);
            status = a.stop_signal ? 128 + a.stop_signal : 1;
            /* No node to take a lost one's place: the job ends for the loss. */
            if (restarted_for.kind == FAIL_LOST && !a.stop_signal) {
                t.first = restarted_for;
                attempt_report_failure(&a, &t);
                status = restarted_for.code;
            }
            break;
        }
        round = t.round;
        timeline_attempt_end(&a, &t);
        if (t.end == END_DONE) {
            status = 0;
            if (round > 0)
                agent_say("job succeeded after %d restart(s)", round);
            if (!t.standby)
                goodbye(&a, round, a.nnodes);
            break;
        }
        if (attempt_will_restart(&a, &t)) {
            restarted_for = t.first;
            if (agent_options_elastic(o))
                standby_after_attempt(&a, &t);
            /* A fresh watch connection: the old one may still hold the last attempt's answer. */
            ddp_store_client_close(a.watch);
            a.watch = NULL;
            if (connect_store(&a, &a.watch, &err) == 0)
                continue;
            agent_say("%s", err.msg);
        }
        status = t.end == END_CHECKPOINTED ? WORKER_EXIT_CHECKPOINTED
                 : t.first.code            ? t.first.code
                                           : 1;
        if (a.store_lost || t.standby)
            break;
        /* Agents that are gone, or silent, will not say goodbye. */
        int gone, lost_nodes = liveness_gone_nodes(&a, round, t.silent_node, &gone);
        if (lost_nodes < 0)
            lost_nodes = t.first.kind == FAIL_LOST && t.first.node > 0;
        goodbye(&a, round, a.nnodes - lost_nodes);
        break;
    }
out:
    teardown(&a);
    output_finish();
    return status;
}
