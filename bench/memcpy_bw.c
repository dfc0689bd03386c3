/* This machine's memcpy, the limit columns of bench/allreduce.sh.
 *   memcpy_bw PROCS BUDGET SIZE...   -> `bytes seconds_per_copy` per size
 * PROCS processes at once (released together), each copying SIZE bytes between two buffers of
 * its own, touched first; the slowest one's time is printed. One process is the single-thread
 * memcpy; N at once is what N ranks that each read and write every byte could do together.
 * Iterations as allreduce.sh's rule (BUDGET bytes per size, 5 to 200), a quarter as warm-up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long iterations(long budget, long size)
{
    long n = budget / size;
    return n < 5 ? 5 : n > 200 ? 200 : n;
}

/* One process's copies, after `go` closes; writes its seconds per copy to `report`. */
static void copier(long size, long n, int go, int report)
{
    char *src = malloc((size_t)size), *dst = malloc((size_t)size), byte;
    if (!src || !dst)
        _exit(1);
    memset(src, 1, (size_t)size);
    memset(dst, 0, (size_t)size);
    for (long i = 0; i < (n / 4 > 2 ? n / 4 : 2); i++)
        memcpy(dst, src, (size_t)size);
    if (read(go, &byte, 1) < 0)
        _exit(1);
    double start = now();
    for (long i = 0; i < n; i++) {
        memcpy(dst, src, (size_t)size);
        __asm__ volatile("" : : "r"(dst) : "memory"); /* every copy happens */
    }
    double spent = (now() - start) / (double)n;
    _exit(write(report, &spent, sizeof spent) == sizeof spent ? 0 : 1);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: memcpy_bw PROCS BUDGET SIZE...\n");
        return 2;
    }
    int procs = atoi(argv[1]);
    long budget = atol(argv[2]);
    for (int a = 3; a < argc; a++) {
        long size = atol(argv[a]), n = iterations(budget, size);
        int go[2], report[2];
        if (pipe(go) || pipe(report))
            return 1;
        for (int p = 0; p < procs; p++)
            if (fork() == 0) {
                close(go[1]);
                copier(size, n, go[0], report[1]);
            }
        close(go[0]);
        close(report[1]);
        sleep(1); /* every copier warmed up and waiting */
        close(go[1]);
        double slowest = 0, spent;
        while (read(report[0], &spent, sizeof spent) == sizeof spent)
            slowest = spent > slowest ? spent : slowest;
        close(report[0]);
        while (wait(NULL) > 0)
            ;
        printf("%ld %.9f\n", size, slowest);
        fflush(stdout);
    }
    return 0;
}
