/* One rank of the process-group suite (tests/pg/pg.sh starts the world with the environment set
 * by hand). Runs every operation over every type, reduction and count the suite names, and
 * compares each result with a value computed here from the inputs alone (element by element, in
 * double, folding over the ranks). Prints "wrong ..." for every mismatch and "hash ..." for
 * every result that must be identical on all ranks, which the suite compares across ranks.
 *
 *   pg_check sweep COUNT...   the matrix; COUNT "n5+1" means 5 * world size + 1
 *   pg_check large COUNT      every operation once with float32 sum on COUNT elements
 *   pg_check loop COUNT       all_reduce COUNT floats until something fails (prints "looping")
 *
 * PG_CHECK_BUFFERS=pg takes every buffer from pg_alloc (shared memory: the zero-copy all_reduce);
 * =mixed only on ranks other than 0 (rank 0's own memory: every rank must take the copy path).
 *
 * Exit status: 0 all right, 1 a wrong result, 2 an operation failed (its error on stderr). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/pg/pg.h"

static pg_t *pg;
static int rank, size, wrong, from_pg;

static void *buffer(size_t bytes)
{
    ddp_error_t err;
    void *b = from_pg ? pg_alloc(pg, bytes, &err) : malloc(bytes);
    if (!b) {
        fprintf(stderr, "pg_check rank %d: no buffer of %zu bytes\n", rank, bytes);
        exit(2);
    }
    return b;
}

static void release(void *b)
{
    if (from_pg)
        pg_free(pg, b);
    else
        free(b);
}

/* Inputs: -2, -1, 1 or 2, so that sums and products over 8 ranks stay exact in every type. */
static double input(int r, size_t i)
{
    static const double values[4] = {-2, -1, 1, 2};
    return values[((size_t)r * 7 + i * 3) % 4];
}

static double fold(pg_op_t op, size_t i)
{
    double acc = input(0, i);
    for (int r = 1; r < size; r++) {
        double v = input(r, i);
        switch (op) {
        case PG_SUM:
        case PG_AVG:
            acc += v;
            break;
        case PG_PROD:
            acc *= v;
            break;
        case PG_MIN:
            acc = v < acc ? v : acc;
            break;
        case PG_MAX:
            acc = v > acc ? v : acc;
            break;
        default:
            break;
        }
    }
    return acc;
}

static double expected_reduction(pg_op_t op, pg_dtype_t t, size_t i)
{
    double v = fold(op, i);
    if (op != PG_AVG)
        return v;
    if (t == PG_INT32 || t == PG_INT64)
        return (double)((int64_t)v / size); /* C's division truncates, as the backend's does */
    return t == PG_FLOAT32 ? (double)((float)v / (float)size) : v / size;
}

static double get(const void *b, pg_dtype_t t, size_t i)
{
    switch (t) {
    case PG_FLOAT32:
        return ((const float *)b)[i];
    case PG_FLOAT64:
        return ((const double *)b)[i];
    case PG_INT32:
        return ((const int32_t *)b)[i];
    default:
        return (double)((const int64_t *)b)[i];
    }
}

static void put(void *b, pg_dtype_t t, size_t i, double v)
{
    switch (t) {
    case PG_FLOAT32:
        ((float *)b)[i] = (float)v;
        break;
    case PG_FLOAT64:
        ((double *)b)[i] = v;
        break;
    case PG_INT32:
        ((int32_t *)b)[i] = (int32_t)v;
        break;
    default:
        ((int64_t *)b)[i] = (int64_t)v;
        break;
    }
}

static void *filled(pg_dtype_t t, size_t count, int r, size_t first)
{
    void *b = buffer(count * pg_dtype_size(t) + 1);
    for (size_t i = 0; i < count; i++)
        put(b, t, i, input(r, first + i));
    return b;
}

static void *junk(pg_dtype_t t, size_t count)
{
    void *b = buffer(count * pg_dtype_size(t) + 1);
    for (size_t i = 0; i < count; i++)
        put(b, t, i, 99);
    return b;
}

typedef double (*expect_fn)(pg_op_t op, pg_dtype_t t, size_t i, size_t count);

static void verify(const char *what, pg_dtype_t t, pg_op_t op, size_t count, const void *got,
                   size_t n, expect_fn expect, int same_everywhere)
{
    size_t bad = 0, first_bad = 0;
    for (size_t i = 0; i < n; i++)
        if (get(got, t, i) != expect(op, t, i, count) && bad++ == 0)
            first_bad = i;
    if (bad) {
        wrong = 1;
        printf("wrong %s %s %s count=%zu: %zu element(s), first [%zu] = %g, expected %g\n", what,
               pg_dtype_name(t), pg_op_name(op), count, bad, first_bad, get(got, t, first_bad),
               expect(op, t, first_bad, count));
    }
    if (same_everywhere) {
        uint64_t h = 1469598103934665603ull;
        const unsigned char *p = got;
        for (size_t i = 0; i < n * pg_dtype_size(t); i++)
            h = (h ^ p[i]) * 1099511628211ull;
        printf("hash %s %s %s count=%zu %016llx\n", what, pg_dtype_name(t), pg_op_name(op), count,
               (unsigned long long)h);
    }
}

static double exp_reduced(pg_op_t op, pg_dtype_t t, size_t i, size_t count)
{
    return expected_reduction(op, t, i);
}
static double exp_reduced_mine(pg_op_t op, pg_dtype_t t, size_t i, size_t count)
{
    return expected_reduction(op, t, (size_t)rank * count + i);
}
static int root_of(size_t count)
{
    return (int)(count % (size_t)size);
}
static double exp_root_input(pg_op_t op, pg_dtype_t t, size_t i, size_t count)
{
    return input(root_of(count), i);
}
static double exp_scattered(pg_op_t op, pg_dtype_t t, size_t i, size_t count)
{
    return input(root_of(count), (size_t)rank * count + i);
}
static double exp_gathered(pg_op_t op, pg_dtype_t t, size_t i, size_t count)
{
    return input((int)(i / count), i % count);
}
static double exp_from_prev(pg_op_t op, pg_dtype_t t, size_t i, size_t count)
{
    return input((rank + size - 1) % size, i);
}

static int failed(const char *what, ddp_error_t *err)
{
    fprintf(stderr, "pg_check rank %d (in %s): %s\n", rank, what, err->msg);
    return 2;
}

/* The reductions: all_reduce (out of place and in place), reduce, reduce_scatter. */
static int reductions(pg_dtype_t t, pg_op_t op, size_t count)
{
    ddp_error_t err;
    size_t n = (size_t)size;
    void *in = filled(t, count, rank, 0), *out = junk(t, count);
    int rc = 0;
    if (pg_all_reduce(pg, in, out, count, t, op, &err))
        rc = failed("all_reduce", &err);
    else
        verify("all_reduce", t, op, count, out, count, exp_reduced, 1);
    if (!rc && pg_all_reduce(pg, in, in, count, t, op, &err))
        rc = failed("all_reduce in place", &err);
    else if (!rc)
        verify("all_reduce_in_place", t, op, count, in, count, exp_reduced, 1);
    release(in);
    release(out);
    in = filled(t, count, rank, 0);
    out = junk(t, count);
    if (!rc && pg_reduce(pg, in, out, count, t, op, root_of(count), &err))
        rc = failed("reduce", &err);
    else if (!rc && rank == root_of(count))
        verify("reduce", t, op, count, out, count, exp_reduced, 0);
    release(in);
    release(out);
    in = filled(t, count * n, rank, 0);
    out = junk(t, count);
    if (!rc && pg_reduce_scatter(pg, in, out, count, t, op, &err))
        rc = failed("reduce_scatter", &err);
    else if (!rc)
        verify("reduce_scatter", t, op, count, out, count, exp_reduced_mine, 0);
    release(in);
    release(out);
    return rc;
}

/* The data movers: broadcast, scatter, gather, all_gather, send/recv, isend/irecv. */
static int movers(pg_dtype_t t, size_t count)
{
    ddp_error_t err;
    size_t n = (size_t)size;
    int root = root_of(count), rc = 0;
    void *buf = rank == root ? filled(t, count, rank, 0) : junk(t, count);
    if (pg_broadcast(pg, buf, count, t, root, &err))
        rc = failed("broadcast", &err);
    else
        verify("broadcast", t, PG_SUM, count, buf, count, exp_root_input, 1);
    release(buf);
    void *all = rank == root ? filled(t, count * n, rank, 0) : NULL;
    void *mine = junk(t, count);
    if (!rc && pg_scatter(pg, all, mine, count, t, root, &err))
        rc = failed("scatter", &err);
    else if (!rc)
        verify("scatter", t, PG_SUM, count, mine, count, exp_scattered, 0);
    release(all);
    release(mine);
    mine = filled(t, count, rank, 0);
    all = rank == root ? junk(t, count * n) : NULL;
    if (!rc && pg_gather(pg, mine, all, count, t, root, &err))
        rc = failed("gather", &err);
    else if (!rc && rank == root)
        verify("gather", t, PG_SUM, count, all, count * n, exp_gathered, 0);
    release(all);
    all = junk(t, count * n);
    if (!rc && pg_all_gather(pg, mine, all, count, t, &err))
        rc = failed("all_gather", &err);
    else if (!rc)
        verify("all_gather", t, PG_SUM, count, all, count * n, exp_gathered, 1);
    release(all);
    if (size > 1 && !rc) {
        /* Around the ring, blocking: even ranks send first so the calls pair up. */
        void *got = junk(t, count);
        int next = (rank + 1) % size, prev = (rank + size - 1) % size;
        int bad =
            rank % 2 == 0
                ? pg_send(pg, mine, count, t, next, &err) || pg_recv(pg, got, count, t, prev, &err)
                : pg_recv(pg, got, count, t, prev, &err) || pg_send(pg, mine, count, t, next, &err);
        if (bad)
            rc = failed("send/recv", &err);
        else
            verify("send_recv", t, PG_SUM, count, got, count, exp_from_prev, 0);
        release(got);
        got = junk(t, count);
        pg_request_t *rx = rc ? NULL : pg_irecv(pg, got, count, t, prev, &err);
        pg_request_t *tx = rx ? pg_isend(pg, mine, count, t, next, &err) : NULL;
        /* Waited for in the opposite order to the one they were started in. */
        if (!rc && (!rx || !tx || pg_wait(pg, rx, &err) || pg_wait(pg, tx, &err)))
            rc = failed("isend/irecv", &err);
        else if (!rc)
            verify("isend_irecv", t, PG_SUM, count, got, count, exp_from_prev, 0);
        release(got);
    }
    release(mine);
    return rc;
}

static size_t parse_count(const char *text)
{
    if (text[0] == 'n') /* "nK+1": K times the world size, plus one */
        return (size_t)atol(text + 1) * (size_t)size + 1;
    return (size_t)atol(text);
}

int main(int argc, char **argv)
{
    ddp_error_t err;
    pg_world_t world;
    if (argc < 3 || pg_world_from_env(&world, &err)) {
        fprintf(stderr, "usage: pg_check sweep|large|loop COUNT... (%s)\n",
                argc < 3 ? "" : err.msg);
        return 2;
    }
    if (!(pg = pg_create(&world, NULL, &err))) {
        fprintf(stderr, "pg_check rank %d: %s\n", world.rank, err.msg);
        return 2;
    }
    rank = pg_rank(pg);
    size = pg_size(pg);
    const char *buffers = getenv("PG_CHECK_BUFFERS");
    from_pg = buffers && (!strcmp(buffers, "pg") || (!strcmp(buffers, "mixed") && rank != 0));
    int rc = 0;
    if (!strcmp(argv[1], "sweep")) {
        for (int a = 2; a < argc && !rc; a++) {
            size_t count = parse_count(argv[a]);
            for (pg_dtype_t t = PG_FLOAT32; t <= PG_INT64 && !rc; t++) {
                for (pg_op_t op = PG_SUM; op < PG_OP_COUNT && !rc; op++)
                    rc = reductions(t, op, count);
                if (!rc)
                    rc = movers(t, count);
            }
        }
    } else if (!strcmp(argv[1], "large")) {
        size_t count = parse_count(argv[2]);
        rc = reductions(PG_FLOAT32, PG_SUM, count);
        if (!rc)
            rc = movers(PG_FLOAT32, count / (size_t)size);
    } else if (!strcmp(argv[1], "loop")) {
        size_t count = parse_count(argv[2]);
        float *buf = buffer(count * sizeof *buf);
        memset(buf, 0, count * sizeof *buf);
        for (long i = 0; !rc; i++) {
            if (pg_all_reduce(pg, buf, buf, count, PG_FLOAT32, PG_SUM, &err))
                rc = failed("all_reduce", &err);
            else if (i == 1 && printf("looping\n") && fflush(stdout))
                rc = 2;
        }
        release(buf);
    }
    fflush(stdout);
    if (pg_destroy(pg, &err) && !rc)
        rc = failed("destroy", &err);
    return rc ? rc : wrong;
}
