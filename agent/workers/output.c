#include "agent/workers/output.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_clock.h"

#define OUTPUT_PIPE_BYTES (1 << 20)
/* At the end, a reader that had already stalled gets this long to move again. */
#define FINISH_AFTER_STALL_MS 2000

typedef struct {
    int source;
    unsigned long lines;
} drop_count_t;

typedef struct {
    int pipe_read, real_fd;
    pthread_t thread;
    int started;
    /* Set by the copier: it holds bytes it has not written yet; when it last wrote to the real
     * output or found nothing to write (ddp_now_ms). */
    atomic_int busy;
    _Atomic int64_t moved_at;
    /* What the pipe could not take yet, in order: queue[sent..len). */
    char *queue;
    size_t sent, len, cap;
    int64_t queued_at; /* when the queue last went from empty to not */
    /* The reader stalled: from when (its last move), and what has been dropped since. */
    int64_t stalled_from, dropping_since;
    drop_count_t *drops;
    size_t ndrops;
} stream_t;

static stream_t streams[3];                              /* [1] stdout, [2] stderr */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* the store's thread says things too */
static int64_t stall_deadline_ms = OUTPUT_STALL_DEFAULT_MS;

static void *copy_out(void *arg)
{
    stream_t *s = arg;
    char buf[65536];
    for (;;) {
        /* busy is set before any byte leaves the pipe, so output_finish never sees an empty
         * pipe and an idle copier while bytes are only in buf. */
        struct pollfd ready = {.fd = s->pipe_read, .events = POLLIN};
        s->moved_at = ddp_now_ms();
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
            s->moved_at = ddp_now_ms();
            p += w;
            n -= w;
        }
        s->busy = 0;
    }
}

int output_start(int64_t stall_ms, ddp_error_t *err)
{
    stall_deadline_ms = stall_ms;
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
        s->moved_at = ddp_now_ms();
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

/* Writes what the pipe takes now; returns how much it took. */
static size_t write_some(int fd, const char *p, size_t len)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, p + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    return done;
}

static void enqueue(stream_t *s, const char *p, size_t len)
{
    if (s->sent == s->len) {
        s->sent = s->len = 0;
        s->queued_at = ddp_now_ms();
    }
    if (s->len + len > s->cap) {
        if (s->sent) {
            memmove(s->queue, s->queue + s->sent, s->len - s->sent);
            s->len -= s->sent;
            s->sent = 0;
        }
        if (s->len + len > s->cap) {
            s->cap = 2 * (s->len + len);
            s->queue = ddp_xrealloc(s->queue, s->cap);
        }
    }
    memcpy(s->queue + s->len, p, len);
    s->len += len;
}

static void flush_queue(int fd, stream_t *s)
{
    s->sent += write_some(fd, s->queue + s->sent, s->len - s->sent);
}

static void count_drop(stream_t *s, int source, const char *p, size_t len)
{
    unsigned long lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += p[i] == '\n';
    size_t i = 0;
    while (i < s->ndrops && s->drops[i].source != source)
        i++;
    if (i == s->ndrops) {
        s->drops = ddp_xrealloc(s->drops, (s->ndrops + 1) * sizeof *s->drops);
        s->drops[s->ndrops++] = (drop_count_t){.source = source};
    }
    s->drops[i].lines += lines ? lines : 1;
}

/* "N line(s) of output dropped (rank 1: N, rank 3: N): ..." for what fd's stream dropped, into
 * line; returns its length, 0 when nothing was dropped. */
static size_t drop_message(int fd, const stream_t *s, int64_t now, char *line, size_t size)
{
    unsigned long total = 0;
    for (size_t i = 0; i < s->ndrops; i++)
        total += s->drops[i].lines;
    if (!total)
        return 0;
    size_t n = (size_t)snprintf(line, size, "ddpjob-agent: %lu line(s) of %s dropped (", total,
                                fd == 1 ? "stdout" : "stderr");
    for (size_t i = 0; i < s->ndrops && n < size; i++) {
        const char *sep = i ? ", " : "";
        n += s->drops[i].source == OUTPUT_AGENT
                 ? (size_t)snprintf(line + n, size - n, "%sthe agent: %lu", sep, s->drops[i].lines)
                 : (size_t)snprintf(line + n, size - n, "%srank %d: %lu", sep, s->drops[i].source,
                                    s->drops[i].lines);
    }
    if (n < size)
        n += (size_t)snprintf(line + n, size - n,
                              "): the reader of this agent's %s had taken nothing for %.1f s\n",
                              fd == 1 ? "stdout" : "stderr", (now - s->stalled_from) / 1000.0);
    if (n >= size) {
        n = size - 1;
        line[n - 1] = '\n';
    }
    return n;
}

/* The drop report goes to stderr whichever stream dropped: that is where the agent speaks. */
static void report_drops(int fd, stream_t *s, int64_t now)
{
    char line[1024];
    size_t n = drop_message(fd, s, now, line, sizeof line);
    s->ndrops = 0;
    s->dropping_since = 0;
    if (n) {
        stream_t *err = &streams[2];
        enqueue(err, line, n);
        flush_queue(2, err);
    }
}

/* The stall rule and its end, for one stream; with the lock held. */
static void watch_stall(int fd, stream_t *s, int64_t now)
{
    int64_t moved = s->moved_at;
    if (s->dropping_since) {
        if (moved > s->dropping_since)
            report_drops(fd, s, now);
        return;
    }
    if (s->sent < s->len && s->busy && now - moved >= stall_deadline_ms &&
        now - s->queued_at >= stall_deadline_ms) {
        s->stalled_from = moved > s->queued_at ? moved : s->queued_at;
        s->dropping_since = now;
    }
}

void output_write(int fd, int source, const char *p, size_t len)
{
    stream_t *s = &streams[fd];
    if (!s->started) {
        write_some(fd, p, len); /* the real output itself, which may block */
        return;
    }
    pthread_mutex_lock(&lock);
    watch_stall(fd, s, ddp_now_ms());
    if (s->dropping_since) {
        count_drop(s, source, p, len);
    } else {
        if (s->sent < s->len)
            flush_queue(fd, s);
        size_t took = s->sent < s->len ? 0 : write_some(fd, p, len);
        if (took < len)
            enqueue(s, p + took, len - took);
    }
    pthread_mutex_unlock(&lock);
}

int output_backlogged(int fd)
{
    stream_t *s = &streams[fd];
    pthread_mutex_lock(&lock);
    int backlogged = s->sent < s->len && !s->dropping_since;
    pthread_mutex_unlock(&lock);
    return backlogged;
}

void output_service(void)
{
    pthread_mutex_lock(&lock);
    int64_t now = ddp_now_ms();
    for (int fd = 1; fd <= 2; fd++) {
        stream_t *s = &streams[fd];
        if (!s->started)
            continue;
        if (s->sent < s->len)
            flush_queue(fd, s);
        watch_stall(fd, s, now);
    }
    pthread_mutex_unlock(&lock);
}

static int stream_drained(stream_t *s)
{
    int queued = 0;
    pthread_mutex_lock(&lock);
    int empty = s->sent == s->len;
    pthread_mutex_unlock(&lock);
    return empty && !s->busy && ioctl(s->pipe_read, FIONREAD, &queued) == 0 && queued == 0;
}

void output_finish(void)
{
    fflush(stdout);
    fflush(stderr);
    pthread_mutex_lock(&lock);
    int64_t now = ddp_now_ms();
    int stalled = 0;
    for (int fd = 1; fd <= 2; fd++)
        if (streams[fd].dropping_since) {
            stalled = 1;
            report_drops(fd, &streams[fd], now);
        }
    pthread_mutex_unlock(&lock);
    /* Waits while the reader moves; a copier not yet scheduled on a busy machine has not
     * stalled, and is waited for. */
    for (int fd = 1; fd <= 2; fd++) {
        stream_t *s = &streams[fd];
        int64_t patience = stalled ? FINISH_AFTER_STALL_MS : stall_deadline_ms;
        int64_t give_up = ddp_deadline_in(10 * patience);
        while (s->started && !stream_drained(s) && ddp_now_ms() < give_up) {
            output_service();
            if (s->busy && ddp_now_ms() - s->moved_at > patience)
                break;
            ddp_sleep_ms(10);
        }
    }
}

void agent_say(const char *fmt, ...)
{
    static const char prefix[] = "ddpjob-agent: ";
    char line[2048];
    memcpy(line, prefix, sizeof prefix - 1);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + sizeof prefix - 1, sizeof line - sizeof prefix, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = sizeof prefix - 1 + (size_t)n;
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    /* One write, so the line stays whole beside the workers' relayed lines. */
    output_write(STDERR_FILENO, OUTPUT_AGENT, line, len);
}
