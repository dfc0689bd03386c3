/* pg: the process group workers use to talk (libddp's answer to torch.distributed).
 *
 * A group is made from the environment a launcher gives each worker: the agent's (RANK,
 * WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), mpirun's (OMPI_COMM_WORLD_RANK/SIZE/
 * LOCAL_RANK) or srun's (SLURM_PROCID/NTASKS/LOCALID). Rank 0 serves a rendezvous store at
 * MASTER_ADDR:MASTER_PORT (the agent's store code, authenticated with DDPJOB_WORKER_TOKEN or
 * DDPJOB_TOKEN when one is set) through which the ranks find each other; the store is kept until
 * pg_destroy.
 *
 * Behind one interface sit the backends (pg_backend.h): `tcp` for host buffers (ranks on one host
 * share memory instead, pg_shm.h, unless rank 0 sees DDP_PG_SHM=0), `nccl` for GPU buffers. Buffers
 * handed to an operation live where the backend wants them: pg_alloc and the copy helpers hide the
 * difference, so a program runs unchanged on either.
 *
 * Every operation returns 0, or -1 with err naming what failed (the peer rank, the deadline).
 * Every operation finishes or fails within the group's timeout. After a failure the group is
 * broken: every later operation fails at once with the first failure's text, and the program
 * should exit non-zero so its agent tears the job down. Operations on one group are called from
 * one thread at a time, in the same order on every rank (as with MPI and torch.distributed). */
#ifndef DDP_PG_H
#define DDP_PG_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"

typedef enum {
    PG_FLOAT32,
    PG_FLOAT64,
    PG_INT32,
    PG_INT64,
    PG_FLOAT16,
    PG_BFLOAT16,
    PG_DTYPE_COUNT
} pg_dtype_t;

typedef enum { PG_SUM, PG_PROD, PG_MIN, PG_MAX, PG_AVG, PG_OP_COUNT } pg_op_t;

size_t pg_dtype_size(pg_dtype_t t);
const char *pg_dtype_name(pg_dtype_t t);
const char *pg_op_name(pg_op_t op);
/* -1 for a name that is not a type / op; names as pg_*_name prints them. */
int pg_dtype_parse(const char *name, pg_dtype_t *out);
int pg_op_parse(const char *name, pg_op_t *out);

/* Where a process group comes from: pg_world_from_env fills it from the launcher's variables. */
typedef struct {
    int rank, size, local_rank;
    char master_addr[256];
    int master_port;
    char token[256];    /* empty: the store is not authenticated */
    const char *source; /* which launcher's variables were used, for messages */
} pg_world_t;

int pg_world_from_env(pg_world_t *w, ddp_error_t *err);

typedef struct {
    const char *backend; /* "tcp" (default) or "nccl" */
    int64_t
        timeout_ms; /* per operation; 0: DDP_PG_TIMEOUT seconds from the environment, else 300 s */
} pg_options_t;

typedef struct pg pg_t;
typedef struct pg_request pg_request_t;

pg_t *pg_create(const pg_world_t *w, const pg_options_t *o, ddp_error_t *err);

/* From `at` (ddp_now_ms's clock) on, the tcp backend's waits for other ranks end with an error
 * ("gave up ...") instead of running to the group's timeout: for a process asked to stop while
 * a peer may be gone (a partition), so that it leaves within a bounded time. 0 cancels. Safe to
 * call from a signal handler. */
void pg_give_up_waiting_at(int64_t at);
/* A barrier (so no rank closes while another still needs it; skipped when broken), then frees. */
int pg_destroy(pg_t *pg, ddp_error_t *err);

int pg_rank(const pg_t *pg);
int pg_size(const pg_t *pg);
int pg_local_rank(const pg_t *pg);
const char *pg_backend_name(const pg_t *pg);
/* Whether the backend works on this dtype (tcp: not float16/bfloat16). */
int pg_supports(const pg_t *pg, pg_dtype_t t);

/* Buffers where the backend works on them (device memory for nccl; for tcp, host memory that the
 * other ranks of this host can reach: an all_reduce whose buffers every rank of one host took
 * from here runs without copies). Freed with pg_free before pg_destroy. */
void *pg_alloc(pg_t *pg, size_t bytes, ddp_error_t *err);
void pg_free(pg_t *pg, void *buf);
int pg_copy_in(pg_t *pg, void *dst, const void *host_src, size_t bytes, ddp_error_t *err);
int pg_copy_out(pg_t *pg, void *host_dst, const void *src, size_t bytes, ddp_error_t *err);
/* Waits until everything queued on the backend's device is done (no-op on tcp). */
int pg_sync(pg_t *pg, ddp_error_t *err);

/* Point to point. A recv must name the same count and type as the matching send; a mismatch is
 * an error on the receiver. Messages between two ranks arrive in the order they were sent. */
int pg_send(pg_t *pg, const void *buf, size_t count, pg_dtype_t t, int peer, ddp_error_t *err);
int pg_recv(pg_t *pg, void *buf, size_t count, pg_dtype_t t, int peer, ddp_error_t *err);
/* Started now, finished by pg_wait (which frees the request). The buffer must stay untouched
 * until then. Requests may be waited for in any order. */
pg_request_t *pg_isend(pg_t *pg, const void *buf, size_t count, pg_dtype_t t, int peer,
                       ddp_error_t *err);
pg_request_t *pg_irecv(pg_t *pg, void *buf, size_t count, pg_dtype_t t, int peer, ddp_error_t *err);
int pg_wait(pg_t *pg, pg_request_t *req, ddp_error_t *err);

/* Collectives. `count` is per rank where a buffer is split by rank: scatter's and gather's
 * pieces, all_gather's input, reduce_scatter's output. recv may equal send (in place) for
 * all_reduce and reduce. Buffers that a rank does not use (recv of reduce and gather off the
 * root, send of scatter off the root) may be NULL. */
int pg_barrier(pg_t *pg, ddp_error_t *err);
int pg_broadcast(pg_t *pg, void *buf, size_t count, pg_dtype_t t, int root, ddp_error_t *err);
int pg_reduce(pg_t *pg, const void *send, void *recv, size_t count, pg_dtype_t t, pg_op_t op,
              int root, ddp_error_t *err);
int pg_all_reduce(pg_t *pg, const void *send, void *recv, size_t count, pg_dtype_t t, pg_op_t op,
                  ddp_error_t *err);
int pg_scatter(pg_t *pg, const void *send, void *recv, size_t count, pg_dtype_t t, int root,
               ddp_error_t *err);
int pg_gather(pg_t *pg, const void *send, void *recv, size_t count, pg_dtype_t t, int root,
              ddp_error_t *err);
int pg_all_gather(pg_t *pg, const void *send, void *recv, size_t count, pg_dtype_t t,
                  ddp_error_t *err);
int pg_reduce_scatter(pg_t *pg, const void *send, void *recv, size_t count, pg_dtype_t t,
                      pg_op_t op, ddp_error_t *err);

#endif
