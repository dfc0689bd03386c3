/* ddp-train bench: an nccl-tests-style sweep. For each size, `warmup` untimed then `iters` timed
 * runs of the operation; the time is the slowest rank's mean, algbw = size / time and busbw =
 * algbw times nccl-tests' factor for the operation, so the numbers compare with theirs (size is
 * what nccl-tests calls it: the whole buffer for all_reduce, broadcast and reduce, the gathered
 * or scattered total for the others). --check verifies the last run's result on every rank. */
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/train/commands/commands.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_parse.h"

typedef struct bench_op bench_op_t;

/* One operation's entry: how a size splits into its counts, how to run it, its busbw factor,
 * and the value every element must have afterwards (for --check). */
struct bench_op {
    const char *name;
    int split;   /* the size is a total divided among the ranks */
    int reduces; /* takes a reduction op (always sum here) */
    int root;    /* -1: no root */
    double (*bus_factor)(int n);
    int (*run)(pg_t *pg, void *send, void *recv, size_t count, pg_dtype_t t, ddp_error_t *err);
    /* Elements of the result on `rank` (0: none to check) and the expected value of element i. */
    size_t (*result_count)(size_t count, int n, int rank);
    double (*expected)(size_t count, int n, int rank, size_t i);
};

/* The input every rank starts from: small integers, exact in every type. */
static double input_value(int rank, size_t i)
{
    return (double)(rank + 1 + (int)(i % 13));
}
static double sum_over_ranks(int n, size_t i)
{
    return n * (n + 1) / 2.0 + n * (double)(i % 13);
}

static double ring_factor(int n)
{
    return 2.0 * (n - 1) / n;
}
static double split_factor(int n)
{
    return (double)(n - 1) / n;
}
static double one_factor(int n)
{
    return 1;
}

static size_t whole(size_t count, int n, int rank)
{
    return count;
}
static size_t at_root(size_t count, int n, int rank)
{
    return rank == 0 ? count : 0;
}
static size_t piece(size_t count, int n, int rank)
{
    return count / (size_t)n;
}
static size_t piece_at_root(size_t count, int n, int rank)
{
    return rank == 0 ? count : 0;
}

static double exp_sum(size_t count, int n, int rank, size_t i)
{
    return sum_over_ranks(n, i);
}
static double exp_sum_piece(size_t count, int n, int rank, size_t i)
{
    return sum_over_ranks(n, (size_t)rank * (count / (size_t)n) + i);
}
static double exp_root_input(size_t count, int n, int rank, size_t i)
{
    return input_value(0, i);
}
static double exp_scattered(size_t count, int n, int rank, size_t i)
{
    return input_value(0, (size_t)rank * (count / (size_t)n) + i);
}
static double exp_gathered(size_t count, int n, int rank, size_t i)
{
    size_t per = count / (size_t)n;
    return input_value((int)(i / per), i % per);
}

static int run_all_reduce(pg_t *pg, void *s, void *r, size_t count, pg_dtype_t t, ddp_error_t *err)
{
    return pg_all_reduce(pg, s, r, count, t, PG_SUM, err);
}
static int run_reduce(pg_t *pg, void *s, void *r, size_t count, pg_dtype_t t, ddp_error_t *err)
{
    return pg_reduce(pg, s, r, count, t, PG_SUM, 0, err);
}
static int run_broadcast(pg_t *pg, void *s, void *r, size_t count, pg_dtype_t t, ddp_error_t *err)
{
    return pg_broadcast(pg, s, count, t, 0, err);
}
static int run_reduce_scatter(pg_t *pg, void *s, void *r, size_t count, pg_dtype_t t,
                              ddp_error_t *err)
{
    return pg_reduce_scatter(pg, s, r, count / (size_t)pg_size(pg), t, PG_SUM, err);
}
static int run_all_gather(pg_t *pg, void *s, void *r, size_t count, pg_dtype_t t, ddp_error_t *err)
{
    return pg_all_gather(pg, s, r, count / (size_t)pg_size(pg), t, err);
}
static int run_scatter(pg_t *pg, void *s, void *r, size_t count, pg_dtype_t t, ddp_error_t *err)
{
    return pg_scatter(pg, s, r, count / (size_t)pg_size(pg), t, 0, err);
}
static int run_gather(pg_t *pg, void *s, void *r, size_t count, pg_dtype_t t, ddp_error_t *err)
{
    return pg_gather(pg, s, r, count / (size_t)pg_size(pg), t, 0, err);
}

static const bench_op_t ops[] = {
    {"all_reduce", 0, 1, -1, ring_factor, run_all_reduce, whole, exp_sum},
    {"reduce_scatter", 1, 1, -1, split_factor, run_reduce_scatter, piece, exp_sum_piece},
    {"all_gather", 1, 0, -1, split_factor, run_all_gather, whole, exp_gathered},
    {"broadcast", 0, 0, 0, one_factor, run_broadcast, whole, exp_root_input},
    {"reduce", 0, 1, 0, one_factor, run_reduce, at_root, exp_sum},
    {"scatter", 1, 0, 0, split_factor, run_scatter, piece, exp_scattered},
    {"gather", 1, 0, 0, split_factor, run_gather, piece_at_root, exp_gathered},
};
#define NOPS (sizeof ops / sizeof *ops)

typedef struct {
    const char *op;
    size_t min_bytes, max_bytes;
    double step;
    int iters, warmup, check;
    int host_buffers; /* --buffers host: the caller's own memory (the copy path) */
    pg_dtype_t dtype;
} bench_args_t;

const char bench_usage[] =
    "usage: ddp-train bench [--op NAME|all] [--min-bytes B] [--max-bytes B] [--step-factor F]\n"
    "                       [--iters N] [--warmup N] [--dtype TYPE] [--check]\n"
    "                       [--buffers pg|host] [--backend tcp|nccl] [--timeout SECONDS]\n"
    "  NAME: all_reduce (default), reduce_scatter, all_gather, broadcast, reduce, scatter, gather\n"
    "  sizes take K, M, G (powers of 1024); defaults 4K to 64M, factor 2, 20 iters, 5 warmup\n"
    "  TYPE: float32 (default), float64, int32, int64, float16, bfloat16 (nccl only)\n"
    "  --buffers: from pg_alloc (default: shared between one host's ranks, no copies) or from\n"
    "  malloc (host, tcp only: each operation copies through the shared segment)\n";

/* A size in bytes: a number, with K, M or G (powers of 1024) after it. */
static int parse_bytes(const char *text, size_t *out)
{
    char number[64];
    size_t len = strlen(text);
    double unit = 1, v;
    if (len == 0 || len >= sizeof number)
        return -1;
    memcpy(number, text, len + 1);
    switch (number[len - 1]) {
    case 'G':
    case 'g':
        unit *= 1024; /* fall through */
    case 'M':
    case 'm':
        unit *= 1024; /* fall through */
    case 'K':
    case 'k':
        unit *= 1024;
        number[len - 1] = '\0';
        break;
    default:
        break;
    }
    if (ddp_parse_double(number, 0, 1e12 / unit, &v))
        return -1;
    *out = (size_t)(v * unit);
    return 0;
}

static int parse_args(int argc, char **argv, bench_args_t *a)
{
    *a = (bench_args_t){.op = "all_reduce",
                        .min_bytes = 4096,
                        .max_bytes = 64u << 20,
                        .step = 2,
                        .iters = 20,
                        .warmup = 5,
                        .dtype = PG_FLOAT32};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0, takes = 1;
        if (!strcmp(arg, "--check")) {
            a->check = 1;
            takes = 0;
        } else if (!val) {
            bad = 1;
        } else if (!strcmp(arg, "--op")) {
            a->op = val;
        } else if (!strcmp(arg, "--min-bytes")) {
            bad = parse_bytes(val, &a->min_bytes);
        } else if (!strcmp(arg, "--max-bytes")) {
            bad = parse_bytes(val, &a->max_bytes);
        } else if (!strcmp(arg, "--step-factor")) {
            bad = ddp_parse_double(val, 1, 1e6, &a->step) || !(a->step > 1);
        } else if (!strcmp(arg, "--iters")) {
            bad = ddp_parse_int(val, 1, INT_MAX, &a->iters);
        } else if (!strcmp(arg, "--warmup")) {
            bad = ddp_parse_int(val, 0, INT_MAX, &a->warmup);
        } else if (!strcmp(arg, "--dtype")) {
            bad = pg_dtype_parse(val, &a->dtype);
        } else if (!strcmp(arg, "--buffers")) {
            bad = strcmp(val, "pg") && strcmp(val, "host");
            a->host_buffers = !strcmp(val, "host");
        } else {
            fprintf(stderr, "ddp-train bench: unknown option %s\n%s", arg, bench_usage);
            return -1;
        }
        if (bad) {
            fprintf(stderr, "ddp-train bench: %s %s: bad value\n%s", arg, val ? val : "",
                    bench_usage);
            return -1;
        }
        i += takes;
    }
    if (a->min_bytes > a->max_bytes) {
        fprintf(stderr, "ddp-train bench: --min-bytes is above --max-bytes\n");
        return -1;
    }
    int known = !strcmp(a->op, "all");
    for (size_t k = 0; k < NOPS; k++)
        known |= !strcmp(a->op, ops[k].name);
    if (!known) {
        fprintf(stderr, "ddp-train bench: unknown --op %s\n%s", a->op, bench_usage);
        return -1;
    }
    return 0;
}

static double element(const void *buf, pg_dtype_t t, size_t i)
{
    switch (t) {
    case PG_FLOAT32:
        return ((const float *)buf)[i];
    case PG_FLOAT64:
        return ((const double *)buf)[i];
    case PG_INT32:
        return ((const int32_t *)buf)[i];
    case PG_INT64:
        return (double)((const int64_t *)buf)[i];
    default:
        return 0;
    }
}

static void set_element(void *buf, pg_dtype_t t, size_t i, double v)
{
    switch (t) {
    case PG_FLOAT32:
        ((float *)buf)[i] = (float)v;
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
    default:
        break;
    }
}

static int checkable(pg_dtype_t t)
{
    return t <= PG_INT64;
}

/* A reduction across ranks of one host value, through backend memory. */
static int reduce_scalar(pg_t *pg, void *dev, double *v, pg_op_t op, ddp_error_t *err)
{
    return pg_copy_in(pg, dev, v, sizeof *v, err) ||
           pg_all_reduce(pg, dev, dev, 1, PG_FLOAT64, op, err) ||
           pg_copy_out(pg, v, dev, sizeof *v, err);
}

typedef struct {
    pg_t *pg;
    const bench_args_t *a;
    void *send, *recv, *scalar; /* backend memory */
    void *host;                 /* staging for inputs and checks */
    double busbw_sum;
    int rows;
} bench_t;

/* Runs one size of one operation and prints its row (rank 0). */
static int bench_size(bench_t *b, const bench_op_t *op, size_t bytes, ddp_error_t *err)
{
    pg_t *pg = b->pg;
    int n = pg_size(pg), r = pg_rank(pg);
    size_t esize = pg_dtype_size(b->a->dtype), count = bytes / esize;
    if (op->split)
        count -= count % (size_t)n;
    bytes = count * esize;
    size_t in_count = op->split && strcmp(op->name, "scatter") && strcmp(op->name, "reduce_scatter")
                          ? count / (size_t)n
                          : count;
    if (checkable(b->a->dtype)) {
        for (size_t i = 0; i < in_count; i++)
            set_element(b->host, b->a->dtype, i, input_value(r, i));
        if (pg_copy_in(pg, b->send, b->host, in_count * esize, err))
            return -1;
    }
    for (int i = 0; i < b->a->warmup; i++)
        if (op->run(pg, b->send, b->recv, count, b->a->dtype, err))
            return -1;
    if (pg_barrier(pg, err))
        return -1;
    double start = ddp_now_s();
    for (int i = 0; i < b->a->iters; i++)
        if (op->run(pg, b->send, b->recv, count, b->a->dtype, err))
            return -1;
    if (pg_sync(pg, err))
        return -1;
    double time_us = (ddp_now_s() - start) / b->a->iters * 1e6;
    if (reduce_scalar(pg, b->scalar, &time_us, PG_MAX, err))
        return -1;
    double wrong = -1;
    if (b->a->check && checkable(b->a->dtype)) {
        size_t got = op->result_count(count, n, r);
        const void *result = op->run == run_broadcast ? b->send : b->recv;
        if (pg_copy_out(pg, b->host, result, got * esize, err))
            return -1;
        wrong = 0;
        for (size_t i = 0; i < got; i++)
            wrong += element(b->host, b->a->dtype, i) != op->expected(count, n, r, i);
        if (reduce_scalar(pg, b->scalar, &wrong, PG_SUM, err))
            return -1;
    }
    double algbw = time_us > 0 ? bytes / time_us / 1e3 : 0, busbw = algbw * op->bus_factor(n);
    b->busbw_sum += busbw;
    b->rows++;
    if (r == 0) {
        char wrong_text[32];
        snprintf(wrong_text, sizeof wrong_text, wrong < 0 ? "N/A" : "%.0f", wrong);
        printf("%12zu  %12zu  %8s  %6s  %6d  %10.2f  %7.3f  %7.3f  %6s\n", bytes, count,
               pg_dtype_name(b->a->dtype), op->reduces ? "sum" : "none", op->root, time_us, algbw,
               busbw, wrong_text);
        fflush(stdout);
    }
    return wrong > 0 ? 1 : 0;
}

static int bench_op(bench_t *b, const bench_op_t *op, ddp_error_t *err)
{
    if (pg_rank(b->pg) == 0) {
        printf("# %s, %d rank(s), backend %s, buffers %s\n", op->name, pg_size(b->pg),
               pg_backend_name(b->pg), b->a->host_buffers ? "malloc" : "pg_alloc");
        printf("#%11s  %12s  %8s  %6s  %6s  %10s  %7s  %7s  %6s\n", "size", "count", "type",
               "redop", "root", "time", "algbw", "busbw", "#wrong");
        printf("#%11s  %12s  %8s  %6s  %6s  %10s  %7s  %7s  %6s\n", "(B)", "(elements)", "", "", "",
               "(us)", "(GB/s)", "(GB/s)", "");
    }
    int wrong = 0;
    for (double bytes = (double)b->a->min_bytes; bytes <= (double)b->a->max_bytes;
         bytes = bytes * b->a->step < bytes + 1 ? bytes + 1 : bytes * b->a->step) {
        int rc = bench_size(b, op, (size_t)bytes, err);
        if (rc < 0)
            return -1;
        wrong |= rc;
    }
    return wrong;
}

int cmd_bench(int argc, char **argv)
{
    session_options_t so = {0};
    bench_args_t args;
    if (session_parse(&argc, argv, &so) || parse_args(argc, argv, &args))
        return 2;
    pg_t *pg = session_open("bench", &so);
    if (!pg)
        return 1;
    ddp_error_t err;
    int rank = pg_rank(pg), status = 1;
    if (!pg_supports(pg, args.dtype)) {
        fprintf(stderr, "ddp-train bench: the %s backend does not handle %s\n", pg_backend_name(pg),
                pg_dtype_name(args.dtype));
        return session_close("bench", pg, 2);
    }
    if (args.host_buffers && strcmp(pg_backend_name(pg), "tcp")) {
        fprintf(stderr, "ddp-train bench: --buffers host needs the tcp backend\n");
        return session_close("bench", pg, 2);
    }
    size_t room = args.max_bytes + 64;
    bench_t b = {.pg = pg, .a = &args};
    if (args.host_buffers) {
        b.send = malloc(room);
        b.recv = b.send ? malloc(room) : NULL;
        if (!b.recv)
            ddp_error_set(&err, "out of memory");
    } else {
        b.send = pg_alloc(pg, room, &err);
        b.recv = b.send ? pg_alloc(pg, room, &err) : NULL;
    }
    b.scalar = b.recv ? pg_alloc(pg, sizeof(double), &err) : NULL;
    b.host = malloc(room);
    if (!b.scalar || !b.host) {
        fprintf(stderr, "ddp-train bench: rank %d: %s\n", rank, b.host ? err.msg : "out of memory");
        goto out;
    }
    int wrong = 0;
    for (size_t k = 0; k < NOPS; k++) {
        if (strcmp(args.op, "all") && strcmp(args.op, ops[k].name))
            continue;
        int rc = bench_op(&b, &ops[k], &err);
        if (rc < 0) {
            fprintf(stderr, "ddp-train bench: rank %d: %s\n", rank, err.msg);
            goto out;
        }
        wrong |= rc;
    }
    if (rank == 0) {
        printf("# Out of bounds values : %s\n", wrong        ? "WRONG"
                                                : args.check ? "0 OK"
                                                             : "not checked");
        printf("# Avg bus bandwidth    : %g\n", b.rows ? b.busbw_sum / b.rows : 0);
    }
    status = wrong ? 1 : 0;
out:
    pg_free(pg, b.scalar);
    if (args.host_buffers) {
        free(b.recv);
        free(b.send);
    } else {
        pg_free(pg, b.recv);
        pg_free(pg, b.send);
    }
    free(b.host);
    return session_close("bench", pg, status);
}
