#include "agent/supervision/options.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/workers/binding.h"
#include "agent/workers/console.h"
#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_hmac.h"
#include "runtime/base/ddp_net.h"
#include "runtime/base/ddp_parse.h"
#include "runtime/job/hostlist.h"
#include "runtime/job/job_contract.h"
#include "runtime/job/node_source.h"
#include "agent/workers/output.h"
#include "agent/supervision/preflight.h"
#include "runtime/job/store_proto.h"

static const char usage_head[] =
    "usage: ddpjob-agent [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM as this node's workers of a data-parallel job, with the environment torchrun\n"
    "gives (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...). One agent per node.\n"
    "\n";

static const char usage_tail[] =
    "\n"
    "torchrun's spellings (--nproc_per_node, --node_rank, ...) are accepted, and its\n"
    "--rdzv-backend c10d|static, --rdzv-endpoint HOST[:PORT] (the master), --rdzv-id (the run\n"
    "id) and --nnodes N:N. As with torchrun, PET_NAME gives a torchrun option's default\n"
    "(PET_NNODES=2, PET_NO_PYTHON=1, ...); its flags win.\n"
    "Exit status: 0 when every worker of every node exited 0; 75 when the job was stopped (the\n"
    "checkpoint signal, a forwarded USR1/USR2, or a stop signal) and every rank exited 75,\n"
    "checkpointed: requeue it to resume; else the first failing worker's code (128+N for\n"
    "signal N); 1 for a failure of the job itself (rendezvous, a lost node); 2 for a usage "
    "error.\n";

/* What the command line says beyond agent_options_t's own fields, until the options are whole. */
typedef struct {
    const char *nproc, *token_file, *python;
    /* How the program is to run, and the option (or PET_ variable) that said so. */
    char module[64], no_python[64], run_path[64];
    int port_set;
} parse_state_t;

/* How an option's value is taken: each kind is a parser that sets the row's field. */
typedef enum {
    KIND_FLAG,       /* the int field becomes 1 */
    KIND_INT,        /* an int within [lo, hi] */
    KIND_MS,         /* seconds above 0, at most hi (a decimal number), into milliseconds */
    KIND_MS_OR_OFF,  /* the same, or 0: off */
    KIND_STR,        /* a string field, copied; lo 1: it may not be empty */
    KIND_ARG,        /* a const char * field: the value itself, as given on the command line */
    KIND_STATE_ARG,  /* parse_state_t's const char * field `field`; lo 1: it may not be empty */
    KIND_CHOICE,     /* one of `words`: its index (or values[index]) into an int field */
    KIND_SIGNAL,     /* a signal's name or number */
    KIND_STATE_NAME, /* parse_state_t's name field `field` becomes the option's name */
    KIND_TAKE,       /* the row's own `take` */
} option_kind_t;

typedef struct agent_option option_t;
/* A KIND_TAKE option's parser: 0, 1 for a bad value (said by the caller), 2 when it said all
 * (--help), -1 with err set. */
typedef int take_fn(agent_options_t *o, parse_state_t *p, const option_t *opt, const char *name,
                    const char *v, ddp_error_t *err);

struct agent_option {
    const char *name;  /* --name */
    char short_name;   /* -c, or 0 */
    int torchrun;      /* torchrun's option: its underscore spelling and PET_NAME are taken too */
    const char *value; /* its value's name in --help; NULL: a flag */
    option_kind_t kind;
    size_t field;             /* where the value goes: agent_options_t's (or parse_state_t's) */
    long lo, hi;              /* KIND_INT: the bounds; KIND_MS: the most seconds */
    const char *const *words; /* KIND_CHOICE: the words, NULL-terminated */
    const int *values;        /* KIND_CHOICE: each word's value (NULL: its index) */
    take_fn *take;            /* KIND_TAKE */
    const char *help;         /* --help's text; a newline starts an indented line */
};

#define FIELD(f) offsetof(agent_options_t, f)
#define TAKE(fn) KIND_TAKE, 0, 0, 0, NULL, NULL, fn
#define CHOICE(f, words, values) KIND_CHOICE, FIELD(f), 0, 0, words, values, NULL
#define STATE_NAME(f) KIND_STATE_NAME, offsetof(parse_state_t, f), 0, 0, NULL, NULL, NULL
#define STATE_ARG(f, not_empty)                                                                    \
    KIND_STATE_ARG, offsetof(parse_state_t, f), not_empty, 0, NULL, NULL, NULL

static take_fn take_nnodes, take_master_port, take_slow_factor, take_streams, take_ranks_filter,
    take_rdzv_backend, take_endpoint, take_rdzv_conf, take_monitor_interval, take_start_method,
    take_deadline, take_container_mount, take_container_env, take_help, take_version;

/* The choices' values where they are not the words' order (binding.h, preflight.h). */
static const int gpu_binding_values[] = {GPU_BINDING_PER_RANK, GPU_BINDING_NONE};
static const int cpu_binding_values[] = {CPU_BINDING_CORES, CPU_BINDING_NUMA, CPU_BINDING_NONE};
static const char *const preflight_words[] = {"report", "strict", "only", NULL};

/* The one table of ddpjob-agent's options: it drives parsing, --help and the completions. */
static const option_t options[] = {
    {"nnodes", 0, 1, "N|MIN:MAX", TAKE(take_nnodes),
     "nodes in the job (default: from Slurm/PBS/mpirun, else 1); MIN:MAX\n"
     "an elastic world: start with MIN once the last call has passed,\n"
     "admit more up to MAX at a restart, go on with fewer down to MIN"},
    {"spares", 0, 0, "N", KIND_INT, FIELD(spares), 0, JOB_NODES_MAX - 1, NULL, NULL, NULL,
     "N more agents (node ranks after the active ones) stand by and\n"
     "take a lost node's place, in a new attempt (default 0)"},
    {"node-rank", 0, 1, "R", KIND_INT, FIELD(node_rank), 0, JOB_NODES_MAX - 1, NULL, NULL, NULL,
     "this node's rank (default: from Slurm/PBS/mpirun; handed out with c10d)"},
    {"nproc-per-node", 0, 1, "N|gpu|cpu|auto", STATE_ARG(nproc, 0),
     "workers on this node (default 1; gpu: one per visible\n"
     "GPU; cpu: one per CPU; auto: gpu where a GPU is visible, else cpu)"},
    {"master-addr", 0, 1, "HOST", KIND_STR, FIELD(master_addr), 1, 0, NULL, NULL, NULL,
     "node 0's host (default: the first node of the job)"},
    {"master-port", 0, 1, "PORT", TAKE(take_master_port),
     "the workers' MASTER_PORT (rank 0's store, as with torchrun); the\n"
     "agents' rendezvous store listens on the next port"},
    {"standalone", 0, 1, NULL, KIND_FLAG, FIELD(standalone), 0, 0, NULL, NULL, NULL,
     "one node, ports chosen here"},
    {"rdzv-backend", 0, 1, "c10d|static", TAKE(take_rdzv_backend),
     "c10d hands out node ranks to agents given none"},
    {"rdzv-endpoint", 0, 1, "HOST[:PORT]", TAKE(take_endpoint), "the master's host and port"},
    {"rdzv-id", 0, 1, "ID", KIND_STR, FIELD(run_id), 0, 0, NULL, NULL, NULL,
     "the job's id (as --run-id)"},
    {"rdzv-conf", 0, 1, "K=V,...", TAKE(take_rdzv_conf),
     "join_timeout (as --rdzv-timeout), last_call_timeout (with spares\n"
     "or MIN:MAX; default 30 s, 5 s with spares); others are ignored"},
    {"run-id", 0, 1, "ID", KIND_STR, FIELD(run_id), 0, 0, NULL, NULL, NULL,
     "the job's id (default: the scheduler's job id)"},
    {"token-file", 0, 0, "FILE", STATE_ARG(token_file, 0),
     "the job token (mode 0600); or set DDPJOB_TOKEN"},
    {"max-restarts", 0, 1, "N", KIND_INT, FIELD(max_restarts), 0, JOB_MAX_RESTARTS_MAX, NULL, NULL,
     NULL, "restart every worker after a failure up to N times (default 0)"},
    {"rdzv-timeout", 0, 1, "SECONDS", KIND_INT, FIELD(rdzv_timeout_s), 1, JOB_TIMEOUT_MAX_S, NULL,
     NULL, NULL, "how long to wait for every node to join (default 300)"},
    {"heartbeat", 0, 0, "SECONDS", KIND_MS, FIELD(heartbeat_ms), 0, 3600, NULL, NULL, NULL,
     "heartbeat interval; an agent silent for two is lost (default 1)"},
    {"grace", 0, 0, "SECONDS", KIND_MS, FIELD(grace_ms), 0, 3600, NULL, NULL, NULL,
     "from SIGTERM to SIGKILL when stopping workers (default 10)"},
    {"hang-timeout", 0, 0, "SECONDS", KIND_MS_OR_OFF, FIELD(hang_timeout_ms), 0, JOB_TIMEOUT_MAX_S,
     NULL, NULL, NULL,
     "a worker that writes nothing and uses under 1% of a CPU (its\n"
     "process group) for this long is hung, and fails the job; a\n"
     "stopped one after half of it (0, the default: never)"},
    {"slow-factor", 0, 0, "F", TAKE(take_slow_factor),
     "node 0 names a rank busy at least F times the median rank per\n"
     "step (workers that write their step into DDPJOB_PROGRESS_FILE;\n"
     "default 1.5; 0: never)"},
    {"slow-window", 0, 0, "SECONDS", KIND_MS, FIELD(slow_window_ms), 1, JOB_TIMEOUT_MAX_S, NULL,
     NULL, NULL,
     "the time over which each rank's busy time per step is taken\n"
     "(default 30)"},
    {"exit-timeout", 0, 0, "SECONDS", KIND_INT, FIELD(exit_timeout_s), 1, JOB_TIMEOUT_MAX_S, NULL,
     NULL, NULL, "how long a finished node waits for the rest (default 300)"},
    {"output-stall-timeout", 0, 0, "SECONDS", KIND_MS, FIELD(output_stall_ms), 0, JOB_TIMEOUT_MAX_S,
     NULL, NULL, NULL,
     "while this agent's stdout or stderr is read, workers\n"
     "wait for it (no line is lost); only once the reader has taken\n"
     "nothing for this long are lines dropped, counted and reported (default 10)"},
    {"log-dir", 0, 1, "DIR", KIND_STR, FIELD(log_dir), 0, 0, NULL, NULL, NULL,
     "also write each rank's stdout and stderr under DIR/RUN_ID (never\n"
     "over an earlier run's)"},
    {"redirects", 'r', 1, "S", KIND_TAKE, FIELD(redirects), 0, 0, NULL, NULL, take_streams,
     "keep streams S off the console, in the log files only (S: 0 none,\n"
     "1 stdout, 2 stderr, 3 both; or per local rank, 0:3,1:2)"},
    {"tee", 't', 1, "S", KIND_TAKE, FIELD(tee), 0, 0, NULL, NULL, take_streams,
     "write streams S to log files too (a temporary folder, kept and\n"
     "named, without --log-dir)"},
    {"local-ranks-filter", 0, 1, "L", TAKE(take_ranks_filter),
     "only these local ranks' output on the console (0 or 0,2)"},
    {"log-line-prefix", 0, 0, "T", KIND_ARG, FIELD(prefix_template), 0, 0, NULL, NULL, NULL,
     "each console line's prefix: ${rank}, ${local_rank}, ${role_name};\n"
     "\"\" for none (default: $TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE,\n"
     "else \"[rank ${rank}] \")"},
    {"error-file", 0, 0, "FILE", KIND_STR, FIELD(error_file), 0, 0, NULL, NULL, NULL,
     "write a JSON failure report to FILE when the job fails (%n in\n"
     "FILE: this node's rank, for nodes that share a file system)"},
    {"progress-file", 0, 0, "FILE", KIND_STR, FIELD(progress_file), 0, 0, NULL, NULL, NULL,
     "node 0 writes each rank's last step and busy time per step to\n"
     "FILE (JSON; every few seconds and at the end)"},
    {"history-file", 0, 0, "FILE", KIND_STR, FIELD(history_file), 0, 0, NULL, NULL, NULL,
     "node 0 keeps the ranks' steps and busy time over time, and the\n"
     "attempts, restarts, spares and slow ranks, in FILE (JSON lines;\n"
     "bounded however long the job runs)"},
    {"python", 0, 0, "PATH", STATE_ARG(python, 1),
     "the interpreter for a PROGRAM ending in .py, -m or --run-path\n"
     "(default $PYTHON_EXEC, else python3); it runs with -u, as torchrun's does"},
    {"module", 'm', 1, NULL, STATE_NAME(module),
     "PROGRAM is a Python module: run as python -u -m PROGRAM"},
    {"run-path", 0, 1, NULL, STATE_NAME(run_path),
     "run the script PROGRAM through runpy.run_path, as torchrun does"},
    {"no-python", 0, 1, NULL, STATE_NAME(no_python),
     "run PROGRAM as given, even when it ends in .py"},
    {"local-rank-arg", 0, 0, NULL, KIND_FLAG, FIELD(local_rank_arg), 0, 0, NULL, NULL, NULL,
     "append --local_rank=N to each worker's arguments, as\n"
     "torch.distributed.launch does (the variable LOCAL_RANK is always set)"},
    {"monitor-interval", 0, 1, "SECONDS", TAKE(take_monitor_interval),
     "taken and noted: the agent hears a worker's exit at once"},
    {"start-method", 0, 1, "spawn|fork|forkserver", TAKE(take_start_method),
     "taken and noted: every worker is started by fork and exec"},
    {"deadline", 0, 0, "TIME", TAKE(take_deadline),
     "when the scheduler ends the job: Unix seconds, or +SECONDS from now"},
    {"checkpoint-signal", 0, 0, "SIG", KIND_SIGNAL, FIELD(checkpoint_signal), 0, 0, NULL, NULL,
     NULL,
     "sent once to every worker --checkpoint-before the deadline (USR1,\n"
     "SIGUSR2, TERM, ...); without it nothing is sent early"},
    {"checkpoint-before", 0, 0, "S", KIND_MS, FIELD(checkpoint_before_ms), 0, JOB_TIMEOUT_MAX_S,
     NULL, NULL, NULL, "seconds before the deadline (default 180)"},
    {"requeue-count", 0, 0, "N", KIND_INT, FIELD(requeue_count), 0, JOB_REQUEUES_MAX, NULL, NULL,
     NULL,
     "this job is requeue N of a chain: the workers' restart count\n"
     "(TORCHELASTIC_RESTART_COUNT) starts at N"},
    {"gpu-binding", 0, 0, "per-rank|none",
     CHOICE(gpu_binding, job_gpu_binding_words, gpu_binding_values),
     "per-rank: each worker sees one GPU, its local rank's of the\n"
     "visible set (CUDA_VISIBLE_DEVICES)"},
    {"cpu-binding", 0, 0, "cores|numa|none",
     CHOICE(cpu_binding, job_cpu_binding_words, cpu_binding_values),
     "pin each worker to its share of this agent's CPUs:\n"
     "equal contiguous shares, or one NUMA node's CPUs (its GPU's)"},
    {"preflight", 0, 0, "report|strict|only", CHOICE(preflight, preflight_words, NULL),
     "node 0 prints what differs across the nodes (driver, CUDA,\n"
     "NCCL, GPUs, InfiniBand, NCCL_* env, python, torch) and advice: report (the\n"
     "default) beside the workers; strict before them, failing the job when they\n"
     "differ; only: every fact, no worker (ddpjob doctor)"},
    {"container-runtime", 0, 0, "enroot|apptainer|singularity|charliecloud",
     CHOICE(container.runtime, container_runtime_words, container_runtime_values),
     "run each worker inside --container-image with this runtime (the\n"
     "agent stays outside; pyxis is srun's, which starts the agent inside)"},
    {"container-image", 0, 0, "PATH", KIND_STR, FIELD(container.image), 1, 0, NULL, NULL, NULL,
     "the image: .sqsh (enroot), .sif (apptainer, singularity), a folder\n"
     "(charliecloud)"},
    {"container-mount", 0, 0, "SRC[:DST[:ro]]", TAKE(take_container_mount),
     "also bind SRC at DST (default SRC) in the container; repeatable (the\n"
     "working folder and the attempt's folder are always bound)"},
    {"container-stage", 0, 0, "jobfs|DIR", KIND_STR, FIELD(container.stage), 1, 0, NULL, NULL, NULL,
     "copy the image into a private folder under DIR (jobfs: $PBS_JOBFS,\n"
     "else $TMPDIR, else /tmp) once, before the first workers; removed at the end"},
    {"container-gpus", 0, 0, NULL, KIND_FLAG, FIELD(container.gpus), 0, 0, NULL, NULL, NULL,
     "a GPU job: before the first workers, nvidia-smi -L inside the image\n"
     "must list a GPU, else the job fails, naming the image and what it said"},
    {"container-env", 0, 0, "NAME", TAKE(take_container_env),
     "pass NAME into the container even where it describes the host's\n"
     "files (PATH, LD_LIBRARY_PATH, ...: kept out by default); repeatable"},
    {"container-exec", 0, 0, NULL, KIND_FLAG, FIELD(container_exec), 0, 0, NULL, NULL, NULL,
     "no job: PROGRAM run once, here, inside the container as a worker\n"
     "would be (a shell on a node `ddpjob dev` holds); its status is this one's"},
    {"help", 'h', 0, NULL, TAKE(take_help), "this text"},
    {"version", 0, 0, NULL, TAKE(take_version), "the version"},
};
#define NOPTIONS (sizeof options / sizeof *options)

static void print_usage(FILE *f)
{
    fputs(usage_head, f);
    for (size_t i = 0; i < NOPTIONS; i++) {
        const option_t *opt = &options[i];
        char head[64];
        int n = snprintf(head, sizeof head, "  %s%s%s--%s%s%s", opt->short_name ? "-" : "",
                         opt->short_name ? (char[]){opt->short_name, '\0'} : "",
                         opt->short_name ? ", " : "", opt->name, opt->value ? " " : "",
                         opt->value ? opt->value : "");
        fprintf(f, "%-*s", n < 26 ? 26 : n + 1, head);
        for (const char *line = opt->help; line;) {
            const char *end = strchr(line, '\n');
            fprintf(f, "%.*s\n", end ? (int)(end - line) : (int)strlen(line), line);
            line = end ? end + 1 : NULL;
            if (line)
                fprintf(f, "%26s", "");
        }
    }
    fputs(usage_tail, f);
}

/* getopt's table from options[]: each long name, and torchrun's underscore spelling where it
 * has one; val is 256 + the option's index. Made once. */
static const struct option *long_options(void)
{
    static struct option table[2 * NOPTIONS + 1];
    static char underscored[NOPTIONS][32];
    if (table[0].name)
        return table;
    size_t n = 0;
    for (size_t i = 0; i < NOPTIONS; i++) {
        int has_arg = options[i].value ? required_argument : no_argument;
        table[n++] = (struct option){options[i].name, has_arg, NULL, 256 + (int)i};
        if (!options[i].torchrun || !strchr(options[i].name, '-'))
            continue;
        snprintf(underscored[i], sizeof underscored[i], "%s", options[i].name);
        for (char *c = underscored[i]; *c; c++)
            *c = *c == '-' ? '_' : *c;
        table[n++] = (struct option){underscored[i], has_arg, NULL, 256 + (int)i};
    }
    return table;
}

/* "+": options end at the program, whose own flags are left alone; then the short options. */
static const char *short_options(void)
{
    static char text[2 * NOPTIONS + 2];
    if (text[0])
        return text;
    size_t n = 0;
    text[n++] = '+';
    for (size_t i = 0; i < NOPTIONS; i++)
        if (options[i].short_name) {
            text[n++] = options[i].short_name;
            if (options[i].value)
                text[n++] = ':';
        }
    return text;
}

static const option_t *option_by_short(int c)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (options[i].short_name == c)
            return &options[i];
    return NULL;
}

/* Unix seconds, or +SECONDS from now, onto the ddp_now_ms clock. */
static int parse_deadline(const char *text, int64_t *out_ms)
{
    long v;
    int relative = text[0] == '+';
    if (ddp_parse_long(text + relative, 0, LONG_MAX / 1000, &v))
        return -1;
    long from_now = relative ? v : v - (long)time(NULL);
    *out_ms = ddp_now_ms() + (int64_t)from_now * 1000;
    return 0;
}

/* Seconds as a decimal number, into milliseconds. */
static int parse_seconds_ms(const char *text, long max_s, int *out_ms)
{
    double v;
    if (ddp_parse_double(text, 0, (double)max_s, &v) || !(v > 0))
        return -1;
    *out_ms = (int)(v * 1000 + 0.5);
    return *out_ms > 0 ? 0 : -1;
}

/* How PROGRAM is run: as given, or under python (as torchrun: with -u, so that its output is not
 * held back in a buffer), as a script, a module (-m) or through runpy (--run-path). */
typedef enum { RUN_AS_GIVEN, RUN_SCRIPT, RUN_MODULE, RUN_RUNPY } run_kind_t;

/* runpy.run_path with the script as sys.argv[0], as torchrun's --run-path. */
static const char runpy_code[] =
    "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')";

/* What each worker runs: PROGRAM [ARGS...] after the interpreter its kind asks for. A PROGRAM
 * ending in .py runs under python unless kind is RUN_AS_GIVEN by --no-python (as torchrun runs a
 * script). The strings stay argv's. */
static void build_command(agent_options_t *o, char **program, int count, const char *python,
                          run_kind_t kind, int no_python)
{
    size_t len = strlen(program[0]);
    if (kind == RUN_AS_GIVEN && !no_python && len > 3 && !strcmp(program[0] + len - 3, ".py"))
        kind = RUN_SCRIPT;
    o->command = ddp_xcalloc((size_t)count + 5, sizeof *o->command);
    int k = 0;
    if (kind != RUN_AS_GIVEN) {
        o->command[k++] = (char *)python;
        o->command[k++] = "-u";
    }
    if (kind == RUN_MODULE)
        o->command[k++] = "-m";
    if (kind == RUN_RUNPY) {
        o->command[k++] = "-c";
        o->command[k++] = (char *)runpy_code;
    }
    for (int i = 0; i < count; i++)
        o->command[k++] = program[i];
}

/* A job's token is 64 hex digits (templates/pbs.sh); anything much longer is not a token. */
enum { TOKEN_FILE_MAX = 4096 };

/* The token is read from what was checked: the file opened first (never through a link), then
 * its owner, type and mode read from that descriptor, then its bytes. */
static int read_token_file(agent_options_t *o, const char *path, ddp_error_t *err)
{
    ddp_error_t why;
    size_t len;
    char *text = ddp_read_own_file(path, S_IRWXG | S_IRWXO, TOKEN_FILE_MAX, &len, &why);
    if (!text)
        return ddp_error_set(err, "--token-file %s", why.msg);
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        len--;
    text[len] = '\0';
    if (len == 0) {
        free(text);
        return ddp_error_set(err, "--token-file %s: empty", path);
    }
    o->token = text;
    o->token_len = len;
    return 0;
}

/* Takes over what flags left open from the node source this agent runs under (node_source.h). */
static int resolve_identity(agent_options_t *o, int *port_set, ddp_error_t *err)
{
    node_source_t f = {.identity = "the command line", .rank = -1};
    if (o->standalone) {
        o->identity = "--standalone";
        return 0;
    }
    if (node_source_find(o->node_rank >= 0, &f, err) < 0)
        return -1;
    o->identity = f.identity;
    if (o->nnodes == 0)
        o->nnodes = f.nnodes;
    if (!o->master_addr && f.master_addr)
        o->master_addr = ddp_xstrdup(f.master_addr);
    if (!*port_set && f.master_port) {
        o->master_port = f.master_port;
        *port_set = 1;
    }
    ddp_hostlist_t *hl = f.hosts;
    if (hl) {
        if (o->nnodes == 0)
            o->nnodes = (int)hl->count;
        if (!o->master_addr)
            o->master_addr = ddp_xstrdup(hl->hosts[0]);
        if ((size_t)o->nnodes == hl->count) {
            o->hosts = hl->hosts;
            o->nhosts = hl->count;
            hl->hosts = NULL;
            hl->count = 0;
        }
        ddp_hostlist_destroy(hl);
    }
    if (o->node_rank < 0)
        o->node_rank = f.rank;
    if (!o->run_id && f.job_id)
        o->run_id = ddp_xstrdup(f.job_id);
    if (!*port_set && f.job_id) {
        o->master_port = ddp_job_port_from_id(f.job_id);
        *port_set = 1;
    }
    return 0;
}

/* The checks that make a multi-node agent refuse to guess. */
static int check_identity(agent_options_t *o, int port_set, ddp_error_t *err)
{
    if (o->standalone) {
        if (o->nnodes > 1 || o->node_rank > 0 || o->spares)
            return ddp_error_set(err,
                                 "--standalone runs one node; it cannot be combined with "
                                 "--nnodes %d or --node-rank %d",
                                 o->nnodes, o->node_rank);
        o->nnodes = 1;
        o->node_rank = 0;
        free(o->master_addr);
        o->master_addr = ddp_xstrdup("127.0.0.1");
        if (!port_set)
            o->master_port = 0;
        return 0;
    }
    if (o->nnodes == 0)
        o->nnodes = 1;
    if (o->nnodes == 1 && o->node_rank < 0)
        o->node_rank = 0;
    /* torchrun's c10d rendezvous hands out the node ranks; the agent does the same at setup. */
    if (o->node_rank < 0 && !o->rdzv_c10d)
        return ddp_error_set(err,
                             "%d nodes, but this node's rank is unknown (identity from %s): "
                             "pass --node-rank, or --rdzv-backend c10d to have ranks handed "
                             "out, or run inside a Slurm or PBS job",
                             o->nnodes, o->identity);
    if (!o->min_nodes)
        o->min_nodes = o->nnodes;
    if (o->last_call_ms < 0)
        o->last_call_ms = o->spares ? 5000 : 30000;
    /* Fixed here: while an attempt runs, nnodes is that attempt's. */
    o->elastic = o->spares > 0 || o->min_nodes < o->nnodes;
    if (o->spares && o->min_nodes != o->nnodes)
        return ddp_error_set(err,
                             "--spares %d with --nnodes %d:%d: spares stand by for a job of "
                             "one node count; an elastic range has no spares",
                             o->spares, o->min_nodes, o->nnodes);
    if (agent_options_elastic(o) && o->preflight != PREFLIGHT_REPORT)
        return ddp_error_set(err, "--preflight strict and only need every node at the start; "
                                  "they cannot be combined with spares or an elastic range");
    if (o->node_rank >= o->nnodes + o->spares)
        return ddp_error_set(err, "node rank %d is outside a job of %d node(s)", o->node_rank,
                             o->nnodes + o->spares);
    if (!o->master_addr) {
        if (o->nnodes > 1)
            return ddp_error_set(err,
                                 "%d nodes, but the master is unknown: pass --master-addr "
                                 "(node 0's host)",
                                 o->nnodes);
        o->master_addr = ddp_xstrdup("127.0.0.1");
    }
    if (!port_set) {
        if (o->nnodes > 1)
            return ddp_error_set(err,
                                 "%d nodes, but no --master-port: every agent must be "
                                 "given the same port",
                                 o->nnodes);
        o->master_port = 0;
    }
    return 0;
}

/* Whether every agent of the job is on this host: its rendezvous is on a loopback address. */
static int endpoint_is_loopback(const char *addr)
{
    return addr &&
           (!strcmp(addr, "localhost") || !strncmp(addr, "127.", 4) || !strcmp(addr, "::1"));
}

/* The folder where one user's agents on one host share their tokens: $XDG_RUNTIME_DIR/ddpjob, else
 * ~/.ddpjob-tokens; made 0700 or reused only when it is the user's own and closed to others. */
static int token_folder(char *dir, size_t size, ddp_error_t *err)
{
    const char *runtime = getenv("XDG_RUNTIME_DIR"), *home = getenv("HOME");
    if (runtime && *runtime)
        snprintf(dir, size, "%s/ddpjob", runtime);
    else if (home && *home)
        snprintf(dir, size, "%s/.ddpjob-tokens", home);
    else
        return ddp_error_set(err, "neither XDG_RUNTIME_DIR nor HOME is set");
    return ddp_private_dir(dir, err);
}

/* Agents of one user on one host (a rendezvous on loopback, as torchrun's --rdzv-endpoint
 * localhost:PORT) need no token given: the first makes one in a file only this user can read,
 * named by the run id and the port, and the others read it. link() publishes it whole, once. */
static int shared_host_token(agent_options_t *o, ddp_error_t *err)
{
    char dir[4096], path[4400], tmp[4400], name[128];
    if (token_folder(dir, sizeof dir, err))
        return -1;
    snprintf(name, sizeof name, "%.100s", o->run_id);
    for (char *c = name; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' && *c != '.')
            *c = '_';
    snprintf(path, sizeof path, "%s/token.%s.%d", dir, name, o->master_port);
    snprintf(tmp, sizeof tmp, "%s/.token.XXXXXX", dir);
    unsigned char raw[32];
    char hex[2 * sizeof raw + 1];
    int fd = mkstemp(tmp);
    if (fd < 0)
        return ddp_error_set(err, "%s: cannot make a token: %s", dir, strerror(errno));
    if (ddp_random(raw, sizeof raw)) {
        close(fd);
        unlink(tmp);
        return ddp_error_set(err, "cannot make a job token: no random bytes");
    }
    ddp_hex(raw, sizeof raw, hex);
    int written = write(fd, hex, strlen(hex)) == (ssize_t)strlen(hex);
    close(fd);
    int published = written && link(tmp, path) == 0;
    unlink(tmp);
    if (!published && errno != EEXIST)
        return ddp_error_set(err, "%s: %s", path, strerror(errno));
    return read_token_file(o, path, err);
}

static int take_token(agent_options_t *o, const char *token_file, ddp_error_t *err)
{
    if (token_file)
        return read_token_file(o, token_file, err);
    const char *env = getenv("DDPJOB_TOKEN");
    if (env && *env) {
        o->token = ddp_xstrdup(env);
        o->token_len = strlen(env);
        return 0;
    }
    if (o->nnodes > 1 && endpoint_is_loopback(o->master_addr))
        return shared_host_token(o, err);
    if (o->nnodes > 1)
        return ddp_error_set(err,
                             "a job of %d nodes needs its token, so that only its own agents meet: "
                             "set DDPJOB_TOKEN to the same secret on every node (e.g. `export "
                             "DDPJOB_TOKEN=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \\n')`) or "
                             "pass --token-file FILE (mode 0600)",
                             o->nnodes);
    /* One node: nobody else joins, so a private random token keeps strangers out. */
    unsigned char raw[32];
    if (ddp_random(raw, sizeof raw))
        return ddp_error_set(err, "cannot make a job token: no random bytes");
    o->token = ddp_xcalloc(2 * sizeof raw + 1, 1);
    ddp_hex(raw, sizeof raw, o->token);
    o->token_len = 2 * sizeof raw;
    return 0;
}

/* argv with the PET_* defaults first ("--name=value", or "--name" for a flag set to 1), so that
 * the command line's own flags, parsed after them, win: each torchrun option's default comes
 * from PET_ + its name in capitals (torchrun's `env` action; its flags take 0 or 1 there).
 * pet_vars[i] names the variable behind args[1 + i]; *npet of them. */
static char **with_pet_defaults(int argc, char **argv, int *new_argc, const char **pet_vars,
                                int *npet, ddp_error_t *err)
{
    static char var_names[NOPTIONS][48];
    char **args = ddp_xcalloc((size_t)argc + NOPTIONS + 1, sizeof *args);
    int n = 0;
    args[n++] = ddp_xstrdup(argv[0]);
    *npet = 0;
    for (size_t i = 0; i < NOPTIONS; i++) {
        const option_t *opt = &options[i];
        char *var = var_names[i];
        snprintf(var, sizeof var_names[i], "PET_%s", opt->name);
        for (char *c = var; *c; c++)
            *c = *c == '-' ? '_' : (char)toupper((unsigned char)*c);
        const char *value = getenv(var);
        if (!opt->torchrun || !value)
            continue;
        if (!opt->value && strcmp(value, "0") && strcmp(value, "1")) {
            ddp_error_set(err, "%s=%s: expected 0 or 1", var, value);
            goto fail;
        }
        if (!opt->value && !strcmp(value, "0"))
            continue;
        char *arg = NULL;
        if (opt->value ? asprintf(&arg, "--%s=%s", opt->name, value) < 0
                       : asprintf(&arg, "--%s", opt->name) < 0) {
            ddp_error_set(err, "out of memory");
            goto fail;
        }
        pet_vars[(*npet)++] = var;
        args[n++] = arg;
    }
    for (int i = 1; i < argc; i++)
        args[n++] = ddp_xstrdup(argv[i]);
    *new_argc = n;
    return args;
fail:
    for (int i = 0; i < n; i++)
        free(args[i]);
    free(args);
    return NULL;
}

/* Workers for --nproc-per-node's words; -1 with err set for gpu on a node without one. */
static int nproc_for(const char *word, ddp_error_t *err)
{
    int gpus = binding_gpu_count();
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (!strcmp(word, "gpu") && gpus == 0)
        return ddp_error_set(err,
                             "--nproc-per-node gpu: no GPU is visible on this node "
                             "(CUDA_VISIBLE_DEVICES=%s)",
                             getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES")
                                                            : "unset");
    if (!strcmp(word, "gpu") || (!strcmp(word, "auto") && gpus > 0))
        return gpus;
    return cpus < 1 ? 1 : cpus > JOB_PROCS_PER_NODE_MAX ? JOB_PROCS_PER_NODE_MAX : (int)cpus;
}

/* A choice among words: its index in words, or -1. */
static int word_index(const char *text, const char *const *words)
{
    for (int i = 0; words[i]; i++)
        if (!strcmp(text, words[i]))
            return i;
    return -1;
}

/* torchrun's --nnodes N or MIN:MAX. */
static int take_nnodes(agent_options_t *o, parse_state_t *p, const option_t *opt, const char *name,
                       const char *value, ddp_error_t *err)
{
    const char *colon = strchr(value, ':');
    if (!colon) {
        o->min_nodes = 0;
        return ddp_parse_int(value, 1, JOB_NODES_MAX, &o->nnodes) ? 1 : 0;
    }
    char text[32];
    snprintf(text, sizeof text, "%.*s", (int)(colon - value), value);
    return ddp_parse_int(text, 1, JOB_NODES_MAX, &o->min_nodes) ||
           ddp_parse_int(colon + 1, 1, JOB_NODES_MAX, &o->nnodes) || o->min_nodes > o->nnodes;
}

/* torchrun's --rdzv-conf: the timeouts that mean something here. */
static int take_rdzv_conf(agent_options_t *o, parse_state_t *p, const option_t *opt,
                          const char *name, const char *value, ddp_error_t *err)
{
    char *copy = ddp_xstrdup(value), *save = NULL;
    int bad = 0;
    for (char *kv = strtok_r(copy, ",", &save); kv && !bad; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            bad = ddp_error_set(err, "--rdzv-conf %s: %s is not KEY=VALUE", value, kv);
            break;
        }
        *eq = '\0';
        if (!strcmp(kv, "join_timeout"))
            bad = ddp_parse_int(eq + 1, 1, JOB_TIMEOUT_MAX_S, &o->rdzv_timeout_s);
        else if (!strcmp(kv, "last_call_timeout"))
            bad = parse_seconds_ms(eq + 1, JOB_TIMEOUT_MAX_S, &o->last_call_ms);
        if (bad > 0)
            bad = ddp_error_set(err, "--rdzv-conf %s: bad value for %s", value, kv);
    }
    free(copy);
    return bad ? -1 : 0;
}

/* HOST[:PORT], torchrun's spelling of the master's address. */
static int take_endpoint(agent_options_t *o, parse_state_t *p, const option_t *opt,
                         const char *name, const char *value, ddp_error_t *err)
{
    const char *colon = strrchr(value, ':');
    free(o->master_addr);
    o->master_addr = colon ? ddp_xstrndup(value, (size_t)(colon - value)) : ddp_xstrdup(value);
    if (!*o->master_addr)
        return 1;
    if (!colon)
        return 0;
    p->port_set = 1;
    return ddp_parse_int(colon + 1, 1, 65535, &o->master_port) ? 1 : 0;
}

static int take_master_port(agent_options_t *o, parse_state_t *p, const option_t *opt,
                            const char *name, const char *v, ddp_error_t *err)
{
    p->port_set = 1;
    return ddp_parse_int(v, 1, 65535, &o->master_port) ? 1 : 0;
}

static int take_slow_factor(agent_options_t *o, parse_state_t *p, const option_t *opt,
                            const char *name, const char *v, ddp_error_t *err)
{
    /* 1 or less would call half of any job slow. */
    return ddp_parse_double(v, 0, 100, &o->slow_factor) ||
           (o->slow_factor > 0 && o->slow_factor <= 1);
}

/* --redirects and --tee: the streams (console.h), into the row's field; 0 is none. */
static int take_streams(agent_options_t *o, parse_state_t *p, const option_t *opt, const char *name,
                        const char *v, ddp_error_t *err)
{
    if (console_check_streams(v, name, err))
        return -1;
    *(const char **)((char *)o + opt->field) = strcmp(v, "0") ? v : NULL;
    return 0;
}

static int take_ranks_filter(agent_options_t *o, parse_state_t *p, const option_t *opt,
                             const char *name, const char *v, ddp_error_t *err)
{
    o->local_ranks_filter = v;
    return console_check_filter(v, err);
}

static int take_container_mount(agent_options_t *o, parse_state_t *p, const option_t *opt,
                                const char *name, const char *v, ddp_error_t *err)
{
    char why[256], *text = ddp_xstrdup(v);
    container_mount_t m;
    if (container_mount_parse(text, &m, why, sizeof why)) {
        free(text);
        return ddp_error_set(err, "%s %s: %s", name, v, why);
    }
    container_t *c = &o->container;
    c->mounts = ddp_xrealloc(c->mounts, (c->nmounts + 1) * sizeof *c->mounts);
    c->mounts[c->nmounts++] = m;
    return 0;
}

static int take_container_env(agent_options_t *o, parse_state_t *p, const option_t *opt,
                              const char *name, const char *v, ddp_error_t *err)
{
    container_t *c = &o->container;
    c->env_names = ddp_xrealloc(c->env_names, (c->nenv_names + 1) * sizeof *c->env_names);
    c->env_names[c->nenv_names++] = ddp_xstrdup(v);
    /* A variable's name, which enroot's config matches as a word. */
    if (!isalpha((unsigned char)*v) && *v != '_')
        return 1;
    for (const char *ch = v; *ch; ch++)
        if (!isalnum((unsigned char)*ch) && *ch != '_')
            return 1;
    return 0;
}

/* The container options as a whole: an image with a runtime the agent runs itself. */
static int check_container(const container_t *c, ddp_error_t *err)
{
    const char *wanted;
    const container_runtime_info_t *info = container_runtime_info(c->runtime);
    if (info && info->no_agent_why)
        return ddp_error_set(err, "--container-runtime %s: %s", container_runtime_name(c->runtime),
                             info->no_agent_why);
    if (c->runtime != CONTAINER_NONE && !c->image)
        return ddp_error_set(err, "--container-runtime %s needs --container-image",
                             container_runtime_name(c->runtime));
    if (c->runtime == CONTAINER_NONE &&
        (c->image || c->nmounts || c->nenv_names || c->stage || c->gpus))
        return ddp_error_set(err, "--container-image, --container-mount, --container-env, "
                                  "--container-stage and --container-gpus need "
                                  "--container-runtime");
    if (c->stage && strcmp(c->stage, "jobfs") && c->stage[0] != '/')
        return ddp_error_set(err, "--container-stage %s: jobfs or an absolute folder", c->stage);
    if (c->stage && info && info->no_stage_why)
        return ddp_error_set(err, "--container-stage: %s", info->no_stage_why);
    if (c->image && (c->image[0] != '/' || !container_image_fits(c->runtime, c->image, &wanted)))
        return ddp_error_set(err, "--container-image %s: %s takes %s, as an absolute path",
                             c->image, container_runtime_name(c->runtime), wanted);
    return 0;
}

static int take_rdzv_backend(agent_options_t *o, parse_state_t *p, const option_t *opt,
                             const char *name, const char *v, ddp_error_t *err)
{
    /* Both are a store on one node, which is what ddpjob's rendezvous is. */
    if (strcmp(v, "c10d") && strcmp(v, "static"))
        return ddp_error_set(err,
                             "--rdzv-backend %s: not supported (ddpjob's rendezvous is its "
                             "own store on node 0; c10d and static map onto it)",
                             v);
    o->rdzv_c10d = !strcmp(v, "c10d");
    return 0;
}

static int take_monitor_interval(agent_options_t *o, parse_state_t *p, const option_t *opt,
                                 const char *name, const char *v, ddp_error_t *err)
{
    double seconds;
    o->ignored_notes[0] =
        "--monitor-interval changes nothing here: the agent hears a worker's exit at once";
    return ddp_parse_double(v, 0, 3600, &seconds) ? 1 : 0;
}

static int take_start_method(agent_options_t *o, parse_state_t *p, const option_t *opt,
                             const char *name, const char *v, ddp_error_t *err)
{
    static const char *const start_words[] = {"spawn", "fork", "forkserver", NULL};
    o->ignored_notes[1] = "--start-method changes nothing here: every worker is a process of "
                          "its own, started by fork and exec";
    return word_index(v, start_words) < 0;
}

static int take_deadline(agent_options_t *o, parse_state_t *p, const option_t *opt,
                         const char *name, const char *v, ddp_error_t *err)
{
    return parse_deadline(v, &o->deadline_ms) ? 1 : 0;
}

static int take_help(agent_options_t *o, parse_state_t *p, const option_t *opt, const char *name,
                     const char *v, ddp_error_t *err)
{
    print_usage(stdout);
    return 2;
}

static int take_version(agent_options_t *o, parse_state_t *p, const option_t *opt, const char *name,
                        const char *v, ddp_error_t *err)
{
    printf("ddpjob-agent %s\n", DDPJOB_VERSION);
    return 2;
}

/* One option from the command line: 0, 1 for a bad value, 2 when --help or --version said all,
 * -1 with err set. */
static int take_option(agent_options_t *o, parse_state_t *p, const option_t *opt, const char *name,
                       const char *v, ddp_error_t *err)
{
    char *at = (char *)o + opt->field;
    int index;
    switch (opt->kind) {
    case KIND_FLAG:
        *(int *)at = 1;
        return 0;
    case KIND_INT:
        return ddp_parse_int(v, (int)opt->lo, (int)opt->hi, (int *)at) ? 1 : 0;
    case KIND_MS_OR_OFF:
        *(int *)at = 0;
        return strcmp(v, "0") && parse_seconds_ms(v, opt->hi, (int *)at);
    case KIND_MS:
        return parse_seconds_ms(v, opt->hi, (int *)at) ? 1 : 0;
    case KIND_STR:
        free(*(char **)at);
        *(char **)at = ddp_xstrdup(v);
        return opt->lo && !*v;
    case KIND_ARG:
        *(const char **)at = v;
        return 0;
    case KIND_STATE_ARG:
        *(const char **)((char *)p + opt->field) = v;
        return opt->lo && !*v;
    case KIND_CHOICE:
        if ((index = word_index(v, opt->words)) < 0)
            return 1;
        *(int *)at = opt->values ? opt->values[index] : index;
        return 0;
    case KIND_SIGNAL:
        return (*(int *)at = ddp_parse_signal(v)) <= 0;
    case KIND_STATE_NAME:
        snprintf((char *)p + opt->field, sizeof p->module, "%s", name);
        return 0;
    case KIND_TAKE:
        break;
    }
    return opt->take(o, p, opt, name, v, err);
}

/* The options after the environment's defaults: filled into o and p; 0, 1 when --help or
 * --version was printed, -1 with err set. */
static int read_options(int argc, char **argv, int npet, const char **pet_vars, agent_options_t *o,
                        parse_state_t *p, ddp_error_t *err)
{
    const struct option *longs = long_options();
    int c, which = -1;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, short_options(), longs, &which)) != -1) {
        const option_t *opt = c >= 256 ? &options[c - 256] : option_by_short(c);
        /* The option as the user wrote it, or the PET_ variable that gave it. */
        char name[64];
        if (optind - 1 >= 1 && optind - 1 <= npet)
            snprintf(name, sizeof name, "%s", pet_vars[optind - 2]);
        else if (which >= 0)
            snprintf(name, sizeof name, "--%s", longs[which].name);
        else if (opt)
            snprintf(name, sizeof name, "-%c", opt->short_name);
        else
            snprintf(name, sizeof name, "%s", argv[optind - 1]);
        which = -1;
        if (!opt) {
            const option_t *wanted = optopt ? option_by_short(optopt) : NULL;
            if (optopt >= 256 || (wanted && wanted->value))
                return ddp_error_set(err, "%s needs a value", name);
            return ddp_error_set(err, "unknown option %s (see --help)", name);
        }
        int rc = take_option(o, p, opt, name, optarg, err);
        if (rc == 1)
            return ddp_error_set(err, "%s: invalid value \"%s\"", name, optarg);
        if (rc)
            return rc < 0 ? -1 : 1;
    }
    return 0;
}

int agent_options_parse(int argc, char **argv, agent_options_t *o, ddp_error_t *err)
{
    const char *pet_vars[NOPTIONS];
    int npet = 0, full_argc = 0;
    char **full_argv = with_pet_defaults(argc, argv, &full_argc, pet_vars, &npet, err);
    *o = (agent_options_t){.node_rank = -1,
                           .rdzv_timeout_s = 300,
                           .heartbeat_ms = 1000,
                           .grace_ms = 10000,
                           .exit_timeout_s = 300,
                           .output_stall_ms = OUTPUT_STALL_DEFAULT_MS,
                           .slow_factor = 1.5,
                           .slow_window_ms = 30000,
                           .last_call_ms = -1,
                           .checkpoint_before_ms = 180000,
                           .args = full_argv}; /* the command will point into them */
    if (!full_argv)
        return -1;
    o->prefix_template = getenv("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE");
    const char *python_exec = getenv("PYTHON_EXEC");
    parse_state_t p = {.nproc = "1",
                       .python = python_exec && *python_exec ? python_exec : "python3"};
    int rc = read_options(full_argc, full_argv, npet, pet_vars, o, &p, err);
    if (rc)
        return rc;
    if (optind >= full_argc)
        return ddp_error_set(err, "no program to run (usage: ddpjob-agent [OPTIONS] PROGRAM "
                                  "[ARGS...])");
    if (*p.module && *p.no_python)
        return ddp_error_set(err, "%s and %s exclude each other: a module needs python", p.module,
                             p.no_python);
    if (*p.run_path && (*p.module || *p.no_python))
        return ddp_error_set(err,
                             "%s and %s exclude each other: --run-path runs a script under "
                             "python",
                             p.run_path, *p.module ? p.module : p.no_python);
    build_command(o, full_argv + optind, full_argc - optind, p.python,
                  *p.module     ? RUN_MODULE
                  : *p.run_path ? RUN_RUNPY
                                : RUN_AS_GIVEN,
                  *p.no_python);
    if (check_container(&o->container, err))
        return -1;
    if (o->container_exec)
        return o->container.runtime ? 0 : ddp_error_set(err, "--container-exec needs a container");
    if (resolve_identity(o, &p.port_set, err) || check_identity(o, p.port_set, err))
        return -1;
    if (word_index(p.nproc, (const char *const[]){"auto", "gpu", "cpu", NULL}) >= 0) {
        if ((o->nproc = nproc_for(p.nproc, err)) < 0)
            return -1;
    } else if (ddp_parse_int(p.nproc, 1, JOB_PROCS_PER_NODE_MAX, &o->nproc)) {
        return ddp_error_set(err,
                             "--nproc-per-node: invalid value \"%s\" (a count, gpu, cpu or "
                             "auto)",
                             p.nproc);
    }
    if (o->master_port)
        o->store_port = ddp_job_store_port(o->master_port);
    if (!o->run_id)
        o->run_id = ddp_xstrdup("none");
    return take_token(o, p.token_file, err);
}

int agent_options_elastic(const agent_options_t *o)
{
    return o->elastic;
}

char *agent_options_error_file(const agent_options_t *o, int node_rank)
{
    if (!o->error_file)
        return NULL;
    const char *at = strstr(o->error_file, "%n");
    char *path = NULL;
    if (!at)
        return ddp_xstrdup(o->error_file);
    if (asprintf(&path, "%.*s%d%s", (int)(at - o->error_file), o->error_file, node_rank, at + 2) <
        0)
        return ddp_xstrdup(o->error_file);
    return path;
}

void agent_options_free(agent_options_t *o)
{
    for (size_t i = 0; o->args && o->args[i]; i++)
        free(o->args[i]);
    free(o->args);
    free(o->command);
    free(o->master_addr);
    free(o->run_id);
    free(o->log_dir);
    free(o->error_file);
    free(o->progress_file);
    free(o->history_file);
    free(o->token);
    container_free(&o->container);
    for (size_t i = 0; i < o->nhosts; i++)
        free(o->hosts[i]);
    free(o->hosts);
}
