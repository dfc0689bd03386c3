/* dev-hold: the holder of an allocation `ddpjob dev` holds, run by its batch script on the
 * allocation's first node (dev_record.h). It says the nodes are held, then runs the runs asked of
 * it, in the order asked: each on the first free nodes of as many as its record asks, as many at
 * once as fit and --parallel allows, the rest waiting (a run that does not fit holds back those
 * after it, so that a wide one is never passed over for ever). A run is its own job script, read
 * from its record through a descriptor checked as the user's own, started here in a process group
 * of its own with DDPJOB_RECORD naming that record and HELD_NODES_ENV its nodes, so that its
 * agents start as a batch job's do, on those nodes alone. A run whose record is marked cancelled
 * is ended (its group: TERM, KILL after a grace), or, still waiting, never started. A node lost
 * under a run (its agent gone without a word) takes no run again, and a packed sweep's run that
 * lost it is asked again, once, on the others, as the next link of its record. Each shell
 * asked (`ddpjob shell`) gets its node's side started on its node with --node-exec (the scheduler's
 * way into a node of the allocation), beside any run. The allocation is let go after --idle seconds
 * with neither a run nor a shell, with --until-done once no run goes or waits (a packed sweep's),
 * shortly before its walltime when no run goes (open shells told 10 and 1 minutes before), or when
 * the holder is signalled (a cancel, the walltime): what goes then is ended first. With
 * --continue-before, a packed sweep's allocation goes on in its next link instead: no run starts
 * once its checkpoint would be due, each that stops checkpointed (75) is asked again, and the
 * holder exits 75 while runs are left for that link. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
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
#include "cli/jobs/node_loss.h"
#include "cli/sched/sched.h"
#include "runtime/job/worker_env.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"
#include "runtime/base/ddp_portable.h"
#include "runtime/base/ddp_signal.h"

/* How often the holder looks for a request (and a shell's): a rerun's start waits at most this
 * long for it. */
#define HOLD_POLL_MS 50
/* A run asked to end has this long before its group is killed. */
#define RUN_GRACE_MS 30000
/* The largest job script a run's record holds. */
#define RUN_SCRIPT_MAX (4 << 20)
/* How bash is handed the run's script: through its environment, never a command line. */
#define RUN_SCRIPT_ENV "DDPJOB_RUN_SCRIPT"

static const char hold_help[] =
    "usage: ddpjob dev-hold --record DIR --idle SECONDS [--deadline EPOCH] [--node-exec CMD]\n"
    "                       [--parallel N] [--until-done [--continue-before S]] -- HOST...\n"
    "Run by the batch script of an allocation `ddpjob dev` holds: says its nodes (HOST...) are\n"
    "held, then runs each `ddpjob run --in` asked of it on as many free nodes as it asks (N at\n"
    "once at most, default 1), and starts each `ddpjob shell`'s node side with CMD (its words;\n"
    "%h: the node's host), until it has been idle SECONDS (0: until its walltime), no run goes\n"
    "or waits (--until-done: exit 1 unless each run exited 0), or it is signalled.\n"
    "--continue-before S: the allocation goes on in a next link; a run that stops with its\n"
    "checkpoints written (75) is asked again for it, none starts in the last S seconds, and the\n"
    "holder exits 75 when runs are left for it.\n";

/* Shells open at once at most. */
#define SHELLS_MAX 64
/* Open shells are told when this much of the walltime is left, and again at the second. */
#define WARN_FIRST_S 600
#define WARN_LAST_S 60
/* With no run going, the allocation is let go this long before its walltime: a run going keeps
 * it, for its own walltime rule (its checkpoint) to finish. */
#define RELEASE_BEFORE_S 15
/* Runs going at once at most, whatever --parallel says. */
#define RUNS_MAX 256

typedef struct {
    pid_t pid; /* the run (its process group), 0: the slot is free */
    int k;     /* its number */
    char record[4096];
    int link;             /* the link of its record it runs as */
    int retried;          /* an earlier link was asked again, a node lost under it */
    int64_t ending_since; /* when it was asked to end (ms), 0 not */
    unsigned char *nodes; /* [host]: whether it runs there */
} run_slot_t;

typedef struct {
    const char *dev;      /* the allocation's record, through the batch shell's hold */
    const char *dev_path; /* ... by its name, for the nodes (DDPJOB_RECORD) */
    const char *node_exec;
    char *const *hosts;
    int nhosts;
    pid_t shells[SHELLS_MAX]; /* the shells' node sides going (their process groups) */
    int shell_k[SHELLS_MAX];  /* ... and their numbers */
    run_slot_t runs[RUNS_MAX];
    int parallel;        /* runs at once at most */
    int until_done;      /* a packed sweep's: a run whose node was lost is asked again, once */
    long deadline;       /* the allocation's end (epoch s), 0 unknown */
    long continue_s;     /* --continue-before: runs continue in the next link; -1 not */
    int going;           /* runs going */
    unsigned char *busy; /* [host]: a run goes there */
    unsigned char *lost; /* [host]: a node lost under a run: none goes there again */
    int nlost;
} holder_t;

/* The run's job script, from its record, read through a descriptor: a regular file of this
 * user's that group and others cannot write. NULL with err. */
static char *read_run_script(const char *record, ddp_error_t *err)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/script", record);
    return ddp_read_own_file(path, S_IWGRP | S_IWOTH, RUN_SCRIPT_MAX, NULL, err);
}

/* The free nodes a run of `want` nodes takes: the first ones, into its slot's map; 0 when too
 * few are free. */
static int place_run(const holder_t *h, int want, unsigned char *nodes)
{
    int found = 0;
    memset(nodes, 0, (size_t)h->nhosts);
    for (int i = 0; i < h->nhosts && found < want; i++)
        if (!h->busy[i] && !h->lost[i])
            nodes[i] = 1, found++;
    return found == want;
}

/* The run's nodes, comma-separated, as a Slurm node list and a PBS host list both take them. */
static void nodes_text(const holder_t *h, const unsigned char *nodes, char *out, size_t size)
{
    size_t n = 0;
    out[0] = 0;
    for (int i = 0; i < h->nhosts && n < size; i++)
        if (nodes[i])
            n += (size_t)snprintf(out + n, size - n, "%s%s", n ? "," : "", h->hosts[i]);
}

/* Starts run k (its record `record`, its job script `script`) on the nodes of `slot`, as link
 * `link` of its record: 0, or -1 with err. */
static int start_run(holder_t *h, run_slot_t *slot, int k, int link, const char *record,
                     const char *workdir, const char *script, ddp_error_t *err)
{
    char nodes[8192];
    nodes_text(h, slot->nodes, nodes, sizeof nodes);
    if (strlen(nodes) + 1 >= sizeof nodes)
        return ddp_error_set(err, "its nodes' names are longer than %zu bytes", sizeof nodes);
    char number[16], link_text[16];
    snprintf(number, sizeof number, "%d", k);
    snprintf(link_text, sizeof link_text, "%d", link);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return ddp_error_set(err, "fork: %s", strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* The run's files are its own: its workdir, as a scheduler starts a job's script in the
         * folder it was submitted from (or says it in its task_workdir_var). */
        if (chdir(workdir) != 0) {
            fprintf(stderr, "ddpjob dev-hold: run %d: its workdir %s: %s\n", k, workdir,
                    strerror(errno));
            _exit(3);
        }
        sched_set_task_workdir(workdir);
        setenv(JOB_RECORD_ENV, record, 1);
        setenv(HELD_NODES_ENV, nodes, 1);
        setenv(HELD_RUN_ENV, number, 1);
        setenv(HELD_LINK_ENV, link_text, 1);
        if (h->deadline) {
            char deadline[32];
            snprintf(deadline, sizeof deadline, "%ld", h->deadline);
            setenv(HELD_DEADLINE_ENV, deadline, 1);
        }
        setenv(RUN_SCRIPT_ENV, script, 1);
        execl("/bin/bash", "bash", "-c",
              "ddpjob_script=$" RUN_SCRIPT_ENV "; unset " RUN_SCRIPT_ENV
              "; eval \"$ddpjob_script\"",
              "ddpjob-run", (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    slot->pid = pid;
    slot->k = k;
    slot->link = link;
    slot->ending_since = 0;
    snprintf(slot->record, sizeof slot->record, "%s", record);
    for (int i = 0; i < h->nhosts; i++)
        h->busy[i] |= slot->nodes[i];
    h->going++;
    return 0;
}

/* Asks a run to end (TERM to its group), and kills it once RUN_GRACE_MS have passed. */
static void end_run(run_slot_t *slot)
{
    if (!slot->ending_since) {
        slot->ending_since = ddp_now_ms();
        kill(-slot->pid, SIGTERM);
    } else if (ddp_now_ms() - slot->ending_since > RUN_GRACE_MS) {
        kill(-slot->pid, SIGKILL);
    }
}

static int record_cancelled(const char *record)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/cancelled", record);
    return access(path, F_OK) == 0;
}

/* The held node (index) of the run's that `host` names; -1 none. */
static int run_node_of(const holder_t *h, const run_slot_t *slot, const char *host)
{
    for (int i = 0; i < h->nhosts; i++)
        if (slot->nodes[i] && !strcmp(h->hosts[i], host))
            return i;
    return -1;
}

/* A run's end, taken, and said in its record (link-K/holder). Where one of its nodes was lost
 * under it (node_loss.h), no run goes there again, and a packed sweep's run is asked again on the
 * others, once: the scheduler keeps the allocation (sbatch --no-kill, PBS's
 * tolerate_node_failures) for the trials that did not run there. One stopped at the walltime with
 * its checkpoints written is asked again for the allocation's next link, where it resumes. */
static void run_ended(holder_t *h, const run_slot_t *slot, int status, int stopping)
{
    int failed = !WIFEXITED(status) || WEXITSTATUS(status) != 0, node = -1;
    int cancelled = record_cancelled(slot->record);
    int again = h->continue_s >= 0 && !cancelled && WIFEXITED(status) &&
                WEXITSTATUS(status) == WORKER_EXIT_CHECKPOINTED;
    char lost[256];
    int first = 0;
    while (first < h->nhosts - 1 && !slot->nodes[first])
        first++;
    if (failed && !again && !stopping && !cancelled &&
        node_loss_find(slot->record, slot->link, h->hosts[first], lost, sizeof lost))
        node = run_node_of(h, slot, lost);
    if (node >= 0) {
        h->nlost += !h->lost[node];
        h->lost[node] = 1;
        again = h->until_done && !slot->retried;
    }
    ddp_error_t err;
    if (job_record_holder_took(slot->record, slot->link, node >= 0 ? h->hosts[node] : NULL, again,
                               &err))
        fprintf(stderr, "ddpjob dev-hold: run %d: %s\n", slot->k, err.msg);
    if (again && dev_run_request(h->dev, slot->k, slot->record, &err)) {
        fprintf(stderr, "ddpjob dev-hold: run %d not asked again: %s\n", slot->k, err.msg);
        again = 0;
    }
    if (node >= 0)
        printf("ddpjob: node %s was lost under run %d: no run goes there again%s\n", h->hosts[node],
               slot->k, again ? "; the run goes again on the other nodes" : "");
    else if (again)
        printf("ddpjob: run %d stopped with its checkpoints written: it goes on in the "
               "allocation's next link\n",
               slot->k);
    fflush(stdout);
    if (!again &&
        dev_run_ended_write(h->dev, slot->k,
                            WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), &err))
        fprintf(stderr, "ddpjob dev-hold: run %d: %s\n", slot->k, err.msg);
}

/* Runs ended, reaped (what each left in its group killed), their nodes freed; runs to end (the
 * holder stopping, or their record cancelled) asked to. How many ended. */
static int tend_runs(holder_t *h, int stopping)
{
    int ended = 0;
    for (int r = 0; r < RUNS_MAX; r++) {
        run_slot_t *slot = &h->runs[r];
        int status;
        if (!slot->pid)
            continue;
        if (waitpid(slot->pid, &status, WNOHANG) == slot->pid) {
            run_ended(h, slot, status, stopping);
            kill(-slot->pid, SIGKILL);
            slot->pid = 0;
            for (int i = 0; i < h->nhosts; i++)
                h->busy[i] &= (unsigned char)!slot->nodes[i];
            h->going--;
            ended++;
        } else if (stopping || record_cancelled(slot->record)) {
            end_run(slot);
        }
    }
    return ended;
}

/* Why the run waiting as request k cannot start in this allocation (a record of no run, nodes it
 * can never have), or NULL with *want its nodes, *link the first link of its record not started
 * (a run asked again goes on as the next), *retried whether one before it was asked again after a
 * node was lost, *workdir and *script set (script malloc'd). */
static const char *run_asks(const holder_t *h, const char *record, int *want, int *link,
                            int *retried, char *workdir, size_t size, char **script, char *why,
                            size_t why_size)
{
    job_record_t r = {0};
    ddp_error_t err;
    *script = NULL;
    if (job_record_read(record, &r, &err)) {
        snprintf(why, why_size, "%s", err.msg);
        return why;
    }
    int mine = r.held_in[0] != 0;
    *want = r.nodes > 0 ? r.nodes : 1;
    *retried = 0;
    for (*link = 0; *link < r.nlinks && r.links[*link].started; (*link)++)
        *retried |= r.links[*link].asked_again && r.links[*link].lost_host[0];
    snprintf(workdir, size, "%s", r.workdir);
    job_record_free(&r);
    if (!mine)
        snprintf(why, why_size, "%s is no run's record", record);
    else if (*want > h->nhosts - h->nlost)
        snprintf(why, why_size, "it asks for %d node(s); the allocation holds %d%s", *want,
                 h->nhosts - h->nlost, h->nlost ? " (others were lost)" : "");
    else if (!(*script = read_run_script(record, &err)))
        snprintf(why, why_size, "%s", err.msg);
    return *script ? NULL : why;
}

/* Whether no run starts any more: the allocation goes on in its next link, and a run started
 * now would be told to checkpoint at once. */
static int closing(const holder_t *h)
{
    return h->continue_s >= 0 && h->deadline && (long)time(NULL) >= h->deadline - h->continue_s;
}

/* The runs asked, in order, started while the first waiting fits on the free nodes (one that
 * cannot start said in runs/K/failed, a cancelled one dropped). How many started. */
static int take_requests(holder_t *h)
{
    int started = 0, k;
    char record[4096];
    int free_nodes = 0;
    for (int i = 0; i < h->nhosts; i++)
        free_nodes += !h->busy[i] && !h->lost[i];
    /* Nothing is read while every node is busy: the holder looks every HOLD_POLL_MS. */
    while (free_nodes && h->going < h->parallel && !closing(h) &&
           dev_request_peek(h->dev, &k, record, sizeof record)) {
        int want = 0, link = 0, retried = 0;
        char workdir[4096], why[4400], *script = NULL;
        const char *cannot = record_cancelled(record)
                                 ? "its record was cancelled before it started"
                                 : run_asks(h, record, &want, &link, &retried, workdir,
                                            sizeof workdir, &script, why, sizeof why);
        run_slot_t *slot = NULL;
        for (int r = 0; r < RUNS_MAX && !slot; r++)
            slot = h->runs[r].pid ? NULL : &h->runs[r];
        if (!cannot && (!slot || !place_run(h, want, slot->nodes))) {
            free(script);
            break; /* it waits for nodes, and those after it with it */
        }
        if (!dev_run_withdraw(h->dev, k)) {
            free(script); /* withdrawn by run --in meanwhile */
            continue;
        }
        ddp_error_t err;
        if (!cannot && start_run(h, slot, k, link, record, workdir, script, &err)) {
            snprintf(why, sizeof why, "%s", err.msg);
            cannot = why;
        }
        free(script);
        if (cannot) {
            fprintf(stderr, "ddpjob dev-hold: run %d not started: %s\n", k, cannot);
            dev_run_fail(h->dev, k, cannot);
            continue;
        }
        if (dev_holder_write(h->dev, k, (int64_t)time(NULL), &err))
            fprintf(stderr, "ddpjob dev-hold: %s\n", err.msg);
        slot->retried = retried;
        free_nodes -= want;
        started++;
    }
    return started;
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

static int hold_options(int argc, char **argv, holder_t *h, long *idle_s)
{
    static const struct option opts[] = {{"record", required_argument, NULL, 'r'},
                                         {"idle", required_argument, NULL, 'i'},
                                         {"deadline", required_argument, NULL, 'd'},
                                         {"node-exec", required_argument, NULL, 'x'},
                                         {"parallel", required_argument, NULL, 'p'},
                                         {"until-done", no_argument, NULL, 'u'},
                                         {"continue-before", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    int c;
    h->parallel = 1;
    h->continue_s = -1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'r')
            h->dev = optarg;
        else if (c == 'x')
            h->node_exec = optarg;
        else if (c == 'u')
            h->until_done = 1;
        else if (c == 'i' && !ddp_parse_long(optarg, 0, 1L << 40, idle_s))
            continue;
        else if (c == 'd' && !ddp_parse_long(optarg, 0, 1L << 40, &h->deadline))
            continue;
        else if (c == 'c' && !ddp_parse_long(optarg, 0, 1L << 40, &h->continue_s))
            continue;
        else if (c == 'p' && !ddp_parse_int(optarg, 1, RUNS_MAX, &h->parallel))
            continue;
        else if (c == 'h')
            return fputs(hold_help, stdout), EXIT_OK;
        else
            return fputs(hold_help, stderr), EXIT_USAGE;
    }
    if (!h->dev || optind >= argc || (h->continue_s >= 0 && !h->until_done))
        return fputs(hold_help, stderr), EXIT_USAGE;
    h->hosts = argv + optind;
    h->nhosts = argc - optind;
    return -1;
}

int cmd_dev_hold(int argc, char **argv)
{
    static holder_t h;
    h.dev_path = getenv(JOB_RECORD_ENV);
    long idle_s = 0;
    int rc = hold_options(argc, argv, &h, &idle_s);
    if (rc >= 0)
        return rc;
    const char *dev = h.dev;
    ddp_error_t err;
    h.busy = calloc((size_t)h.nhosts, 1);
    h.lost = calloc((size_t)h.nhosts, 1);
    for (int r = 0; h.busy && r < RUNS_MAX; r++)
        if (!(h.runs[r].nodes = calloc((size_t)h.nhosts, 1)))
            h.busy = NULL;
    if (!h.busy || !h.lost) {
        fprintf(stderr, "ddpjob dev-hold: out of memory\n");
        return EXIT_SYSTEM;
    }
    int sigfd = ddp_supervisor_signals(&err);
    if (sigfd < 0 || dev_ready_write(dev, h.hosts, h.nhosts, &err) ||
        dev_holder_write(dev, 0, (int64_t)time(NULL), &err)) {
        fprintf(stderr, "ddpjob dev-hold: %s\n", err.msg);
        return EXIT_SYSTEM;
    }
    if (!h.dev_path)
        h.node_exec = NULL;
    if (h.until_done)
        printf("ddpjob: holding %d node(s) for the runs asked, %d at once at most, until none "
               "is left\n",
               h.nhosts, h.parallel);
    else
        printf("ddpjob: holding %d node(s) for runs (ddpjob run --in); released after %ld s "
               "idle%s\n",
               h.nhosts, idle_s, idle_s ? "" : " (never: at the walltime)");
    fflush(stdout);
    int64_t idle_since = ddp_now_ms();
    const char *why = NULL;
    int shells = 0, warned = 0;
    while (!why || h.going || shells) {
        for (int sig; (sig = ddp_supervisor_signal_take(sigfd));)
            if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
                why = "signal";
        if (tend_runs(&h, why != NULL)) {
            int still = 0;
            for (int r = 0; r < RUNS_MAX && !still; r++)
                still = h.runs[r].pid ? h.runs[r].k : 0;
            idle_since = ddp_now_ms();
            if (dev_holder_write(dev, still, (int64_t)time(NULL), &err))
                fprintf(stderr, "ddpjob dev-hold: %s\n", err.msg);
        }
        if ((shells = tend_shells(&h, why != NULL)))
            idle_since = ddp_now_ms();
        if (!why && take_requests(&h))
            idle_since = 0;
        if (!why && h.until_done && !h.going && !shells && !dev_requests_waiting(dev))
            why = "done";
        if (!why && !h.going && idle_s && ddp_now_ms() - idle_since >= idle_s * 1000)
            why = "idle";
        warn_walltime(&h, h.deadline, &warned);
        if (!why && !h.going &&
            (closing(&h) || (h.deadline && (long)time(NULL) >= h.deadline - RELEASE_BEFORE_S)))
            why = "walltime";
        /* A run's end (SIGCHLD) wakes it at once: the next run starts without a poll's wait. */
        struct pollfd woken = {.fd = sigfd, .events = POLLIN};
        if (!why || h.going || shells)
            poll(&woken, 1, HOLD_POLL_MS);
    }
    if (dev_released_write(dev, why, &err))
        fprintf(stderr, "ddpjob dev-hold: %s\n", err.msg);
    printf("ddpjob: released the allocation (%s)\n", why);
    /* A packed sweep's allocation ends completed only when each of its runs did, in this link
     * or one before: what waits for it as afterok waits for them all. Runs left at the walltime
     * go on in its next link. */
    if (h.continue_s >= 0 && !strcmp(why, "walltime") && dev_requests_waiting(dev))
        return WORKER_EXIT_CHECKPOINTED;
    return h.until_done && (dev_runs_unsuccessful(dev) || strcmp(why, "done")) ? 1 : EXIT_OK;
}
