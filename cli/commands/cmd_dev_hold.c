/* dev-hold: the holder of an allocation `ddpjob dev` holds, run by its batch script on the
 * allocation's first node (dev_record.h). It says the nodes are held, then runs each run asked of
 * it in turn: the run's own job script, read from the run's record through a descriptor checked
 * as the user's own, started here in a process group of its own with DDPJOB_RECORD naming that
 * record, so that its agents start as a batch job's do. A run whose record is marked cancelled
 * is ended (its group: TERM, KILL after a grace). Each shell asked (`ddpjob shell`) gets its
 * node's side started on its node with --node-exec (the scheduler's way into a node of the
 * allocation), beside any run. The allocation is let go after --idle seconds with neither a run
 * nor a shell, shortly before its walltime when no run goes (open shells told 10 and 1 minutes
 * before), or when the holder is signalled (a cancel, the walltime): what goes then is ended
 * first. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands/commands.h"
#include "cli/jobs/dev_record.h"
#include "cli/jobs/job_record.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"
#include "runtime/base/ddp_portable.h"
#include "runtime/base/ddp_signal.h"

/* How often the holder looks for a request: a rerun's start waits at most this long for it. */
#define HOLD_POLL_MS 50
/* A run asked to end has this long before its group is killed. */
#define RUN_GRACE_MS 30000
/* The largest job script a run's record holds. */
#define RUN_SCRIPT_MAX (4 << 20)
/* How bash is handed the run's script: through its environment, never a command line. */
#define RUN_SCRIPT_ENV "DDPJOB_RUN_SCRIPT"

static const char hold_help[] =
    "usage: ddpjob dev-hold --record DIR --idle SECONDS [--deadline EPOCH] [--node-exec CMD]\n"
    "                       -- HOST...\n"
    "Run by the batch script of an allocation `ddpjob dev` holds: says its nodes (HOST...) are\n"
    "held, then runs each `ddpjob run --in` asked of it in turn, and starts each `ddpjob shell`'s\n"
    "node side with CMD (its words; %h: the node's host), until it has been idle SECONDS (0:\n"
    "until its walltime) or is signalled.\n";

/* Shells open at once at most. */
#define SHELLS_MAX 64
/* Open shells are told when this much of the walltime is left, and again at the second. */
#define WARN_FIRST_S 600
#define WARN_LAST_S 60
/* With no run going, the allocation is let go this long before its walltime: a run going keeps
 * it, for its own walltime rule (its checkpoint) to finish. */
#define RELEASE_BEFORE_S 15

typedef struct {
    const char *dev;      /* the allocation's record, through the batch shell's hold */
    const char *dev_path; /* ... by its name, for the nodes (DDPJOB_RECORD) */
    const char *node_exec;
    char *const *hosts;
    int nhosts;
    pid_t shells[SHELLS_MAX]; /* the shells' node sides going (their process groups) */
    int shell_k[SHELLS_MAX];  /* ... and their numbers */
    pid_t pid;                /* the run going (its process group), 0 none */
    int k;                    /* its number */
    char record[4096];
    int64_t ending_since; /* when it was asked to end (ms), 0 not */
} holder_t;

/* The run's job script, from its record, read through a descriptor: a regular file of this
 * user's that group and others cannot write. NULL with err. */
static char *read_run_script(const char *record, ddp_error_t *err)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/script", record);
    return ddp_read_own_file(path, S_IWGRP | S_IWOTH, RUN_SCRIPT_MAX, NULL, err);
}

/* Starts run k of the record named: 0, or -1 with err (the run not started). */
static int start_run(holder_t *h, int k, const char *record, ddp_error_t *err)
{
    job_record_t r = {0};
    if (job_record_read(record, &r, err))
        return -1;
    int mine = r.held_in[0] != 0;
    char workdir[4096];
    snprintf(workdir, sizeof workdir, "%s", r.workdir);
    job_record_free(&r);
    if (!mine)
        return ddp_error_set(err, "%s is no run's record", record);
    char *script = read_run_script(record, err);
    if (!script)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        free(script);
        return ddp_error_set(err, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setpgid(0, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* The run's files are its own: its workdir, as sbatch and qsub start a job's script in
         * the folder it was submitted from (PBS says so in PBS_O_WORKDIR). */
        if (chdir(workdir) != 0) {
            fprintf(stderr, "ddpjob dev-hold: run %d: its workdir %s: %s\n", k, workdir,
                    strerror(errno));
            _exit(3);
        }
        if (getenv("PBS_O_WORKDIR"))
            setenv("PBS_O_WORKDIR", workdir, 1);
        setenv(JOB_RECORD_ENV, record, 1);
        setenv(RUN_SCRIPT_ENV, script, 1);
        execl("/bin/bash", "bash", "-c",
              "ddpjob_script=$" RUN_SCRIPT_ENV "; unset " RUN_SCRIPT_ENV
              "; eval \"$ddpjob_script\"",
              "ddpjob-run", (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    free(script);
    h->pid = pid;
    h->k = k;
    h->ending_since = 0;
    snprintf(h->record, sizeof h->record, "%s", record);
    return 0;
}

/* Asks the run going to end (TERM to its group), and kills it once RUN_GRACE_MS have passed. */
static void end_run(holder_t *h)
{
    if (!h->pid)
        return;
    if (!h->ending_since) {
        h->ending_since = ddp_now_ms();
        kill(-h->pid, SIGTERM);
    } else if (ddp_now_ms() - h->ending_since > RUN_GRACE_MS) {
        kill(-h->pid, SIGKILL);
    }
}

static int run_cancelled(const holder_t *h)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/cancelled", h->record);
    return access(path, F_OK) == 0;
}

/* Whether the run going has ended (then its group is gone too). */
static int run_ended(holder_t *h)
{
    int status;
    if (!h->pid || waitpid(h->pid, &status, WNOHANG) != h->pid)
        return 0;
    kill(-h->pid, SIGKILL); /* what it left behind in its group */
    h->pid = 0;
    return 1;
}

/* The next request, started; a request that cannot start is said in runs/K/failed. */
static void take_request(holder_t *h, int64_t *idle_since)
{
    int k;
    char record[4096];
    if (!dev_request_next(h->dev, &k, record, sizeof record))
        return;
    ddp_error_t err;
    if (start_run(h, k, record, &err)) {
        fprintf(stderr, "ddpjob dev-hold: run %d not started: %s\n", k, err.msg);
        dev_run_fail(h->dev, k, err.msg);
        return;
    }
    if (dev_holder_write(h->dev, k, (int64_t)time(NULL), &err))
        fprintf(stderr, "ddpjob dev-hold: %s\n", err.msg);
    *idle_since = 0;
}

/* The node side of shell k on `host`: the node-exec words, %h made the host, then ddpjob
 * dev-shell-serve; its pid (a process group of its own), or -1 with err. */
static pid_t start_shell(holder_t *h, int k, const char *host, ddp_error_t *err)
{
    char *words = strdup(h->node_exec), *argv[40], session[8300], self_buf[8192];
    char *self = ddp_self_exe();
    if (!words || !self) {
        free(words);
        free(self);
        return ddp_error_set(err, "out of memory");
    }
    snprintf(self_buf, sizeof self_buf, "%s", self);
    free(self);
    snprintf(session, sizeof session, "%s/shells/%d", h->dev_path, k);
    int n = 0;
    char hostword[512];
    for (char *w = strtok(words, " "); w && n < 32; w = strtok(NULL, " ")) {
        char *at = strstr(w, "%h");
        if (at) {
            snprintf(hostword, sizeof hostword, "%.*s%s%s", (int)(at - w), w, host, at + 2);
            w = hostword;
        }
        argv[n++] = w;
    }
    char *serve[] = {self_buf, "dev-shell-serve", "--session", session, NULL};
    for (int i = 0; serve[i]; i++)
        argv[n++] = serve[i];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvp(argv[0], argv);
        fprintf(stderr, "ddpjob dev-hold: %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    free(words);
    if (pid < 0)
        return ddp_error_set(err, "fork: %s", strerror(errno));
    setpgid(pid, pid);
    return pid;
}

/* Shell k's node side ended: where it never said where it listens, its client learns so now
 * rather than at its deadline. */
static void shell_ended(const holder_t *h, int k, int status)
{
    char path[8192], why[160];
    snprintf(path, sizeof path, "%s/shells/%d/endpoint", h->dev, k);
    if (access(path, F_OK) == 0)
        return;
    snprintf(why, sizeof why,
             "its node's side ended (status %d) before it listened: the allocation's output says "
             "why",
             WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    dev_shell_fail(h->dev, k, why);
}

/* Shells asked, their node sides started; those ended, reaped. The number going. */
static int tend_shells(holder_t *h, int stopping)
{
    int k, node, going = 0;
    ddp_error_t err;
    while (!stopping && dev_shell_next(h->dev, &k, &node)) {
        int slot = -1;
        for (int i = 0; i < SHELLS_MAX && slot < 0; i++)
            slot = h->shells[i] ? -1 : i;
        if (!h->node_exec || node >= h->nhosts || slot < 0) {
            dev_shell_fail(h->dev, k,
                           !h->node_exec       ? "this allocation's script gives no way into a node"
                           : node >= h->nhosts ? "no such node in the allocation"
                                               : "too many shells open at once");
            continue;
        }
        pid_t pid = start_shell(h, k, h->hosts[node], &err);
        if (pid < 0)
            dev_shell_fail(h->dev, k, err.msg);
        else
            h->shells[slot] = pid, h->shell_k[slot] = k;
    }
    for (int i = 0; i < SHELLS_MAX; i++) {
        int status;
        if (h->shells[i] && waitpid(h->shells[i], &status, WNOHANG) == h->shells[i]) {
            shell_ended(h, h->shell_k[i], status);
            h->shells[i] = 0;
        }
        if (h->shells[i] && stopping)
            kill(-h->shells[i], SIGTERM);
        going += h->shells[i] != 0;
    }
    return going;
}

/* What open shells are told of the walltime, once at each warning: the notice (dev_record.h). */
static void warn_walltime(const holder_t *h, long deadline, int *warned)
{
    long left = deadline - (long)time(NULL);
    int due = left <= WARN_LAST_S ? 2 : left <= WARN_FIRST_S ? 1 : 0;
    if (!deadline || due <= *warned)
        return;
    *warned = due;
    char text[256];
    ddp_error_t err;
    snprintf(text, sizeof text,
             "ddpjob: this allocation ends at its walltime in %ld min %02ld s: save your work\n",
             left / 60, left % 60);
    if (dev_notice_write(h->dev, text, &err))
        fprintf(stderr, "ddpjob dev-hold: %s\n", err.msg);
}

static int hold_options(int argc, char **argv, holder_t *h, long *idle_s, long *deadline)
{
    static const struct option opts[] = {
        {"record", required_argument, NULL, 'r'},   {"idle", required_argument, NULL, 'i'},
        {"deadline", required_argument, NULL, 'd'}, {"node-exec", required_argument, NULL, 'x'},
        {"help", no_argument, NULL, 'h'},           {0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'r')
            h->dev = optarg;
        else if (c == 'x')
            h->node_exec = optarg;
        else if (c == 'i' && !ddp_parse_long(optarg, 0, 1L << 40, idle_s))
            continue;
        else if (c == 'd' && !ddp_parse_long(optarg, 0, 1L << 40, deadline))
            continue;
        else if (c == 'h')
            return fputs(hold_help, stdout), EXIT_OK;
        else
            return fputs(hold_help, stderr), EXIT_USAGE;
    }
    if (!h->dev || optind >= argc)
        return fputs(hold_help, stderr), EXIT_USAGE;
    h->hosts = argv + optind;
    h->nhosts = argc - optind;
    return -1;
}

int cmd_dev_hold(int argc, char **argv)
{
    holder_t h = {.dev_path = getenv(JOB_RECORD_ENV)};
    long idle_s = 0, deadline = 0;
    int rc = hold_options(argc, argv, &h, &idle_s, &deadline);
    if (rc >= 0)
        return rc;
    const char *dev = h.dev;
    ddp_error_t err;
    int sigfd = ddp_supervisor_signals(&err);
    if (sigfd < 0 || dev_ready_write(dev, h.hosts, h.nhosts, &err) ||
        dev_holder_write(dev, 0, (int64_t)time(NULL), &err)) {
        fprintf(stderr, "ddpjob dev-hold: %s\n", err.msg);
        return EXIT_SYSTEM;
    }
    if (!h.dev_path)
        h.node_exec = NULL;
    printf("ddpjob: holding %d node(s) for runs (ddpjob run --in); released after %ld s idle%s\n",
           h.nhosts, idle_s, idle_s ? "" : " (never: at the walltime)");
    fflush(stdout);
    int64_t idle_since = ddp_now_ms();
    const char *why = NULL;
    int shells = 0, warned = 0;
    while (!why || h.pid || shells) {
        for (int sig; (sig = ddp_supervisor_signal_take(sigfd));)
            if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
                why = "signal";
        if (h.pid && (why || run_cancelled(&h)))
            end_run(&h);
        if (run_ended(&h)) {
            idle_since = ddp_now_ms();
            if (dev_holder_write(dev, 0, (int64_t)time(NULL), &err))
                fprintf(stderr, "ddpjob dev-hold: %s\n", err.msg);
        }
        if ((shells = tend_shells(&h, why != NULL)))
            idle_since = ddp_now_ms();
        if (!why && !h.pid)
            take_request(&h, &idle_since);
        if (!why && !h.pid && idle_s && ddp_now_ms() - idle_since >= idle_s * 1000)
            why = "idle";
        warn_walltime(&h, deadline, &warned);
        if (!why && !h.pid && deadline && (long)time(NULL) >= deadline - RELEASE_BEFORE_S)
            why = "walltime";
        if (!why || h.pid || shells)
            ddp_sleep_ms(HOLD_POLL_MS);
    }
    if (dev_released_write(dev, why, &err))
        fprintf(stderr, "ddpjob dev-hold: %s\n", err.msg);
    printf("ddpjob: released the allocation (%s)\n", why);
    return EXIT_OK;
}
