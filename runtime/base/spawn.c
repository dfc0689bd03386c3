#include "runtime/base/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_portable.h"

void ddp_spawn_result_free(ddp_spawn_result_t *res)
{
    free(res->out);
    free(res->err);
    res->out = res->err = NULL;
}

int ddp_spawn_capture(char *const argv[], const char *cwd, int timeout_ms, ddp_spawn_result_t *res,
                      ddp_error_t *err)
{
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
    FILE *out_mem = NULL, *err_mem = NULL;
    size_t out_len = 0, err_len = 0;
    pid_t pid = -1;
    int rc = -1;
    memset(res, 0, sizeof *res);
    if (ddp_pipe_cloexec(out_pipe) < 0 || ddp_pipe_cloexec(err_pipe) < 0 ||
        ddp_pipe_cloexec(exec_pipe) < 0) {
        ddp_error_set(err, "pipe: %s", strerror(errno));
        goto out;
    }
    pid = fork();
    if (pid < 0) {
        ddp_error_set(err, "fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        int child_errno = 0;
        if (cwd && chdir(cwd) < 0)
            child_errno = errno;
        else {
            execvp(argv[0], argv);
            child_errno = errno;
        }
        /* Tells the parent why exec failed (the write end closes on a successful exec). */
        if (write(exec_pipe[1], &child_errno, sizeof child_errno) < 0)
            _exit(127);
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    close(exec_pipe[1]);
    out_pipe[1] = err_pipe[1] = exec_pipe[1] = -1;

    int child_errno = 0;
    ssize_t got = read(exec_pipe[0], &child_errno, sizeof child_errno);
    if (got == (ssize_t)sizeof child_errno) {
        waitpid(pid, NULL, 0);
        pid = -1;
        if (child_errno == ENOENT)
            ddp_error_code(err, ENOENT, "%s: not found on PATH", argv[0]);
        else
            ddp_error_code(err, child_errno, "%s: cannot run: %s", argv[0], strerror(child_errno));
        goto out;
    }

    out_mem = open_memstream(&res->out, &out_len);
    err_mem = open_memstream(&res->err, &err_len);
    if (!out_mem || !err_mem) {
        ddp_error_set(err, "out of memory");
        goto out;
    }
    int64_t deadline = ddp_deadline_in(timeout_ms);
    struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    FILE *sinks[2] = {out_mem, err_mem};
    int open_fds = 2;
    while (open_fds > 0) {
        int left = ddp_ms_left(deadline);
        if (left <= 0) {
            ddp_error_set(err, "%s: no answer within %d s; stopped it", argv[0], timeout_ms / 1000);
            goto out;
        }
        int n = poll(fds, 2, left);
        if (n < 0 && errno != EINTR) {
            ddp_error_set(err, "poll: %s", strerror(errno));
            goto out;
        }
        for (int i = 0; i < 2 && n > 0; i++) {
            if (fds[i].fd < 0 || !fds[i].revents)
                continue;
            char buf[4096];
            ssize_t r = read(fds[i].fd, buf, sizeof buf);
            if (r > 0) {
                fwrite(buf, 1, (size_t)r, sinks[i]);
            } else if (r == 0 || errno != EINTR) {
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    pid = -1;
    res->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    rc = 0;
out:
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    if (out_mem)
        fclose(out_mem);
    if (err_mem)
        fclose(err_mem);
    for (int i = 0; i < 2; i++) {
        if (out_pipe[i] >= 0)
            close(out_pipe[i]);
        if (err_pipe[i] >= 0)
            close(err_pipe[i]);
        if (exec_pipe[i] >= 0)
            close(exec_pipe[i]);
    }
    if (rc < 0)
        ddp_spawn_result_free(res);
    return rc;
}
