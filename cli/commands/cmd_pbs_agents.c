/* pbs-agents (node-agents): the supervisor of the generated PBS and Grid Engine scripts. On the
 * job's first node it starts the other nodes' agents as tasks of the job (pbsdsh, or Grid
 * Engine's qrsh -inherit), runs node 0's agent itself, and ends with the job's status: the
 * processes here, the decisions in pbs_tasks. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/commands/commands.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_net.h"
#include "runtime/base/ddp_parse.h"
#include "runtime/base/ddp_signal.h"
#include "runtime/job/hostlist.h"
#include "cli/sched/sched_pbs_tasks.h"
#include "cli/script/shell_hold.h"
#include "cli/spec/shquote.h"

static const char pbs_agents_help[] =
    "usage: ddpjob pbs-agents --nodefile FILE --nodes N --node-env FILE --task-dir DIR\n"
    "                         [--checkpoint-file FILE --checkpoint-signal SIG] [--spares]\n"
    "                         [--job-nodefile JOBFILE] [--via pbsdsh|qrsh]\n"
    "                         -- AGENT [AGENT-OPTIONS...]\n"
    "       ddpjob node-agents ... (the same)\n"
    "Run by a generated PBS or Grid Engine script on the job's first node: starts `AGENT\n"
    "--node-rank R AGENT-OPTIONS` on every other node of FILE as a task of the job, through\n"
    "pbsdsh or `qrsh -inherit` (after sourcing the node-env file and running its\n"
    "ddpjob_node_setup there), runs node 0's agent here, and exits with\n"
    "the job's status. A node whose agent cannot start stops the job at once; one whose agent\n"
    "ended while node 0's goes on stops it after 20 s; the other agents may outlive node 0's by\n"
    "30 s. Each node's task output goes to DIR/pbsdsh-R. Once the checkpoint FILE exists\n"
    "(`ddpjob cancel --checkpoint` writes it), node 0's agent gets SIG, once. With --spares\n"
    "(the agents' --spares), a node's agent that ends is said and nothing more: the agents\n"
    "replace a lost node, and node 0's status is the job's. FILE may name some of the job's\n"
    "nodes (a run in a held allocation): pbsdsh then finds each in JOBFILE, the job's own.\n"
    "A task qrsh said ended 0 without its agent having started could not start (qrsh exits 0\n"
    "for a task that never ran).\n"
    "Exit: the job's status (that of node 0's agent, or of the node that failed first); 2 usage,\n"
    "3 an unreadable node file or a process that could not be started.\n";

/* What a node's task prints as its agent starts: qrsh's exit status cannot tell a task that
 * never ran. */
#define AGENT_STARTS "ddpjob: the agent starts"

/* Runs on each other node, after shell_hold_dir_function: the environment and setup node 0 had,
 * then the agent. node-env is sourced through a hold on its folder (shell_hold.h): in a team's
 * workdir, a member who renames .ddpjob cannot plant another. 126: the agent could not be run
 * (pbs_task_grace_ms). What it says reaches the job's output (the MoMs send a task's there)
 * behind $0, "ddpjob: node R (HOST)", as bash's own messages do. */
static const char node_shell_tail[] =
    "ddpjob_fail() { echo \"$0: $*\" >&2; exit 126; }\n"
    "ddpjob_hold_dir ddpjob_held \"${1%/*}\"\n"
    ". \"$ddpjob_held/${1##*/}\" && eval \"exec ${ddpjob_held##*/}<&-\" && ddpjob_node_setup &&"
    " shift && ";
/* ... and, through qrsh, the line that says the agent starts. */
static const char qrsh_says_start[] = "echo \"" AGENT_STARTS "\" && ";

typedef enum { VIA_PBSDSH, VIA_QRSH } task_launcher_t;

typedef struct {
    task_launcher_t via;
    const char *nodefile, *node_env, *task_dir;
    const char *job_nodefile;    /* the job's node file, where nodefile names some of its nodes */
    char task_held[64];          /* task_dir through the descriptor held on it (ddp_hold_own_dir) */
    const char *checkpoint_file; /* once it exists, node 0's agent gets checkpoint_signal */
    int checkpoint_signal;
    int nodes;
    int spares;   /* the agents replace a lost node: a node's end stops nothing */
    char **agent; /* AGENT and its options, NULL-terminated */
    int nagent;
} pbs_agents_args_t;

typedef struct {
    pid_t pid; /* 0 once reaped */
    int exit_status;
    char *output; /* what it printed, read as it ended (malloc'd; NULL: none) */
    int started;  /* its agent started: always through pbsdsh; through qrsh, as it said */
} task_t;

typedef struct {
    ddp_hostlist_t *hl;
    int remote0;   /* node 0 is another host than this one: its agent starts by pbsdsh */
    task_t *tasks; /* [1..nodes-1]: the pbsdsh processes */
    pid_t agent_pid;
    int agent_status;
    int failed_status; /* -1 until a node's task fails */
    char failed[512];
    int64_t stop_at; /* 0: no stop planned */
} supervisor_t;

static int parse_args(int argc, char **argv, pbs_agents_args_t *a)
{
    static const struct option opts[] = {{"nodefile", required_argument, NULL, 'f'},
                                         {"nodes", required_argument, NULL, 'n'},
                                         {"node-env", required_argument, NULL, 'e'},
                                         {"task-dir", required_argument, NULL, 'd'},
                                         {"checkpoint-file", required_argument, NULL, 'c'},
                                         {"checkpoint-signal", required_argument, NULL, 's'},
                                         {"spares", no_argument, NULL, 'S'},
                                         {"job-nodefile", required_argument, NULL, 'j'},
                                         {"via", required_argument, NULL, 'v'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    int before = split_workload_args(argc, argv, &a->agent, &a->nagent);
    int c;
    while ((c = getopt_long(before, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            a->nodefile = optarg;
            break;
        case 'n':
            if (ddp_parse_int(optarg, 1, 1 << 20, &a->nodes)) {
                fprintf(stderr, "ddpjob pbs-agents: --nodes %s: expected a count >= 1\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'e':
            a->node_env = optarg;
            break;
        case 'd':
            a->task_dir = optarg;
            break;
        case 'c':
            a->checkpoint_file = optarg;
            break;
        case 's':
            if ((a->checkpoint_signal = ddp_parse_signal(optarg)) <= 0) {
                fprintf(stderr, "ddpjob pbs-agents: --checkpoint-signal %s: not a signal\n",
                        optarg);
                return EXIT_USAGE;
            }
            break;
        case 'S':
            a->spares = 1;
            break;
        case 'j':
            a->job_nodefile = optarg;
            break;
        case 'v':
            if (strcmp(optarg, "pbsdsh") && strcmp(optarg, "qrsh")) {
                fprintf(stderr, "ddpjob pbs-agents: --via %s: expected pbsdsh or qrsh\n", optarg);
                return EXIT_USAGE;
            }
            a->via = strcmp(optarg, "qrsh") ? VIA_PBSDSH : VIA_QRSH;
            break;
        case 'h':
            fputs(pbs_agents_help, stdout);
            return -1;
        default:
            fputs(pbs_agents_help, stderr);
            return EXIT_USAGE;
        }
    }
    if (optind != before || !a->nodefile || !a->nodes || !a->node_env || !a->task_dir ||
        a->nagent < 1 || !a->checkpoint_file != !a->checkpoint_signal) {
        fputs(pbs_agents_help, stderr);
        return EXIT_USAGE;
    }
    /* The other nodes source node-env from it: it must be the user's alone; the tasks' output
     * is written through the descriptor held on it (kept open for the command's life). */
    ddp_error_t err;
    if (ddp_hold_own_dir(a->task_dir, a->task_held, sizeof a->task_held, &err) < 0) {
        fprintf(stderr, "ddpjob pbs-agents: --task-dir %s\n", err.msg);
        return EXIT_USAGE;
    }
    return 0;
}

/* AGENT --node-rank R AGENT-OPTIONS, after `prefix` words; malloc'd, NULL-terminated. */
static char **agent_argv(const pbs_agents_args_t *a, char *const *prefix, int nprefix, char *rank)
{
    char **argv = calloc((size_t)(nprefix + a->nagent + 3), sizeof *argv);
    if (!argv)
        return NULL;
    int n = 0;
    for (int i = 0; i < nprefix; i++)
        argv[n++] = prefix[i];
    argv[n++] = a->agent[0];
    argv[n++] = "--node-rank";
    argv[n++] = rank;
    for (int i = 1; i < a->nagent; i++)
        argv[n++] = a->agent[i];
    return argv;
}

/* Forks argv with the default signal mask, its output into `out` when not NULL; a pbsdsh
 * (`is_pbsdsh`) ignores SIGUSR1 and SIGUSR2. */
static pid_t start(char **argv, const char *out, int is_pbsdsh)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* qsig's checkpoint signal reaches every process of the job's session here, pbsdsh too,
     * which it would end; the tasks pbsdsh asked for run under their own MoMs. */
    if (is_pbsdsh) {
        signal(SIGUSR1, SIG_IGN);
        signal(SIGUSR2, SIG_IGN);
    }
    if (out) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) {
            fprintf(stderr, "ddpjob pbs-agents: cannot write %s: %s\n", out, strerror(errno));
            _exit(126);
        }
    }
    execvp(argv[0], argv);
    fprintf(stderr, "ddpjob pbs-agents: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
}

/* A word with newlines as a POSIX shell makes it again without one: "$(printf '%b' '...')",
 * backslashes doubled and newlines as \n for printf (its trailing newlines are lost, as $(...)
 * drops them). */
static void write_word_without_newlines(FILE *f, const char *word)
{
    fputs("\"$(printf '%b' '", f);
    for (const char *p = word; *p; p++) {
        if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\\')
            fputs("\\\\", f);
        else if (*p == '\'')
            fputs("'\\''", f);
        else
            fputc(*p, f);
    }
    fputs("')\"", f);
}

/* The NULL-ended words, each shell-quoted, joined by blanks, on one line (malloc'd): qrsh
 * -inherit hands them to a shell as one string, through a file of one variable per line. NULL
 * when out of memory. */
static char *quoted_words(char *const *words)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    for (size_t i = 0; words[i]; i++) {
        if (i)
            fputc(' ', f);
        if (strchr(words[i], '\n'))
            write_word_without_newlines(f, words[i]);
        else
            shquote_write(f, words[i]);
    }
    if (fclose(f)) {
        free(text);
        return NULL;
    }
    return text;
}

static int start_remote(supervisor_t *s, const pbs_agents_args_t *a, int rank)
{
    char vnode[32], label[512], rank_text[16], out[4096];
    snprintf(vnode, sizeof vnode, "%zu", s->hl->first_line[rank]);
    snprintf(label, sizeof label, "ddpjob: node %d (%s)", rank, s->hl->hosts[rank]);
    snprintf(rank_text, sizeof rank_text, "%d", rank);
    snprintf(out, sizeof out, "%s/pbsdsh-%d", a->task_held, rank);
    char *shell = NULL;
    if (asprintf(&shell, "%s%s%sexec \"$@\"\n", shell_hold_dir_function, node_shell_tail,
                 a->via == VIA_QRSH ? qrsh_says_start : "") < 0)
        return -1;
    /* pbsdsh's own words, then the node's command: bash running the node shell, the agent. */
    enum { PBSDSH_WORDS = 4 };
    char *prefix[] = {"pbsdsh",           "-n", vnode, "--", "/bin/bash", "-c", shell, label,
                      (char *)a->node_env};
    char **argv = agent_argv(a, prefix, sizeof prefix / sizeof prefix[0], rank_text);
    /* qrsh -inherit hands its command to a shell as one string: the same words, quoted. */
    char *words = argv && a->via == VIA_QRSH ? quoted_words(argv + PBSDSH_WORDS) : NULL;
    char *qrsh[] = {"qrsh", "-inherit", "-nostdin", s->hl->hosts[rank], words, NULL};
    s->tasks[rank].pid = !argv || (a->via == VIA_QRSH && !words)
                             ? -1
                             : start(a->via == VIA_QRSH ? qrsh : argv, out, 1);
    free(argv);
    free(words);
    free(shell);
    return s->tasks[rank].pid > 0 ? 0 : -1;
}

static int decode_status(int wstatus)
{
    return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
}

/* Node `rank`'s task has ended with wstatus: what it printed read once, whether its agent
 * started, and a qrsh task's output said on stderr (the job's output, where a pbsdsh task's goes
 * by itself), each line behind the node's name. */
static void task_ended(supervisor_t *s, const pbs_agents_args_t *a, int rank, int wstatus)
{
    task_t *t = &s->tasks[rank];
    char path[4096];
    snprintf(path, sizeof path, "%s/pbsdsh-%d", a->task_held, rank);
    ddp_error_t err;
    t->pid = 0;
    t->exit_status = decode_status(wstatus);
    free(t->output);
    t->output = ddp_read_file(path, NULL, &err);
    t->started = a->via != VIA_QRSH || (t->output && strstr(t->output, AGENT_STARTS));
    if (a->via != VIA_QRSH || !t->output)
        return;
    char *copy = strdup(t->output), *save = NULL;
    for (char *line = copy ? strtok_r(copy, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save))
        if (strcmp(line, AGENT_STARTS))
            fprintf(stderr, "ddpjob: node %d: %s\n", rank, line);
    free(copy);
}

/* The status of node `rank`'s agent, once its task has ended: what pbsdsh printed for its task,
 * else the task's own non-zero status (pbsdsh could not be run; qrsh's is its task's), a qrsh
 * task that never said its agent starts ending 0 taken as 254; 0 when none says anything. */
static int task_status(const supervisor_t *s, const pbs_agents_args_t *a, int rank, int *status)
{
    const task_t *t = &s->tasks[rank];
    if (!t->started && !t->exit_status) {
        *status = 254;
        return 1;
    }
    if (a->via == VIA_PBSDSH && t->output && pbs_task_status(t->output, status))
        return 1;
    *status = t->exit_status;
    return t->exit_status != 0;
}

/* Reaps every child that ended; a remote task's end may plan the job's stop. */
static void reap(supervisor_t *s, const pbs_agents_args_t *a)
{
    int wstatus;
    pid_t pid;
    while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0) {
        if (pid == s->agent_pid) {
            s->agent_status = decode_status(wstatus);
            s->agent_pid = 0;
            /* pbsdsh's own status says nothing of its task's: what it printed does. */
            if (s->remote0) {
                task_ended(s, a, 0, wstatus);
                task_status(s, a, 0, &s->agent_status);
            }
            continue;
        }
        for (int r = 1; r < a->nodes; r++) {
            if (s->tasks[r].pid != pid)
                continue;
            task_ended(s, a, r, wstatus);
            int status;
            if (s->stop_at || !s->agent_pid || !task_status(s, a, r, &status))
                break;
            if (a->spares) {
                fprintf(stderr,
                        "ddpjob: node %d (%s): its agent ended with status %d; the agents "
                        "replace a lost node while a spare is left\n",
                        r, s->hl->hosts[r], status);
                break;
            }
            char why[256];
            int64_t grace = pbs_task_grace_ms(status, s->tasks[r].started, why, sizeof why);
            s->failed_status = status;
            snprintf(s->failed, sizeof s->failed, "node %d (%s): its agent %s", r, s->hl->hosts[r],
                     why);
            s->stop_at = ddp_now_ms() + grace;
            break;
        }
    }
}

/* Waits for a signal (a child's end, or one to pass on) until `deadline` at the latest. */
static void wait_signal(supervisor_t *s, int sigfd, int64_t deadline)
{
    int left = deadline ? ddp_ms_left(deadline) : 1000;
    struct pollfd pfd = {.fd = sigfd, .events = POLLIN};
    if (poll(&pfd, 1, left > 1000 ? 1000 : left) <= 0)
        return;
    for (int sig; (sig = ddp_supervisor_signal_take(sigfd));) {
        /* PBS signals the job's whole session: a stop signal passed on again changes nothing
         * for the agent (the first one counts) and reaches it when only this process got it;
         * a checkpoint signal (SIGUSR1/2) would reach its workers twice, so it is not. */
        if ((sig == SIGTERM || sig == SIGINT || sig == SIGHUP) && s->agent_pid)
            kill(s->agent_pid, sig);
    }
}

static int running_tasks(const supervisor_t *s, int nodes)
{
    int n = 0;
    for (int r = 1; r < nodes; r++)
        n += s->tasks[r].pid > 0;
    return n;
}

/* Stops the tasks still running and reaps them. */
static void stop_tasks(supervisor_t *s, const pbs_agents_args_t *a, int nodes)
{
    for (int r = 1; r < nodes; r++)
        if (s->tasks[r].pid > 0)
            kill(s->tasks[r].pid, SIGTERM);
    for (int r = 1; r < nodes; r++) {
        int wstatus;
        if (s->tasks[r].pid > 0 && waitpid(s->tasks[r].pid, &wstatus, 0) > 0)
            task_ended(s, a, r, wstatus);
        s->tasks[r].pid = 0;
    }
}

/* After node 0's agent: the others end with it; any left after the drain time are stopped. A
 * task's failure decides the status of a job that node 0 saw end well. */
static int drain(supervisor_t *s, const pbs_agents_args_t *a, int sigfd, int status)
{
    int64_t until = ddp_now_ms() + PBS_TASK_DRAIN_MS;
    while (running_tasks(s, a->nodes) && ddp_ms_left(until) > 0) {
        wait_signal(s, sigfd, until);
        reap(s, a);
    }
    stop_tasks(s, a, a->nodes);
    for (int r = 1; r < a->nodes; r++) {
        int task;
        if (status == 0 && !a->spares && task_status(s, a, r, &task)) {
            status = pbs_shell_status(task);
            fprintf(stderr, "ddpjob: node %d (%s): its agent ended with status %d\n", r,
                    s->hl->hosts[r], task);
        }
    }
    return status;
}

static int supervise(supervisor_t *s, const pbs_agents_args_t *a, int sigfd)
{
    for (int r = 1; r < a->nodes; r++)
        if (start_remote(s, a, r)) {
            fprintf(stderr, "ddpjob pbs-agents: cannot start pbsdsh for node %d: %s\n", r,
                    strerror(errno));
            stop_tasks(s, a, r);
            return EXIT_SYSTEM;
        }
    if (s->remote0) {
        s->agent_pid = start_remote(s, a, 0) ? -1 : s->tasks[0].pid;
    } else {
        char **argv = agent_argv(a, NULL, 0, "0");
        s->agent_pid = argv ? start(argv, NULL, 0) : -1;
        free(argv);
    }
    if (s->agent_pid < 0) {
        fprintf(stderr, "ddpjob pbs-agents: cannot start node 0's agent: %s\n", strerror(errno));
        stop_tasks(s, a, a->nodes);
        return EXIT_SYSTEM;
    }
    int stopped = 0, checkpoint_asked = 0;
    while (s->agent_pid) {
        if (a->checkpoint_file && !checkpoint_asked && access(a->checkpoint_file, F_OK) == 0) {
            fprintf(stderr, "ddpjob: a checkpoint was asked (%s): SIG%s to node 0's agent\n",
                    a->checkpoint_file, ddp_signal_name(a->checkpoint_signal));
            kill(s->agent_pid, a->checkpoint_signal);
            checkpoint_asked = 1;
        }
        if (s->stop_at && !stopped && ddp_ms_left(s->stop_at) == 0) {
            fprintf(stderr, "ddpjob: %s; stopping the job\n", s->failed);
            kill(s->agent_pid, SIGTERM);
            stopped = 1;
        }
        wait_signal(s, sigfd, stopped ? 0 : s->stop_at);
        reap(s, a);
    }
    if (s->failed_status >= 0 && !stopped && s->agent_status == 0)
        fprintf(stderr, "ddpjob: %s\n", s->failed);
    int status = pbs_job_status(s->agent_status, s->failed_status, stopped);
    return drain(s, a, sigfd, status);
}

/* FILE names some of the job's nodes (a run in a held allocation): each one's line, which
 * pbsdsh -n counts, is its first in the job's own node file; -1 with err for one not there. */
static int job_lines(supervisor_t *s, const char *job_nodefile, ddp_error_t *err)
{
    ddp_hostlist_t *job = ddp_hostlist_from_nodefile(job_nodefile, err);
    if (!job)
        return -1;
    int rc = 0;
    for (size_t i = 0; i < s->hl->count && rc == 0; i++) {
        long at = ddp_hostlist_find(job, s->hl->hosts[i]);
        if (at < 0)
            rc = ddp_error_set(err, "%s is no node of the job's (%s)", s->hl->hosts[i],
                               job_nodefile);
        else
            s->hl->first_line[i] = job->first_line[at];
    }
    ddp_hostlist_destroy(job);
    return rc;
}

int cmd_pbs_agents(int argc, char **argv)
{
    pbs_agents_args_t a = {0};
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc < 0 ? EXIT_OK : rc;
    ddp_error_t err;
    supervisor_t s = {.failed_status = -1};
    if (!(s.hl = ddp_hostlist_from_nodefile(a.nodefile, &err))) {
        fprintf(stderr, "ddpjob pbs-agents: %s\n", err.msg);
        return EXIT_SYSTEM;
    }
    if (a.job_nodefile && job_lines(&s, a.job_nodefile, &err)) {
        fprintf(stderr, "ddpjob pbs-agents: %s\n", err.msg);
        ddp_hostlist_destroy(s.hl);
        return EXIT_SYSTEM;
    }
    if (s.hl->count != (size_t)a.nodes) {
        fprintf(stderr, "ddpjob pbs-agents: expected %d nodes in %s, found %zu\n", a.nodes,
                a.nodefile, s.hl->count);
        ddp_hostlist_destroy(s.hl);
        return EXIT_SYSTEM;
    }
    /* A run in a held allocation may have been given other nodes than this one. */
    char here[256];
    ddp_net_hostname(here, sizeof here);
    s.remote0 = a.job_nodefile && ddp_hostlist_find(s.hl, here) != 0;
    int sigfd = ddp_supervisor_signals(&err);
    s.tasks = calloc((size_t)a.nodes, sizeof *s.tasks);
    if (sigfd < 0 || !s.tasks) {
        fprintf(stderr, "ddpjob pbs-agents: %s\n", sigfd < 0 ? err.msg : "out of memory");
        rc = EXIT_SYSTEM;
    } else {
        rc = supervise(&s, &a, sigfd);
    }
    if (sigfd >= 0)
        close(sigfd);
    for (int r = 0; s.tasks && r < a.nodes; r++)
        free(s.tasks[r].output);
    free(s.tasks);
    ddp_hostlist_destroy(s.hl);
    return rc;
}
