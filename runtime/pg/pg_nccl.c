/* pg_nccl: the process group's GPU backend, over NCCL.
 *
 * One device per local rank (LOCAL_RANK modulo the visible devices). Rank 0 makes the
 * ncclUniqueId and the group's store carries it to the others, so there are no extra ports, no
 * files and no sleeps (a world of one makes its communicator when it first needs one). The
 * communicator is created nonblocking (ncclConfig_t.blocking = 0): NCCL calls return at once and
 * this file polls ncclCommGetAsyncError and the stream against the group's deadline, aborting
 * the communicator when it passes, so no wait can hang.
 *
 * Buffers are device memory (pg_alloc). Every operation runs on the backend's own stream and
 * returns once it has finished on the device. */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/pg/pg_backend.h"

/* A send or receive: held until something needs it to have started (see flush_p2p). */
typedef struct nccl_request {
    struct nccl_request *next; /* in the queue of requests not yet handed to NCCL */
    void *buf;
    size_t bytes;
    int peer, send;
    enum { P2P_QUEUED, P2P_LAUNCHED, P2P_FAILED } state;
    cudaEvent_t done; /* recorded after the group that carried it */
} nccl_request_t;

typedef struct {
    ncclComm_t comm;
    cudaStream_t stream;
    int rank, size, device;
    int64_t timeout_ms;
    int aborted;
    nccl_request_t *queued, **queued_tail;
} nccl_t;

static const ncclDataType_t nccl_types[PG_DTYPE_COUNT] = {
    [PG_FLOAT32] = ncclFloat32, [PG_FLOAT64] = ncclFloat64, [PG_INT32] = ncclInt32,
    [PG_INT64] = ncclInt64,     [PG_FLOAT16] = ncclFloat16, [PG_BFLOAT16] = ncclBfloat16,
};
static const ncclRedOp_t nccl_ops[PG_OP_COUNT] = {
    [PG_SUM] = ncclSum, [PG_PROD] = ncclProd, [PG_MIN] = ncclMin,
    [PG_MAX] = ncclMax, [PG_AVG] = ncclAvg,
};

static int cuda_fail(cudaError_t e, const char *what, ddp_error_t *err)
{
    return ddp_error_set(err, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

static int abort_comm(nccl_t *n)
{
    if (n->comm && !n->aborted) {
        ncclCommAbort(n->comm);
        n->aborted = 1;
    }
    return -1;
}

/* Waits until the communicator has no call in progress; errors and the deadline abort it. */
static int comm_ready(nccl_t *n, int64_t deadline, const char *what, ddp_error_t *err)
{
    for (;;) {
        ncclResult_t state;
        ncclResult_t rc = ncclCommGetAsyncError(n->comm, &state);
        if (rc != ncclSuccess)
            state = rc;
        if (state == ncclSuccess)
            return 0;
        if (state != ncclInProgress) {
            ddp_error_set(err, "%s: %s (%s)", what, ncclGetErrorString(state),
                          ncclGetLastError(n->comm));
            return abort_comm(n);
        }
        if (ddp_ms_left(deadline) == 0) {
            ddp_error_set(err, "%s: timed out after %.0f s (a peer is gone or stuck)", what,
                          (double)n->timeout_ms / 1000);
            return abort_comm(n);
        }
        sched_yield();
    }
}

/* After enqueueing `launched`: waits for the device to finish it, within the deadline. */
static int finish(nccl_t *n, ncclResult_t launched, const char *what, ddp_error_t *err)
{
    int64_t deadline = ddp_deadline_in(n->timeout_ms);
    if (launched != ncclSuccess && launched != ncclInProgress) {
        ddp_error_set(err, "%s: %s (%s)", what, ncclGetErrorString(launched),
                      ncclGetLastError(n->comm));
        return abort_comm(n);
    }
    if (comm_ready(n, deadline, what, err))
        return -1;
    for (;;) {
        cudaError_t e = cudaStreamQuery(n->stream);
        if (e == cudaSuccess)
            return 0;
        if (e != cudaErrorNotReady) {
            cuda_fail(e, what, err);
            return abort_comm(n);
        }
        if (comm_ready(n, deadline, what, err))
            return -1;
        if (ddp_ms_left(deadline) == 0) {
            ddp_error_set(err, "%s: timed out after %.0f s (a peer is gone or stuck)", what,
                          (double)n->timeout_ms / 1000);
            return abort_comm(n);
        }
        sched_yield();
    }
}

static int share_unique_id(nccl_t *n, ddp_store_client_t *store, ncclUniqueId *id, ddp_error_t *err)
{
    if (n->rank == 0) {
        ncclResult_t rc = ncclGetUniqueId(id);
        if (rc != ncclSuccess)
            return ddp_error_set(err, "ncclGetUniqueId: %s", ncclGetErrorString(rc));
        return store ? ddp_store_set(store, "pg/nccl-id", id, sizeof *id, err) : 0;
    }
    const char *key = "pg/nccl-id";
    char *val = NULL;
    int got = ddp_store_wait(store, &key, 1, n->timeout_ms, NULL, &val, err);
    if (got <= 0)
        return got < 0 ? -1
                       : ddp_error_set(err, "rank 0 published no NCCL id within %.0f s",
                                       (double)n->timeout_ms / 1000);
    memcpy(id, val, sizeof *id);
    free(val);
    return 0;
}

static int comm_init(nccl_t *n, const ncclUniqueId *id, ddp_error_t *err)
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t rc = ncclCommInitRankConfig(&n->comm, n->size, *id, n->rank, &config);
    if (rc != ncclSuccess && rc != ncclInProgress)
        return ddp_error_set(err, "ncclCommInitRank: %s", ncclGetErrorString(rc));
    return comm_ready(n, ddp_deadline_in(n->timeout_ms), "ncclCommInitRank", err);
}

/* A world of one has no peer to agree with: its communicator (over 500 MiB of NCCL's buffers on
 * an H200) is made when an operation first needs it, which one GPU's training never does. */
static int comm_made(nccl_t *n, ddp_error_t *err)
{
    ncclUniqueId id;
    if (n->comm)
        return 0;
    if (share_unique_id(n, NULL, &id, err) || comm_init(n, &id, err))
        return ddp_error_prefix(err, "nccl backend (rank %d, device %d)", n->rank, n->device);
    return 0;
}

static void nccl_destroy(void *be)
{
    nccl_t *n = be;
    if (!n)
        return;
    if (n->comm && !n->aborted) {
        ddp_error_t ignored;
        if (ncclCommFinalize(n->comm) != ncclSuccess ||
            comm_ready(n, ddp_deadline_in(n->timeout_ms), "finalize", &ignored) == 0)
            ncclCommDestroy(n->comm);
    }
    if (n->stream)
        cudaStreamDestroy(n->stream);
    free(n);
}

static void *nccl_create(const pg_world_t *w, ddp_store_client_t *store, int64_t timeout_ms,
                         ddp_error_t *err)
{
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        ddp_error_set(err, "nccl backend: no GPU is visible (%s)",
                      e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return NULL;
    }
    nccl_t *n = calloc(1, sizeof *n);
    if (!n) {
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    n->rank = w->rank;
    n->size = w->size;
    n->device = w->local_rank % devices;
    n->timeout_ms = timeout_ms;
    n->queued_tail = &n->queued;
    ncclUniqueId id;
    if ((e = cudaSetDevice(n->device)) != cudaSuccess) {
        cuda_fail(e, "cudaSetDevice", err);
        goto error;
    }
    if ((e = cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        cuda_fail(e, "cudaStreamCreate", err);
        goto error;
    }
    if (n->size > 1 && (share_unique_id(n, store, &id, err) || comm_init(n, &id, err)))
        goto error;
    return n;
error:
    ddp_error_prefix(err, "nccl backend (rank %d, device %d)", w->rank, n->device);
    nccl_destroy(n);
    return NULL;
}

static int nccl_supports(pg_dtype_t t)
{
    return 1;
}

static void *nccl_alloc(void *be, size_t bytes, ddp_error_t *err)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        cuda_fail(e, "cudaMalloc", err);
        return NULL;
    }
    return p;
}

static void nccl_free(void *be, void *buf)
{
    cudaFree(buf);
}

static int copy(nccl_t *n, void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                ddp_error_t *err)
{
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, kind, n->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(n->stream);
    return e == cudaSuccess ? 0 : cuda_fail(e, "cudaMemcpy", err);
}

static int nccl_copy_in(void *be, void *dst, const void *src, size_t bytes, ddp_error_t *err)
{
    return copy(be, dst, src, bytes, cudaMemcpyHostToDevice, err);
}

static int nccl_copy_out(void *be, void *dst, const void *src, size_t bytes, ddp_error_t *err)
{
    return copy(be, dst, src, bytes, cudaMemcpyDeviceToHost, err);
}

/* Point to point. NCCL runs the operations of one stream in order and a send or receive waits
 * on the device for its peer, so ranks that each post a receive and then a send around a ring
 * (MPI style) would wait on each other for ever if every call went to NCCL at once. Instead
 * isend and irecv queue the request; the first wait, or any collective, hands everything queued
 * to NCCL as one group, which NCCL runs as one operation: the ring then completes. Blocking
 * send and recv are isend/irecv and wait, so they go at once. */
static void *p2p(nccl_t *n, void *buf, size_t bytes, int peer, int send, ddp_error_t *err)
{
    nccl_request_t *req = calloc(1, sizeof *req);
    if (!req) {
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    *req = (nccl_request_t){.buf = buf, .bytes = bytes, .peer = peer, .send = send};
    *n->queued_tail = req;
    n->queued_tail = &req->next;
    return req;
}

static int launched(ncclResult_t rc)
{
    return rc == ncclSuccess || rc == ncclInProgress;
}

/* The requests from `first` on as one group. On a nonblocking communicator ncclGroupEnd may
 * return before the operations are on the stream, so this waits for the communicator: events
 * recorded earlier would complete before the transfers. */
static int launch_group(nccl_t *n, nccl_request_t *first, ddp_error_t *err)
{
    if (n->aborted)
        return ddp_error_set(err, "send/recv: the communicator was aborted by an earlier error");
    ncclResult_t rc = ncclGroupStart();
    if (launched(rc)) {
        for (nccl_request_t *r = first; r && launched(rc); r = r->next)
            rc = r->send ? ncclSend(r->buf, r->bytes, ncclInt8, r->peer, n->comm, n->stream)
                         : ncclRecv(r->buf, r->bytes, ncclInt8, r->peer, n->comm, n->stream);
        ncclResult_t ended = ncclGroupEnd();
        if (launched(rc))
            rc = ended;
    }
    if (!launched(rc)) {
        ddp_error_set(err, "send/recv: %s (%s)", ncclGetErrorString(rc), ncclGetLastError(n->comm));
        return abort_comm(n);
    }
    return comm_ready(n, ddp_deadline_in(n->timeout_ms), "send/recv", err);
}

/* Hands every queued request to NCCL and marks on the stream where each ends; on failure every
 * one of them is marked failed. */
static int flush_p2p(nccl_t *n, ddp_error_t *err)
{
    if (comm_made(n, err))
        return -1;
    nccl_request_t *first = n->queued;
    if (!first)
        return 0;
    n->queued = NULL;
    n->queued_tail = &n->queued;
    int rc = launch_group(n, first, err);
    for (nccl_request_t *r = first; r; r = r->next) {
        cudaError_t e;
        if (rc == 0 &&
            ((e = cudaEventCreateWithFlags(&r->done, cudaEventDisableTiming)) != cudaSuccess ||
             (e = cudaEventRecord(r->done, n->stream)) != cudaSuccess)) {
            rc = cuda_fail(e, "cudaEventRecord", err);
            abort_comm(n);
        }
        r->state = rc == 0 ? P2P_LAUNCHED : P2P_FAILED;
    }
    return rc;
}

static int nccl_sync(void *be, ddp_error_t *err)
{
    return flush_p2p(be, err) ? -1 : finish(be, ncclSuccess, "sync", err);
}

static void *nccl_isend(void *be, const void *buf, size_t bytes, int peer, ddp_error_t *err)
{
    return p2p(be, (void *)buf, bytes, peer, 1, err);
}

static void *nccl_irecv(void *be, void *buf, size_t bytes, int peer, ddp_error_t *err)
{
    return p2p(be, buf, bytes, peer, 0, err);
}

static int nccl_wait(void *be, void *r, ddp_error_t *err)
{
    nccl_t *n = be;
    nccl_request_t *req = r;
    int64_t deadline = ddp_deadline_in(n->timeout_ms);
    int rc = -1;
    if (req->state == P2P_QUEUED && flush_p2p(n, err)) {
        free(req);
        return -1;
    }
    if (req->state == P2P_FAILED) {
        ddp_error_set(err, "wait: the %s rank %d never started (an earlier send/recv failed)",
                      req->send ? "send to" : "receive from", req->peer);
        free(req);
        return -1;
    }
    if (n->aborted)
        ddp_error_set(err, "wait: the communicator was aborted by an earlier error");
    while (!n->aborted) {
        cudaError_t e = cudaEventQuery(req->done);
        if (e == cudaSuccess) {
            rc = 0;
            break;
        }
        if (e != cudaErrorNotReady) {
            cuda_fail(e, "wait", err);
            abort_comm(n);
            break;
        }
        if (comm_ready(n, deadline, "wait", err))
            break;
        if (ddp_ms_left(deadline) == 0) {
            ddp_error_set(err, "wait: timed out after %.0f s", (double)n->timeout_ms / 1000);
            abort_comm(n);
            break;
        }
        sched_yield();
    }
    cudaEventDestroy(req->done);
    free(req);
    return rc;
}

static int nccl_broadcast(void *be, void *buf, size_t count, pg_dtype_t t, int root,
                          ddp_error_t *err)
{
    nccl_t *n = be;
    if (flush_p2p(n, err))
        return -1;
    return finish(n, ncclBroadcast(buf, buf, count, nccl_types[t], root, n->comm, n->stream),
                  "ncclBroadcast", err);
}

static int nccl_reduce(void *be, const void *send, void *recv, size_t count, pg_dtype_t t,
                       pg_op_t op, int root, ddp_error_t *err)
{
    nccl_t *n = be;
    if (flush_p2p(n, err))
        return -1;
    return finish(
        n, ncclReduce(send, recv, count, nccl_types[t], nccl_ops[op], root, n->comm, n->stream),
        "ncclReduce", err);
}

static int nccl_all_reduce(void *be, const void *send, void *recv, size_t count, pg_dtype_t t,
                           pg_op_t op, ddp_error_t *err)
{
    nccl_t *n = be;
    if (flush_p2p(n, err))
        return -1;
    return finish(n,
                  ncclAllReduce(send, recv, count, nccl_types[t], nccl_ops[op], n->comm, n->stream),
                  "ncclAllReduce", err);
}

static int nccl_all_gather(void *be, const void *send, void *recv, size_t count, pg_dtype_t t,
                           ddp_error_t *err)
{
    nccl_t *n = be;
    if (flush_p2p(n, err))
        return -1;
    return finish(n, ncclAllGather(send, recv, count, nccl_types[t], n->comm, n->stream),
                  "ncclAllGather", err);
}

static int nccl_reduce_scatter(void *be, const void *send, void *recv, size_t count, pg_dtype_t t,
                               pg_op_t op, ddp_error_t *err)
{
    nccl_t *n = be;
    if (flush_p2p(n, err))
        return -1;
    return finish(
        n, ncclReduceScatter(send, recv, count, nccl_types[t], nccl_ops[op], n->comm, n->stream),
        "ncclReduceScatter", err);
}

/* Scatter and gather: grouped sends and receives between the root and every rank. */
static int root_exchange(nccl_t *n, const void *root_buf, void *own, size_t count, pg_dtype_t t,
                         int root, int scatter, ddp_error_t *err)
{
    size_t bytes = count * pg_dtype_size(t);
    char *rb = (char *)root_buf;
    if (flush_p2p(n, err))
        return -1;
    ncclResult_t rc = ncclGroupStart();
    if (n->rank == root) {
        cudaError_t e = cudaMemcpyAsync(scatter ? own : rb + bytes * (size_t)root,
                                        scatter ? rb + bytes * (size_t)root : own, bytes,
                                        cudaMemcpyDeviceToDevice, n->stream);
        if (e != cudaSuccess) {
            ncclGroupEnd();
            return cuda_fail(e, "cudaMemcpy", err);
        }
        for (int q = 0; q < n->size && (rc == ncclSuccess || rc == ncclInProgress); q++)
            if (q != root)
                rc = scatter ? ncclSend(rb + bytes * (size_t)q, count, nccl_types[t], q, n->comm,
                                        n->stream)
                             : ncclRecv(rb + bytes * (size_t)q, count, nccl_types[t], q, n->comm,
                                        n->stream);
    } else {
        rc = scatter ? ncclRecv(own, count, nccl_types[t], root, n->comm, n->stream)
                     : ncclSend(own, count, nccl_types[t], root, n->comm, n->stream);
    }
    ncclResult_t end = ncclGroupEnd();
    return finish(n, rc == ncclSuccess || rc == ncclInProgress ? end : rc,
                  scatter ? "scatter" : "gather", err);
}

static int nccl_scatter(void *be, const void *send, void *recv, size_t count, pg_dtype_t t,
                        int root, ddp_error_t *err)
{
    return root_exchange(be, send, recv, count, t, root, 1, err);
}

static int nccl_gather(void *be, const void *send, void *recv, size_t count, pg_dtype_t t, int root,
                       ddp_error_t *err)
{
    return root_exchange(be, recv, (void *)send, count, t, root, 0, err);
}

const pg_backend_t pg_nccl_backend = {
    .name = "nccl",
    .create = nccl_create,
    .destroy = nccl_destroy,
    .supports = nccl_supports,
    .alloc = nccl_alloc,
    .free = nccl_free,
    .copy_in = nccl_copy_in,
    .copy_out = nccl_copy_out,
    .sync = nccl_sync,
    .isend = nccl_isend,
    .irecv = nccl_irecv,
    .wait = nccl_wait,
    .broadcast = nccl_broadcast,
    .reduce = nccl_reduce,
    .all_reduce = nccl_all_reduce,
    .scatter = nccl_scatter,
    .gather = nccl_gather,
    .all_gather = nccl_all_gather,
    .reduce_scatter = nccl_reduce_scatter,
};
