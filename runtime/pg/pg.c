#include "runtime/pg/pg.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_net.h"
#include "runtime/base/ddp_parse.h"
#include "runtime/job/hostlist.h"
#include "runtime/job/job_contract.h"
#include "runtime/pg/pg_backend.h"
#include "runtime/job/store_server.h"

#define DEFAULT_TIMEOUT_MS (300 * 1000)

struct pg {
    const pg_backend_t *backend;
    void *be;
    pg_world_t world;
    ddp_store_server_t *server; /* rank 0 only */
    void *scratch;              /* one int32 in backend memory, for barriers */
    int broken;
    ddp_error_t failure; /* the first failure, repeated by every later call */
};

static const struct {
    const char *name;
    size_t size;
} dtypes[PG_DTYPE_COUNT] = {
    [PG_FLOAT32] = {"float32", 4}, [PG_FLOAT64] = {"float64", 8}, [PG_INT32] = {"int32", 4},
    [PG_INT64] = {"int64", 8},     [PG_FLOAT16] = {"float16", 2}, [PG_BFLOAT16] = {"bfloat16", 2},
};
static const char *const op_names[PG_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};

size_t pg_dtype_size(pg_dtype_t t)
{
    return dtypes[t].size;
}
const char *pg_dtype_name(pg_dtype_t t)
{
    return dtypes[t].name;
}
const char *pg_op_name(pg_op_t op)
{
    return op_names[op];
}

int pg_dtype_parse(const char *name, pg_dtype_t *out)
{
    for (int i = 0; i < PG_DTYPE_COUNT; i++)
        if (!strcmp(name, dtypes[i].name))
            return *out = (pg_dtype_t)i, 0;
    return -1;
}

int pg_op_parse(const char *name, pg_op_t *out)
{
    for (int i = 0; i < PG_OP_COUNT; i++)
        if (!strcmp(name, op_names[i]))
            return *out = (pg_op_t)i, 0;
    return -1;
}

/* ---- where the group comes from ------------------------------------------------------------ */

static int env_int(const char *name, int min, int *out, ddp_error_t *err)
{
    const char *text = getenv(name);
    if (ddp_parse_int(text, min, INT_MAX, out))
        return ddp_error_set(err, "%s=%s is not a number >= %d", name, text ? text : "(unset)",
                             min);
    return 0;
}

int pg_world_from_env(pg_world_t *w, ddp_error_t *err)
{
    static const struct {
        const char *source, *rank, *size, *local_rank;
    } launchers[] = {
        {"RANK/WORLD_SIZE", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
        {"mpirun (OMPI_COMM_WORLD_*)", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
         "OMPI_COMM_WORLD_LOCAL_RANK"},
        {"srun (SLURM_PROCID/NTASKS)", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
    };
    memset(w, 0, sizeof *w);
    size_t i = 0;
    while (i < sizeof launchers / sizeof *launchers && !getenv(launchers[i].rank))
        i++;
    if (i == sizeof launchers / sizeof *launchers) {
        w->size = 1;
        w->source = "no launcher (a world of one)";
    } else {
        w->source = launchers[i].source;
        if (env_int(launchers[i].rank, 0, &w->rank, err) ||
            env_int(launchers[i].size, 1, &w->size, err))
            return -1;
        if (w->rank >= w->size)
            return ddp_error_set(err, "%s=%d is outside a world of %d", launchers[i].rank, w->rank,
                                 w->size);
        if (getenv(launchers[i].local_rank) &&
            env_int(launchers[i].local_rank, 0, &w->local_rank, err))
            return -1;
    }
    const char *addr = getenv("MASTER_ADDR");
    ddp_hostlist_t *nodes = NULL;
    if (!addr && getenv("SLURM_JOB_NODELIST") &&
        (nodes = ddp_hostlist_expand(getenv("SLURM_JOB_NODELIST"), NULL)))
        addr = nodes->hosts[0];
    snprintf(w->master_addr, sizeof w->master_addr, "%s", addr ? addr : "127.0.0.1");
    ddp_hostlist_destroy(nodes);
    if (getenv("MASTER_PORT")) {
        if (env_int("MASTER_PORT", 1, &w->master_port, err))
            return -1;
        if (w->master_port > 65535)
            return ddp_error_set(err, "MASTER_PORT=%d is not a port", w->master_port);
    } else if (getenv("SLURM_JOB_ID")) {
        w->master_port = ddp_job_workers_port_from_id(getenv("SLURM_JOB_ID"));
    }
    if (w->size > 1 && (!addr || !w->master_port))
        return ddp_error_set(err,
                             "a world of %d (from %s) needs MASTER_ADDR and MASTER_PORT "
                             "(where rank 0 serves the group's store)",
                             w->size, w->source);
    const char *token = getenv("DDPJOB_WORKER_TOKEN");
    if (!token)
        token = getenv("DDPJOB_TOKEN");
    snprintf(w->token, sizeof w->token, "%s", token ? token : "");
    return 0;
}

/* ---- create and destroy ------------------------------------------------------------------- */

static void log_to_stderr(void *ctx, const char *line)
{
    fprintf(stderr, "ddp: rank %d's store: %s\n", *(const int *)ctx, line);
}

static const pg_backend_t *find_backend(const char *name)
{
    static const pg_backend_t *const all[] = {&pg_tcp_backend, &pg_nccl_backend};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!strcmp(all[i]->name, name))
            return all[i];
    return NULL;
}

pg_t *pg_create(const pg_world_t *w, const pg_options_t *o, ddp_error_t *err)
{
    const char *name = o && o->backend ? o->backend : "tcp";
    const pg_backend_t *backend = find_backend(name);
    if (!backend) {
        ddp_error_set(err, "unknown backend \"%s\" (tcp or nccl)", name);
        return NULL;
    }
    int64_t timeout_ms = o ? o->timeout_ms : 0;
    if (timeout_ms <= 0) {
        double seconds;
        timeout_ms = ddp_parse_double(getenv("DDP_PG_TIMEOUT"), 0.001, 1e9, &seconds) == 0
                         ? (int64_t)(seconds * 1000)
                         : DEFAULT_TIMEOUT_MS;
    }
    pg_t *pg = calloc(1, sizeof *pg);
    ddp_store_client_t *store = NULL;
    if (!pg) {
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    pg->backend = backend;
    pg->world = *w;
    size_t token_len = strlen(w->token);
    if (w->size > 1) {
        if (w->rank == 0 && !(pg->server = ddp_store_server_start(
                                  NULL, w->master_port, w->token, token_len, (size_t)w->size,
                                  log_to_stderr, &pg->world.rank, err))) {
            ddp_error_prefix(err, "rank 0 cannot serve the group's store at port %d",
                             w->master_port);
            goto error;
        }
        store = ddp_store_client_connect(w->master_addr, w->master_port, w->token, token_len,
                                         ddp_deadline_in(timeout_ms), NULL, err);
        if (!store) {
            ddp_error_prefix(err, "rank %d cannot reach rank 0's store at %s:%d", w->rank,
                             w->master_addr, w->master_port);
            goto error;
        }
        ddp_store_client_set_timeout(store, timeout_ms);
    }
    if (!(pg->be = backend->create(w, store, timeout_ms, err)))
        goto error;
    ddp_store_client_close(store);
    store = NULL;
    if (!(pg->scratch = backend->alloc(pg->be, sizeof(int32_t), err)))
        goto error;
    return pg;
error:
    ddp_store_client_close(store);
    if (pg->be)
        backend->destroy(pg->be);
    ddp_store_server_stop(pg->server);
    free(pg);
    return NULL;
}

int pg_destroy(pg_t *pg, ddp_error_t *err)
{
    if (!pg)
        return 0;
    int rc = 0;
    if (!pg->broken && pg->world.size > 1) {
        int (*final)(void *, ddp_error_t *) = pg->backend->final_barrier;
        rc = final ? final(pg->be, err) : pg_barrier(pg, err);
    }
    pg->backend->free(pg->be, pg->scratch);
    pg->backend->destroy(pg->be);
    ddp_store_server_stop(pg->server);
    free(pg);
    return rc;
}

int pg_rank(const pg_t *pg)
{
    return pg->world.rank;
}
int pg_size(const pg_t *pg)
{
    return pg->world.size;
}
int pg_local_rank(const pg_t *pg)
{
    return pg->world.local_rank;
}
const char *pg_backend_name(const pg_t *pg)
{
    return pg->backend->name;
}
int pg_supports(const pg_t *pg, pg_dtype_t t)
{
    return pg->backend->supports(t);
}

/* ---- checks shared by every operation ----------------------------------------------------- */

/* Called on entry: a broken group repeats its failure. */
static int usable(pg_t *pg, ddp_error_t *err)
{
    if (pg->broken)
        return ddp_error_set(err, "%s", pg->failure.msg);
    return 0;
}

/* Called with a backend's result: a failure breaks the group. */
static int outcome(pg_t *pg, int rc, const char *what, ddp_error_t *err)
{
    if (rc == 0)
        return 0;
    ddp_error_t local;
    ddp_error_t *e = err ? err : &local;
    if (!err)
        local.msg[0] = 0;
    ddp_error_prefix(e, "%s", what);
    pg->broken = 1;
    pg->failure = *e;
    return -1;
}

static int check_rank(pg_t *pg, int r, const char *role, const char *what, ddp_error_t *err)
{
    if (r < 0 || r >= pg->world.size)
        return ddp_error_set(err, "%s: %s %d is outside a world of %d", what, role, r,
                             pg->world.size);
    return 0;
}

static int check_type(pg_t *pg, pg_dtype_t t, int op, const char *what, ddp_error_t *err)
{
    if ((unsigned)t >= PG_DTYPE_COUNT)
        return ddp_error_set(err, "%s: unknown type %d", what, (int)t);
    if (!pg->backend->supports(t))
        return ddp_error_set(err, "%s: the %s backend does not handle %s", what, pg->backend->name,
                             pg_dtype_name(t));
    if (op >= 0 && op >= PG_OP_COUNT)
        return ddp_error_set(err, "%s: unknown reduction %d", what, op);
    return 0;
}

void *pg_alloc(pg_t *pg, size_t bytes, ddp_error_t *err)
{
    return pg->backend->alloc(pg->be, bytes, err);
}

void pg_free(pg_t *pg, void *buf)
{
    if (buf)
        pg->backend->free(pg->be, buf);
}

int pg_copy_in(pg_t *pg, void *dst, const void *src, size_t bytes, ddp_error_t *err)
{
    return pg->backend->copy_in(pg->be, dst, src, bytes, err);
}

int pg_copy_out(pg_t *pg, void *dst, const void *src, size_t bytes, ddp_error_t *err)
{
    return pg->backend->copy_out(pg->be, dst, src, bytes, err);
}

int pg_sync(pg_t *pg, ddp_error_t *err)
{
    return pg->backend->sync(pg->be, err);
}

/* ---- point to point ------------------------------------------------------------------------ */

static pg_request_t *start_p2p(pg_t *pg, void *buf, size_t count, pg_dtype_t t, int peer,
                               int sending, ddp_error_t *err)
{
    const char *what = sending ? "send" : "recv";
    if (usable(pg, err) || check_type(pg, t, -1, what, err) ||
        check_rank(pg, peer, "peer", what, err))
        return NULL;
    if (peer == pg->world.rank) {
        ddp_error_set(err, "%s: rank %d cannot %s itself", what, peer,
                      sending ? "send to" : "receive from");
        return NULL;
    }
    size_t bytes = count * pg_dtype_size(t);
    void *req = sending ? pg->backend->isend(pg->be, buf, bytes, peer, err)
                        : pg->backend->irecv(pg->be, buf, bytes, peer, err);
    if (!req)
        outcome(pg, -1, what, err);
    return req;
}

pg_request_t *pg_isend(pg_t *pg, const void *buf, size_t count, pg_dtype_t t, int peer,
                       ddp_error_t *err)
{
    return start_p2p(pg, (void *)buf, count, t, peer, 1, err);
}

pg_request_t *pg_irecv(pg_t *pg, void *buf, size_t count, pg_dtype_t t, int peer, ddp_error_t *err)
{
    return start_p2p(pg, buf, count, t, peer, 0, err);
}

int pg_wait(pg_t *pg, pg_request_t *req, ddp_error_t *err)
{
    if (!req)
        return ddp_error_set(err, "wait: no request");
    if (pg->broken) {
        /* The request still belongs to the backend, which frees it on the way out. */
        pg->backend->wait(pg->be, req, NULL);
        return usable(pg, err);
    }
    return outcome(pg, pg->backend->wait(pg->be, req, err), "wait", err);
}

int pg_send(pg_t *pg, const void *buf, size_t count, pg_dtype_t t, int peer, ddp_error_t *err)
{
    pg_request_t *req = pg_isend(pg, buf, count, t, peer, err);
    return req ? pg_wait(pg, req, err) : -1;
}

int pg_recv(pg_t *pg, void *buf, size_t count, pg_dtype_t t, int peer, ddp_error_t *err)
{
    pg_request_t *req = pg_irecv(pg, buf, count, t, peer, err);
    return req ? pg_wait(pg, req, err) : -1;
}

/* ---- collectives ------------------------------------------------------------------------- */

int pg_barrier(pg_t *pg, ddp_error_t *err)
{
    if (usable(pg, err))
        return -1;
    return outcome(
        pg,
        pg->backend->all_reduce(pg->be, pg->scratch, pg->scratch, 1, PG_INT32, PG_SUM, err) ||
            pg->backend->sync(pg->be, err),
        "barrier", err);
}

int pg_broadcast(pg_t *pg, void *buf, size_t count, pg_dtype_t t, int root, ddp_error_t *err)
{
    if (usable(pg, err) || check_type(pg, t, -1, "broadcast", err) ||
        check_rank(pg, root, "root", "broadcast", err))
        return -1;
    return outcome(pg, pg->backend->broadcast(pg->be, buf, count, t, root, err), "broadcast", err);
}

int pg_reduce(pg_t *pg, const void *send, void *recv, size_t count, pg_dtype_t t, pg_op_t op,
              int root, ddp_error_t *err)
{
    if (usable(pg, err) || check_type(pg, t, (int)op, "reduce", err) ||
        check_rank(pg, root, "root", "reduce", err))
        return -1;
    return outcome(pg, pg->backend->reduce(pg->be, send, recv, count, t, op, root, err), "reduce",
                   err);
}

int pg_all_reduce(pg_t *pg, const void *send, void *recv, size_t count, pg_dtype_t t, pg_op_t op,
                  ddp_error_t *err)
{
    if (usable(pg, err) || check_type(pg, t, (int)op, "all_reduce", err))
        return -1;
    return outcome(pg, pg->backend->all_reduce(pg->be, send, recv, count, t, op, err), "all_reduce",
                   err);
}

int pg_scatter(pg_t *pg, const void *send, void *recv, size_t count, pg_dtype_t t, int root,
               ddp_error_t *err)
{
    if (usable(pg, err) || check_type(pg, t, -1, "scatter", err) ||
        check_rank(pg, root, "root", "scatter", err))
        return -1;
    return outcome(pg, pg->backend->scatter(pg->be, send, recv, count, t, root, err), "scatter",
                   err);
}

int pg_gather(pg_t *pg, const void *send, void *recv, size_t count, pg_dtype_t t, int root,
              ddp_error_t *err)
{
    if (usable(pg, err) || check_type(pg, t, -1, "gather", err) ||
        check_rank(pg, root, "root", "gather", err))
        return -1;
    return outcome(pg, pg->backend->gather(pg->be, send, recv, count, t, root, err), "gather", err);
}

int pg_all_gather(pg_t *pg, const void *send, void *recv, size_t count, pg_dtype_t t,
                  ddp_error_t *err)
{
    if (usable(pg, err) || check_type(pg, t, -1, "all_gather", err))
        return -1;
    return outcome(pg, pg->backend->all_gather(pg->be, send, recv, count, t, err), "all_gather",
                   err);
}

int pg_reduce_scatter(pg_t *pg, const void *send, void *recv, size_t count, pg_dtype_t t,
                      pg_op_t op, ddp_error_t *err)
{
    if (usable(pg, err) || check_type(pg, t, (int)op, "reduce_scatter", err))
        return -1;
    return outcome(pg, pg->backend->reduce_scatter(pg->be, send, recv, count, t, op, err),
                   "reduce_scatter", err);
}
