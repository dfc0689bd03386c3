/* pg_backend: what a process-group backend provides (tcp in pg_tcp.c, nccl in pg_nccl.c).
 *
 * pg.c checks arguments (ranks, roots, types, a broken group) and turns counts into bytes before
 * calling a backend, so backends see only valid requests. A backend reports a failure through
 * err and returns -1 / NULL; pg.c then marks the group broken. Requests are the backend's own
 * objects; wait frees them. */
#ifndef DDP_PG_BACKEND_H
#define DDP_PG_BACKEND_H

#include "runtime/pg/pg.h"
#include "runtime/job/store_client.h"

typedef struct pg_backend {
    const char *name;
    /* `store` is connected for the whole of create and may be used to meet the other ranks
     * (keys under "pg/"); it is not kept. */
    void *(*create)(const pg_world_t *w, ddp_store_client_t *store, int64_t timeout_ms,
                    ddp_error_t *err);
    void (*destroy)(void *be);
    int (*supports)(pg_dtype_t t);

    void *(*alloc)(void *be, size_t bytes, ddp_error_t *err);
    void (*free)(void *be, void *buf);
    int (*copy_in)(void *be, void *dst, const void *host_src, size_t bytes, ddp_error_t *err);
    int (*copy_out)(void *be, void *host_dst, const void *src, size_t bytes, ddp_error_t *err);
    int (*sync)(void *be, ddp_error_t *err);

    void *(*isend)(void *be, const void *buf, size_t bytes, int peer, ddp_error_t *err);
    void *(*irecv)(void *be, void *buf, size_t bytes, int peer, ddp_error_t *err);
    int (*wait)(void *be, void *req, ddp_error_t *err);
    /* The last collective before destroy: a peer closing its connections once this is done is
     * not a failure. */
    int (*final_barrier)(void *be, ddp_error_t *err);

    int (*broadcast)(void *be, void *buf, size_t count, pg_dtype_t t, int root, ddp_error_t *err);
    int (*reduce)(void *be, const void *send, void *recv, size_t count, pg_dtype_t t, pg_op_t op,
                  int root, ddp_error_t *err);
    int (*all_reduce)(void *be, const void *send, void *recv, size_t count, pg_dtype_t t,
                      pg_op_t op, ddp_error_t *err);
    int (*scatter)(void *be, const void *send, void *recv, size_t count, pg_dtype_t t, int root,
                   ddp_error_t *err);
    int (*gather)(void *be, const void *send, void *recv, size_t count, pg_dtype_t t, int root,
                  ddp_error_t *err);
    int (*all_gather)(void *be, const void *send, void *recv, size_t count, pg_dtype_t t,
                      ddp_error_t *err);
    int (*reduce_scatter)(void *be, const void *send, void *recv, size_t count, pg_dtype_t t,
                          pg_op_t op, ddp_error_t *err);
} pg_backend_t;

extern const pg_backend_t pg_tcp_backend;
/* Built from pg_nccl.c where the CUDA toolkit was found, else from pg_nccl_none.c, whose create
 * says the build has no GPU support. */
extern const pg_backend_t pg_nccl_backend;

#endif
