/* dev: an allocation held for runs (dev_record.h). `ddpjob dev SPEC` submits the spec as an
 * allocation whose batch script holds its nodes, and returns once they are held; `ddpjob dev stop
 * DEV` releases it; `ddpjob run --in DEV` runs a spec's workload there (dev_run): the spec
 * rendered as a job script of its own, with a record of its own, which the allocation's holder
 * runs, its output followed here until it ends. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands/commands.h"
#include "cli/commands/submit_steps.h"
#include "cli/jobs/dev_record.h"
#include "runtime/base/ddp_clock.h"

/* How long an allocation stays held with no run, unless told. */
#define DEV_IDLE_DEFAULT_S (30 * 60)
/* How long a run waits for the holder to take it: it looks every few tens of milliseconds. */
#define RUN_TAKE_MS 60000
#define LOOK_MS 200
/* How often a run waiting to be taken asks the scheduler whether the allocation still runs. */
#define ALLOCATION_LOOK_MS 2000
/* How often run --in reads the run's logs: its lines show within this of being written. */
#define FOLLOW_READ_MS 50

static const char dev_help[] =
    "usage: ddpjob dev SPEC [--idle DURATION|off] [--wait-for DURATION] [--scheduler "
    "{schedulers}]\n"
    "                       [--site NAME|FILE] [--set PATH=VALUE]... [--bindir DIR]\n"
    "       ddpjob dev stop DEV\n"
    "       ddpjob dev DEV --port PORT[:NODE] [--wait[=D]]\n"
    "Holds the spec's nodes (its resources, queue, project, walltime) as one allocation, named\n"
    "as the spec, and returns once they are held, printing its nodes. `ddpjob run --in DEV`\n"
    "then runs a spec's workload on them, under the spec's modules, setup, env and container,\n"
    "each time with a record of its own; `ddpjob dev stop DEV` releases them.\n"
    "  --idle D      release it after D with no run (default 30m; off: at its walltime);\n"
    "                D is seconds, Ns, Nm, Nh or HH:MM:SS\n"
    "  --wait-for D  how long to wait for the allocation to start (default 10m); it stays\n"
    "                queued after that, and is held once it starts\n"
    "  --port PORT[:NODE]  forward localhost:PORT here to PORT on node NODE (default 0) of\n"
    "                DEV, until Ctrl-C (Jupyter, a VS Code server, TensorBoard on that node);\n"
    "                --wait[=D] waits for a queued DEV's nodes (default 60m)\n"
    "  --on NAME     from this laptop: dev SPEC sends the spec's folder and holds the nodes\n"
    "                on cluster NAME; stop and --port find DEV there (the cluster `dev --on`\n"
    "                held it on, by default), --port through the login node's SSH\n"
    "Exit: 0 held (stop: released), 1 invalid spec, or the allocation ended before it was held,\n"
    "      2 usage, 3 file or template error, 4 the submit command failed, 124 still queued.\n";

/* The allocation that `dev` names, read into r: its record folder (malloc'd); NULL with the
 * problem said as `ddpjob COMMAND: ...`. */
static char *find_dev(const char *command, const char *dev, job_record_t *r)
{
    ddp_error_t err;
    char *dir = dev_record_find(dev, r, &err);
    if (!dir)
        fprintf(stderr, "ddpjob %s: %s\n", command, err.msg);
    return dir;
}

static void say_held(const job_record_t *r, const char *id, const dev_state_t *s)
{
    char idle[64] = "never idle-released";
    if (r->idle_s)
        snprintf(idle, sizeof idle, "released after %lld s idle", (long long)r->idle_s);
    printf("%s: job %s holds %d node(s): %s (%s)\n", r->name, id, s->nhosts, s->hosts, idle);
    printf("run on them: ddpjob run --in %s [SPEC] [-- ARGS]; release: ddpjob dev stop %s\n",
           r->name, r->name);
}

/* Waits for the allocation in dir to be held: EXIT_OK once it is, 1 when it ended first, 124
 * when still queued at the deadline. */
static int wait_held(char *dir, const char *id, int64_t wait_s)
{
    int64_t deadline = ddp_deadline_in(wait_s * 1000);
    for (;;) {
        dev_state_t s;
        dev_state_read(dir, &s);
        job_view_t v;
        ddp_error_t err;
        job_views_load(&dir, 1, &v, &err);
        if (s.ready) {
            say_held(&v.rec, id, &s);
            job_views_free(&v, 1);
            return EXIT_OK;
        }
        if (job_state_final(v.state)) {
            fprintf(stderr, "ddpjob dev: %s (job %s) ended before its nodes were held: %s\n",
                    v.rec.name, id, job_state_name(v.state));
            job_view_print_cause(stderr, &v);
            job_views_free(&v, 1);
            return 1;
        }
        job_views_free(&v, 1);
        if (ddp_ms_left(deadline) == 0) {
            fprintf(stderr,
                    "ddpjob dev: job %s is still queued after %lld s: it stays queued and holds "
                    "its nodes once it starts (ddpjob status %s); ddpjob dev stop %s withdraws "
                    "it\n",
                    id, (long long)wait_s, id, id);
            return 124;
        }
        ddp_sleep_ms(LOOK_MS * 5);
    }
}

static int dev_stop(const char *dev)
{
    job_record_t r = {0};
    char *dir = find_dev("dev stop", dev, &r);
    if (!dir)
        return 1;
    job_record_free(&r);
    char *cancel_argv[] = {"cancel", dir, NULL};
    optind = 0;
    int rc = cmd_cancel(2, cancel_argv);
    free(dir);
    return rc;
}

/* The spec submitted as an allocation (sub_argv: submit's command line), waited for. */
static int hold_spec(int n, char **sub_argv, const job_record_t *held, int64_t wait_s)
{
    submit_context_t within = {.held = held};
    optind = 0;
    int rc = submit_within(n, sub_argv, &within);
    if (rc == EXIT_OK && within.record) {
        fprintf(stderr, "ddpjob dev: job %s submitted; waiting for its nodes (up to %lld s)\n",
                within.id, (long long)wait_s);
        rc = wait_held(within.record, within.id, wait_s);
    }
    free(within.record);
    return rc;
}

int cmd_dev(int argc, char **argv)
{
    static const struct option opts[] = {{"idle", required_argument, NULL, 'i'},
                                         {"wait-for", required_argument, NULL, 'w'},
                                         {"scheduler", required_argument, NULL, 's'},
                                         {"site", required_argument, NULL, 'S'},
                                         {"set", required_argument, NULL, 'E'},
                                         {"bindir", required_argument, NULL, 'b'},
                                         {"port", required_argument, NULL, 'p'},
                                         {"endpoint", no_argument, NULL, 'e'},
                                         {"wait", optional_argument, NULL, 'W'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    const char *port = NULL;
    int endpoint = 0;
    job_record_t held = {.held = 1, .idle_s = DEV_IDLE_DEFAULT_S};
    int64_t wait_s = DEV_WAIT_DEFAULT_S, held_wait_s = 0;
    /* What submit takes: "submit", its options as given (each "--NAME" made here), the spec. */
    char **sub_argv = calloc((size_t)argc * 2 + 2, sizeof *sub_argv),
         **made = calloc((size_t)argc + 1, sizeof *made);
    int n = 0, nmade = 0, c, rc = EXIT_USAGE;
    if (!sub_argv || !made) {
        rc = EXIT_SYSTEM;
        goto out;
    }
    sub_argv[n++] = "submit";
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            print_help(stdout, dev_help);
            rc = EXIT_OK;
            goto out;
        }
        if (c == '?')
            goto usage;
        /* --endpoint: the node's side for a laptop's --port --on (cmd_remote_dev.c). */
        endpoint |= c == 'e';
        port = c == 'p' ? optarg : port;
        if (c == 'W' && dev_parse_wait("dev", optarg, &held_wait_s))
            goto out;
        if (c == 'p' || c == 'e' || c == 'W')
            continue;
        if ((c == 'i' && dev_parse_duration(optarg, &held.idle_s)) ||
            (c == 'w' && (dev_parse_duration(optarg, &wait_s) || !wait_s))) {
            fprintf(stderr, "ddpjob dev: --%s %s: expected a duration (30m, 90s, 1h, HH:MM:SS)\n",
                    c == 'i' ? "idle" : "wait-for", optarg);
            goto out;
        }
        for (int i = 0; c != 'i' && c != 'w' && opts[i].name; i++)
            if (opts[i].val == c) {
                if (asprintf(&made[nmade], "--%s", opts[i].name) < 0) {
                    rc = EXIT_SYSTEM;
                    goto out;
                }
                sub_argv[n++] = made[nmade++];
                sub_argv[n++] = optarg;
            }
    }
    if (port && optind + 1 == argc) {
        rc = dev_forward(argv[optind], port, endpoint, held_wait_s);
        goto out;
    }
    if (port)
        goto usage;
    if (optind + 2 == argc && !strcmp(argv[optind], "stop")) {
        rc = dev_stop(argv[optind + 1]);
        goto out;
    }
    if (optind + 1 != argc)
        goto usage;
    sub_argv[n++] = argv[optind];
    rc = hold_spec(n, sub_argv, &held, wait_s);
    goto out;
usage:
    print_help(stderr, dev_help);
out:
    for (int i = 0; i < nmade; i++)
        free(made[i]);
    free(made);
    free(sub_argv);
    return rc;
}

/* Where an interrupt of `run --in` marks the run cancelled: made before, as a handler may only
 * open a file. */
static char cancel_mark[8300];

static void cancel_on_signal(int sig)
{
    (void)sig;
    int fd = open(cancel_mark, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    static const char said[] =
        "\nddpjob run: cancelling the run (its holder ends it; the allocation stays held)\n";
    if (write(2, said, sizeof said - 1) < 0)
        return;
}

/* Read with read(2), not stdio: a thread blocked in fgets holds stdin's lock, and the
 * fflush(NULL) before a fork would wait for it. */
static void *cancel_on_input(void *arg)
{
    (void)arg;
    char line[64];
    size_t len = 0;
    for (;;) {
        ssize_t n = read(0, line + len, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL;
        if (line[len] != '\n') {
            len = len + 1 < sizeof line ? len + 1 : 0;
            continue;
        }
        if (len == 6 && !memcmp(line, "cancel", 6))
            kill(getpid(), SIGINT);
        len = 0;
    }
}

void dev_run_cancel_on_input(void)
{
    pthread_t reader;
    if (pthread_create(&reader, NULL, cancel_on_input, NULL) == 0)
        pthread_detach(reader);
}

/* The run's spec for the allocation: loaded, checked against what is held; NULL with the
 * problem said and *code set. */
static job_spec_t *run_spec(const char *dev, const job_record_t *r, const dev_state_t *s,
                            const char *spec_path, load_opts_t *load, char **extra, int nextra,
                            long nproc, int *code)
{
    const char *path = spec_path ? spec_path : r->spec;
    load->sched = sched_by_name(r->scheduler);
    load->scheduler_needed = true;
    const sched_ops_t *target;
    job_spec_t *spec = load_for_scheduler(path, load, &target, NULL, code);
    if (!spec)
        return NULL;
    ddp_error_t err;
    *code = EXIT_USAGE;
    if (spec->sweep.ntrials > 1 && !load->trial_given) {
        fprintf(stderr, "ddpjob run: %s is a sweep: --trial K runs one of its trials in %s\n", path,
                dev);
    } else if (spec_append_args(spec, extra, nextra, &err)) {
        fprintf(stderr, "ddpjob run: %s: %s\n", path, err.msg);
    } else if (spec_alloc_nodes(spec) > s->nhosts) {
        fprintf(stderr, "ddpjob run: %s asks for %ld node(s); %s holds %d\n", path,
                spec_alloc_nodes(spec), dev, s->nhosts);
    } else {
        if (nproc)
            spec->procs_per_node = nproc;
        if (spec->requeue)
            fprintf(stderr,
                    "ddpjob run: %s: requeue: %ld is a batch job's chain; a run in %s that "
                    "stops at the walltime ends with 75, and runs again with --resume\n",
                    path, spec->requeue, dev);
        spec->requeue = 0;
        *code = EXIT_OK;
        return spec;
    }
    spec_destroy(spec);
    return NULL;
}

/* Waits until the holder has started run k (its record's first link), or said why it could
 * not: EXIT_OK, or an exit code with the problem said. A run waits while another goes. */
static int wait_taken(char *dir, int k, const char *run_dir, const char *dev)
{
    int64_t deadline = ddp_deadline_in(RUN_TAKE_MS), next_look = ddp_now_ms() + ALLOCATION_LOOK_MS;
    int said_busy = 0;
    for (;;) {
        job_record_t run = {0};
        ddp_error_t err;
        int started = !job_record_read(run_dir, &run, &err) && run.nlinks && run.links[0].started;
        job_record_free(&run);
        if (started)
            return EXIT_OK;
        char *why = dev_run_failed(dir, k);
        if (why) {
            fprintf(stderr, "ddpjob run: %s could not start the run: %s\n", dev, why);
            free(why);
            return EXIT_SYSTEM;
        }
        dev_state_t s;
        dev_state_read(dir, &s);
        /* The holder notes a run's end a moment after its record does. */
        if (s.run && s.run != k && ddp_ms_left(deadline) < RUN_TAKE_MS - 2000) {
            if (!said_busy++)
                fprintf(stderr, "ddpjob run: %s runs run %d; this one waits for it to end\n", dev,
                        s.run);
            deadline = ddp_deadline_in(RUN_TAKE_MS);
        }
        const char *gone = s.released ? "was released" : NULL;
        if (!gone && ddp_now_ms() >= next_look) {
            job_view_t v;
            job_views_load(&dir, 1, &v, &err);
            gone = job_state_final(v.state) ? "has ended" : NULL;
            job_views_free(&v, 1);
            next_look = ddp_now_ms() + ALLOCATION_LOOK_MS;
        }
        if (gone || ddp_ms_left(deadline) == 0) {
            if (dev_run_withdraw(dir, k) || gone) {
                job_record_mark_cancelled(run_dir, &err);
                fprintf(stderr, "ddpjob run: %s %s: the run was not started\n", dev,
                        gone ? gone : "did not take the run within 60 s");
                return 1;
            }
        }
        ddp_sleep_ms(LOOK_MS / 10);
    }
}

int dev_run(const char *dev, const char *spec_path, load_opts_t *load, char **extra, int nextra,
            const run_in_opts_t *o)
{
    job_record_t r = {0};
    char *dir = find_dev("run", dev, &r), *run_dir = NULL, *text = NULL;
    if (!dir)
        return 1;
    dev_state_t s;
    ddp_error_t err;
    int code, k = 0;
    const char *id = r.nlinks ? r.links[r.nlinks - 1].id : "";
    job_spec_t *spec = NULL;
    if ((code = dev_ready("run", dev, dir, o->wait_s, &s)) != EXIT_OK ||
        !(spec = run_spec(dev, &r, &s, spec_path, load, extra, nextra, o->nproc, &code)))
        goto out;
    const sched_ops_t *ops = sched_by_name(r.scheduler);
    render_opts_t ro = {.sched = sched_by_name(r.scheduler), .bindir = o->bindir, .held_run = true};
    if (!(text = render_to_string(spec, &ro, &code)))
        goto out;
    job_record_t run = {0};
    snprintf(run.held_in, sizeof run.held_in, "%s", dir);
    code = EXIT_SYSTEM;
    if (dev_reserve(dir, "runs", &k, &err) ||
        (snprintf(run.name, sizeof run.name, "%.200s-run%d", r.name, k),
         make_record(spec, ops, spec->workdir ? spec->workdir : ".", text, NULL, &run, &run_dir,
                     &err))) {
        fprintf(stderr, "ddpjob run: %s: %s\n", dev, err.msg);
        goto out;
    }
    record_submitted(run_dir, id, 1);
    snprintf(cancel_mark, sizeof cancel_mark, "%s/cancelled", run_dir);
    struct sigaction sa = {.sa_handler = cancel_on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (dev_run_request(dir, k, run_dir, &err)) {
        fprintf(stderr, "ddpjob run: %s: %s\n", dev, err.msg);
        goto out;
    }
    fprintf(stderr, "ddpjob run: %s in %s (job %s) on %s\n", run.name, dev, id, s.hosts);
    if ((code = wait_taken(dir, k, run_dir, dev)) != EXIT_OK)
        goto out;
    logs_follow(run_dir, FOLLOW_READ_MS);
    job_view_t end;
    job_views_load(&run_dir, 1, &end, &err);
    code = job_view_exit(&end);
    fprintf(stderr, "ddpjob run: %s: %s; %s stays held\n", run.name, job_state_name(end.state),
            dev);
    if (code)
        job_view_print_cause(stderr, &end);
    job_views_free(&end, 1);
out:
    job_record_free(&r);
    spec_destroy(spec);
    free(text);
    free(run_dir);
    free(dir);
    return code;
}
