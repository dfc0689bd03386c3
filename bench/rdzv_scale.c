/* rdzv_scale: K simulated agents join one node-0 store, publish a record each and receive their
 * ranks (the agents' real rendezvous code, with the agent's notes), as threads of up to 16,384
 * per process; the store runs in a process of its own (ahead of the agents in the scheduler: a real
 * store has its host's CPUs), with relay processes of its own where K is more than one process may
 * hold descriptors for. The time runs from the start of the first agent's thread to the last
 * agent's ranks; agents hold their store connections until then, as real agents do while their
 * job runs. Prints, per K, the median seconds, the store's peak resident memory per joined agent
 * (its relays' included; user space: kernel socket buffers are not in it), the number of relays,
 * the CPU seconds of the store's processes and of the agents', and the median seconds until every
 * agent has closed its connection and exited (the figure before session 22).
 *
 * As root it first moves into a network namespace of its own with the whole ephemeral port range
 * (one host's 28,000 default ports to one store address cannot carry 32,768 agents; real agents
 * come from as many hosts), and raises a kernel.pid_max too low for K threads. There the store
 * listens on every address, and each 128 agents connect to an address of 127.0.0.0/8 of their
 * own: tens of thousands of connections to one address and port make the kernel search its used
 * ports at every connect (a quarter of all CPU at 32,768), where a real agent, alone on its host,
 * finds one at once. */
#include <net/if.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/job/rendezvous.h"
#include "runtime/job/store_client.h"
#include "runtime/job/store_server.h"

#define STACK_BYTES (64 * 1024)
/* Agents per simulating process: their descriptors must fit one process's limit. */
#define AGENTS_PER_PROCESS 16384

static const char token[] = "bench-token";

/* In a network namespace of its own: the store listens on every address (there is only
 * loopback) and agents spread over many. */
static int own_namespace;
#define AGENTS_PER_ADDRESS 128

struct agent {
    int port, node, nnodes;
    int64_t deadline, ranks_at;
    int rc;
    ddp_error_t err;
};

/* This process's agents, until each has its ranks. */
static pthread_barrier_t holding;

/* The agent's note of who is missing, every 5 s, with what it reads from the store. Its check
 * for a stop is left out: that is a poll of the agent's own socket every 250 ms, nothing the
 * store sees, and tens of thousands of threads doing it here would time this machine's
 * scheduler instead. */
static void say_nothing(void *ctx, const char *line) {}

/* The agent's part once connected: its ranks, and when it had them. */
static void join(struct agent *a, ddp_store_client_t *c)
{
    char host[32];
    snprintf(host, sizeof host, "host%d", a->node);
    ddp_rdzv_join_t j = {.node_rank = a->node,
                         .nnodes = a->nnodes,
                         .nproc = 1,
                         .host = host,
                         .worker_port = 29500,
                         .deadline = a->deadline,
                         .waiting = say_nothing};
    ddp_rdzv_result_t r;
    a->rc = ddp_rdzv_join(c, &j, &r, &a->err);
    if (a->rc == 0 && r.rank_base != a->node)
        a->rc = -1;
    a->ranks_at = ddp_now_ms();
    ddp_rdzv_result_free(&r);
}

static void *agent_main(void *arg)
{
    struct agent *a = arg;
    a->rc = -1;
    a->deadline = ddp_deadline_in(60000);
    char store_addr[32] = "127.0.0.1";
    int spread = own_namespace ? a->node / AGENTS_PER_ADDRESS : 0;
    if (spread)
        snprintf(store_addr, sizeof store_addr, "127.0.%d.%d", spread / 250, 1 + spread % 250);
    ddp_store_client_t *c = ddp_store_client_connect(store_addr, a->port, token, strlen(token),
                                                     a->deadline, NULL, &a->err);
    if (c)
        join(a, c);
    /* Closing while others still join would time the agents' teardown, not the join. */
    pthread_barrier_wait(&holding);
    ddp_store_client_close(c);
    return NULL;
}

static long status_kib(pid_t pid, const char *field)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
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

/* The store's relays: its children. */
static int relay_pids(pid_t *pids, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
    FILE *f = fopen(path, "r");
    int n = 0, pid;
    while (f && n < max && fscanf(f, "%d", &pid) == 1)
        pids[n++] = pid;
    if (f)
        fclose(f);
    return n;
}

/* The store's process: serves until told to stop on `in`, then writes the growth of its
 * resident memory and its relays' (each starts as a copy of this process) and their number. */
static void store_process(int k, int in, int out)
{
    ddp_error_t err;
    long before = status_kib(getpid(), "VmHWM");
    ddp_store_server_t *s =
        ddp_store_server_start(own_namespace ? "0.0.0.0" : "127.0.0.1", 0, token, strlen(token),
                               (size_t)k, NULL, NULL, &err);
    if (!s) {
        fprintf(stderr, "rdzv_scale: %s\n", err.msg);
        _exit(1);
    }
    int port = ddp_store_server_port(s);
    char byte;
    if (write(out, &port, sizeof port) != sizeof port || read(in, &byte, 1) != 1)
        _exit(1);
    pid_t relays[STORE_MAX_RELAYS];
    int n = relay_pids(relays, STORE_MAX_RELAYS);
    long kib[2] = {status_kib(getpid(), "VmHWM") - before, n};
    for (int i = 0; i < n; i++)
        kib[0] += status_kib(relays[i], "VmHWM") - before;
    if (write(out, kib, sizeof kib) != sizeof kib)
        _exit(1);
    ddp_store_server_stop(s);
    _exit(0);
}

/* Agents first..last-1 as threads of this process (one of several: each holds its agents'
 * descriptors); *last_ranks gets the time the last of them had its ranks. Exits 0, or 1 after
 * naming the first that failed. */
static void agents_process(int first, int last, int k, int port, char *stacks, int64_t *last_ranks)
{
    int n = last - first, failed = 0;
    struct agent *a = calloc((size_t)n, sizeof *a);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    pthread_barrier_init(&holding, NULL, (unsigned)n);
    for (int i = 0; i < n; i++) {
        a[i] = (struct agent){.port = port, .node = first + i, .nnodes = k};
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstack(&attr, stacks + (size_t)i * STACK_BYTES, STACK_BYTES);
        int rc = pthread_create(&t[i], &attr, agent_main, &a[i]);
        pthread_attr_destroy(&attr);
        if (rc) {
            fprintf(stderr, "rdzv_scale: cannot start thread %d\n", first + i);
            _exit(1);
        }
    }
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        if (a[i].rc && failed++ == 0)
            fprintf(stderr, "rdzv_scale: agent %d: %s\n", first + i, a[i].err.msg);
        if (a[i].ranks_at > *last_ranks)
            *last_ranks = a[i].ranks_at;
    }
    _exit(failed ? 1 : 0);
}

/* What one rendezvous of k agents took. */
struct run {
    double secs, exit_secs, kib_per_agent;
    /* CPU seconds, user and system, of the store's processes and of the simulated agents' (the
     * kernel's loopback work lands in whichever process was running, so the split is rough). */
    double store_cpu, agents_cpu;
    int relays;
};

static double cpu_seconds(const struct rusage *ru)
{
    return (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 + (double)ru->ru_stime.tv_sec +
           ru->ru_stime.tv_usec / 1e6;
}

/* One rendezvous of k agents: 0, or -1 when it failed. */
static int run_once(int k, char *stacks, struct run *run)
{
    int to_store[2], from_store[2];
    if (pipe(to_store) || pipe(from_store))
        return -1;
    pid_t store = fork();
    if (store == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* Ahead of the simulated agents on these few cores: the real store has its host's CPUs
         * to itself while tens of thousands of other hosts run their agents. */
        setpriority(PRIO_PROCESS, 0, -10);
        close(to_store[1]);
        close(from_store[0]);
        store_process(k, to_store[0], from_store[1]);
    }
    close(to_store[0]);
    close(from_store[1]);
    int port = 0;
    if (store < 0 || read(from_store[0], &port, sizeof port) != sizeof port)
        return -1;
    int procs = (k + AGENTS_PER_PROCESS - 1) / AGENTS_PER_PROCESS, failed = 0;
    pid_t *pids = calloc((size_t)procs, sizeof *pids);
    int64_t *last_ranks = mmap(NULL, (size_t)procs * sizeof *last_ranks, PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!pids || last_ranks == MAP_FAILED)
        return -1;
    int64_t start = ddp_now_ms();
    for (int p = 0; p < procs; p++) {
        int first = (int)((long)k * p / procs), last = (int)((long)k * (p + 1) / procs);
        if ((pids[p] = fork()) == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            agents_process(first, last, k, port, stacks, &last_ranks[p]);
        }
    }
    run->agents_cpu = 0;
    for (int p = 0; p < procs; p++) {
        int status = 1;
        struct rusage ru;
        if (pids[p] < 0 || wait4(pids[p], &status, 0, &ru) < 0 || status != 0)
            failed++;
        else
            run->agents_cpu += cpu_seconds(&ru);
    }
    run->exit_secs = (ddp_now_ms() - start) / 1000.0;
    run->secs = 0;
    for (int p = 0; p < procs; p++)
        if (last_ranks[p] - start > run->secs * 1000)
            run->secs = (last_ranks[p] - start) / 1000.0;
    munmap(last_ranks, (size_t)procs * sizeof *last_ranks);
    long kib[2] = {0, 0};
    if (write(to_store[1], "x", 1) != 1 || read(from_store[0], kib, sizeof kib) != sizeof kib)
        failed++;
    run->kib_per_agent = (double)kib[0] / k;
    run->relays = (int)kib[1];
    close(to_store[1]);
    close(from_store[0]);
    /* The store's own and its relays' (it reaps them). */
    struct rusage ru;
    run->store_cpu = wait4(store, NULL, 0, &ru) == store ? cpu_seconds(&ru) : 0;
    free(pids);
    return failed ? -1 : 0;
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
    own_namespace = 1;
}

/* Every agent is a thread, and threads take process ids: a kernel.pid_max below K and a margin
 * (32,768 on some machines; systemd sets 4,194,304) is raised, as root. */
static void raise_pid_max(int k)
{
    FILE *f = fopen("/proc/sys/kernel/pid_max", "r+");
    long now = 0;
    if (!f || fscanf(f, "%ld", &now) != 1 || now >= 2L * k + 4096) {
        if (f)
            fclose(f);
        return;
    }
    rewind(f);
    if (fprintf(f, "%ld\n", 2L * k + 4096) < 0 || fclose(f))
        fprintf(stderr, "rdzv_scale: kernel.pid_max is %ld: %d agents may not all start\n", now, k);
    else
        fprintf(stderr, "rdzv_scale: raised kernel.pid_max from %ld to %ld\n", now, 2L * k + 4096);
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
    raise_pid_max(kmax);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    signal(SIGPIPE, SIG_IGN);
    /* One malloc arena: thousands of threads would otherwise make their own, and the mappings
     * that takes cost more than the agents' work. */
    mallopt(M_ARENA_MAX, 1);
    /* One mapping for every agent's stack: a guard page each would pass the map count limit. */
    if (kmax > AGENTS_PER_PROCESS)
        kmax = AGENTS_PER_PROCESS;
    char *stacks = mmap(NULL, (size_t)kmax * STACK_BYTES, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stacks == MAP_FAILED) {
        perror("rdzv_scale: stacks");
        return 1;
    }
    int repeats = 5;
    for (int i = 1; i < argc; i++) {
        int k = atoi(argv[i]);
        double times[16], kib[16], store_cpu[16], agents_cpu[16], exit_times[16];
        struct run run;
        for (int r = 0; r < repeats; r++) {
            if (run_once(k, stacks, &run))
                return 1;
            times[r] = run.secs;
            kib[r] = run.kib_per_agent;
            store_cpu[r] = run.store_cpu;
            agents_cpu[r] = run.agents_cpu;
            exit_times[r] = run.exit_secs;
        }
        double *columns[] = {times, kib, store_cpu, agents_cpu, exit_times};
        for (int c = 0; c < 5; c++)
            qsort(columns[c], (size_t)repeats, sizeof times[0], cmp_double);
        printf("%d %.4f %.2f %d %.2f %.2f %.4f\n", k, times[repeats / 2], kib[repeats / 2],
               run.relays, store_cpu[repeats / 2], agents_cpu[repeats / 2],
               exit_times[repeats / 2]);
        fflush(stdout);
    }
    return 0;
}
