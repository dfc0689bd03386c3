#include "rendezvous.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_clock.h"

/* How much longer than node 0 the other agents wait, to hear node 0's reason for giving up. */
#define RDZV_ABORT_SLACK_MS 2000

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

/* Waits for any of keys until `deadline` in slices, so that j->cancelled is heard and, while
 * `joining`, j->waiting told who is missing. Returns 1 with *which and *val (if not NULL), 0 on
 * timeout, -1 on error or cancellation. */
static int wait_keys(ddp_store_client_t *c, const ddp_rdzv_join_t *j, const char *const *keys,
                     size_t nkeys, int64_t deadline, int joining, int *which, char **val,
                     ddp_error_t *err)
{
    int64_t start = ddp_now_ms(), next_note = start + RDZV_NOTE_MS;
    for (;;) {
        if (j->cancelled && j->cancelled(j->ctx))
            return ddp_error_set(err, "rendezvous interrupted: the agent was told to stop");
        if (joining && j->waiting && ddp_now_ms() >= next_note) {
            char missing[700], line[900];
            name_missing(c, j, missing, sizeof missing);
            snprintf(line, sizeof line, "waiting for node rank(s) %s to join: %lld s of %lld",
                     missing, (long long)((ddp_now_ms() - start) / 1000),
                     (long long)((deadline - start + 500) / 1000));
            j->waiting(j->ctx, line);
            next_note += RDZV_NOTE_MS;
        }
        int left = ddp_ms_left(deadline);
        int slice = (j->cancelled || j->waiting) && left > 250 ? 250 : left;
        int got = ddp_store_wait(c, keys, nkeys, slice, which, val, err);
        if (got < 0)
            return ddp_error_prefix(err, "rendezvous");
        if (got > 0 || slice == left)
            return got;
    }
}

/* Lists the node ranks without a record, for the timeout message. */
static void name_missing(ddp_store_client_t *c, const ddp_rdzv_join_t *j, char *buf, size_t size)
{
    size_t used = 0;
    int missing = 0;
    buf[0] = '\0';
    for (int i = 0; i < j->nnodes && used + 64 < size; i++) {
        char key[128], *val = NULL;
        node_key(key, sizeof key, j->round, "node", i);
        int found = ddp_store_get(c, key, &val, NULL, NULL);
        free(val);
        if (found != 0)
            continue;
        int n = j->hosts ? snprintf(buf + used, size - used, "%s%d (%s)", missing ? ", " : "", i,
                                    j->hosts[i])
                         : snprintf(buf + used, size - used, "%s%d", missing ? ", " : "", i);
        if (n > 0)
            used += (size_t)n < size - used ? (size_t)n : size - used - 1;
        missing++;
    }
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

/* The first agent to join sets the job's node count and run id; one given another is refused,
 * and every agent of the round is told which value differs. */
static int check_shape(ddp_store_client_t *c, const ddp_rdzv_join_t *j, ddp_error_t *err)
{
    char key[128], mine[512], *theirs = NULL;
    const char *run_id = j->run_id && *j->run_id ? j->run_id : "-";
    ddp_rdzv_key(key, sizeof key, j->round, "shape");
    int n =
        snprintf(mine, sizeof mine, "%d %d %s %.255s", j->nnodes, j->node_rank, j->host, run_id);
    int swapped = ddp_store_cas(c, key, NULL, 0, mine, (size_t)n, &theirs, err);
    if (swapped < 0)
        return ddp_error_prefix(err, "rendezvous");
    int their_nnodes = 0, their_node = -1;
    char their_host[256] = "?", their_run[256] = "-";
    if (!swapped && (!theirs || sscanf(theirs, "%d %d %255s %255s", &their_nnodes, &their_node,
                                       their_host, their_run) < 2)) {
        free(theirs);
        return ddp_error_set(err, "rendezvous: malformed job shape in the store");
    }
    free(theirs);
    if (swapped)
        return 0;
    if (their_nnodes != j->nnodes) {
        ddp_error_set(err,
                      "rendezvous: node rank %d (%s) was started with --nnodes %d, but node rank "
                      "%d (%s) joined first with --nnodes %d: every agent must be given the same "
                      "count",
                      j->node_rank, j->host, j->nnodes, their_node, their_host, their_nnodes);
        return abort_join(c, j, err);
    }
    if (strcmp(their_run, run_id) != 0) {
        ddp_error_set(err,
                      "rendezvous: node rank %d (%s) was started with run id %s, but node rank %d "
                      "(%s) joined first with run id %s: every agent of a job must be given the "
                      "same --run-id",
                      j->node_rank, j->host, run_id, their_node, their_host, their_run);
        return abort_join(c, j, err);
    }
    return 0;
}

int ddp_rdzv_join(ddp_store_client_t *c, const ddp_rdzv_join_t *j, ddp_rdzv_result_t *out,
                  ddp_error_t *err)
{
    char key[128], record[512], *val = NULL;
    *out = (ddp_rdzv_result_t){.nnodes = j->nnodes};
    if (check_shape(c, j, err))
        return -1;
    node_key(key, sizeof key, j->round, "node", j->node_rank);
    int n = snprintf(record, sizeof record, "%d %s", j->nproc, j->host);
    int swapped = ddp_store_cas(c, key, NULL, 0, record, (size_t)n, &val, err);
    if (swapped < 0)
        return ddp_error_prefix(err, "rendezvous");
    if (!swapped) {
        const char *other = val ? strchr(val, ' ') : NULL;
        ddp_error_set(err,
                      "rendezvous: node rank %d (%s) is taken: node rank %d has already joined "
                      "from host %s; two agents were given the same node rank",
                      j->node_rank, j->host, j->node_rank, other ? other + 1 : "?");
        free(val);
        return abort_join(c, j, err);
    }
    free(val);
    val = NULL;
    int64_t joined;
    ddp_rdzv_key(key, sizeof key, j->round, "joined");
    if (ddp_store_add(c, key, 1, &joined, err))
        return ddp_error_prefix(err, "rendezvous");
    ddp_rdzv_key(key, sizeof key, j->round, "complete");
    if (joined == j->nnodes && ddp_store_set(c, key, "1", 1, err))
        return ddp_error_prefix(err, "rendezvous");
    /* Node 0 gives up first and tells the others why (it may close the store right after);
     * the others wait a little longer for that word, and look for themselves only if it never
     * comes. */
    char abort_key[128];
    ddp_rdzv_key(abort_key, sizeof abort_key, j->round, "abort");
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
    free(val);
    val = NULL;
    if (got == 0) {
        char missing[900];
        name_missing(c, j, missing, sizeof missing);
        ddp_error_set(err, "rendezvous timed out: node rank(s) %s never arrived", missing);
        if (j->node_rank == 0)
            ddp_store_set(c, abort_key, err->msg, strlen(err->msg), NULL);
        return -1;
    }
    if (j->node_rank == 0)
        return assign_ranks(c, j, out, err) ? ddp_error_prefix(err, "rendezvous") : 0;
    node_key(key, sizeof key, j->round, "assign", j->node_rank);
    const char *assign = key;
    got = wait_keys(c, j, &assign, 1, j->deadline + RDZV_ABORT_SLACK_MS, 0, NULL, &val, err);
    if (got <= 0)
        return got < 0 ? -1
                       : ddp_error_set(err, "rendezvous timed out: every node joined, but node 0 "
                                            "did not assign ranks in time");
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
