#include "agent/workers/guard.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <unistd.h>

#define GUARD_MAX_GROUPS 4096

/* The guard's life: collect group ids until EOF, then kill them. Only async-signal-safe calls:
 * it runs in a child of a process that may have threads. */
static void guard_main(int fd)
{
    static pid_t groups[GUARD_MAX_GROUPS];
    size_t n = 0;
    int32_t msg;
    for (;;) {
        ssize_t got = read(fd, &msg, sizeof msg);
        if (got < 0 && errno == EINTR)
            continue;
        if (got != sizeof msg)
            break;
        if (msg > 0 && n < GUARD_MAX_GROUPS) {
            groups[n++] = msg;
        } else if (msg < 0) {
            for (size_t i = 0; i < n; i++)
                if (groups[i] == -msg) {
                    groups[i] = groups[--n];
                    break;
                }
        }
    }
    for (size_t i = 0; i < n; i++)
        kill(-groups[i], SIGKILL);
    _exit(0);
}

int guard_start(guard_t *g, ddp_error_t *err)
{
    int p[2];
    g->fd = -1;
    g->pid = -1;
    if (pipe2(p, O_CLOEXEC))
        return ddp_error_set(err, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return ddp_error_set(err, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* Hold nothing of the agent's open: not its output, not its sockets. */
        syscall(SYS_close_range, 0u, (unsigned)p[0] - 1, 0u); /* musl has no wrapper */
        syscall(SYS_close_range, (unsigned)p[0] + 1, ~0u, 0u);
        int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE};
        for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
            signal(ignored[i], SIG_IGN);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        prctl(PR_SET_NAME, "ddpjob-guard");
        guard_main(p[0]);
    }
    close(p[0]);
    g->fd = p[1];
    g->pid = pid;
    return 0;
}

static void guard_send(guard_t *g, int32_t msg)
{
    if (g->fd >= 0 && write(g->fd, &msg, sizeof msg) != sizeof msg) {
        close(g->fd);
        g->fd = -1;
    }
}

void guard_watch(guard_t *g, pid_t pgid)
{
    guard_send(g, (int32_t)pgid);
}

void guard_forget(guard_t *g, pid_t pgid)
{
    guard_send(g, -(int32_t)pgid);
}

void guard_stop(guard_t *g)
{
    if (g->fd >= 0)
        close(g->fd);
    g->fd = -1;
    if (g->pid > 0)
        waitpid(g->pid, NULL, 0);
    g->pid = -1;
}
