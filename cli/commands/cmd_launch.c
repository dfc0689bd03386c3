/* launch: a spec's job on hosts reached by SSH, the way `mpirun -H` starts ranks, for hosts with
 * no scheduler, and for a PBS job whose spec says `launcher: ssh` (its script hands over the node
 * script it carries, --node-script). One libssh2 session per host, all opened in parallel
 * before anything starts (a host that cannot be reached, whose key is unknown or changed, or
 * that refuses the login stops the launch there, nothing having run); then on each host bash
 * runs the rendered node.sh (the spec's node setup, then that node's agent) with the job token
 * as the first line on its stdin. Output comes back line by line behind the host's name. Ctrl-C or
 * SIGTERM here closes every command's stdin, which stops each agent and so the job; a host whose
 * agent could not start (126, 127) or whose connection drops stops the others at once. The exit
 * status is node 0's agent's, which is the job's. */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands/commands.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_hmac.h"
#include "runtime/base/ddp_parse.h"
#include "runtime/base/ddp_signal.h"
#include "runtime/job/job_contract.h"
#include "runtime/job/node_source.h"
#include "cli/commands/host_options.h"
#include "cli/launch/launch_hosts.h"
#include "cli/script/render.h"
#include "cli/spec/shquote.h"
#include "cli/ssh/ssh_config.h"
#include "cli/ssh/ssh_session.h"
#include "runtime/job/store_proto.h"

static const char launch_help[] =
    "usage: ddpjob launch (SPEC | --node-script FILE) (--hosts H[:N],... | --hostfile FILE |\n"
    "       --nodefile FILE) [OPTIONS] [-- ARGS...]\n"
    "Runs the spec's job on hosts reached by SSH (libssh2): on each, the spec's modules, setup,\n"
    "env and workdir, then ddpjob-agent as that node; the first host is node 0, the master.\n"
    "ARGS are appended to the command. Exits with the job's status.\n"
    "  --node-script FILE      instead of a SPEC, a node script it was rendered into (what a PBS\n"
    "                          script with `launcher: ssh` passes)\n"
    "  --hosts LIST            hosts, each with its workers: a:2,b:4 (default: the spec's\n"
    "                          procs_per_node)\n"
    "  --hostfile FILE         one host per line: `host`, `host:N` or mpirun's `host slots=N`\n"
    "  --nodefile FILE         a scheduler's node file (a host once per slot: PBS_NODEFILE)\n"
    "  --nproc-per-node N      workers on every host (over the slots given)\n"
    "  --bindir DIR            where ddpjob-agent is on the hosts (default: where it is here)\n"
    "  --master-port PORT      node 0's rendezvous port (default: inside a Slurm or PBS job\n"
    "                          the one its agents derive from the job id, else random)\n"
    "  --run-id ID             the job's id (default: launch-RANDOM)\n"
    "  --workdir DIR           where each host's node setup starts (default: the login's home)\n"
    "  --deadline TIME         --requeue-count N: passed to every agent (see ddpjob-agent --help)\n"
    "  --spares N              the last N hosts stand by as spare nodes (default: the spec's\n"
    "                          spares): node 0's status is the job's\n"
    "  --agent-option OPT      one more word for every agent's command line (repeat it for an\n"
    "                          option's value: --agent-option=--log-dir --agent-option=DIR)\n"
    "  --connect-timeout S     to reach and log in to every host (default 30)\n"
    "  --accept-new-host-keys  add the keys of hosts not yet in known_hosts (never a changed one)\n"
    "  --ssh-config FILE       default ~/.ssh/config (HostName, Port, User, IdentityFile)\n"
    "  --known-hosts FILE      default ~/.ssh/known_hosts\n"
    "Logs in with ssh-agent's keys, else the identity files. The job token (DDPJOB_TOKEN, else\n"
    "a new one) reaches each host on the command's stdin, never on a command line.\n";

enum { EXIT_LAUNCH = 1 };

typedef struct launch launch_t;

typedef struct {
    launch_t *job;
    const char *alias;
    int node, nproc;
    ssh_target_t target;
    ssh_session_t *session;
    pthread_t thread;
    char error[1024];
    int status, finished, eof_sent;
    atomic_int ended; /* its thread is done: read by the main thread while the others run */
    char *line[2];
    size_t line_len[2];
} host_run_t;

struct launch {
    host_run_t *hosts;
    size_t count;
    const char *known_hosts;
    char *script; /* the node script */
    int accept_new_keys;
    int64_t deadline;
    char master[256], run_id[128];
    char *token;
    char *cd;        /* `cd -- DIR || exit` and a newline before the script, or "" */
    char *node_args; /* NNODES MASTER_ADDR MASTER_PORT RUN_ID, quoted for the remote shell */
    char *tail;      /* after NPROC: the agent options, "--", the workload's ARGs; quoted */
    int port;
    long spares;        /* hosts standing by (the agents' --spares) */
    int replaceable;    /* spares or an elastic world: a lost host is the agents' to handle */
    atomic_int stop;    /* close every command's stdin */
    atomic_int abandon; /* node 0 ended JOB_DRAIN_MS ago: leave the hosts still running */
    pthread_mutex_t out_lock;
};

/* What the spec says of the job's shape (all 0 without a spec). */
typedef struct {
    long procs;            /* workers per node */
    long spares;           /* standby hosts */
    long min_nodes, nodes; /* an elastic world when min_nodes < nodes */
} spec_shape_t;

/* What the command line asks for. */
typedef struct {
    host_options_t ho;
    const char *bindir, *run_id, *script_path, *workdir, *spec_path;
    long nproc, port;
    long spares;          /* -1: the spec's */
    char **agent_options; /* for every agent: --deadline, --requeue-count, each --agent-option */
    int nagent_options;
    char **extra; /* the workload's ARGS, after "--" */
    int nextra;
    bool doctor;
} launch_request_t;

static void *open_host(void *arg)
{
    host_run_t *h = arg;
    ddp_error_t err;
    h->session = ssh_session_open(h->alias, &h->target, h->job->known_hosts,
                                  h->job->accept_new_keys, NULL, h->job->deadline, &err);
    if (!h->session)
        snprintf(h->error, sizeof h->error, "%s", err.msg);
    return NULL;
}

/* Passes a host's output on whole lines at a time, each behind the host's name. */
static void host_output(void *arg, int stream, const char *data, size_t len)
{
    host_run_t *h = arg;
    FILE *out = stream ? stderr : stdout;
    char *grown = realloc(h->line[stream], h->line_len[stream] + len + 1);
    if (!grown)
        return;
    h->line[stream] = grown;
    memcpy(grown + h->line_len[stream], data, len);
    h->line_len[stream] += len;
    char *start = grown, *end = grown + h->line_len[stream], *nl;
    pthread_mutex_lock(&h->job->out_lock);
    while ((nl = memchr(start, '\n', (size_t)(end - start)))) {
        fprintf(out, "%s: %.*s\n", h->alias, (int)(nl - start), start);
        start = nl + 1;
    }
    fflush(out);
    pthread_mutex_unlock(&h->job->out_lock);
    h->line_len[stream] = (size_t)(end - start);
    memmove(grown, start, h->line_len[stream]);
}

static void run_host(host_run_t *h)
{
    launch_t *L = h->job;
    ddp_error_t err;
    char *command = NULL, *input = NULL, *text = NULL, *line = NULL;
    /* The node script carries the spec's env: and setup: values: it travels on stdin, before the
     * token's line, and the command line (which the user's login shell, dash or csh, parses,
     * and anyone's `ps` shows) only reads it. */
    int made = asprintf(&text, "%sset -- %d %s %d%s\n%s", L->cd, h->node, L->node_args, h->nproc,
                        L->tail, L->script) >= 0;
    if (!made || !(line = shquote_stdin_line(text)) || !(command = shquote_stdin_runner()) ||
        asprintf(&input, "%s%s\n", line, L->token) < 0) {
        snprintf(h->error, sizeof h->error, "out of memory");
        atomic_store(&L->stop, 1);
        if (made)
            free(text);
        free(line);
        free(command);
        return;
    }
    free(text);
    free(line);
    int rc =
        ssh_session_exec(h->session, command, input, strlen(input), ddp_deadline_in(30000), &err);
    free(command);
    free(input);
    while (rc == 0) {
        if (atomic_load(&L->stop) && !h->eof_sent) {
            ssh_session_eof(h->session);
            h->eof_sent = 1;
        }
        if (atomic_load(&L->abandon)) {
            snprintf(h->error, sizeof h->error,
                     "still running %d s after node 0's agent ended (a frozen host?): left",
                     JOB_DRAIN_MS / 1000);
            return;
        }
        rc = ssh_session_pump(h->session, 200, host_output, h, &err);
    }
    if (rc < 0) {
        snprintf(h->error, sizeof h->error, "%s", err.msg);
        /* With spares or an elastic world the agents handle a lost host; node 0's serves the
         * store. */
        if (!L->replaceable || h->node == 0)
            atomic_store(&L->stop, 1);
        return;
    }
    for (int s = 0; s < 2; s++)
        if (h->line_len[s])
            host_output(h, s, "\n", 1);
    h->status = ssh_session_exit_status(h->session);
    h->finished = 1;
    /* 126/127: bash could not run the agent there; the job cannot form without this node. */
    if (h->status == 126 || h->status == 127) {
        snprintf(h->error, sizeof h->error,
                 "its agent could not start (exit %d; is ddpjob-agent "
                 "there? --bindir)",
                 h->status);
        atomic_store(&L->stop, 1);
    }
}

static void *host_thread(void *arg)
{
    host_run_t *h = arg;
    run_host(h);
    atomic_store(&h->ended, 1);
    return NULL;
}

/* The script every host runs: node.sh rendered from the spec with ARGS appended to its command,
 * or a node script as given; *shape gets the spec's job shape. */
static char *node_script(const char *spec_path, const char *script_path, const char *bindir,
                         bool doctor, char **extra, int nextra, spec_shape_t *shape, int *exit_code)
{
    ddp_error_t err;
    *shape = (spec_shape_t){0};
    *exit_code = EXIT_SYSTEM;
    if (script_path) {
        char *script = ddp_read_file(script_path, NULL, &err);
        if (!script)
            fprintf(stderr, "ddpjob launch: --node-script: %s\n", err.msg);
        return script;
    }
    const sched_ops_t *target;
    load_opts_t load = {.sched = NULL, .local_run = true, .doctor = doctor};
    job_spec_t *spec = spec_path ? load_for_scheduler(spec_path, &load, &target, NULL, exit_code)
                                 : spec_doctor_default(&err);
    if (!spec) {
        if (!spec_path)
            fprintf(stderr, "ddpjob doctor: %s\n", err.msg);
        return NULL;
    }
    char *script = NULL;
    size_t script_len = 0;
    FILE *f = open_memstream(&script, &script_len);
    int rc = spec_append_args(spec, extra, nextra, &err);
    if (!rc)
        rc = f ? render_node_script(spec, bindir, true, f, &err)
               : ddp_error_set(&err, "out of memory");
    if (f)
        fclose(f);
    *shape = (spec_shape_t){.procs = spec->procs_per_node,
                            .spares = spec->spares,
                            .min_nodes = spec->min_nodes,
                            .nodes = spec->nodes};
    if (rc) {
        fprintf(stderr, "ddpjob launch: %s: %s\n", spec->path, err.msg);
        free(script);
        script = NULL;
    }
    spec_destroy(spec);
    return script;
}

/* Words for the remote shell, each quoted and behind a blank. */
static char *quoted_words(char *const *words, int n)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return NULL;
    for (int i = 0; i < n; i++) {
        fputc(' ', f);
        shquote_write(f, words[i]);
    }
    fclose(f);
    return out;
}

static int parse_int_option(const char *name, const char *text, long lo, long hi, long *out)
{
    if (ddp_parse_long(text, lo, hi, out) == 0)
        return 0;
    fprintf(stderr, "ddpjob launch: %s: invalid value \"%s\" (%ld to %ld)\n", name, text, lo, hi);
    return -1;
}

int cmd_launch(int argc, char **argv)
{
    return launch_command(argc, argv, false);
}

/* The command line into r: 0, -1 when --help said all, or the exit status to end with. */
/* One of launch's own options (c: getopt's value, arg its argument) into r: 0, -1 when --help
 * was printed, or an exit code. */
static int take_launch_option(launch_request_t *r, int c, char *arg)
{
    int bad = 0;
    long number;
    switch (c) {
    case 'h':
        fputs(launch_help, stdout);
        return -1;
    case 'p':
        bad = parse_int_option("--nproc-per-node", arg, 1, JOB_PROCS_PER_NODE_MAX, &r->nproc);
        break;
    case 'b':
        r->bindir = arg;
        break;
    case 'P':
        bad = parse_int_option("--master-port", arg, 1, 65535, &r->port);
        break;
    case 'r':
        r->run_id = arg;
        break;
    case 's':
        r->script_path = arg;
        break;
    case 'w':
        r->workdir = arg;
        break;
    case 'd':
        /* Unix seconds or +SECONDS, checked here rather than by every agent at once. */
        bad = parse_int_option("--deadline", arg + (arg[0] == '+'), 1, INT64_MAX / 1000, &number);
        r->agent_options[r->nagent_options++] = "--deadline";
        r->agent_options[r->nagent_options++] = arg;
        break;
    case 'q':
        bad = parse_int_option("--requeue-count", arg, 0, JOB_REQUEUES_MAX, &number);
        r->agent_options[r->nagent_options++] = "--requeue-count";
        r->agent_options[r->nagent_options++] = arg;
        break;
    case 'o':
        r->agent_options[r->nagent_options++] = arg;
        break;
    case 'S':
        bad = parse_int_option("--spares", arg, 0, JOB_NODES_MAX - 1, &r->spares);
        break;
    default:
        fputs(launch_help, stderr);
        return EXIT_USAGE;
    }
    return bad ? EXIT_USAGE : 0;
}

static int parse_launch_args(int argc, char **argv, bool doctor, launch_request_t *r)
{
    static const struct option opts[] = {HOST_OPTIONS_LONGOPTS,
                                         {"nodefile", required_argument, NULL, 'n'},
                                         {"nproc-per-node", required_argument, NULL, 'p'},
                                         {"bindir", required_argument, NULL, 'b'},
                                         {"master-port", required_argument, NULL, 'P'},
                                         {"run-id", required_argument, NULL, 'r'},
                                         {"node-script", required_argument, NULL, 's'},
                                         {"workdir", required_argument, NULL, 'w'},
                                         {"deadline", required_argument, NULL, 'd'},
                                         {"requeue-count", required_argument, NULL, 'q'},
                                         {"agent-option", required_argument, NULL, 'o'},
                                         {"spares", required_argument, NULL, 'S'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    *r = (launch_request_t){.doctor = doctor, .spares = -1};
    /* Each option adds at most two words; the spec's spares and range four more. */
    if (!(r->agent_options = calloc((size_t)argc * 2 + 5, sizeof *r->agent_options))) {
        fprintf(stderr, "ddpjob launch: out of memory\n");
        return EXIT_SYSTEM;
    }
    host_options_init(&r->ho);
    argc = split_workload_args(argc, argv, &r->extra, &r->nextra);
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int taken =
            host_options_take(&r->ho, c == 'n' ? 'f' : c, optarg, doctor ? "doctor" : "launch");
        if (taken < 0)
            return EXIT_USAGE;
        if (taken)
            continue;
        if ((taken = take_launch_option(r, c, optarg)))
            return taken;
    }
    /* doctor needs no spec: it then asks the hosts' python3 for its versions. */
    int specs = argc - optind;
    if (specs != !r->script_path && !(doctor && specs == 0)) {
        fprintf(stderr, "ddpjob launch: give a SPEC or --node-script\n%s", launch_help);
        return EXIT_USAGE;
    }
    r->spec_path = specs ? argv[optind] : NULL;
    return 0;
}

/* The remote command's parts: the node script quoted, the cd into the workdir, and the tail
 * (the agent options, "--", a node script's ARGS). *spec_procs: the spec's workers per node. */
static int prepare_command(launch_t *L, launch_request_t *r, long *spec_procs)
{
    int exit_code;
    spec_shape_t shape;
    char *script = node_script(r->spec_path, r->script_path, r->bindir, r->doctor, r->extra,
                               r->nextra, &shape, &exit_code);
    if (!script)
        return exit_code;
    L->script = script;
    *spec_procs = shape.procs;
    L->spares = r->spares >= 0 ? r->spares : shape.spares;
    L->replaceable = L->spares > 0 || shape.min_nodes < shape.nodes;
    /* The agents' options after the node's own (a later one wins): its spares, its range. */
    char spares[32], range[64];
    snprintf(spares, sizeof spares, "%ld", L->spares);
    snprintf(range, sizeof range, "%ld:%ld", shape.min_nodes, shape.nodes);
    if (L->spares) {
        r->agent_options[r->nagent_options++] = "--spares";
        r->agent_options[r->nagent_options++] = spares;
    }
    if (shape.min_nodes < shape.nodes) {
        r->agent_options[r->nagent_options++] = "--nnodes";
        r->agent_options[r->nagent_options++] = range;
    }
    /* With a spec, ARGS went into its command; a node script takes them after its "--". */
    char *options_q = quoted_words(r->agent_options, r->nagent_options);
    char *args_q = quoted_words(r->extra, r->script_path ? r->nextra : 0);
    char *workdir_q = r->workdir ? shquote(r->workdir) : NULL;
    int failed =
        !L->script || !options_q || !args_q || (r->workdir && !workdir_q) ||
        asprintf(&L->tail, "%s --%s", options_q, args_q) < 0 ||
        asprintf(&L->cd, r->workdir ? "cd -- %s || exit\n" : "%s", r->workdir ? workdir_q : "") < 0;
    free(options_q);
    free(args_q);
    free(workdir_q);
    if (failed) {
        fprintf(stderr, "ddpjob launch: out of memory\n");
        return EXIT_SYSTEM;
    }
    return 0;
}

/* The token, run id and port (a new token as the agent makes one; a run id and a port from the
 * same draw), and each host's workers and SSH target: 0, or the exit status. */
static int prepare_job(launch_t *L, const launch_request_t *r, const launch_hosts_t *hosts,
                       long spec_procs)
{
    ddp_error_t err;
    L->known_hosts = r->ho.known_hosts;
    L->accept_new_keys = r->ho.accept_new_keys;
    L->count = hosts->count;
    if ((size_t)L->spares >= hosts->count) {
        fprintf(stderr, "ddpjob launch: %ld spare(s) of %zu host(s) leave none to run the job\n",
                L->spares, hosts->count);
        return EXIT_USAGE;
    }
    L->hosts = calloc(hosts->count, sizeof *L->hosts);
    unsigned char random[32 + 4 + 2];
    const char *token = getenv("DDPJOB_TOKEN");
    char id_hex[9];
    L->token = token && *token ? strdup(token) : malloc(2 * 32 + 1);
    if (!L->hosts || !L->token || ddp_random(random, sizeof random)) {
        fprintf(stderr, "ddpjob launch: cannot start: %s\n",
                L->hosts && L->token ? "no random bytes" : "out of memory");
        return EXIT_SYSTEM;
    }
    if (!(token && *token))
        ddp_hex(random, 32, L->token);
    ddp_hex(random + 32, 4, id_hex);
    snprintf(L->run_id, sizeof L->run_id, "%s%s", r->run_id ? "" : "launch-",
             r->run_id ? r->run_id : id_hex);
    /* Inside a scheduler job the port its agents would derive themselves, else a random one. */
    L->port = r->port ? (int)r->port
              : node_source_job_id()
                  ? ddp_job_port_from_id(node_source_job_id())
                  : ddp_job_port_random((uint16_t)(random[36] << 8 | random[37]));
    for (size_t i = 0; i < hosts->count; i++) {
        host_run_t *h = &L->hosts[i];
        h->job = L;
        h->alias = hosts->hosts[i].name;
        h->node = (int)i;
        h->nproc = r->nproc                      ? (int)r->nproc
                   : hosts->hosts[i].slots_given ? hosts->hosts[i].slots
                                                 : (int)spec_procs;
        if (h->nproc <= 0) {
            fprintf(stderr,
                    "ddpjob launch: %s: how many workers? give --nproc-per-node or the "
                    "host's slots\n",
                    h->alias);
            return EXIT_USAGE;
        }
        if (ssh_config_lookup(r->ho.ssh_config, h->alias, &h->target, &err)) {
            fprintf(stderr, "ddpjob launch: %s\n", err.msg);
            return EXIT_USAGE;
        }
    }
    snprintf(L->master, sizeof L->master, "%s", L->hosts[0].target.hostname);
    char *master_q = shquote(L->master), *run_id_q = shquote(L->run_id);
    int failed = !master_q || !run_id_q ||
                 asprintf(&L->node_args, "%zu %s %d %s", L->count - (size_t)L->spares, master_q,
                          L->port, run_id_q) < 0;
    free(master_q);
    free(run_id_q);
    if (failed) {
        fprintf(stderr, "ddpjob launch: out of memory\n");
        return EXIT_SYSTEM;
    }
    return 0;
}

/* Every host's session, opened in parallel: 0, or EXIT_LAUNCH with each failure said. */
static int open_sessions(launch_t *L, int connect_s)
{
    ddp_error_t err;
    if (ssh_session_init(&err)) {
        fprintf(stderr, "ddpjob launch: %s\n", err.msg);
        return EXIT_SYSTEM;
    }
    L->deadline = ddp_deadline_in(connect_s * 1000);
    for (size_t i = 0; i < L->count; i++)
        pthread_create(&L->hosts[i].thread, NULL, open_host, &L->hosts[i]);
    int failed = 0;
    for (size_t i = 0; i < L->count; i++) {
        pthread_join(L->hosts[i].thread, NULL);
        if (!L->hosts[i].session) {
            fprintf(stderr, "ddpjob launch: node %zu: %s\n", i, L->hosts[i].error);
            failed = 1;
        }
    }
    if (failed)
        fprintf(stderr, "ddpjob launch: nothing was started\n");
    return failed ? EXIT_LAUNCH : 0;
}

/* Runs the job on every host until each has ended; a stop signal here stops them all. */
static void run_hosts(launch_t *L, const sigset_t *signals)
{
    fprintf(stderr, "ddpjob launch: job %s on %zu host(s), master %s:%d\n", L->run_id, L->count,
            L->master, L->port);
    for (size_t i = 0; i < L->count; i++)
        pthread_create(&L->hosts[i].thread, NULL, host_thread, &L->hosts[i]);
    int64_t node0_ended = 0;
    for (size_t done = 0; done < L->count;) {
        int sig = ddp_signal_wait(signals, 200);
        if (sig && sig != SIGPIPE && !atomic_exchange(&L->stop, 1))
            fprintf(stderr, "ddpjob launch: SIG%s: stopping the job on every host\n",
                    ddp_signal_name(sig));
        done = 0;
        for (size_t i = 0; i < L->count; i++)
            done += (size_t)atomic_load(&L->hosts[i].ended);
        /* Node 0's agent knows how the job ended; the others get JOB_DRAIN_MS to follow. */
        if (!node0_ended && atomic_load(&L->hosts[0].ended))
            node0_ended = ddp_now_ms();
        if (node0_ended && ddp_now_ms() - node0_ended >= JOB_DRAIN_MS)
            atomic_store(&L->abandon, 1);
    }
    for (size_t i = 0; i < L->count; i++)
        pthread_join(L->hosts[i].thread, NULL);
}

/* The job's status: a host whose agent could not start, else node 0's agent's, else (without
 * spares or an elastic world) the first failure; each host's error said. */
static int job_status(const launch_t *L)
{
    int status = -1;
    for (size_t i = 0; i < L->count; i++) {
        const host_run_t *h = &L->hosts[i];
        if (h->error[0])
            fprintf(stderr, "ddpjob launch: node %d (%s): %s\n", h->node, h->alias, h->error);
        /* A host whose agent could not start is the cause, whatever node 0 then saw. */
        if (h->finished && (h->status == 126 || h->status == 127))
            status = h->status;
        else if (status < 0 && h->finished && h->node == 0)
            status = h->status;
    }
    /* With spares or an elastic world a lost host's end is the agents' to handle: node 0 knows
     * how the job ended. */
    for (size_t i = 0; status <= 0 && !L->replaceable && i < L->count; i++)
        if (L->hosts[i].error[0] || (L->hosts[i].finished && L->hosts[i].status))
            status = L->hosts[i].finished && L->hosts[i].status ? L->hosts[i].status : EXIT_LAUNCH;
    return status < 0 ? EXIT_LAUNCH : status;
}

static void launch_free(launch_t *L)
{
    for (size_t i = 0; L->hosts && i < L->count; i++) {
        ssh_session_close(L->hosts[i].session);
        free(L->hosts[i].line[0]);
        free(L->hosts[i].line[1]);
    }
    free(L->hosts);
    free(L->token);
    free(L->node_args);
    free(L->tail);
    free(L->cd);
    free(L->script);
}

int launch_command(int argc, char **argv, bool doctor)
{
    launch_request_t r;
    int rc = parse_launch_args(argc, argv, doctor, &r);
    if (rc) {
        free(r.agent_options);
        return rc < 0 ? EXIT_OK : rc;
    }
    ddp_error_t err;
    launch_hosts_t hosts;
    if (host_options_hosts(&r.ho, "--hostfile, --nodefile", &hosts, &err)) {
        fprintf(stderr, "ddpjob launch: %s\n", err.msg);
        free(r.agent_options);
        return EXIT_USAGE;
    }
    launch_t L = {.out_lock = PTHREAD_MUTEX_INITIALIZER};
    long spec_procs = 0;
    /* Signals are taken by this thread alone, with ddp_signal_wait. */
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGHUP);
    sigaddset(&signals, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &signals, NULL);
    if (!(rc = prepare_command(&L, &r, &spec_procs)) &&
        !(rc = prepare_job(&L, &r, &hosts, spec_procs)) &&
        !(rc = open_sessions(&L, r.ho.connect_s))) {
        run_hosts(&L, &signals);
        rc = job_status(&L);
    }
    launch_free(&L);
    launch_hosts_free(&hosts);
    free(r.agent_options);
    return rc;
}
