/* rendezvous: how the agents of one job meet in the store and learn their global ranks.
 *
 * Every agent publishes a record for its node rank (worker count and host), counts itself in,
 * and waits until all `nnodes` have joined. The node-0 agent then reads the records in node
 * order and publishes each node's first global rank, the world size and the workers'
 * MASTER_PORT: ranks are node-major, and nodes may run different worker counts. Each restart is
 * a new round with its own keys, so nothing from an earlier attempt is mistaken for this one.
 *
 * The join has one deadline. When it passes, every waiting agent fails with the node ranks (and
 * hosts, where the caller knows them) that never arrived. Agents given different node counts
 * are refused at once: the first to join sets the job's count, and the one that differs fails
 * and tells the others (both counts named). */
#ifndef DDP_RENDEZVOUS_H
#define DDP_RENDEZVOUS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "runtime/job/membership.h"
#include "runtime/job/store_client.h"

/* A job with spare nodes or an elastic world (membership.h): node_rank is the agent's slot, and
 * each round node 0 makes between min_nodes and max_nodes of the agents that joined active. */
typedef struct {
    int min_nodes, max_nodes;
    int slots;              /* round 0: how many agents node 0 waits for before the last call */
    int64_t last_call_ms;   /* once min_nodes have joined, how long node 0 waits for more */
    int64_t rejoin_ms;      /* after round 0: the same for the last round's members (still stopping
                               their workers, maybe) */
    const char *shape;      /* the options that set these, the same on every agent */
    ddp_members_t *members; /* node 0: who ran in the rounds before */
} ddp_rdzv_elastic_t;

typedef struct {
    int round; /* restart count: 0 for the first attempt */
    int node_rank, nnodes, nproc;
    const char *host;         /* this agent's host, recorded for the others' messages */
    const char *run_id;       /* the job's run id: agents of another run are refused */
    int worker_port;          /* node 0 only: the MASTER_PORT its workers' process group uses */
    const char *const *hosts; /* optional, nnodes names: used to name missing nodes */
    const ddp_rdzv_elastic_t *elastic; /* NULL: exactly nnodes node ranks join */
    int returning; /* with elastic: this agent was a member (active or standby) last round */
    int64_t deadline;
    /* Optional: asked between slices of a wait; non-zero abandons the join (a signal to stop
     * the agent must not wait for the rendezvous deadline). */
    int (*cancelled)(void *ctx);
    /* Optional: told every RDZV_NOTE_MS while nodes are missing ("waiting for node rank(s) ...").
     */
    void (*waiting)(void *ctx, const char *line);
    void *ctx;
} ddp_rdzv_join_t;

#define RDZV_NOTE_MS 5000

typedef struct {
    int rank_base; /* global rank of this node's local rank 0 */
    int world_size;
    int worker_port;
    char **node_hosts; /* node 0 only: each node's recorded host (others: NULL) */
    int nnodes;
    /* With `elastic`: the round joined (a later one when the asked one had formed without this
     * agent), this agent's node rank in it, or standby. */
    int round, node_rank, standby;
} ddp_rdzv_result_t;

/* 0 with *out filled; -1 with err set (also when cancelled, saying so). */
int ddp_rdzv_join(ddp_store_client_t *c, const ddp_rdzv_join_t *j, ddp_rdzv_result_t *out,
                  ddp_error_t *err);
void ddp_rdzv_result_free(ddp_rdzv_result_t *r);

/* With `elastic`: the round a starting agent joins (the one after the last formed). */
int ddp_rdzv_open_round(ddp_store_client_t *c, ddp_error_t *err);
/* Node 0 of an elastic job that ended: agents waiting for a round that will not form are told. */
void ddp_rdzv_close(ddp_store_client_t *c, int round, const char *why);
/* With `elastic`: how many agents wait to join round `round` (node 0 asks, to grow the world). */
int ddp_rdzv_waiting(ddp_store_client_t *c, int round, ddp_error_t *err);

/* Writes the store key "r<round>/<name>" into buf; the agents keep their per-attempt state
 * (heartbeats, the end of the attempt) under the same prefix. */
void ddp_rdzv_key(char *buf, size_t size, int round, const char *name);

#endif
