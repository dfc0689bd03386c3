/* standby: the agent's part in a job with spare nodes or an elastic world (membership.h).
 *
 * Each round the agent joins under its slot and node 0 tells it its node rank for that attempt,
 * or that it stands by. A standby runs no worker: it waits for the attempt's end (pinging the
 * store each heartbeat, so that a store gone silent is noticed) and joins the next round, where
 * it may take a lost node's place. Node 0 excludes the nodes an attempt lost before the next
 * round forms, says who took whose place, and ends an attempt when agents wait to join a world
 * below its most nodes, so that they are admitted at the restart. */
#include "agent/supervision/standby.h"
#include "agent/supervision/timeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_json.h"
#include "agent/workers/output.h"

void standby_setup(agent_t *a)
{
    const agent_options_t *o = a->o;
    a->slot = a->node_rank; /* given, or handed out at setup (c10d) */
    if (o->spares)
        snprintf(a->shape, sizeof a->shape, "--nnodes %d --spares %d", o->nnodes, o->spares);
    else
        snprintf(a->shape, sizeof a->shape, "--nnodes %d:%d", o->min_nodes, o->nnodes);
    a->elastic = (ddp_rdzv_elastic_t){.min_nodes = o->min_nodes,
                                      .max_nodes = o->nnodes,
                                      .slots = o->nnodes + o->spares,
                                      .last_call_ms = o->last_call_ms,
                                      /* a member stops its workers within --grace */
                                      .rejoin_ms = o->last_call_ms + o->grace_ms,
                                      .shape = a->shape,
                                      .members = &a->members};
}

int standby_before_join(agent_t *a, attempt_t *t, ddp_rdzv_join_t *join, ddp_error_t *err)
{
    a->node_rank = a->slot;
    a->nnodes = a->elastic.max_nodes;
    join->node_rank = a->slot;
    join->nnodes = a->nnodes;
    join->hosts = NULL; /* the scheduler's list names slots, not this round's node ranks */
    join->elastic = &a->elastic;
    join->returning = a->joined_before;
    if (a->slot > 0 && !a->joined_before) {
        /* An agent started late joins the round after the last one formed. */
        int open = ddp_rdzv_open_round(a->client, err);
        if (open < 0)
            return -1;
        t->round = join->round = open;
    }
    a->joined_before = 1;
    return 0;
}

/* Node 0: one change into the JSON list --progress-file carries (the job's record). */
static void record_change(agent_t *a, int round, int rank, const char *host, const char *was)
{
    char *entry = NULL, why[1024];
    size_t len = 0;
    FILE *f = open_memstream(&entry, &len);
    if (!f)
        return;
    failure_line(&a->lost, why, sizeof why);
    fprintf(f, "{\"attempt\": %d, \"node\": %d, \"host\": ", round, rank);
    ddp_json_string(f, host);
    fputs(", \"in_place_of\": ", f);
    ddp_json_string(f, was);
    fputs(", \"after\": ", f);
    ddp_json_string(f, why);
    fputc('}', f);
    fclose(f);
    char *joined = NULL;
    if (entry && asprintf(&joined, "%s%s%s", a->membership ? a->membership : "",
                          a->membership ? ",\n  " : "", entry) >= 0) {
        free(a->membership);
        a->membership = joined;
    }
    free(entry);
}

/* Node 0: "node rank 1: n3 (slot 2) takes the place of n2 (slot 1)" for each node rank whose
 * slot changed, and the world's new size; each in the job's record too. */
static void say_changes(agent_t *a, const ddp_rdzv_result_t *r)
{
    int before = a->nranks_before;
    if (before && before != r->nnodes)
        agent_say("the world changes from %d to %d node(s) in attempt %d", before, r->nnodes,
                  r->round);
    int *slots = ddp_xcalloc((size_t)r->nnodes, sizeof *slots);
    for (int slot = 0; slot < a->members.nslots; slot++)
        if (a->members.role[slot] >= 0 && a->members.role[slot] < r->nnodes)
            slots[a->members.role[slot]] = slot;
    for (int i = 0; i < r->nnodes; i++) {
        if (!before || i == 0)
            continue;
        if (i >= before) {
            agent_say("node rank %d: %s (slot %d) joins the world", i, r->node_hosts[i], slots[i]);
            timeline_event(a, "joined", r->round, -1, "%s joins as node %d", r->node_hosts[i], i);
            record_change(a, r->round, i, r->node_hosts[i], NULL);
        } else if (slots[i] != a->slots_before[i]) {
            agent_say("node rank %d: %s (slot %d) takes the place of %s (slot %d)", i,
                      r->node_hosts[i], slots[i], a->hosts_before[i], a->slots_before[i]);
            timeline_event(a, "spare", r->round, -1, "%s takes node %d's place from %s",
                           r->node_hosts[i], i, a->hosts_before[i]);
            record_change(a, r->round, i, r->node_hosts[i], a->hosts_before[i]);
        }
    }
    for (int i = 0; i < before; i++)
        free(a->hosts_before[i]);
    free(a->hosts_before);
    free(a->slots_before);
    a->hosts_before = ddp_xcalloc((size_t)r->nnodes, sizeof *a->hosts_before);
    for (int i = 0; i < r->nnodes; i++)
        a->hosts_before[i] = ddp_xstrdup(r->node_hosts[i]);
    a->slots_before = slots;
    a->nranks_before = r->nnodes;
}

int standby_after_join(agent_t *a, attempt_t *t, const ddp_rdzv_result_t *r, ddp_error_t *err)
{
    t->round = r->round;
    t->standby = r->standby;
    a->nnodes = r->nnodes;
    if (a->node_rank == 0) {
        say_changes(a, r);
        return 0;
    }
    if (!r->standby) {
        a->node_rank = r->node_rank;
        return 0;
    }
    char key[64];
    snprintf(key, sizeof key, "left/%d", a->slot);
    if (ddp_store_set_on_close(a->client, key, a->host, strlen(a->host), err))
        return ddp_error_prefix(err, "standby node rank %d", a->slot);
    return 0;
}

void standby_after_attempt(agent_t *a, const attempt_t *t)
{
    if (a->node_rank != 0 || t->end != END_FAILED)
        return;
    a->lost = t->first;
    if (t->first.kind == FAIL_LOST && t->first.node > 0)
        ddp_members_exclude(&a->members, ddp_members_slot_of(&a->members, t->first.node));
    if (t->silent_node > 0)
        ddp_members_exclude(&a->members, ddp_members_slot_of(&a->members, t->silent_node));
}

int standby_growth_failure(int elastic, int nnodes, int max_nodes, int waiting, failure_t *f)
{
    if (!elastic || nnodes >= max_nodes || waiting <= 0)
        return 0;
    *f = node_failure(FAIL_MEMBERSHIP, 1, -1, "-",
                      "%d node(s) wait to join a world of %d (at most %d): every worker restarts "
                      "with them",
                      waiting, nnodes, max_nodes);
    return 1;
}

int standby_check_growth(agent_t *a, const attempt_t *t, failure_t *f)
{
    const agent_options_t *o = a->o;
    ddp_error_t err;
    if (!agent_options_elastic(o) || a->nnodes >= a->elastic.max_nodes)
        return 0;
    int waiting = ddp_rdzv_waiting(a->client, t->round + 1, &err);
    if (!standby_growth_failure(1, a->nnodes, a->elastic.max_nodes, waiting, f))
        return 0;
    agent_say("%s", f->what);
    return 1;
}

void standby_teardown(agent_t *a)
{
    for (int i = 0; i < a->nranks_before; i++)
        free(a->hosts_before[i]);
    free(a->hosts_before);
    free(a->slots_before);
    free(a->membership);
    ddp_members_free(&a->members);
}
