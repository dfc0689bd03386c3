/* The reducer at its boundaries: how the buffer is cut into buckets (the first bucket's 1 MiB,
 * the cap, sizes one element either side of them), and, with two real ranks over TCP, that a
 * bucket is averaged only once backward has passed all of it: backward writes the gradients
 * from the end in steps that do not line up with the buckets, with garbage ahead of it, and
 * every element must come out as the exact mean. */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/train/model/device.h"
#include "runtime/pg/pg.h"
#include "runtime/train/model/reducer.h"
#include "tests/unit/tap.h"

#define FIRST (REDUCER_FIRST_BUCKET_BYTES / sizeof(float))

static int buckets_for(pg_t *pg, size_t count, size_t cap_bytes)
{
    float *g = calloc(count + 1, sizeof *g);
    ddp_error_t err;
    reducer_t *r = reducer_create(pg, g, count, cap_bytes, &device_cpu, &err);
    int n = r ? reducer_bucket_count(r) : -1;
    reducer_destroy(r);
    free(g);
    return n;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) ||
        getsockname(fd, (struct sockaddr *)&a, &len))
        return -1;
    close(fd);
    return ntohs(a.sin_port);
}

/* One rank's run: 0 when every element is the mean of both ranks' values. */
static int rank_main(int rank, int port, size_t count, size_t cap_bytes, size_t step)
{
    pg_world_t w = {.rank = rank, .size = 2, .master_port = port, .source = "test"};
    snprintf(w.master_addr, sizeof w.master_addr, "127.0.0.1");
    ddp_error_t err;
    pg_options_t o = {.timeout_ms = 60000};
    pg_t *pg = pg_create(&w, &o, &err);
    float *g = malloc(count * sizeof *g);
    reducer_t *r = pg && g ? reducer_create(pg, g, count, cap_bytes, &device_cpu, &err) : NULL;
    if (!r) {
        fprintf(stderr, "rank %d: %s\n", rank, err.msg);
        return 2;
    }
    for (size_t i = 0; i < count; i++)
        g[i] = NAN; /* what a bucket sent too early would carry */
    reducer_start(r);
    for (size_t hi = count; hi > 0;) {
        size_t lo = hi > step ? hi - step : 0;
        for (size_t i = lo; i < hi; i++)
            g[i] = (float)((rank + 1) * (int)(i % 97));
        reducer_ready(r, lo);
        hi = lo;
    }
    int bad = reducer_finish(r, &err) ? -1 : 0;
    for (size_t i = 0; !bad && i < count; i++)
        if (g[i] != 1.5f * (float)(i % 97))
            bad = (int)i + 1;
    if (bad)
        fprintf(stderr, "rank %d: element %d wrong (%s)\n", rank, bad - 1, bad < 0 ? err.msg : "");
    reducer_destroy(r);
    int closed = pg_destroy(pg, &err);
    free(g);
    return bad || closed ? 1 : 0;
}

static int two_ranks(size_t count, size_t cap_bytes, size_t step)
{
    int port = free_port();
    pid_t pids[2];
    for (int rank = 0; rank < 2; rank++)
        if ((pids[rank] = fork()) == 0)
            _exit(rank_main(rank, port, count, cap_bytes, step));
    int ok_both = 1;
    for (int rank = 0; rank < 2; rank++) {
        int st;
        ok_both &=
            waitpid(pids[rank], &st, 0) == pids[rank] && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    return ok_both;
}

int main(void)
{
    pg_world_t one = {.rank = 0, .size = 1, .source = "test"};
    ddp_error_t err;
    pg_t *pg = pg_create(&one, NULL, &err);
    ok(pg != NULL, "a one-rank group");
    size_t cap = 4096; /* 1024 floats */
    ok(buckets_for(pg, 1, cap) == 1, "1 element: one bucket");
    ok(buckets_for(pg, FIRST - 1, cap) == 1, "just under the first bucket's 1 MiB: one bucket");
    ok(buckets_for(pg, FIRST, cap) == 1, "exactly 1 MiB: one bucket");
    ok(buckets_for(pg, FIRST + 1, cap) == 2, "1 MiB + 1 element: a bucket of 1 element more");
    ok(buckets_for(pg, FIRST + 1024, cap) == 2, "1 MiB + the cap: one capped bucket more");
    ok(buckets_for(pg, FIRST + 1025, cap) == 3, "1 MiB + the cap + 1: two more");
    ok(buckets_for(pg, FIRST + 10 * 1024, 25u << 20) == 2, "under the default cap: one more");
    ok(buckets_for(pg, FIRST + 5, 1) == 6, "a cap under one element: one element a bucket");
    pg_destroy(pg, &err);

    /* Backward steps that straddle bucket edges, that land on them, and one of the whole. */
    size_t count = FIRST + 3 * 1024 + 7;
    ok(two_ranks(count, cap, 1000),
       "2 ranks, steps of 1000 across 1024-element buckets: exact means");
    ok(two_ranks(count, cap, 1024), "2 ranks, steps of exactly the cap: exact means");
    ok(two_ranks(count, cap, count), "2 ranks, backward in one step: exact means");
    ok(two_ranks(FIRST - 3, cap, 777), "2 ranks, a buffer under the first bucket: exact means");
    return done_testing();
}
