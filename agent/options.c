#include "options.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "binding.h"
#include "console.h"
#include "ddp_alloc.h"
#include "ddp_clock.h"
#include "ddp_file.h"
#include "ddp_hmac.h"
#include "ddp_net.h"
#include "ddp_parse.h"
#include "hostlist.h"
#include "job_contract.h"
#include "output.h"
#include "preflight.h"
#include "store_proto.h"

/* In parts: C compilers need only take string literals of 4095 characters. */
static const char *const usage_text[] = {
    "usage: ddpjob-agent [OPTIONS] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM as this node's workers of a data-parallel job, with the environment torchrun\n"
    "gives (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, ...). One agent per node.\n"
    "\n"
    "  --nnodes N              nodes in the job (default: from Slurm/PBS/mpirun, else 1)\n"
    "  --node-rank R           this node's rank (default: from Slurm/PBS/mpirun)\n"
    "  --nproc-per-node N|gpu|cpu|auto  workers on this node (default 1; gpu: one per visible\n"
    "                          GPU; cpu: one per CPU; auto: gpu where a GPU is visible, else cpu)\n"
    "  --master-addr HOST      node 0's host (default: the first node of the job)\n"
    "  --master-port PORT      the workers' MASTER_PORT (rank 0's store, as with torchrun); the\n"
    "                          agents' rendezvous store listens on the next port\n"
    "  --standalone            one node, ports chosen here\n"
    "  --run-id ID             the job's id (default: the scheduler's job id)\n"
    "  --token-file FILE       the job token (mode 0600); or set DDPJOB_TOKEN\n"
    "  --max-restarts N        restart every worker after a failure up to N times (default 0)\n"
    "  --rdzv-timeout SECONDS  how long to wait for every node to join (default 300)\n"
    "  --heartbeat SECONDS     heartbeat interval; an agent silent for two is lost (default 1)\n"
    "  --grace SECONDS         from SIGTERM to SIGKILL when stopping workers (default 10)\n"
    "  --hang-timeout SECONDS  a worker that writes nothing and uses under 1% of a CPU (its\n"
    "                          process group) for this long is hung, and fails the job; a\n"
    "                          stopped one after half of it (0, the default: never)\n"
    "  --exit-timeout SECONDS  how long a finished node waits for the rest (default 300)\n"
    "  --output-stall-timeout SECONDS  while this agent's stdout or stderr is read, workers\n"
    "                          wait for it (no line is lost); only once the reader has taken\n"
    "                          nothing for this long are lines dropped, counted and reported\n"
    "                          (default 10)\n"
    "  --log-dir DIR           also write each rank's stdout and stderr under DIR/RUN_ID (never\n"
    "                          over an earlier run's)\n"
    "  -r, --redirects S       keep streams S off the console, in the log files only (S: 0 none,\n"
    "                          1 stdout, 2 stderr, 3 both; or per local rank, 0:3,1:2)\n"
    "  -t, --tee S             write streams S to log files too (a temporary folder, kept and\n"
    "                          named, without --log-dir)\n"
    "  --local-ranks-filter L  only these local ranks' output on the console (0 or 0,2)\n"
    "  --log-line-prefix T     each console line's prefix: ${rank}, ${local_rank}, ${role_name};\n"
    "                          \"\" for none (default: $TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE,\n"
    "                          else \"[rank ${rank}] \")\n"
    "  --error-file FILE       write a JSON failure report to FILE when the job fails (%n in\n"
    "                          FILE: this node's rank, for nodes that share a file system)\n",
    "  --python PATH           the interpreter for a PROGRAM ending in .py, -m or --run-path\n"
    "                          (default $PYTHON_EXEC, else python3); it runs with -u, as\n"
    "                          torchrun's does\n"
    "  -m, --module            PROGRAM is a Python module: run as python -u -m PROGRAM\n"
    "  --run-path              run the script PROGRAM through runpy.run_path, as torchrun does\n"
    "  --no-python             run PROGRAM as given, even when it ends in .py\n"
    "  --local-rank-arg        append --local_rank=N to each worker's arguments, as\n"
    "                          torch.distributed.launch does (the variable LOCAL_RANK is always set)\n"
    "  --deadline TIME         when the scheduler ends the job: Unix seconds, or +SECONDS from now\n"
    "  --checkpoint-signal SIG sent once to every worker --checkpoint-before the deadline (USR1,\n"
    "                          SIGUSR2, TERM, ...); without it nothing is sent early\n"
    "  --checkpoint-before S   seconds before the deadline (default 180)\n"
    "  --requeue-count N       this job is requeue N of a chain: the workers' restart count\n"
    "                          (TORCHELASTIC_RESTART_COUNT) starts at N\n"
    "  --gpu-binding per-rank|none  per-rank: each worker sees one GPU, its local rank's of the\n"
    "                          visible set (CUDA_VISIBLE_DEVICES)\n"
    "  --cpu-binding cores|numa|none  pin each worker to its share of this agent's CPUs:\n"
    "                          equal contiguous shares, or one NUMA node's CPUs\n"
    "  --preflight report|strict|only  before any worker: node 0 prints what differs across\n"
    "                          the nodes (driver, CUDA, NCCL, GPUs, InfiniBand, NCCL_* env,\n"
    "                          python, torch) and advice (default report); strict fails the job\n"
    "                          then; only prints every fact and starts no worker (ddpjob doctor)\n"
    "\n",
    "torchrun's spellings (--nproc_per_node, --node_rank, --master_addr, --master_port,\n"
    "--max_restarts, --rdzv_timeout, ...) are accepted, and its --rdzv-backend c10d|static,\n"
    "--rdzv-endpoint HOST[:PORT] (the master), --rdzv-id (the run id) and --nnodes N:N; so are\n"
    "--monitor-interval and --start-method, which change nothing here (the agent hears a\n"
    "worker's exit at once; it always starts workers by fork and exec). As with torchrun,\n"
    "PET_NAME gives a torchrun option's default (PET_NNODES=2, PET_NO_PYTHON=1, ...); its flags\n"
    "win.\n"
    "Exit status: 0 when every worker of every node exited 0; 75 when the job was stopped (the\n"
    "checkpoint signal, a forwarded USR1/USR2, or a stop signal) and every rank exited 75,\n"
    "checkpointed: requeue it to resume; else the first failing worker's code (128+N for\n"
    "signal N); 1 for a failure of the job itself (rendezvous, a lost node); 2 for a usage error.\n",
    NULL};

enum {
    OPT_NNODES = 256,
    OPT_NODE_RANK,
    OPT_NPROC,
    OPT_MASTER_ADDR,
    OPT_MASTER_PORT,
    OPT_STANDALONE,
    OPT_RUN_ID,
    OPT_TOKEN_FILE,
    OPT_MAX_RESTARTS,
    OPT_RDZV_TIMEOUT,
    OPT_HEARTBEAT,
    OPT_GRACE,
    OPT_HANG_TIMEOUT,
    OPT_EXIT_TIMEOUT,
    OPT_OUTPUT_STALL_TIMEOUT,
    OPT_LOG_DIR,
    OPT_REDIRECTS,
    OPT_TEE,
    OPT_LOCAL_RANKS_FILTER,
    OPT_LOG_LINE_PREFIX,
    OPT_ERROR_FILE,
    OPT_RDZV_BACKEND,
    OPT_RDZV_ENDPOINT,
    OPT_RDZV_ID,
    OPT_PYTHON,
    OPT_MODULE,
    OPT_NO_PYTHON,
    OPT_RUN_PATH,
    OPT_MONITOR_INTERVAL,
    OPT_START_METHOD,
    OPT_LOCAL_RANK_ARG,
    OPT_DEADLINE,
    OPT_CHECKPOINT_SIGNAL,
    OPT_CHECKPOINT_BEFORE,
    OPT_REQUEUE_COUNT,
    OPT_GPU_BINDING,
    OPT_CPU_BINDING,
    OPT_PREFLIGHT,
    OPT_HELP,
    OPT_VERSION,
};

static const struct option long_options[] = {
    {"nnodes", required_argument, NULL, OPT_NNODES},
    {"node-rank", required_argument, NULL, OPT_NODE_RANK},
    {"node_rank", required_argument, NULL, OPT_NODE_RANK},
    {"nproc-per-node", required_argument, NULL, OPT_NPROC},
    {"nproc_per_node", required_argument, NULL, OPT_NPROC},
    {"master-addr", required_argument, NULL, OPT_MASTER_ADDR},
    {"master_addr", required_argument, NULL, OPT_MASTER_ADDR},
    {"master-port", required_argument, NULL, OPT_MASTER_PORT},
    {"master_port", required_argument, NULL, OPT_MASTER_PORT},
    {"standalone", no_argument, NULL, OPT_STANDALONE},
    {"run-id", required_argument, NULL, OPT_RUN_ID},
    {"run_id", required_argument, NULL, OPT_RUN_ID},
    {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"max-restarts", required_argument, NULL, OPT_MAX_RESTARTS},
    {"max_restarts", required_argument, NULL, OPT_MAX_RESTARTS},
    {"rdzv-timeout", required_argument, NULL, OPT_RDZV_TIMEOUT},
    {"rdzv_timeout", required_argument, NULL, OPT_RDZV_TIMEOUT},
    {"heartbeat", required_argument, NULL, OPT_HEARTBEAT},
    {"grace", required_argument, NULL, OPT_GRACE},
    {"hang-timeout", required_argument, NULL, OPT_HANG_TIMEOUT},
    {"exit-timeout", required_argument, NULL, OPT_EXIT_TIMEOUT},
    {"output-stall-timeout", required_argument, NULL, OPT_OUTPUT_STALL_TIMEOUT},
    {"log-dir", required_argument, NULL, OPT_LOG_DIR},
    {"log_dir", required_argument, NULL, OPT_LOG_DIR},
    {"redirects", required_argument, NULL, OPT_REDIRECTS},
    {"tee", required_argument, NULL, OPT_TEE},
    {"local-ranks-filter", required_argument, NULL, OPT_LOCAL_RANKS_FILTER},
    {"local_ranks_filter", required_argument, NULL, OPT_LOCAL_RANKS_FILTER},
    {"log-line-prefix", required_argument, NULL, OPT_LOG_LINE_PREFIX},
    {"error-file", required_argument, NULL, OPT_ERROR_FILE},
    {"rdzv-backend", required_argument, NULL, OPT_RDZV_BACKEND},
    {"rdzv_backend", required_argument, NULL, OPT_RDZV_BACKEND},
    {"rdzv-endpoint", required_argument, NULL, OPT_RDZV_ENDPOINT},
    {"rdzv_endpoint", required_argument, NULL, OPT_RDZV_ENDPOINT},
    {"rdzv-id", required_argument, NULL, OPT_RDZV_ID},
    {"rdzv_id", required_argument, NULL, OPT_RDZV_ID},
    {"python", required_argument, NULL, OPT_PYTHON},
    {"module", no_argument, NULL, OPT_MODULE},
    {"no-python", no_argument, NULL, OPT_NO_PYTHON},
    {"no_python", no_argument, NULL, OPT_NO_PYTHON},
    {"run-path", no_argument, NULL, OPT_RUN_PATH},
    {"run_path", no_argument, NULL, OPT_RUN_PATH},
    {"monitor-interval", required_argument, NULL, OPT_MONITOR_INTERVAL},
    {"monitor_interval", required_argument, NULL, OPT_MONITOR_INTERVAL},
    {"start-method", required_argument, NULL, OPT_START_METHOD},
    {"start_method", required_argument, NULL, OPT_START_METHOD},
    {"local-rank-arg", no_argument, NULL, OPT_LOCAL_RANK_ARG},
    {"deadline", required_argument, NULL, OPT_DEADLINE},
    {"checkpoint-signal", required_argument, NULL, OPT_CHECKPOINT_SIGNAL},
    {"checkpoint-before", required_argument, NULL, OPT_CHECKPOINT_BEFORE},
    {"requeue-count", required_argument, NULL, OPT_REQUEUE_COUNT},
    {"gpu-binding", required_argument, NULL, OPT_GPU_BINDING},
    {"cpu-binding", required_argument, NULL, OPT_CPU_BINDING},
    {"preflight", required_argument, NULL, OPT_PREFLIGHT},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {0},
};

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

static int read_token_file(agent_options_t *o, const char *path, ddp_error_t *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return ddp_error_set(err, "--token-file %s: %s", path, strerror(errno));
    if (st.st_mode & (S_IRWXG | S_IRWXO))
        return ddp_error_set(err,
                             "--token-file %s: readable by others (mode %04o); the token must "
                             "be private: chmod 600 %s",
                             path, st.st_mode & 07777, path);
    size_t len;
    char *text = ddp_read_file(path, &len, err);
    if (!text)
        return -1;
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        text[--len] = '\0';
    if (len == 0) {
        free(text);
        return ddp_error_set(err, "--token-file %s: empty", path);
    }
    o->token = text;
    o->token_len = len;
    return 0;
}

/* Takes over what flags left open from Slurm, PBS or mpirun. */
static int resolve_identity(agent_options_t *o, int *port_set, ddp_error_t *err)
{
    const char *nodelist = getenv("SLURM_JOB_NODELIST");
    const char *nodefile = getenv("PBS_NODEFILE");
    const char *ompi_rank = getenv("OMPI_COMM_WORLD_RANK");
    const char *job_id = NULL;
    ddp_hostlist_t *hl = NULL;
    int env_rank = -1;
    if (o->standalone) {
        o->identity = "--standalone";
    } else if (nodelist) {
        o->identity = "Slurm";
        if (!(hl = ddp_hostlist_expand(nodelist, err)))
            return ddp_error_prefix(err, "SLURM_JOB_NODELIST");
        const char *nodeid = getenv("SLURM_NODEID");
        if (nodeid && ddp_parse_int(nodeid, 0, INT_MAX, &env_rank))
            env_rank = -1;
        const char *localid = getenv("SLURM_LOCALID");
        if (localid && strcmp(localid, "0") != 0 && getenv("SLURM_STEP_ID")) {
            ddp_hostlist_destroy(hl);
            return ddp_error_set(err, "Slurm started more than one agent on this node (task "
                                      "%s): run one agent per node (srun --ntasks-per-node=1)",
                                 localid);
        }
        job_id = getenv("SLURM_JOB_ID");
    } else if (nodefile) {
        o->identity = "PBS";
        if (!(hl = ddp_hostlist_from_nodefile(nodefile, err)))
            return ddp_error_prefix(err, "PBS_NODEFILE");
        char host[256];
        ddp_net_hostname(host, sizeof host);
        long at = ddp_hostlist_find(hl, host);
        if (at < 0 && o->node_rank < 0) {
            ddp_hostlist_destroy(hl);
            return ddp_error_set(err, "PBS_NODEFILE %s does not name this host (%s): cannot "
                                      "tell this node's rank; pass --node-rank",
                                 nodefile, host);
        }
        env_rank = (int)at;
        job_id = getenv("PBS_JOBID");
    } else if (ompi_rank) {
        o->identity = "mpirun";
        int size = 0;
        if (ddp_parse_int(ompi_rank, 0, INT_MAX, &env_rank) ||
            ddp_parse_int(getenv("OMPI_COMM_WORLD_SIZE") ? getenv("OMPI_COMM_WORLD_SIZE") : "", 1,
                          INT_MAX, &size))
            return ddp_error_set(err, "OMPI_COMM_WORLD_RANK/SIZE are not numbers");
        if (o->nnodes == 0)
            o->nnodes = size;
        if (!o->master_addr && getenv("MASTER_ADDR"))
            o->master_addr = ddp_xstrdup(getenv("MASTER_ADDR"));
        if (!*port_set && getenv("MASTER_PORT") &&
            ddp_parse_int(getenv("MASTER_PORT"), 1, 65535, &o->master_port) == 0)
            *port_set = 1;
    } else {
        o->identity = "the command line";
    }
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
        o->node_rank = env_rank;
    if (!o->run_id && job_id)
        o->run_id = ddp_xstrdup(job_id);
    if (!*port_set && job_id) {
        o->master_port = ddp_job_port_from_id(job_id);
        *port_set = 1;
    }
    return 0;
}

/* The checks that make a multi-node agent refuse to guess. */
static int check_identity(agent_options_t *o, int port_set, ddp_error_t *err)
{
    if (o->standalone) {
        if (o->nnodes > 1 || o->node_rank > 0)
            return ddp_error_set(err, "--standalone runs one node; it cannot be combined with "
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
        return ddp_error_set(err, "%d nodes, but this node's rank is unknown (identity from %s): "
                                  "pass --node-rank, or --rdzv-backend c10d to have ranks handed "
                                  "out, or run inside a Slurm or PBS job",
                             o->nnodes, o->identity);
    if (o->node_rank >= o->nnodes)
        return ddp_error_set(err, "node rank %d is outside a job of %d node(s)", o->node_rank,
                             o->nnodes);
    if (!o->master_addr) {
        if (o->nnodes > 1)
            return ddp_error_set(err, "%d nodes, but the master is unknown: pass --master-addr "
                                      "(node 0's host)",
                                 o->nnodes);
        o->master_addr = ddp_xstrdup("127.0.0.1");
    }
    if (!port_set) {
        if (o->nnodes > 1)
            return ddp_error_set(err, "%d nodes, but no --master-port: every agent must be "
                                      "given the same port",
                                 o->nnodes);
        o->master_port = 0;
    }
    return 0;
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

/* --error-file's %n becomes this node's rank. */
static int expand_node_rank(agent_options_t *o, ddp_error_t *err)
{
    if (o->node_rank < 0)
        return 0; /* handed out later: agent_options_set_node_rank */
    char *at = strstr(o->error_file, "%n"), *path = NULL;
    if (!at)
        return 0;
    if (asprintf(&path, "%.*s%d%s", (int)(at - o->error_file), o->error_file, o->node_rank,
                 at + 2) < 0)
        return ddp_error_set(err, "out of memory");
    free(o->error_file);
    o->error_file = path;
    return 0;
}

/* torchrun's options whose default comes from the environment, as PET_ + the name in capitals
 * (torchrun's `env` action; its flags take 0 or 1 there). */
static const char *const pet_names[] = {
    "nnodes", "nproc_per_node", "node_rank", "master_addr", "master_port", "rdzv_backend",
    "rdzv_endpoint", "rdzv_id", "standalone", "max_restarts", "monitor_interval", "start_method",
    "module", "no_python", "run_path", "log_dir", "redirects", "tee", "local_ranks_filter", NULL};

static const struct option *long_option_named(const char *name)
{
    for (const struct option *opt = long_options; opt->name; opt++)
        if (!strcmp(opt->name, name))
            return opt;
    return NULL;
}

/* argv with the PET_* defaults first ("--name=value", or "--name" for a flag set to 1), so that
 * the command line's own flags, parsed after them, win. pet_vars[i] names the variable behind
 * args[1 + i]; *npet of them. */
static char **with_pet_defaults(int argc, char **argv, int *new_argc, const char **pet_vars,
                                int *npet, ddp_error_t *err)
{
    static char var_names[sizeof pet_names / sizeof *pet_names][48];
    size_t most = (size_t)argc + sizeof pet_names / sizeof *pet_names + 1;
    char **args = ddp_xcalloc(most, sizeof *args);
    int n = 0;
    args[n++] = ddp_xstrdup(argv[0]);
    *npet = 0;
    for (int i = 0; pet_names[i]; i++) {
        char *var = var_names[i];
        snprintf(var, sizeof var_names[i], "PET_%s", pet_names[i]);
        for (char *c = var; *c; c++)
            *c = (char)toupper((unsigned char)*c);
        const char *value = getenv(var);
        const struct option *opt = long_option_named(pet_names[i]);
        if (!value || !opt)
            continue;
        char *arg = NULL;
        if (opt->has_arg == no_argument) {
            if (strcmp(value, "0") && strcmp(value, "1")) {
                ddp_error_set(err, "%s=%s: expected 0 or 1", var, value);
                goto fail;
            }
            if (!strcmp(value, "0"))
                continue;
        }
        if (opt->has_arg == no_argument ? asprintf(&arg, "--%s", pet_names[i]) < 0
                                        : asprintf(&arg, "--%s=%s", pet_names[i], value) < 0) {
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
        return ddp_error_set(err, "--nproc-per-node gpu: no GPU is visible on this node "
                                  "(CUDA_VISIBLE_DEVICES=%s)",
                             getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES")
                                                            : "unset");
    if (!strcmp(word, "gpu") || (!strcmp(word, "auto") && gpus > 0))
        return gpus;
    return cpus < 1 ? 1 : cpus > JOB_PROCS_PER_NODE_MAX ? JOB_PROCS_PER_NODE_MAX : (int)cpus;
}

int agent_options_parse(int argc, char **argv, agent_options_t *o, ddp_error_t *err)
{
    const char *pet_vars[sizeof pet_names / sizeof *pet_names];
    int npet = 0, full_argc = 0;
    char **full_argv = with_pet_defaults(argc, argv, &full_argc, pet_vars, &npet, err);
    if (!full_argv)
        return -1;
    argc = full_argc;
    argv = full_argv;

    *o = (agent_options_t){.node_rank = -1, .rdzv_timeout_s = 300, .heartbeat_ms = 1000,
                           .grace_ms = 10000, .exit_timeout_s = 300,
                           .output_stall_ms = OUTPUT_STALL_DEFAULT_MS,
                           .checkpoint_before_ms = 180000,
                           .args = full_argv}; /* the command will point into them */
    o->prefix_template = getenv("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE");
    const char *nproc_arg = "1", *token_file = NULL;
    const char *python = getenv("PYTHON_EXEC") && *getenv("PYTHON_EXEC") ? getenv("PYTHON_EXEC")
                                                                       : "python3";
    /* How the program is to run, and the option (or PET_ variable) that said so. */
    char module[64] = "", no_python[64] = "", run_path[64] = "";
    int port_set = 0, opt;
    optind = 1;
    opterr = 0;
    /* "+": options end at the program, whose own flags are left alone. */
    int which = -1;
    while ((opt = getopt_long(argc, argv, "+hmr:t:", long_options, &which)) != -1) {
        /* The option as the user wrote it (argv[optind - 1] is its value when one follows). */
        char name[64];
        int from_env = optind - 1 >= 1 && optind - 1 <= npet;
        if (from_env)
            snprintf(name, sizeof name, "%s", pet_vars[optind - 2]);
        else if (which >= 0)
            snprintf(name, sizeof name, "--%s", long_options[which].name);
        else if (opt == 'r' || opt == 't')
            snprintf(name, sizeof name, "-%c", opt);
        else
            snprintf(name, sizeof name, "%s", argv[optind - 1]);
        which = -1;
        int bad = 0;
        switch (opt) {
        case OPT_NNODES: {
            /* torchrun's MIN:MAX, when it names one count. */
            const char *colon = strchr(optarg, ':');
            int most;
            if (colon) {
                char least[32];
                snprintf(least, sizeof least, "%.*s", (int)(colon - optarg), optarg);
                if (ddp_parse_int(least, 1, JOB_NODES_MAX, &o->nnodes) ||
                    ddp_parse_int(colon + 1, 1, JOB_NODES_MAX, &most))
                    bad = 1;
                else if (most != o->nnodes)
                    return ddp_error_set(err, "--nnodes %s: elastic node ranges are not supported; "
                                              "give one count (every node must join)",
                                         optarg);
            } else {
                bad = ddp_parse_int(optarg, 1, JOB_NODES_MAX, &o->nnodes);
            }
            break;
        }
        case OPT_RDZV_BACKEND:
            /* Both are a store on one node, which is what ddpjob's rendezvous is. */
            o->rdzv_c10d = !strcmp(optarg, "c10d");
            if (strcmp(optarg, "c10d") && strcmp(optarg, "static"))
                return ddp_error_set(err, "--rdzv-backend %s: not supported (ddpjob's rendezvous is "
                                          "its own store on node 0; c10d and static map onto it)",
                                     optarg);
            break;
        case OPT_RDZV_ENDPOINT: {
            /* HOST[:PORT], torchrun's spelling of the master's address. */
            const char *colon = strrchr(optarg, ':');
            free(o->master_addr);
            o->master_addr = colon ? ddp_xstrndup(optarg, (size_t)(colon - optarg)) : ddp_xstrdup(optarg);
            bad = !o->master_addr || !*o->master_addr;
            if (colon && !bad) {
                bad = ddp_parse_int(colon + 1, 1, 65535, &o->master_port);
                port_set = 1;
            }
            break;
        }
        case OPT_NODE_RANK:
            bad = ddp_parse_int(optarg, 0, JOB_NODES_MAX - 1, &o->node_rank);
            break;
        case OPT_NPROC:
            nproc_arg = optarg;
            break;
        case OPT_MASTER_ADDR:
            free(o->master_addr);
            o->master_addr = ddp_xstrdup(optarg);
            bad = !*optarg;
            break;
        case OPT_MASTER_PORT:
            bad = ddp_parse_int(optarg, 1, 65535, &o->master_port);
            port_set = 1;
            break;
        case OPT_STANDALONE:
            o->standalone = 1;
            break;
        case OPT_RUN_ID:
        case OPT_RDZV_ID:
            free(o->run_id);
            o->run_id = ddp_xstrdup(optarg);
            break;
        case OPT_TOKEN_FILE:
            token_file = optarg;
            break;
        case OPT_MAX_RESTARTS:
            bad = ddp_parse_int(optarg, 0, JOB_MAX_RESTARTS_MAX, &o->max_restarts);
            break;
        case OPT_RDZV_TIMEOUT:
            bad = ddp_parse_int(optarg, 1, JOB_TIMEOUT_MAX_S, &o->rdzv_timeout_s);
            break;
        case OPT_HEARTBEAT:
            bad = parse_seconds_ms(optarg, 3600, &o->heartbeat_ms);
            break;
        case OPT_GRACE:
            bad = parse_seconds_ms(optarg, 3600, &o->grace_ms);
            break;
        case OPT_HANG_TIMEOUT:
            o->hang_timeout_ms = 0;
            bad = strcmp(optarg, "0") && parse_seconds_ms(optarg, JOB_TIMEOUT_MAX_S, &o->hang_timeout_ms);
            break;
        case OPT_EXIT_TIMEOUT:
            bad = ddp_parse_int(optarg, 1, JOB_TIMEOUT_MAX_S, &o->exit_timeout_s);
            break;
        case OPT_OUTPUT_STALL_TIMEOUT:
            bad = parse_seconds_ms(optarg, JOB_TIMEOUT_MAX_S, &o->output_stall_ms);
            break;
        case OPT_LOG_DIR:
            free(o->log_dir);
            o->log_dir = ddp_xstrdup(optarg);
            break;
        case 'r':
        case OPT_REDIRECTS:
        case 't':
        case OPT_TEE:
            if (console_check_streams(optarg, name, err))
                return -1;
            *(opt == 'r' || opt == OPT_REDIRECTS ? &o->redirects : &o->tee) =
                strcmp(optarg, "0") ? optarg : NULL;
            break;
        case OPT_LOCAL_RANKS_FILTER:
            if (console_check_filter(optarg, err))
                return -1;
            o->local_ranks_filter = optarg;
            break;
        case OPT_LOG_LINE_PREFIX:
            o->prefix_template = optarg;
            break;
        case OPT_ERROR_FILE:
            free(o->error_file);
            o->error_file = ddp_xstrdup(optarg);
            break;
        case OPT_PYTHON:
            python = optarg;
            bad = !*optarg;
            break;
        case 'm':
        case OPT_MODULE:
            snprintf(module, sizeof module, "%s", name);
            break;
        case OPT_NO_PYTHON:
            snprintf(no_python, sizeof no_python, "%s", name);
            break;
        case OPT_RUN_PATH:
            snprintf(run_path, sizeof run_path, "%s", name);
            break;
        case OPT_MONITOR_INTERVAL: {
            double unused;
            bad = ddp_parse_double(optarg, 0, 3600, &unused);
            o->ignored_notes[0] =
                "--monitor-interval changes nothing here: the agent hears a worker's exit at once";
            break;
        }
        case OPT_START_METHOD:
            bad = strcmp(optarg, "spawn") && strcmp(optarg, "fork") && strcmp(optarg, "forkserver");
            o->ignored_notes[1] = "--start-method changes nothing here: every worker is a process "
                                  "of its own, started by fork and exec";
            break;
        case OPT_LOCAL_RANK_ARG:
            o->local_rank_arg = 1;
            break;
        case OPT_DEADLINE:
            bad = parse_deadline(optarg, &o->deadline_ms);
            break;
        case OPT_CHECKPOINT_SIGNAL:
            bad = (o->checkpoint_signal = ddp_parse_signal(optarg)) <= 0;
            break;
        case OPT_CHECKPOINT_BEFORE:
            bad = parse_seconds_ms(optarg, JOB_TIMEOUT_MAX_S, &o->checkpoint_before_ms);
            break;
        case OPT_REQUEUE_COUNT:
            bad = ddp_parse_int(optarg, 0, JOB_REQUEUES_MAX, &o->requeue_count);
            break;
        case OPT_GPU_BINDING:
            bad = strcmp(optarg, "per-rank") && strcmp(optarg, "none");
            o->gpu_binding = !strcmp(optarg, "per-rank") ? GPU_BINDING_PER_RANK : GPU_BINDING_NONE;
            break;
        case OPT_CPU_BINDING:
            bad = strcmp(optarg, "cores") && strcmp(optarg, "numa") && strcmp(optarg, "none");
            o->cpu_binding = !strcmp(optarg, "cores")  ? CPU_BINDING_CORES
                             : !strcmp(optarg, "numa") ? CPU_BINDING_NUMA
                                                       : CPU_BINDING_NONE;
            break;
        case OPT_PREFLIGHT:
            bad = strcmp(optarg, "report") && strcmp(optarg, "strict") && strcmp(optarg, "only");
            o->preflight = !strcmp(optarg, "strict") ? PREFLIGHT_STRICT
                           : !strcmp(optarg, "only") ? PREFLIGHT_ONLY
                                                     : PREFLIGHT_REPORT;
            break;
        case 'h':
        case OPT_HELP:
            for (int i = 0; usage_text[i]; i++)
                fputs(usage_text[i], stdout);
            return 1;
        case OPT_VERSION:
            printf("ddpjob-agent %s\n", DDPJOB_VERSION);
            return 1;
        default:
            if (optopt >= OPT_NNODES || optopt == 'r' || optopt == 't')
                return ddp_error_set(err, "%s needs a value", name);
            return ddp_error_set(err, "unknown option %s (see --help)", name);
        }
        if (bad)
            return ddp_error_set(err, "%s: invalid value \"%s\"", name, optarg);
    }
    if (optind >= argc)
        return ddp_error_set(err, "no program to run (usage: ddpjob-agent [OPTIONS] PROGRAM "
                                  "[ARGS...])");
    if (*module && *no_python)
        return ddp_error_set(err, "%s and %s exclude each other: a module needs python", module,
                             no_python);
    if (*run_path && (*module || *no_python))
        return ddp_error_set(err, "%s and %s exclude each other: --run-path runs a script under "
                                  "python",
                             run_path, *module ? module : no_python);
    build_command(o, argv + optind, argc - optind, python,
                  *module ? RUN_MODULE : *run_path ? RUN_RUNPY : RUN_AS_GIVEN, *no_python);
    if (resolve_identity(o, &port_set, err) || check_identity(o, port_set, err))
        return -1;
    if (!strcmp(nproc_arg, "auto") || !strcmp(nproc_arg, "gpu") || !strcmp(nproc_arg, "cpu")) {
        if ((o->nproc = nproc_for(nproc_arg, err)) < 0)
            return -1;
    } else if (ddp_parse_int(nproc_arg, 1, JOB_PROCS_PER_NODE_MAX, &o->nproc)) {
        return ddp_error_set(err, "--nproc-per-node: invalid value \"%s\" (a count, gpu, cpu or "
                                  "auto)",
                             nproc_arg);
    }
    if (o->master_port)
        o->store_port = ddp_job_store_port(o->master_port);
    if (!o->run_id)
        o->run_id = ddp_xstrdup("none");
    if (o->error_file && expand_node_rank(o, err))
        return -1;
    return take_token(o, token_file, err);
}

int agent_options_set_node_rank(agent_options_t *o, int node_rank, ddp_error_t *err)
{
    o->node_rank = node_rank;
    return o->error_file ? expand_node_rank(o, err) : 0;
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
    free(o->token);
    for (size_t i = 0; i < o->nhosts; i++)
        free(o->hosts[i]);
    free(o->hosts);
}
