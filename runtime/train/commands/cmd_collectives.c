/* ddp-train collectives: every operation once with known inputs, the way the tutorials show
 * them. Each rank prints what it holds afterwards and checks it against what the operation must
 * give; any wrong value makes the exit status 1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/train/commands/commands.h"

#define MAX_SHOWN 8

typedef struct {
    const char *name;
    int (*in_count)(int n);  /* elements of this rank's input */
    int (*out_count)(int n); /* elements of this rank's result (0: none on this rank) */
    float (*input)(int rank, int i);
    float (*expected)(int rank, int n, int i);
    int (*run)(pg_t *pg, float *in, float *out, int n, ddp_error_t *err);
    int root_only; /* only the root (rank 0) has a result */
} case_t;

static int one(int n)
{
    return 1;
}
static int two(int n)
{
    return 2;
}
static int per_rank(int n)
{
    return n;
}

/* send/recv and isend/irecv: each rank passes its number to the next around a ring. */
static float rank_value(int rank, int i)
{
    return (float)(rank + i);
}
static float from_prev(int rank, int n, int i)
{
    return (float)((rank + n - 1) % n + i);
}

static int run_send_recv(pg_t *pg, float *in, float *out, int n, ddp_error_t *err)
{
    int r = pg_rank(pg);
    if (n == 1)
        return 0;
    /* Even ranks send first, odd ranks receive first, so the blocking calls pair up. */
    if (r % 2 == 0)
        return pg_send(pg, in, 2, PG_FLOAT32, (r + 1) % n, err) ||
               pg_recv(pg, out, 2, PG_FLOAT32, (r + n - 1) % n, err);
    return pg_recv(pg, out, 2, PG_FLOAT32, (r + n - 1) % n, err) ||
           pg_send(pg, in, 2, PG_FLOAT32, (r + 1) % n, err);
}

static int run_isend_irecv(pg_t *pg, float *in, float *out, int n, ddp_error_t *err)
{
    int r = pg_rank(pg);
    if (n == 1)
        return 0;
    pg_request_t *rx = pg_irecv(pg, out, 2, PG_FLOAT32, (r + n - 1) % n, err);
    if (!rx)
        return -1;
    pg_request_t *tx = pg_isend(pg, in, 2, PG_FLOAT32, (r + 1) % n, err);
    if (!tx) {
        pg_wait(pg, rx, NULL);
        return -1;
    }
    int rc = pg_wait(pg, tx, err);
    return pg_wait(pg, rx, rc ? NULL : err) || rc;
}

/* broadcast: rank 0's [42, 43] everywhere. */
static float bcast_input(int rank, int i)
{
    return rank == 0 ? (float)(42 + i) : 0;
}
static float bcast_expected(int rank, int n, int i)
{
    return (float)(42 + i);
}
static int run_broadcast(pg_t *pg, float *in, float *out, int n, ddp_error_t *err)
{
    return pg_broadcast(pg, in, 2, PG_FLOAT32, 0, err);
}

/* reduce and all_reduce: the sum of [rank+1, 2*(rank+1)]. */
static float plus_one(int rank, int i)
{
    return (float)((rank + 1) * (i + 1));
}
static float sum_of_plus_one(int rank, int n, int i)
{
    return (float)(n * (n + 1) / 2 * (i + 1));
}
static int run_reduce(pg_t *pg, float *in, float *out, int n, ddp_error_t *err)
{
    return pg_reduce(pg, in, out, 2, PG_FLOAT32, PG_SUM, 0, err);
}
static int run_all_reduce(pg_t *pg, float *in, float *out, int n, ddp_error_t *err)
{
    return pg_all_reduce(pg, in, out, 2, PG_FLOAT32, PG_SUM, err);
}

/* scatter: rank 0 holds [0, 10, 20, ...]; rank r gets 10*r. gather and all_gather: the ranks'
 * numbers side by side. */
static float tens(int rank, int i)
{
    return rank == 0 ? (float)(10 * i) : -1;
}
static float own_ten(int rank, int n, int i)
{
    return (float)(10 * rank);
}
static int run_scatter(pg_t *pg, float *in, float *out, int n, ddp_error_t *err)
{
    return pg_scatter(pg, in, out, 1, PG_FLOAT32, 0, err);
}
static float rank_number(int rank, int i)
{
    return (float)rank;
}
static float position(int rank, int n, int i)
{
    return (float)i;
}
static int run_gather(pg_t *pg, float *in, float *out, int n, ddp_error_t *err)
{
    return pg_gather(pg, in, out, 1, PG_FLOAT32, 0, err);
}
static int run_all_gather(pg_t *pg, float *in, float *out, int n, ddp_error_t *err)
{
    return pg_all_gather(pg, in, out, 1, PG_FLOAT32, err);
}

/* reduce_scatter: rank q contributes q + i at position i; rank r gets the sum at position r. */
static float rank_plus_position(int rank, int i)
{
    return (float)(rank + i);
}
static float column_sum(int rank, int n, int i)
{
    return (float)(n * rank + n * (n - 1) / 2);
}
static int run_reduce_scatter(pg_t *pg, float *in, float *out, int n, ddp_error_t *err)
{
    return pg_reduce_scatter(pg, in, out, 1, PG_FLOAT32, PG_SUM, err);
}

static const case_t cases[] = {
    {"send/recv", two, two, rank_value, from_prev, run_send_recv, 0},
    {"isend/irecv", two, two, rank_value, from_prev, run_isend_irecv, 0},
    {"broadcast", two, two, bcast_input, bcast_expected, run_broadcast, 0},
    {"reduce(sum)", two, two, plus_one, sum_of_plus_one, run_reduce, 1},
    {"all_reduce(sum)", two, two, plus_one, sum_of_plus_one, run_all_reduce, 0},
    {"scatter", per_rank, one, tens, own_ten, run_scatter, 0},
    {"gather", one, per_rank, rank_number, position, run_gather, 1},
    {"all_gather", one, per_rank, rank_number, position, run_all_gather, 0},
    {"reduce_scatter(sum)", per_rank, one, rank_plus_position, column_sum, run_reduce_scatter, 0},
};

static void show(char *buf, size_t size, const float *v, int count)
{
    size_t len = (size_t)snprintf(buf, size, "[");
    for (int i = 0; i < count && i < MAX_SHOWN; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%g", i ? ", " : "", v[i]);
    snprintf(buf + len, size - len, "%s]", count > MAX_SHOWN ? ", ..." : "");
}

/* Runs one case; 0 when the result is right, 1 when it is wrong, -1 when the operation failed. */
static int run_case(pg_t *pg, const case_t *c, ddp_error_t *err)
{
    int r = pg_rank(pg), n = pg_size(pg);
    int nin = c->in_count(n), nout = c->out_count(n);
    int has_result = !c->root_only || r == 0;
    float *host_in = calloc((size_t)nin, sizeof *host_in);
    float *host_out = calloc((size_t)nout, sizeof *host_out);
    float *in = pg_alloc(pg, (size_t)nin * sizeof(float), err);
    float *out = c->run == run_broadcast ? in : pg_alloc(pg, (size_t)nout * sizeof(float), err);
    int rc = -1;
    if (!host_in || !host_out || !in || !out)
        goto done;
    for (int i = 0; i < nin; i++)
        host_in[i] = c->input(r, i);
    for (int i = 0; i < nout; i++)
        /* Alone, point to point has nobody to talk to: the result is the rank's own input. */
        host_out[i] = n == 1 ? c->input(r, i) : -99;
    if (pg_copy_in(pg, in, host_in, (size_t)nin * sizeof(float), err) ||
        (out != in && pg_copy_in(pg, out, host_out, (size_t)nout * sizeof(float), err)) ||
        c->run(pg, in, out, n, err) ||
        pg_copy_out(pg, host_out, out, (size_t)nout * sizeof(float), err))
        goto done;
    char got[256], given[256];
    show(given, sizeof given, host_in, nin);
    show(got, sizeof got, host_out, nout);
    rc = 0;
    for (int i = 0; i < nout && has_result; i++)
        if (host_out[i] != c->expected(r, n, i))
            rc = 1;
    if (has_result)
        printf("Rank %d: %-19s %s -> %s %s\n", r, c->name, given, got, rc ? "WRONG" : "ok");
    else
        printf("Rank %d: %-19s %s -> (result on rank 0)\n", r, c->name, given);
    if (rc) {
        float expected[MAX_SHOWN];
        for (int i = 0; i < nout && i < MAX_SHOWN; i++)
            expected[i] = c->expected(r, n, i);
        show(got, sizeof got, expected, nout);
        printf("Rank %d: %-19s expected %s\n", r, c->name, got);
    }
done:
    if (out != in)
        pg_free(pg, out);
    pg_free(pg, in);
    free(host_in);
    free(host_out);
    return rc;
}

int cmd_collectives(int argc, char **argv)
{
    session_options_t so = {0};
    if (session_parse(&argc, argv, &so) || session_no_arguments("collectives", argc, argv))
        return 2;
    pg_t *pg = session_open("collectives", &so);
    if (!pg)
        return 1;
    ddp_error_t err;
    int wrong = 0, rank = pg_rank(pg);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = run_case(pg, &cases[i], &err);
        fflush(stdout);
        if (rc < 0) {
            fprintf(stderr, "ddp-train collectives: rank %d: %s: %s\n", rank, cases[i].name,
                    err.msg);
            return session_close("collectives", pg, 1);
        }
        wrong += rc;
    }
    if (pg_barrier(pg, &err)) {
        fprintf(stderr, "ddp-train collectives: rank %d: %s\n", rank, err.msg);
        return session_close("collectives", pg, 1);
    }
    printf("Rank %d: barrier ok; %d of %zu operations %s\n", rank,
           wrong ? wrong : (int)(sizeof cases / sizeof *cases), sizeof cases / sizeof *cases,
           wrong ? "gave WRONG results" : "correct");
    return session_close("collectives", pg, wrong ? 1 : 0);
}
