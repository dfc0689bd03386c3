/* Loopback TCP throughput, the ceiling for a tcp process group on one machine.
 *   loopback STREAMS   -> `streams aggregate_bytes_per_second`
 * STREAMS connections, each carrying 1 GiB from a writer process to a reader process, all at
 * once (a 2-rank ring runs two such streams, one each way). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TOTAL (1L << 30)
#define CHUNK (256 << 10)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void stream(int fd, int writer)
{
    static char buf[CHUNK];
    for (long moved = 0; moved < TOTAL;) {
        ssize_t n = writer ? write(fd, buf, CHUNK) : read(fd, buf, CHUNK);
        if (n <= 0)
            exit(1);
        moved += n;
    }
    exit(0);
}

int main(int argc, char **argv)
{
    int streams = argc > 1 ? atoi(argv[1]) : 1;
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    if (bind(lfd, (struct sockaddr *)&sa, len) || listen(lfd, streams) ||
        getsockname(lfd, (struct sockaddr *)&sa, &len))
        return perror("listen"), 1;
    double start = now();
    for (int s = 0; s < streams; s++) {
        int cfd = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(cfd, (struct sockaddr *)&sa, len))
            return perror("connect"), 1;
        int afd = accept(lfd, NULL, NULL);
        if (fork() == 0)
            stream(cfd, 1);
        if (fork() == 0)
            stream(afd, 0);
        close(cfd);
        close(afd);
    }
    int status, ok = 1;
    while (wait(&status) > 0)
        ok &= WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok)
        return fprintf(stderr, "loopback: a stream failed\n"), 1;
    printf("%d %.0f\n", streams, (double)streams * TOTAL / (now() - start));
    return 0;
}
