/* rdzv_scale: K simulated agents join one node-0 store, publish a record each and receive their
 * ranks (the agents' real rendezvous code), as threads of one process. Prints seconds per K. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "ddp_clock.h"
#include "rendezvous.h"
#include "store_client.h"
#include "store_server.h"

static const char token[] = "bench-token";

struct agent {
    int port, node, nnodes;
    int64_t deadline;
    int rc;
    ddp_error_t err;
};

static void *agent_main(void *arg)
{
    struct agent *a = arg;
    a->rc = -1;
    ddp_store_client_t *c = ddp_store_client_connect("127.0.0.1", a->port, token, strlen(token),
                                                     a->deadline, NULL, &a->err);
    if (!c)
        return NULL;
    char host[32];
    snprintf(host, sizeof host, "host%d", a->node);
    ddp_rdzv_join_t j = {.node_rank = a->node,
                         .nnodes = a->nnodes,
                         .nproc = 1,
                         .host = host,
                         .worker_port = 29500,
                         .deadline = a->deadline};
    ddp_rdzv_result_t r;
    a->rc = ddp_rdzv_join(c, &j, &r, &a->err);
    if (a->rc == 0 && r.rank_base != a->node)
        a->rc = -1;
    ddp_rdzv_result_free(&r);
    ddp_store_client_close(c);
    return NULL;
}

/* One rendezvous of k agents; returns seconds, or -1. */
static double run_once(int k)
{
    ddp_error_t err;
    ddp_store_server_t *s =
        ddp_store_server_start("127.0.0.1", 0, token, strlen(token), NULL, NULL, &err);
    if (!s) {
        fprintf(stderr, "rdzv_scale: %s\n", err.msg);
        return -1;
    }
    struct agent *a = calloc((size_t)k, sizeof *a);
    pthread_t *t = calloc((size_t)k, sizeof *t);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    int64_t start = ddp_now_ms();
    for (int i = 0; i < k; i++) {
        a[i] = (struct agent){.port = ddp_store_server_port(s),
                              .node = i,
                              .nnodes = k,
                              .deadline = ddp_deadline_in(60000)};
        if (pthread_create(&t[i], &attr, agent_main, &a[i])) {
            fprintf(stderr, "rdzv_scale: cannot start thread %d\n", i);
            exit(1);
        }
    }
    int failed = 0;
    for (int i = 0; i < k; i++) {
        pthread_join(t[i], NULL);
        if (a[i].rc && failed++ == 0)
            fprintf(stderr, "rdzv_scale: agent %d: %s\n", i, a[i].err.msg);
    }
    double secs = (ddp_now_ms() - start) / 1000.0;
    ddp_store_server_stop(s);
    free(a);
    free(t);
    return failed ? -1 : secs;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    int repeats = 5;
    for (int i = 1; i < argc; i++) {
        int k = atoi(argv[i]);
        double times[16];
        for (int r = 0; r < repeats; r++)
            if ((times[r] = run_once(k)) < 0)
                return 1;
        qsort(times, (size_t)repeats, sizeof times[0], cmp_double);
        printf("%d %.4f\n", k, times[repeats / 2]);
        fflush(stdout);
    }
    return 0;
}
