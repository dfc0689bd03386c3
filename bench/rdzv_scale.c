/* rdzv_scale: K simulated agents join one node-0 store, publish a record each and receive their
 * ranks (the agents' real rendezvous code), as threads of one process; the store runs in a child
 * process so that its memory can be read apart. Prints, per K, the median seconds and the store's
 * peak resident memory per joined agent (user space: kernel socket buffers are not in it). A K
 * that needs more descriptors than one process may hold here is reported, not run.
 *
 * As root it first moves into a network namespace of its own with the whole ephemeral port range
 * (one host's 28,000 default ports to one store address cannot carry 32,768 agents; real agents
 * come from as many hosts) and raises its descriptor limit. */
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ddp_clock.h"
#include "rendezvous.h"
#include "store_client.h"
#include "store_server.h"

#define STACK_BYTES (64 * 1024)

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

static long status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':')
            kib = atol(line + n + 1);
    if (f)
        fclose(f);
    return kib;
}

/* The store's process: serves until told to stop on `in`, then writes its resident memory
 * before the agents came and at its peak. */
static void store_process(int in, int out)
{
    ddp_error_t err;
    ddp_store_server_t *s =
        ddp_store_server_start("127.0.0.1", 0, token, strlen(token), NULL, NULL, &err);
    if (!s) {
        fprintf(stderr, "rdzv_scale: %s\n", err.msg);
        _exit(1);
    }
    long before = status_kib("VmRSS");
    int port = ddp_store_server_port(s);
    char byte;
    if (write(out, &port, sizeof port) != sizeof port || read(in, &byte, 1) != 1)
        _exit(1);
    long kib[2] = {before, status_kib("VmHWM")};
    if (write(out, kib, sizeof kib) != sizeof kib)
        _exit(1);
    _exit(0);
}

/* One rendezvous of k agents: seconds (or -1) and the store's peak KiB per agent. */
static double run_once(int k, char *stacks, double *kib_per_agent)
{
    int to_store[2], from_store[2];
    if (pipe(to_store) || pipe(from_store))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(to_store[1]);
        close(from_store[0]);
        store_process(to_store[0], from_store[1]);
    }
    close(to_store[0]);
    close(from_store[1]);
    int port = 0;
    if (pid < 0 || read(from_store[0], &port, sizeof port) != sizeof port)
        return -1;
    struct agent *a = calloc((size_t)k, sizeof *a);
    pthread_t *t = calloc((size_t)k, sizeof *t);
    int64_t start = ddp_now_ms();
    for (int i = 0; i < k; i++) {
        a[i] = (struct agent){
            .port = port, .node = i, .nnodes = k, .deadline = ddp_deadline_in(60000)};
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstack(&attr, stacks + (size_t)i * STACK_BYTES, STACK_BYTES);
        int rc = pthread_create(&t[i], &attr, agent_main, &a[i]);
        pthread_attr_destroy(&attr);
        if (rc) {
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
    long kib[2] = {0, 0};
    if (write(to_store[1], "x", 1) != 1 || read(from_store[0], kib, sizeof kib) != sizeof kib)
        failed++;
    *kib_per_agent = (double)(kib[1] - kib[0]) / k;
    close(to_store[1]);
    close(from_store[0]);
    waitpid(pid, NULL, 0);
    free(a);
    free(t);
    return failed ? -1 : secs;
}

/* A network namespace of our own with loopback up and every port for connecting. */
static void own_network(void)
{
    if (unshare(CLONE_NEWNET)) {
        fprintf(stderr, "rdzv_scale: not root: in this network namespace, with its port range "
                        "(K above about 28,000 will fail)\n");
        return;
    }
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct ifreq ifr = {.ifr_name = "lo"};
    if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) ||
        (ifr.ifr_flags |= IFF_UP, ioctl(fd, SIOCSIFFLAGS, &ifr))) {
        perror("rdzv_scale: loopback up");
        exit(1);
    }
    close(fd);
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "w");
    if (!f || fprintf(f, "1024 65535\n") < 0 || fclose(f)) {
        perror("rdzv_scale: port range");
        exit(1);
    }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv)
{
    int kmax = 1;
    for (int i = 1; i < argc; i++)
        if (atoi(argv[i]) > kmax)
            kmax = atoi(argv[i]);
    own_network();
    /* Both ends of every connection, in this process and the store's. */
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_max < (rlim_t)kmax + 1024)
        rl.rlim_max = (rlim_t)kmax + 1024;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl)) {
        getrlimit(RLIMIT_NOFILE, &rl);
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    /* One mapping for every agent's stack: a guard page each would pass the map count limit. */
    char *stacks = mmap(NULL, (size_t)kmax * STACK_BYTES, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stacks == MAP_FAILED) {
        perror("rdzv_scale: stacks");
        return 1;
    }
    int repeats = 5;
    for (int i = 1; i < argc; i++) {
        int k = atoi(argv[i]);
        double times[16], kib[16];
        if ((rlim_t)k + 64 > rl.rlim_cur) {
            printf("%d - - store process limited to %llu descriptors (hard RLIMIT_NOFILE)\n", k,
                   (unsigned long long)rl.rlim_cur);
            continue;
        }
        for (int r = 0; r < repeats; r++)
            if ((times[r] = run_once(k, stacks, &kib[r])) < 0)
                return 1;
        qsort(times, (size_t)repeats, sizeof times[0], cmp_double);
        qsort(kib, (size_t)repeats, sizeof kib[0], cmp_double);
        printf("%d %.4f %.2f\n", k, times[repeats / 2], kib[repeats / 2]);
        fflush(stdout);
    }
    return 0;
}
