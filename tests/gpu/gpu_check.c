/* The process group's nccl backend on a real GPU (tests/gpu/gpu.sh runs it).
 *
 *   gpu_check probe   exit 0 when a CUDA device is visible, else print why and exit 77
 *   gpu_check ops     every collective, every type (float16 and bfloat16 included) and every
 *                     reduction, world size 1, device buffers, compared with the input
 *
 * A world of one still goes through NCCL's communicator and kernels, so wrong types, counts or
 * buffer handling show. Exit status: 0 all right, 1 a wrong result, 2 an operation failed. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/pg/pg.h"

#define COUNT 4099 /* odd, and bigger than one NCCL chunk per thread */

static int probe(void)
{
    int devices = 0;
    cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess || devices == 0) {
        printf("no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        return 77;
    }
    printf("%d CUDA device(s)\n", devices);
    return 0;
}

/* Inputs are small integers, exact in every type, so results compare bit for bit. */
static double input(size_t i)
{
    return (double)((int)(i % 7) - 3);
}

/* Encodes v (a small integer, so no rounding) in type t. */
static void store(void *buf, pg_dtype_t t, size_t i, double v)
{
    float f = (float)v;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    switch (t) {
    case PG_FLOAT32:
        ((float *)buf)[i] = f;
        break;
    case PG_FLOAT64:
        ((double *)buf)[i] = v;
        break;
    case PG_INT32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    case PG_INT64:
        ((int64_t *)buf)[i] = (int64_t)v;
        break;
    case PG_BFLOAT16:
        ((uint16_t *)buf)[i] = (uint16_t)(bits >> 16);
        break;
    case PG_FLOAT16: {
        uint16_t sign = (uint16_t)(bits >> 16 & 0x8000);
        int exp = (int)(bits >> 23 & 0xff);
        ((uint16_t *)buf)[i] =
            exp == 0 ? sign : (uint16_t)(sign | (exp - 127 + 15) << 10 | (bits >> 13 & 0x3ff));
        break;
    }
    default:
        break;
    }
}

typedef struct {
    pg_t *pg;
    void *in, *out, *host, *expect;
    int wrong;
} check_t;

static int compare(check_t *c, const char *what, pg_dtype_t t, pg_op_t op, size_t count,
                   ddp_error_t *err)
{
    size_t esize = pg_dtype_size(t);
    if (pg_copy_out(c->pg, c->host, c->out, count * esize, err))
        return -1;
    if (memcmp(c->host, c->expect, count * esize) != 0) {
        printf("wrong %s %s %s\n", what, pg_dtype_name(t), pg_op_name(op));
        c->wrong++;
    }
    return 0;
}

static int check_type(check_t *c, pg_dtype_t t, ddp_error_t *err)
{
    size_t esize = pg_dtype_size(t), bytes = COUNT * esize;
    for (size_t i = 0; i < COUNT; i++)
        store(c->expect, t, i, input(i));
    if (pg_copy_in(c->pg, c->in, c->expect, bytes, err))
        return -1;
    for (pg_op_t op = 0; op < PG_OP_COUNT; op++) {
        if (pg_all_reduce(c->pg, c->in, c->out, COUNT, t, op, err) ||
            compare(c, "all_reduce", t, op, COUNT, err) ||
            pg_reduce(c->pg, c->in, c->out, COUNT, t, op, 0, err) ||
            compare(c, "reduce", t, op, COUNT, err) ||
            pg_reduce_scatter(c->pg, c->in, c->out, COUNT, t, op, err) ||
            compare(c, "reduce_scatter", t, op, COUNT, err))
            return -1;
    }
    pg_op_t none = PG_SUM;
    return pg_all_gather(c->pg, c->in, c->out, COUNT, t, err) ||
                   compare(c, "all_gather", t, none, COUNT, err) ||
                   pg_scatter(c->pg, c->in, c->out, COUNT, t, 0, err) ||
                   compare(c, "scatter", t, none, COUNT, err) ||
                   pg_gather(c->pg, c->in, c->out, COUNT, t, 0, err) ||
                   compare(c, "gather", t, none, COUNT, err) ||
                   pg_copy_in(c->pg, c->out, c->expect, bytes, err) ||
                   pg_broadcast(c->pg, c->out, COUNT, t, 0, err) ||
                   compare(c, "broadcast", t, none, COUNT, err) || pg_barrier(c->pg, err)
               ? -1
               : 0;
}

static int ops(void)
{
    pg_world_t world = {.rank = 0, .size = 1, .local_rank = 0, .source = "gpu_check"};
    pg_options_t options = {.backend = "nccl", .timeout_ms = 60000};
    ddp_error_t err;
    check_t c = {0};
    static unsigned char host[COUNT * 8], expect[COUNT * 8];
    c.host = host;
    c.expect = expect;
    if (!(c.pg = pg_create(&world, &options, &err))) {
        fprintf(stderr, "gpu_check: %s\n", err.msg);
        return 2;
    }
    int rc =
        (c.in = pg_alloc(c.pg, sizeof host, &err)) && (c.out = pg_alloc(c.pg, sizeof host, &err))
            ? 0
            : -1;
    for (pg_dtype_t t = 0; t < PG_DTYPE_COUNT && rc == 0; t++) {
        rc = check_type(&c, t, &err);
        if (rc == 0)
            printf("ok %s\n", pg_dtype_name(t));
    }
    if (rc)
        fprintf(stderr, "gpu_check: %s\n", err.msg);
    pg_free(c.pg, c.in);
    pg_free(c.pg, c.out);
    if (pg_destroy(c.pg, &err) && rc == 0) {
        fprintf(stderr, "gpu_check: %s\n", err.msg);
        rc = -1;
    }
    return rc ? 2 : c.wrong ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "probe") == 0)
        return probe();
    if (argc == 2 && strcmp(argv[1], "ops") == 0)
        return ops();
    fprintf(stderr, "usage: gpu_check probe|ops\n");
    return 2;
}
