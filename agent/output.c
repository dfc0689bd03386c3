#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "ddp_clock.h"

#define OUTPUT_PIPE_BYTES (1 << 20)

typedef struct {
    int pipe_read, real_fd;
    atomic_int busy; /* the copier holds bytes it has not written yet */
    pthread_t thread;
    int started;
} stream_t;

static stream_t streams[3]; /* [1] stdout, [2] stderr */
static atomic_ulong dropped_lines;

static void *copy_out(void *arg)
{
    stream_t *s = arg;
    char buf[65536];
    for (;;) {
        /* busy is set before any byte leaves the pipe, so output_finish never sees an empty
         * pipe and an idle copier while bytes are only in buf. */
        struct pollfd ready = {.fd = s->pipe_read, .events = POLLIN};
        if (poll(&ready, 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        s->busy = 1;
        ssize_t n = read(s->pipe_read, buf, sizeof buf);
        if (n <= 0) {
            s->busy = 0;
            if (n < 0 && errno == EINTR)
                continue;
            return NULL;
        }
        for (char *p = buf; n > 0;) {
            ssize_t w = write(s->real_fd, p, (size_t)n);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break; /* the real output is gone: nothing sensible is left to do */
            p += w;
            n -= w;
        }
        s->busy = 0;
    }
}

int output_start(ddp_error_t *err)
{
    for (int fd = 1; fd <= 2; fd++) {
        stream_t *s = &streams[fd];
        int p[2];
        if ((s->real_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0 || pipe2(p, O_CLOEXEC))
            return ddp_error_set(err, "output pipes: %s", strerror(errno));
        fcntl(p[1], F_SETPIPE_SZ, OUTPUT_PIPE_BYTES); /* a smaller pipe still works */
        if (dup2(p[1], fd) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
            return ddp_error_set(err, "output pipes: %s", strerror(errno));
        close(p[1]);
        s->pipe_read = p[0];
        /* The copier takes no signals: the agent reads them through its signalfd. */
        sigset_t all, before;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &before);
        int rc = pthread_create(&s->thread, NULL, copy_out, s);
        pthread_sigmask(SIG_SETMASK, &before, NULL);
        if (rc)
            return ddp_error_set(err, "output thread: %s", strerror(rc));
        pthread_detach(s->thread);
        s->started = 1;
    }
    return 0;
}

void output_write(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            unsigned long lines = 0;
            for (size_t i = 0; i < len; i++)
                lines += p[i] == '\n';
            dropped_lines += lines ? lines : 1;
            return;
        }
        p += n;
        len -= (size_t)n;
    }
}

void output_finish(int64_t stall_ms)
{
    fflush(stdout);
    fflush(stderr);
    unsigned long dropped = dropped_lines;
    if (dropped) {
        char line[160];
        int n = snprintf(line, sizeof line,
                         "ddpjob-agent: %lu line(s) of output dropped: nothing read this agent's "
                         "output for a while\n",
                         dropped);
        output_write(2, line, (size_t)n);
    }
    for (int fd = 1; fd <= 2; fd++) {
        stream_t *s = &streams[fd];
        int queued = 0, before = -1;
        int64_t moved = ddp_now_ms(), give_up = moved + 10 * stall_ms;
        while (s->started && ((ioctl(s->pipe_read, FIONREAD, &queued) == 0 && queued > 0) || s->busy)) {
            int64_t now = ddp_now_ms();
            if (queued != before) {
                before = queued;
                moved = now;
            } else if ((s->busy && now - moved > stall_ms) || now > give_up) {
                /* Stuck in a write nobody reads. A copier not yet scheduled on a busy machine
                 * is not stuck, and is waited for (within the cap). */
                break;
            }
            ddp_sleep_ms(10);
        }
    }
}
