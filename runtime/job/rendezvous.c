#include "runtime/job/rendezvous.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/job/job_contract.h"

/* How much longer than node 0 the other agents wait, to hear node 0's reason for giving up. */
#define RDZV_ABORT_SLACK_MS 2000
/* How often a waiting join asks whether the agent has been told to stop. */
#define RDZV_CANCEL_SLICE_MS 250

void ddp_rdzv_key(char *buf, size_t size, int round, const char *name)
{
    snprintf(buf, size, "r%d/%s", round, name);
}

static void free_strings(char **v, int n)
{
    for (int i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

static void node_key(char *buf, size_t size, int round, const char *what, int node)
{
    char name[64];
    snprintf(name, sizeof name, "%s/%d", what, node);
    ddp_rdzv_key(buf, size, round, name);
}

static void name_missing(ddp_store_client_t *c, const ddp_rdzv_join_t *j, char *buf, size_t size);

/* Waits for any of keys until `deadline`, so that j->cancelled is heard within
 * RDZV_CANCEL_SLICE_MS and, while `joining`, j->waiting told every RDZV_NOTE_MS. Returns 1 with
 * *which and *val (if not NULL), 0 on timeout, -1 on error or cancellation. Node 0 names the
 * missing ranks, reading the records between WAITs; the others only say that they wait, with
 * one WAIT to the deadline: thousands of agents reading the store at every note, or sending a
 * WAIT at every slice, would be much of its work. */
static int wait_keys(ddp_store_client_t *c, const ddp_rdzv_join_t *j, const char *const *keys,
                     size_t nkeys, int64_t deadline, int joining, int *which, char **val,
                     ddp_error_t *err)
{
    int notes = joining && j->waiting, reads = notes && j->node_rank == 0;
    int64_t start = ddp_now_ms(), next_note = start + RDZV_NOTE_MS;
    char line[900];
    for (;;) {
        if (j->cancelled && j->cancelled(j->ctx))
            return ddp_error_set(err, "rendezvous interrupted: the agent was told to stop");
        if (reads && ddp_now_ms() >= next_note) {
            char missing[700];
            name_missing(c, j, missing, sizeof missing);
            snprintf(line, sizeof line, "waiting for node rank(s) %s to join: %lld s of %lld",
                     missing, (long long)((ddp_now_ms() - start) / 1000),
                     (long long)((deadline - start + 500) / 1000));
            j->waiting(j->ctx, line);
            next_note += RDZV_NOTE_MS;
        }
        int64_t until = reads && next_note < deadline ? next_note : deadline;
        if (ddp_store_wait_send(c, keys, nkeys, ddp_ms_left(until), err))
            return ddp_error_prefix(err, "rendezvous");
        struct pollfd answer = {.fd = ddp_store_client_fd(c), .events = POLLIN};
        for (;;) {
            int slice =
                j->cancelled ? RDZV_CANCEL_SLICE_MS : ddp_ms_left(notes ? next_note : until);
            if (!(j->cancelled || notes) || ddp_ms_left(until) == 0 || poll(&answer, 1, slice) != 0)
                break;
            if (j->cancelled && j->cancelled(j->ctx))
                return ddp_error_set(err, "rendezvous interrupted: the agent was told to stop");
            if (notes && !reads && ddp_now_ms() >= next_note) {
                snprintf(line, sizeof line,
                         "waiting for the job's %d nodes to join and node 0 to assign ranks: "
                         "%lld s of %lld",
                         j->nnodes, (long long)((ddp_now_ms() - start) / 1000),
                         (long long)((deadline - start + 500) / 1000));
                j->waiting(j->ctx, line);
                next_note += RDZV_NOTE_MS;
            }
        }
        int got = ddp_store_wait_recv(c, which, val, err);
        if (got < 0)
            return ddp_error_prefix(err, "rendezvous");
        if (got > 0 || ddp_ms_left(deadline) == 0)
            return got;
    }
}

/* Lists the node ranks without a record, for the timeout message. */
static void name_missing(ddp_store_client_t *c, const ddp_rdzv_join_t *j, char *buf, size_t size)
{
    enum { CHUNK = 1024 }; /* records asked for in one pipelined batch */
    char(*keys)[64] = malloc(CHUNK * sizeof *keys), **vals = malloc(CHUNK * sizeof *vals);
    const char **key_ptrs = malloc(CHUNK * sizeof *key_ptrs);
    size_t used = 0;
    int missing = 0, unread = !keys || !vals || !key_ptrs;
    buf[0] = '\0';
    for (int first = 0; first < j->nnodes && used + 64 < size && !unread; first += CHUNK) {
        int n = j->nnodes - first < CHUNK ? j->nnodes - first : CHUNK;
        for (int k = 0; k < n; k++) {
            node_key(keys[k], sizeof keys[k], j->round, "node", first + k);
            key_ptrs[k] = keys[k];
            vals[k] = NULL;
        }
        unread = ddp_store_get_many(c, key_ptrs, (size_t)n, vals, NULL) != 0;
        for (int k = 0; k < n; k++) {
            int absent = !unread && !vals[k];
            free(vals[k]);
            if (!absent || used + 64 >= size)
                continue;
            int i = first + k;
            int w = j->hosts ? snprintf(buf + used, size - used, "%s%d (%s)", missing ? ", " : "",
                                        i, j->hosts[i])
                             : snprintf(buf + used, size - used, "%s%d", missing ? ", " : "", i);
            if (w > 0)
                used += (size_t)w < size - used ? (size_t)w : size - used - 1;
            missing++;
        }
    }
    free(keys);
    free(vals);
    free(key_ptrs);
    if (!missing)
        snprintf(buf, size, "none (the store could not be read)");
}

/* Node rank i's key of kind `what` for every node, as one malloc'd array of strings. */
static char **node_keys(const ddp_rdzv_join_t *j, const char *what)
{
    char **keys = calloc((size_t)j->nnodes, sizeof *keys);
    for (int i = 0; keys && i < j->nnodes; i++) {
        char key[128];
        node_key(key, sizeof key, j->round, what, i);
        if (!(keys[i] = strdup(key))) {
            free_strings(keys, i);
            return NULL;
        }
    }
    return keys;
}

/* Node 0: reads every record in node order and publishes each node's first rank (both
 * pipelined: with thousands of nodes, one round trip each would dominate the join). */
static int assign_ranks(ddp_store_client_t *c, const ddp_rdzv_join_t *j, ddp_rdzv_result_t *out,
                        ddp_error_t *err)
{
    int rc = -1, world = 0;
    char **record_keys = node_keys(j, "node"), **assign_keys = node_keys(j, "assign");
    char **records = calloc((size_t)j->nnodes, sizeof *records);
    char **assignments = calloc((size_t)j->nnodes, sizeof *assignments);
    int *nproc = calloc((size_t)j->nnodes, sizeof *nproc);
    out->node_hosts = calloc((size_t)j->nnodes, sizeof *out->node_hosts);
    if (!record_keys || !assign_keys || !records || !assignments || !nproc || !out->node_hosts) {
        ddp_error_set(err, "out of memory");
        goto out;
    }
    if (ddp_store_get_many(c, (const char *const *)record_keys, (size_t)j->nnodes, records, err))
        goto out;
    for (int i = 0; i < j->nnodes; i++) {
        int host_at = 0;
        if (!records[i] || sscanf(records[i], "%d %n", &nproc[i], &host_at) != 1 || nproc[i] < 1 ||
            !(out->node_hosts[i] = strdup(records[i] + host_at))) {
            ddp_error_set(err, "rendezvous: bad or missing record for node %d", i);
            goto out;
        }
        world += nproc[i];
    }
    for (int i = 0, base = 0; i < j->nnodes; base += nproc[i], i++)
        if (asprintf(&assignments[i], "%d %d %d", base, world, j->worker_port) < 0) {
            assignments[i] = NULL;
            ddp_error_set(err, "out of memory");
            goto out;
        }
    if (ddp_store_set_many(c, (const char *const *)assign_keys, (const char *const *)assignments,
                           (size_t)j->nnodes, err))
        goto out;
    out->rank_base = 0;
    out->world_size = world;
    out->worker_port = j->worker_port;
    rc = 0;
out:
    free_strings(record_keys, j->nnodes);
    free_strings(assign_keys, j->nnodes);
    free_strings(records, j->nnodes);
    free_strings(assignments, j->nnodes);
    free(nproc);
    return rc;
}

/* Tells every agent of the round (some may be waiting for nodes that will never come) why the
 * join failed; returns -1. */
static int abort_join(ddp_store_client_t *c, const ddp_rdzv_join_t *j, ddp_error_t *err)
{
    char abort_key[128];
    ddp_rdzv_key(abort_key, sizeof abort_key, j->round, "abort");
    ddp_store_set(c, abort_key, err->msg, strlen(err->msg), NULL);
    return -1;
}

/* The first agent to join sets the job's world (its node count, or its spares or elastic range)
 * and run id; one given another is refused, and every agent of the round is told which value
 * differs. `theirs` is the shape in the store when this agent's did not go in. */
static int check_shape(ddp_store_client_t *c, const ddp_rdzv_join_t *j, const char *world,
                       const char *run_id, const char *theirs, ddp_error_t *err)
{
    int their_node = -1, world_at = 0;
    char their_host[256] = "?", their_run[256] = "-";
    if (!theirs ||
        sscanf(theirs, "%d %255s %255s %n", &their_node, their_host, their_run, &world_at) < 3 ||
        !world_at)
        return ddp_error_set(err, "rendezvous: malformed job shape in the store");
    if (strcmp(theirs + world_at, world) != 0)
        ddp_error_set(err,
                      "rendezvous: node rank %d (%s) was started with %s, but node rank %d (%s) "
                      "joined first with %s: every agent must be given the same count",
                      j->node_rank, j->host, world, their_node, their_host, theirs + world_at);
    else if (strcmp(their_run, run_id) != 0)
        ddp_error_set(err,
                      "rendezvous: node rank %d (%s) was started with run id %s, but node rank %d "
                      "(%s) joined first with run id %s: every agent of a job must be given the "
                      "same --run-id",
                      j->node_rank, j->host, run_id, their_node, their_host, their_run);
    else
        return 0;
    return abort_join(c, j, err);
}

/* This agent's part of the round, in one round trip (at thousands of agents the store's cost is
 * its round trips): the job's shape (check_shape), its record (worker count and host under its
 * node rank or slot, once) and the round's join count, which *joined gets. A refused agent
 * aborts the round, so the count it added does not matter. */
static int publish_join(ddp_store_client_t *c, const ddp_rdzv_join_t *j, int64_t *joined,
                        ddp_error_t *err)
{
    char shape_key[128], record_key[128], joined_key[128], mine[768], world[128], record[512];
    const char *run_id = j->run_id && *j->run_id ? j->run_id : "-";
    if (j->elastic)
        snprintf(world, sizeof world, "%s", j->elastic->shape);
    else
        snprintf(world, sizeof world, "--nnodes %d", j->nnodes);
    ddp_rdzv_key(shape_key, sizeof shape_key, j->round, "shape");
    node_key(record_key, sizeof record_key, j->round, "node", j->node_rank);
    ddp_rdzv_key(joined_key, sizeof joined_key, j->round, "joined");
    int shape_len =
        snprintf(mine, sizeof mine, "%d %s %.255s %s", j->node_rank, j->host, run_id, world);
    int record_len = snprintf(record, sizeof record, "%d %s", j->nproc, j->host);
    ddp_store_batch_op_t ops[] = {
        {.op = STORE_BATCH_CAS,
         .key = shape_key,
         .desired = mine,
         .desired_len = (size_t)shape_len},
        {.op = STORE_BATCH_CAS,
         .key = record_key,
         .desired = record,
         .desired_len = (size_t)record_len},
        {.op = STORE_BATCH_ADD, .key = joined_key, .delta = 1},
    };
    int rc = ddp_store_batch(c, ops, 3, err);
    if (rc)
        ddp_error_prefix(err, "rendezvous");
    else if (!ops[0].swapped)
        rc = check_shape(c, j, world, run_id, ops[0].current, err);
    if (!rc && !ops[1].swapped) {
        const char *other = ops[1].current ? strchr(ops[1].current, ' ') : NULL;
        ddp_error_set(err,
                      "rendezvous: node rank %d (%s) is taken: node rank %d has already joined "
                      "from host %s; two agents were given the same node rank",
                      j->node_rank, j->host, j->node_rank, other ? other + 1 : "?");
        rc = abort_join(c, j, err);
    }
    free(ops[0].current);
    free(ops[1].current);
    *joined = ops[2].sum;
    return rc;
}

/* Spares and elastic worlds: node 0 waits for the agents it expects (all of round 0's slots, or
 * the members of the last round still there), or for min_nodes and the last call, then forms
 * the round (membership.h) and tells each agent its part under assign/<slot>. Every joiner also
 * lists itself under joiner/<k>, so node 0 finds slots it never heard of (agents joining late,
 * c10d's handed-out ranks). An agent whose round formed without it joins the next one. */

/* Node 0: members of the last round gone since (an active node's connection closed in it,
 * gone/<rank>; a standby's, left/<slot>) are excluded before anyone is waited for. */
static int exclude_departed(ddp_store_client_t *c, const ddp_rdzv_join_t *j, ddp_error_t *err)
{
    ddp_members_t *m = j->elastic->members;
    if (!m->formed || j->round < 1)
        return 0;
    char **keys = calloc((size_t)m->nslots + 1, sizeof *keys);
    char **vals = calloc((size_t)m->nslots + 1, sizeof *vals);
    int *slot = calloc((size_t)m->nslots + 1, sizeof *slot);
    int n = 0, rc = -1;
    if (!keys || !vals || !slot) {
        ddp_error_set(err, "out of memory");
        goto out;
    }
    for (int i = 1; i < m->nslots; i++) {
        char key[128];
        if (m->role[i] > 0)
            node_key(key, sizeof key, j->round - 1, "gone", m->role[i]);
        else if (m->role[i] == MEMBER_STANDBY)
            snprintf(key, sizeof key, "left/%d", i);
        else
            continue;
        if (!(keys[n] = strdup(key))) {
            ddp_error_set(err, "out of memory");
            goto out;
        }
        slot[n++] = i;
    }
    if (n && ddp_store_get_many(c, (const char *const *)keys, (size_t)n, vals, err))
        goto out;
    for (int k = 0; k < n; k++)
        if (vals[k])
            ddp_members_exclude(m, slot[k]);
    rc = 0;
out:
    free_strings(keys, n);
    free_strings(vals, n);
    free(slot);
    return rc;
}

/* Node 0: waits until the expected agents have joined, or min_nodes and the last call. */
static int gather(ddp_store_client_t *c, const ddp_rdzv_join_t *j, int64_t *joined,
                  ddp_error_t *err)
{
    const ddp_rdzv_elastic_t *e = j->elastic;
    /* After round 0, the members of the last round are waited for by name (returned), so that
     * newcomers cannot stand in for a member still stopping its workers. */
    int formed = e->members->formed;
    int expected = formed ? ddp_members_expected(e->members) : e->slots;
    char count_key[128], returned_key[128], abort_key[128];
    ddp_rdzv_key(count_key, sizeof count_key, j->round, "joined");
    ddp_rdzv_key(returned_key, sizeof returned_key, j->round, "returned");
    ddp_rdzv_key(abort_key, sizeof abort_key, j->round, "abort");
    int64_t start = ddp_now_ms(), enough_at = 0, next_note = start + RDZV_NOTE_MS, returned = 0;
    for (;;) {
        if (ddp_store_add(c, count_key, 0, joined, err) ||
            (formed && ddp_store_add(c, returned_key, 0, &returned, err)))
            return ddp_error_prefix(err, "rendezvous");
        int64_t now = ddp_now_ms();
        if ((formed ? returned : *joined) >= expected)
            return 0;
        if (*joined >= e->min_nodes && !enough_at)
            enough_at = now;
        if (enough_at &&
            (now - enough_at >= (formed ? e->rejoin_ms : e->last_call_ms) || now >= j->deadline))
            return 0;
        if (now >= j->deadline) {
            ddp_error_set(err,
                          "rendezvous timed out: %lld node(s) joined in %lld s, and the job "
                          "needs %d",
                          (long long)*joined, (long long)((now - start) / 1000), e->min_nodes);
            return abort_join(c, j, err);
        }
        if (j->waiting && now >= next_note) {
            char line[256];
            snprintf(line, sizeof line, "%lld of %d node(s) joined (at least %d needed)",
                     (long long)*joined, expected, e->min_nodes);
            j->waiting(j->ctx, line);
            next_note += RDZV_NOTE_MS;
        }
        if (j->cancelled && j->cancelled(j->ctx))
            return ddp_error_set(err, "rendezvous interrupted: the agent was told to stop");
        const char *k = abort_key;
        char *why = NULL;
        int got = ddp_store_wait(c, &k, 1, 50, NULL, &why, err);
        if (got < 0)
            return ddp_error_prefix(err, "rendezvous");
        if (got > 0) {
            ddp_error_set(err, "%s", why);
            free(why);
            return -1;
        }
    }
}

typedef struct {
    int slot, nproc;
    char *host;
} joiner_t;

/* How long node 0 waits for a counted joiner's entry before leaving it for the next round. */
#define JOINER_ENTRY_MS 1000

/* Node 0: the first `joined` joiners, from joiner/<k> ("SLOT NPROC HOST"); one whose entry does
 * not come is left for the next round. Returns how many were read, -1 on error. */
static int read_joiners(ddp_store_client_t *c, const ddp_rdzv_join_t *j, int64_t joined,
                        joiner_t *out, ddp_error_t *err)
{
    char **keys = calloc((size_t)joined + 1, sizeof *keys);
    char **vals = calloc((size_t)joined + 1, sizeof *vals);
    int n = -1;
    for (int64_t k = 0; keys && vals && k < joined; k++) {
        char key[128];
        node_key(key, sizeof key, j->round, "joiner", (int)k + 1);
        if (!(keys[k] = strdup(key)))
            break;
    }
    if (!keys || !vals || (joined && !keys[joined - 1]))
        ddp_error_set(err, "out of memory");
    else if (ddp_store_get_many(c, (const char *const *)keys, (size_t)joined, vals, err) == 0)
        n = 0;
    for (int64_t k = 0; n >= 0 && k < joined; k++) {
        /* Counted, but its entry not in yet (its SET follows its ADD): a moment for it. */
        const char *key = keys[k];
        if (!vals[k] && ddp_store_wait(c, &key, 1, JOINER_ENTRY_MS, NULL, &vals[k], err) < 0) {
            while (n > 0)
                free(out[--n].host);
            n = -1;
            break;
        }
        int at = 0;
        joiner_t x = {0};
        if (!vals[k] || sscanf(vals[k], "%d %d %n", &x.slot, &x.nproc, &at) != 2 || !at ||
            x.slot < 0 || x.slot >= JOB_NODES_MAX || x.nproc < 1)
            continue;
        x.host = strdup(vals[k] + at);
        out[n++] = x;
    }
    free_strings(keys, (int)joined);
    free_strings(vals, (int)joined);
    return n;
}

static void free_joiners(joiner_t *x, int n)
{
    for (int i = 0; x && i < n; i++)
        free(x[i].host);
    free(x);
}

/* What each joiner is told: "active BASE WORLD PORT RANK NNODES", "standby NNODES" or
 * "excluded". */
static int tell_joiners(ddp_store_client_t *c, const ddp_rdzv_join_t *j, const joiner_t *x, int n,
                        const int *base, int world, int active, ddp_error_t *err)
{
    const ddp_members_t *m = j->elastic->members;
    char **keys = calloc((size_t)n + 1, sizeof *keys), **vals = calloc((size_t)n + 1, sizeof *vals);
    int ok = keys && vals;
    for (int i = 0; ok && i < n; i++) {
        char key[128];
        int role = m->role[x[i].slot];
        node_key(key, sizeof key, j->round, "assign", x[i].slot);
        keys[i] = strdup(key);
        int len = role >= 0 ? asprintf(&vals[i], "active %d %d %d %d %d", base[role], world,
                                       j->worker_port, role, active)
                  : role == MEMBER_STANDBY ? asprintf(&vals[i], "standby %d", active)
                                           : asprintf(&vals[i], "excluded");
        ok = keys[i] && len > 0;
        if (len < 0)
            vals[i] = NULL;
    }
    int rc = ok ? ddp_store_set_many(c, (const char *const *)keys, (const char *const *)vals,
                                     (size_t)n, err)
                : ddp_error_set(err, "out of memory");
    free_strings(keys, n);
    free_strings(vals, n);
    return rc;
}

/* Node 0: forms the round of the first `joined` joiners and tells each its part. */
static int form_round(ddp_store_client_t *c, const ddp_rdzv_join_t *j, int64_t joined,
                      ddp_rdzv_result_t *out, ddp_error_t *err)
{
    const ddp_rdzv_elastic_t *e = j->elastic;
    joiner_t *x = calloc((size_t)joined + 1, sizeof *x);
    int n = x ? read_joiners(c, j, joined, x, err) : ddp_error_set(err, "out of memory");
    int nslots = e->members->nslots, rc = -1;
    for (int i = 0; i < n; i++)
        if (x[i].slot >= nslots)
            nslots = x[i].slot + 1;
    unsigned char *flags = n >= 0 ? calloc((size_t)nslots + 1, 1) : NULL;
    int *base = flags ? calloc((size_t)nslots + 1, sizeof *base) : NULL;
    if (n >= 0 && !base)
        ddp_error_set(err, "out of memory");
    if (!base)
        goto out;
    for (int i = 0; i < n; i++)
        flags[x[i].slot] = 1;
    int active = ddp_members_form(e->members, flags, nslots, e->min_nodes, e->max_nodes, err);
    if (active < 0) {
        ddp_error_prefix(err, "rendezvous of attempt %d", j->round);
        abort_join(c, j, err);
        goto out;
    }
    /* Each active joiner's workers and host under its node rank; bases node-major after. */
    out->node_hosts = calloc((size_t)active, sizeof *out->node_hosts);
    for (int i = 0; out->node_hosts && i < n; i++) {
        int rank = e->members->role[x[i].slot];
        if (rank >= 0) {
            base[rank] = x[i].nproc;
            out->node_hosts[rank] = strdup(x[i].host ? x[i].host : "?");
        }
    }
    int world = 0;
    for (int rank = 0; rank < active; rank++) {
        int nproc = base[rank];
        base[rank] = world;
        world += nproc;
    }
    out->nnodes = active;
    if (!out->node_hosts) {
        ddp_error_set(err, "out of memory");
        goto out;
    }
    char key[128], round[32];
    ddp_rdzv_key(key, sizeof key, j->round, "formed");
    snprintf(round, sizeof round, "%d", j->round);
    if (tell_joiners(c, j, x, n, base, world, active, err) || ddp_store_set(c, key, "1", 1, err) ||
        ddp_store_set(c, "formed", round, strlen(round), err)) {
        ddp_error_prefix(err, "rendezvous");
        goto out;
    }
    out->world_size = world;
    out->worker_port = j->worker_port;
    rc = 0;
out:
    free_joiners(x, n > 0 ? n : 0);
    free(flags);
    free(base);
    return rc;
}

/* This agent's part of a formed round, from node 0's word: 1 for a part, 0 for none (the
 * round formed without it), -1 with err set (excluded, or garbled). */
static int read_assignment(const char *text, const ddp_rdzv_join_t *j, ddp_rdzv_result_t *out,
                           ddp_error_t *err)
{
    if (!text)
        return 0;
    if (sscanf(text, "active %d %d %d %d %d", &out->rank_base, &out->world_size, &out->worker_port,
               &out->node_rank, &out->nnodes) == 5)
        return 1;
    if (sscanf(text, "standby %d", &out->nnodes) == 1) {
        out->standby = 1;
        return 1;
    }
    if (!strcmp(text, "excluded"))
        return ddp_error_set(err,
                             "node rank %d (%s) was lost earlier in this job and is excluded "
                             "from it for good",
                             j->node_rank, j->host);
    return ddp_error_set(err, "rendezvous: malformed rank assignment from node 0");
}

/* One round's join; 1 when the round formed without this agent (join the next). */
static int elastic_join_round(ddp_store_client_t *c, const ddp_rdzv_join_t *j,
                              ddp_rdzv_result_t *out, ddp_error_t *err)
{
    if (j->node_rank == 0 && exclude_departed(c, j, err))
        return -1;
    char key[128], entry[512];
    int64_t joined = 0;
    if (publish_join(c, j, &joined, err))
        return -1;
    int n = snprintf(entry, sizeof entry, "%d %d %s", j->node_rank, j->nproc, j->host);
    node_key(key, sizeof key, j->round, "joiner", (int)joined);
    if (ddp_store_set(c, key, entry, (size_t)n, err))
        return ddp_error_prefix(err, "rendezvous");
    ddp_rdzv_key(key, sizeof key, j->round, "returned");
    if (j->returning && ddp_store_add(c, key, 1, NULL, err))
        return ddp_error_prefix(err, "rendezvous");
    if (j->node_rank == 0)
        return gather(c, j, &joined, err) || form_round(c, j, joined, out, err) ? -1 : 0;
    char assign_key[128], abort_key[128], formed_key[128], *val = NULL;
    node_key(assign_key, sizeof assign_key, j->round, "assign", j->node_rank);
    ddp_rdzv_key(abort_key, sizeof abort_key, j->round, "abort");
    ddp_rdzv_key(formed_key, sizeof formed_key, j->round, "formed");
    const char *keys[] = {assign_key, abort_key, formed_key};
    int which = 0;
    int got = wait_keys(c, j, keys, 3, j->deadline + RDZV_ABORT_SLACK_MS, 0, &which, &val, err);
    if (got == 0)
        return ddp_error_set(err,
                             "rendezvous timed out: node 0 formed no round with node rank %d "
                             "(%s) in time",
                             j->node_rank, j->host);
    if (got > 0 && which == 1) {
        ddp_error_set(err, "%s", val);
        got = -1;
    } else if (got > 0 && which == 2) {
        free(val);
        val = NULL;
        got = ddp_store_get(c, assign_key, &val, NULL, err) < 0 ? -1 : 1;
    }
    int part = got > 0 ? read_assignment(val, j, out, err) : -1;
    free(val);
    return part < 0 ? -1 : !part;
}

static int elastic_join(ddp_store_client_t *c, const ddp_rdzv_join_t *j, ddp_rdzv_result_t *out,
                        ddp_error_t *err)
{
    ddp_rdzv_join_t round = *j;
    for (;; round.round++) {
        *out = (ddp_rdzv_result_t){.round = round.round, .node_rank = round.node_rank};
        int late = elastic_join_round(c, &round, out, err);
        if (late <= 0)
            return late;
        if (round.waiting)
            round.waiting(round.ctx, "the round formed without this node: waiting to be admitted "
                                     "at the next");
    }
}

int ddp_rdzv_open_round(ddp_store_client_t *c, ddp_error_t *err)
{
    char *val = NULL;
    int got = ddp_store_get(c, "formed", &val, NULL, err);
    int round = got == 1 && val ? atoi(val) + 1 : 0;
    free(val);
    return got < 0 ? ddp_error_prefix(err, "rendezvous") : round;
}

void ddp_rdzv_close(ddp_store_client_t *c, int round, const char *why)
{
    char key[128];
    ddp_rdzv_key(key, sizeof key, round, "abort");
    ddp_store_set(c, key, why, strlen(why), NULL);
}

int ddp_rdzv_waiting(ddp_store_client_t *c, int round, ddp_error_t *err)
{
    char key[128];
    int64_t joined = 0;
    ddp_rdzv_key(key, sizeof key, round, "joined");
    return ddp_store_add(c, key, 0, &joined, err) ? -1 : (int)joined;
}

int ddp_rdzv_join(ddp_store_client_t *c, const ddp_rdzv_join_t *j, ddp_rdzv_result_t *out,
                  ddp_error_t *err)
{
    char key[128], *val = NULL;
    if (j->elastic)
        return elastic_join(c, j, out, err);
    *out = (ddp_rdzv_result_t){.nnodes = j->nnodes, .round = j->round, .node_rank = j->node_rank};
    int64_t joined;
    if (publish_join(c, j, &joined, err))
        return -1;
    ddp_rdzv_key(key, sizeof key, j->round, "complete");
    if (joined == j->nnodes && ddp_store_set(c, key, "1", 1, err))
        return ddp_error_prefix(err, "rendezvous");
    /* Node 0 waits for the last joiner, the others straight for their assignment: one wake-up
     * per agent, not two (at thousands of agents the store's cost is its replies). Node 0 gives
     * up first and tells the others why (it may close the store right after); the others wait
     * a little longer for that word, and look for themselves only if it never comes. */
    char abort_key[128];
    ddp_rdzv_key(abort_key, sizeof abort_key, j->round, "abort");
    if (j->node_rank != 0)
        node_key(key, sizeof key, j->round, "assign", j->node_rank);
    const char *keys[] = {key, abort_key};
    int64_t deadline = j->deadline + (j->node_rank == 0 ? 0 : RDZV_ABORT_SLACK_MS);
    int which = 0;
    int got = wait_keys(c, j, keys, 2, deadline, 1, &which, &val, err);
    if (got < 0)
        return -1;
    if (got > 0 && which == 1) {
        ddp_error_set(err, "%s", val);
        free(val);
        return -1;
    }
    if (got == 0) {
        char missing[900];
        ddp_rdzv_key(key, sizeof key, j->round, "complete");
        char *complete = NULL;
        int all_joined = j->node_rank != 0 && ddp_store_get(c, key, &complete, NULL, err) == 1;
        free(complete);
        if (all_joined)
            return ddp_error_set(err, "rendezvous timed out: every node joined, but node 0 did "
                                      "not assign ranks in time");
        name_missing(c, j, missing, sizeof missing);
        ddp_error_set(err, "rendezvous timed out: node rank(s) %s never arrived", missing);
        if (j->node_rank == 0)
            ddp_store_set(c, abort_key, err->msg, strlen(err->msg), NULL);
        return -1;
    }
    if (j->node_rank == 0) {
        free(val);
        if (assign_ranks(c, j, out, err) == 0)
            return 0;
        /* A refused agent counted itself before it aborted the round: its reason, not the
         * record it left missing, is the cause. */
        char *why = NULL;
        ddp_error_t ignored;
        ddp_error_prefix(err, "rendezvous");
        if (ddp_store_get(c, abort_key, &why, NULL, &ignored) == 1)
            ddp_error_set(err, "%s", why);
        free(why);
        return -1;
    }
    int ok = sscanf(val, "%d %d %d", &out->rank_base, &out->world_size, &out->worker_port) == 3;
    free(val);
    return ok ? 0 : ddp_error_set(err, "rendezvous: malformed rank assignment from node 0");
}

void ddp_rdzv_result_free(ddp_rdzv_result_t *r)
{
    if (r->node_hosts)
        for (int i = 0; i < r->nnodes; i++)
            free(r->node_hosts[i]);
    free(r->node_hosts);
    r->node_hosts = NULL;
}
