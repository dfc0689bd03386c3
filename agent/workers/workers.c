#include "agent/workers/workers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/workers/binding.h"
#include "agent/workers/console.h"
#include "agent/workers/container.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "agent/workers/output.h"
#include "runtime/job/worker_env.h"

extern char **environ;

/* A log in the rank's folder, held open and checked as this user's own, closed to others
 * (dir_fd): in a team's workdir a folder above may have been renamed and planted since the batch
 * script checked the record; never through a link planted where the log belongs. */
static int open_log(const worker_t *w, int dir_fd, const char *name, ddp_error_t *err)
{
    int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        ddp_error_set(err, "cannot write %s/%s: %s", w->dir, name, strerror(errno));
    return fd;
}

/* In the child, before exec: never returns. */
static void exec_worker(char **command, char **env, int out_fd, int err_fd, pid_t agent,
                        const cpu_set_t *cpus)
{
    setpgid(0, 0);
    if (cpus)
        sched_setaffinity(0, sizeof *cpus, cpus);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != agent)
        _exit(127); /* the agent died before the line above took effect */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0)
        dup2(null_fd, STDIN_FILENO);
    dup2(out_fd, STDOUT_FILENO);
    dup2(err_fd, STDERR_FILENO);
    environ = env;
    execvp(command[0], command);
    dprintf(STDERR_FILENO, "ddpjob-agent: cannot run %s: %s\n", command[0], strerror(errno));
    _exit(127);
}

/* The worker's two relays, with its console prefix and what reaches the console (console.h). */
static int init_relays(worker_t *w, const worker_launch_t *l, int log_out, int log_err)
{
    char prefix[RELAY_PREFIX_MAX];
    console_prefix(l->prefix_template, w->rank, w->local_rank, prefix, sizeof prefix);
    int shown = console_filter_passes(l->local_ranks_filter, w->local_rank),
        redirected = console_streams_for(l->redirects, w->local_rank) &
                     ~console_streams_for(l->tees, w->local_rank);
    return relay_init(&w->relay[0], STDOUT_FILENO, log_out, w->rank, prefix,
                      shown && !(redirected & CONSOLE_STDOUT), 0) ||
           relay_init(&w->relay[1], STDERR_FILENO, log_err, w->rank, prefix,
                      shown && !(redirected & CONSOLE_STDERR), 1);
}

/* Worker w's environment (worker_env.h), with its GPU and, in *cpus, its CPUs (binding.h);
 * NULL with err set. */
static char **worker_environment(worker_t *w, const worker_launch_t *l, cpu_set_t *cpus,
                                 ddp_error_t *err)
{
    ddp_worker_env_t we = l->env;
    we.rank = w->rank;
    we.local_rank = w->local_rank;
    we.error_file = w->error_file;
    we.progress_file = w->progress_file;
    we.metrics_file = w->metrics_file;
    int nproc = l->env.local_world_size;
    char gpu[BINDING_GPU_ID_MAX];
    if (l->gpu_binding == GPU_BINDING_PER_RANK) {
        if (binding_gpu(w->local_rank, nproc, gpu, sizeof gpu, err))
            return NULL;
        we.cuda_visible_devices = gpu;
    }
    /* Its GPU's PCI device (a walk of sysfs) only where it is placed by it; a GPU out of memory
     * looks it up when judged. */
    w->gpu[0] = w->gpu_pci[0] = '\0';
    if (l->cpu_binding == CPU_BINDING_NUMA)
        binding_worker_gpu(w->local_rank, w->gpu, sizeof w->gpu, w->gpu_pci, sizeof w->gpu_pci);
    if (l->cpu_binding != CPU_BINDING_NONE &&
        binding_cpus(l->cpu_binding, w->local_rank, nproc, w->gpu_pci, cpus, err))
        return NULL;
    return ddp_worker_env_build(&we, environ, err);
}

/* The worker's stdout and stderr pipes. */
static int open_pipes(int out[2], int errp[2], ddp_error_t *err)
{
    if (pipe2(out, O_CLOEXEC) == 0 && pipe2(errp, O_CLOEXEC) == 0)
        return 0;
    int e = errno;
    struct rlimit files = {0};
    getrlimit(RLIMIT_NOFILE, &files);
    if (e == EMFILE)
        return ddp_error_set(err,
                             "pipe: %s (the agent may hold %llu descriptors and keeps 2 per "
                             "worker: raise `ulimit -n` or start fewer workers)",
                             strerror(e), (unsigned long long)files.rlim_cur);
    return ddp_error_set(err, "pipe: %s", strerror(e));
}

/* The command with --local_rank=N after it (torch.distributed.launch's), in arg; l->command
 * itself without --local-rank-arg; NULL when out of memory. Made before fork: the agent has
 * threads, so the child must not allocate. */
static char **worker_command(const worker_t *w, const worker_launch_t *l, char *arg, size_t size)
{
    if (!l->local_rank_arg)
        return l->command;
    size_t n = 0;
    while (l->command[n])
        n++;
    char **command = calloc(n + 2, sizeof *command);
    if (!command)
        return NULL;
    memcpy(command, l->command, n * sizeof *command);
    snprintf(arg, size, "--local_rank=%d", w->local_rank);
    command[n] = arg;
    return command;
}

/* The command as the container's runtime starts it, binding the workers' own folder of the
 * attempt (their error, progress and metrics files) and the working folder. */
static char **contain(const worker_launch_t *l, char **command, char **env, ddp_error_t *err)
{
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) {
        ddp_error_set(err, "getcwd: %s", strerror(errno));
        return NULL;
    }
    return container_command(l->container, command, env, cwd, l->worker_dir, err);
}

static int start_one(worker_t *w, const worker_launch_t *l, ddp_error_t *err)
{
    int out[2] = {-1, -1}, errp[2] = {-1, -1}, log_out = -1, log_err = -1, log_order = -1, rc = -1;
    char **env = NULL, **command = NULL, **contained = NULL, local_rank_arg[32];
    cpu_set_t cpus;
    char own[4180], name[32];
    snprintf(name, sizeof name, "rank_%d", w->rank);
    snprintf(w->dir, sizeof w->dir, "%s/%s", l->attempt_dir, name);
    snprintf(own, sizeof own, "%s/%s", l->worker_dir, name);
    snprintf(w->error_file, sizeof w->error_file, "%s/error.json", own);
    snprintf(w->progress_file, sizeof w->progress_file, "%s/progress", own);
    snprintf(w->metrics_file, sizeof w->metrics_file, "%s/metrics.jsonl", own);
    if (ddp_make_dirs(own, 0700, err) ||
        (l->write_logs &&
         (w->dir_fd = ddp_hold_private_dir_at(l->attempt_fd, name, w->dir, err)) < 0))
        return -1;
    if (l->write_logs && ((log_out = open_log(w, w->dir_fd, "stdout.log", err)) < 0 ||
                          (log_err = open_log(w, w->dir_fd, "stderr.log", err)) < 0 ||
                          (log_order = open_log(w, w->dir_fd, "order", err)) < 0))
        goto out;
    if (!(env = worker_environment(w, l, &cpus, err)) || open_pipes(out, errp, err))
        goto out;
    if (init_relays(w, l, log_out, log_err)) {
        ddp_error_set(err, "out of memory");
        goto out;
    }
    relay_set_order(&w->relay[0], log_order, 'o', 1);
    relay_set_order(&w->relay[1], log_order, 'e', 0);
    log_out = log_err = log_order = -1; /* the relays own them now */
    if (!(command = worker_command(w, l, local_rank_arg, sizeof local_rank_arg))) {
        ddp_error_set(err, "out of memory");
        goto out;
    }
    if (l->container && l->container->runtime != CONTAINER_NONE &&
        !(contained = contain(l, command, env, err)))
        goto out;
    pid_t agent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        exec_worker(contained ? contained : command, env, out[1], errp[1], agent,
                    l->cpu_binding != CPU_BINDING_NONE ? &cpus : NULL);
    if (pid < 0) {
        ddp_error_set(err, "fork: %s", strerror(errno));
        goto out;
    }
    /* Also from here, so that a signal sent to the group right away cannot miss the child. */
    setpgid(pid, pid);
    w->pid = pid;
    w->start_time = time(NULL);
    w->guard = l->guard;
    guard_watch(l->guard, pid);
    w->fds[0] = out[0];
    w->fds[1] = errp[0];
    out[0] = errp[0] = -1;
    rc = 0;
out:
    container_command_free(contained);
    if (command != l->command)
        free(command);
    for (int i = 0; i < 2; i++) {
        if (out[i] >= 0)
            close(out[i]);
        if (errp[i] >= 0)
            close(errp[i]);
    }
    if (log_out >= 0)
        close(log_out);
    if (log_err >= 0)
        close(log_err);
    if (log_order >= 0)
        close(log_order);
    ddp_worker_env_free(env);
    return rc;
}

int workers_start(worker_t *w, const worker_launch_t *l, ddp_error_t *err)
{
    if (l->container && l->container->runtime != CONTAINER_NONE &&
        (container_check(l->container, err) || ddp_make_dirs(l->worker_dir, 0700, err) ||
         container_prepare(l->container, l->worker_dir, err)))
        return -1;
    for (int i = 0; i < l->env.local_world_size; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i] = (worker_t){.local_rank = i,
                          .rank = l->rank_base + i,
                          .fds = {-1, -1},
                          .dir_fd = -1,
                          .metrics_fd = -1,
                          .active_at = ddp_now_ms()};
        w[i].relay[0].log_fd = w[i].relay[1].log_fd = -1;
        w[i].relay[0].order_fd = w[i].relay[1].order_fd = -1;
        if (start_one(&w[i], l, err)) {
            ddp_error_prefix(err, "starting rank %d", w[i].rank);
            workers_kill_groups(w, i);
            while (workers_running(w, i)) {
                workers_reap(w, i);
                usleep(1000);
            }
            workers_close(w, i + 1);
            return -1;
        }
    }
    return 0;
}

void workers_signal(worker_t *w, int n, int sig)
{
    for (int i = 0; i < n; i++)
        if (w[i].pid > 0 && !w[i].reaped)
            kill(-w[i].pid, sig);
}

void workers_kill_groups(worker_t *w, int n)
{
    for (int i = 0; i < n; i++)
        if (w[i].pid > 0 && !w[i].reaped)
            kill(-w[i].pid, SIGKILL);
}

int workers_reap(worker_t *w, int n)
{
    int reaped = 0;
    for (int i = 0; i < n; i++) {
        if (w[i].pid <= 0 || w[i].reaped)
            continue;
        /* Look without reaping: while the leader is a zombie its pid still names its group, so
         * what it left running can be killed without any risk of hitting a recycled pid. */
        siginfo_t info = {0};
        if (waitid(P_PID, (id_t)w[i].pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 ||
            info.si_pid != w[i].pid)
            continue;
        kill(-w[i].pid, SIGKILL);
        guard_forget(w[i].guard, w[i].pid);
        int status;
        if (waitpid(w[i].pid, &status, 0) == w[i].pid) {
            w[i].reaped = 1;
            w[i].status = status;
            w[i].exit_time = time(NULL);
            reaped++;
        }
    }
    return reaped;
}

int workers_running(const worker_t *w, int n)
{
    int running = 0;
    for (int i = 0; i < n; i++)
        running += w[i].pid > 0 && !w[i].reaped;
    return running;
}

void workers_pump(worker_t *w, int n, int fd)
{
    for (int i = 0; i < n; i++)
        for (int s = 0; s < 2; s++) {
            if (w[i].fds[s] != fd || fd < 0)
                continue;
            char buf[65536];
            ssize_t got = read(fd, buf, sizeof buf);
            if (got > 0) {
                w[i].output_at = ddp_now_ms();
                relay_feed(&w[i].relay[s], buf, (size_t)got);
            } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
                relay_flush(&w[i].relay[s]);
                close(fd);
                w[i].fds[s] = -1;
            }
            return;
        }
}

int workers_held_back(const worker_t *w)
{
    for (int s = 0; s < 2; s++) {
        int queued = 0;
        if (w->fds[s] >= 0 && output_backlogged(1 + s) &&
            ioctl(w->fds[s], FIONREAD, &queued) == 0 && queued > 0)
            return 1;
    }
    return 0;
}

void workers_activity(const worker_t *w, int n, worker_activity_t *act)
{
    memset(act, 0, (size_t)n * sizeof *act);
    DIR *d = opendir("/proc");
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char path[300], stat[1024];
        snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, stat, sizeof stat - 1);
        close(fd);
        if (len <= 0)
            continue;
        stat[len] = '\0';
        /* The pid, the command name (which may hold spaces), then state, ppid, pgrp, ... utime
         * stime. */
        const char *p = strrchr(stat, ')');
        char state;
        int pid, pgrp;
        unsigned long long utime, stime;
        if (!p || sscanf(stat, "%d", &pid) != 1 ||
            sscanf(p + 1, " %c %*d %d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &state, &pgrp,
                   &utime, &stime) != 4)
            continue;
        for (int i = 0; i < n; i++)
            if (w[i].pid == pgrp) {
                act[i].cpu_ticks += utime + stime;
                if (pid == pgrp && state == 'T')
                    act[i].stopped = 1;
            }
    }
    if (d)
        closedir(d);
}

void workers_drain(worker_t *w, int s)
{
    int fd = w->fds[s];
    if (fd < 0)
        return;
    /* A grandchild still holding the write end must not keep us here. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    char buf[65536];
    ssize_t got;
    for (int chunk = 0; chunk < 64 && (got = read(fd, buf, sizeof buf)) > 0; chunk++)
        relay_feed(&w->relay[s], buf, (size_t)got);
}

/* A worker's own file is read through a descriptor checked as a regular file (it may have put
 * anything there); the copy is made in its held folder, never through a link. */
static void keep_metrics(worker_t *w)
{
    if (w->dir_fd < 0)
        return;
    int in = open(w->metrics_file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (in < 0)
        return;
    if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= w->metrics_kept) {
        close(in);
        return;
    }
    char buf[65536];
    ssize_t got;
    while ((got = pread(in, buf, sizeof buf, (off_t)w->metrics_kept)) > 0) {
        size_t whole = (size_t)got;
        while (whole && buf[whole - 1] != '\n')
            whole--;
        if (!whole && got < (ssize_t)sizeof buf)
            break; /* a line still being written */
        if (!whole)
            whole = (size_t)got; /* one line longer than buf: kept in pieces */
        if (w->metrics_fd < 0)
            w->metrics_fd = openat(w->dir_fd, "metrics.jsonl",
                                   O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (w->metrics_fd < 0 || ddp_write_all(w->metrics_fd, buf, whole))
            break;
        w->metrics_kept += (long long)whole;
    }
    close(in);
}

void workers_keep_metrics(worker_t *w, int n)
{
    for (int i = 0; i < n; i++)
        keep_metrics(&w[i]);
}

void workers_close(worker_t *w, int n)
{
    for (int i = 0; i < n; i++) {
        for (int s = 0; s < 2; s++) {
            if (w[i].fds[s] >= 0) {
                workers_drain(&w[i], s);
                close(w[i].fds[s]);
                w[i].fds[s] = -1;
            }
            relay_flush(&w[i].relay[s]);
            relay_free(&w[i].relay[s]);
        }
        keep_metrics(&w[i]);
        if (w[i].metrics_fd >= 0)
            close(w[i].metrics_fd);
        if (w[i].dir_fd >= 0)
            close(w[i].dir_fd);
        w[i].metrics_fd = w[i].dir_fd = -1;
    }
}
