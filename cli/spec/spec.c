#include "cli/spec/spec.h"

#include <ctype.h>
#include <stdarg.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"
#include "runtime/job/container_spec.h"
#include "runtime/job/job_contract.h"
#include "cli/spec/pipeline.h"
#include "cli/spec/shquote.h"
#include "cli/spec/spec_set.h"
#include "cli/spec/sweep.h"
#include "cli/spec/yaml_pair.h"
#include "runtime/train/options/train_options.h"
#include "cli/spec/units.h"
#include "runtime/job/worker_env.h"

typedef enum {
    F_STRING, /* one-line text */
    F_TEXT,   /* text that may span lines (setup) */
    F_INT,    /* integer within [min, max] */
    F_BOOL,
    F_SIZE,     /* "380GB" */
    F_WALLTIME, /* "02:00:00" */
    F_STRLIST,  /* sequence of scalars */
    F_ENV,      /* mapping NAME: value */
    F_COMMAND,  /* sequence of scalars, or one string for sh -c */
    F_LAUNCHER,
    F_PBS_RESOURCES,
    F_CHOICE,   /* one of the words in the field's `choices` */
    F_SIGNAME,  /* a signal: USR1, SIGUSR1 or its number */
    F_FACTOR,   /* a ratio above 1 (at most 100), or 0 for never */
    F_NODES,    /* N, or MIN:MAX into the spec's nodes and min_nodes */
    F_REPLACED, /* a field that is gone: its def's `sub` is unused, the message says what replaced
                   it */
    F_TRAIN,    /* the built-in workload's options, turned into ddp-train's arguments */
    F_MAP,      /* nested table */
    F_SWEEP,    /* the sweep: block, read before the fields (sweep.h) */
} field_type_t;

enum {
    REQUIRED = 1 << 0,
    DIRECTIVE = 1 << 1,      /* lands in a #PBS/#SBATCH line: no blanks or control characters */
    DIRECTIVE_LINE = 1 << 2, /* a whole directive: blanks allowed, no control characters */
    PLUS_LIST = 1 << 3,      /* a string "a+b" is accepted as the list [a, b] */
    /* The field's agent_flag (spec_agent_args) is passed even at its default or zero, ... */
    AGENT_ALWAYS = 1 << 4,
    /* ... or only along with the field above it (checkpoint.before with the signal). */
    AGENT_WITH_ABOVE = 1 << 5,
};

typedef struct field_def field_def_t;
struct field_def {
    const char *name;
    field_type_t type;
    size_t offset;
    int flags;
    long min, max;
    const field_def_t *sub;     /* F_MAP: the nested table, terminated by a NULL name */
    size_t present_offset;      /* F_MAP: bool set when the block appears */
    const char *const *choices; /* F_CHOICE: the words, NULL-terminated */
    /* The agent's option this field becomes, in every script (spec_agent_args): given when the
     * field is set (a string, a choice or a signal given, a number other than 0, a factor not
     * -1, a flag true) unless AGENT_ALWAYS or AGENT_WITH_ABOVE says otherwise. */
    const char *agent_flag;
};

#define FIELD(n, t, f, fl)                                                                         \
    {                                                                                              \
#n, t, offsetof(job_spec_t, f), fl, 0, 0, NULL, 0, NULL, NULL                              \
    }
#define INTFIELD(n, f, fl, lo, hi)                                                                 \
    {                                                                                              \
#n, F_INT, offsetof(job_spec_t, f), fl, lo, hi, NULL, 0, NULL, NULL                        \
    }
/* A field the agent reads: the spec's field n, passed as the agent's option `flag`. */
#define AGENT_FIELD(n, t, words, flag)                                                             \
    {                                                                                              \
#n, t, offsetof(job_spec_t, n), 0, 0, 0, NULL, 0, words, flag                              \
    }
#define AGENT_INTFIELD(n, fl, lo, hi, flag)                                                        \
    {                                                                                              \
#n, F_INT, offsetof(job_spec_t, n), fl, lo, hi, NULL, 0, NULL, flag                        \
    }

static const field_def_t pbs_fields[] = {
    {"storage", F_STRLIST, offsetof(job_spec_t, pbs.storage), DIRECTIVE | PLUS_LIST, 0, 0, NULL, 0,
     NULL, NULL},
    {"jobfs", F_SIZE, offsetof(job_spec_t, pbs.jobfs_bytes), 0, 0, 0, NULL, 0, NULL, NULL},
    {"launcher", F_LAUNCHER, offsetof(job_spec_t, pbs.launcher), 0, 0, 0, NULL, 0, NULL, NULL},
    {"resources", F_PBS_RESOURCES, offsetof(job_spec_t, pbs.resources), 0, 0, 0, NULL, 0, NULL,
     NULL},
    {"exclusive", F_BOOL, offsetof(job_spec_t, pbs.exclusive), 0, 0, 0, NULL, 0, NULL, NULL},
    {"directives", F_STRLIST, offsetof(job_spec_t, pbs.directives), DIRECTIVE_LINE, 0, 0, NULL, 0,
     NULL, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, NULL, NULL},
};

static const field_def_t slurm_fields[] = {
    {"constraint", F_STRING, offsetof(job_spec_t, slurm.constraint), DIRECTIVE, 0, 0, NULL, 0, NULL,
     NULL},
    {"exclusive", F_BOOL, offsetof(job_spec_t, slurm.exclusive), 0, 0, 0, NULL, 0, NULL, NULL},
    {"signal", F_REPLACED, 0, 0, 0, 0, NULL, 0, NULL, NULL},
    {"directives", F_STRLIST, offsetof(job_spec_t, slurm.directives), DIRECTIVE_LINE, 0, 0, NULL, 0,
     NULL, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, NULL, NULL},
};

static const field_def_t sge_fields[] = {
    {"pe", F_STRING, offsetof(job_spec_t, sge.pe), DIRECTIVE, 0, 0, NULL, 0, NULL, NULL},
    {"memory", F_STRING, offsetof(job_spec_t, sge.memory), DIRECTIVE, 0, 0, NULL, 0, NULL, NULL},
    {"directives", F_STRLIST, offsetof(job_spec_t, sge.directives), DIRECTIVE_LINE, 0, 0, NULL, 0,
     NULL, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, NULL, NULL},
};

static const char *const share_record_words[] = {"private", "group", NULL};

const char *const spec_notify_events[] = {"failed", "requeued", "completed", "slow", NULL};

static const field_def_t notify_fields[] = {
    {"email", F_STRING, offsetof(job_spec_t, notify.email), DIRECTIVE, 0, 0, NULL, 0, NULL, NULL},
    {"webhook", F_STRING, offsetof(job_spec_t, notify.webhook), 0, 0, 0, NULL, 0, NULL, NULL},
    {"on", F_STRLIST, offsetof(job_spec_t, notify.on), 0, 0, 0, NULL, 0, NULL, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, NULL, NULL},
};

static const field_def_t after_fields[] = {
    {"ok", F_STRLIST, offsetof(job_spec_t, after.ok), 0, 0, 0, NULL, 0, NULL, NULL},
    {"any", F_STRLIST, offsetof(job_spec_t, after.any), 0, 0, 0, NULL, 0, NULL, NULL},
    {"notok", F_STRLIST, offsetof(job_spec_t, after.notok), 0, 0, 0, NULL, 0, NULL, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, NULL, NULL},
};

static const field_def_t checkpoint_fields[] = {
    {"signal", F_SIGNAME, offsetof(job_spec_t, checkpoint.signal), 0, 0, 0, NULL, 0, NULL,
     "--checkpoint-signal"},
    {"before", F_INT, offsetof(job_spec_t, checkpoint.before_s), AGENT_WITH_ABOVE, 1,
     JOB_TIMEOUT_MAX_S, NULL, 0, NULL, "--checkpoint-before"},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, NULL, NULL},
};

static const field_def_t container_fields[] = {
    {"runtime", F_CHOICE, offsetof(job_spec_t, container.runtime), 0, 0, 0, NULL, 0,
     container_runtime_words, "--container-runtime"},
    {"image", F_STRING, offsetof(job_spec_t, container.image), REQUIRED, 0, 0, NULL, 0, NULL,
     "--container-image"},
    {"mounts", F_STRLIST, offsetof(job_spec_t, container.mounts), 0, 0, 0, NULL, 0, NULL,
     "--container-mount"},
    {"stage", F_STRING, offsetof(job_spec_t, container.stage), 0, 0, 0, NULL, 0, NULL,
     "--container-stage"},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, NULL, NULL},
};

static const field_def_t top_fields[] = {
    FIELD(name, F_STRING, name, REQUIRED | DIRECTIVE),
    FIELD(scheduler, F_STRING, scheduler, 0),
    FIELD(site, F_STRING, site, 0),
    {"nodes", F_NODES, offsetof(job_spec_t, nodes), REQUIRED, 1, JOB_NODES_MAX, NULL, 0, NULL,
     NULL},
    INTFIELD(spares, spares, 0, 0, JOB_NODES_MAX - 1),
    INTFIELD(gpus_per_node, gpus_per_node, 0, 0, 1024),
    INTFIELD(procs_per_node, procs_per_node, 0, 1, JOB_PROCS_PER_NODE_MAX),
    INTFIELD(cpus_per_node, cpus_per_node, 0, 1, 1000000),
    FIELD(mem, F_SIZE, mem_bytes, 0),
    FIELD(walltime, F_WALLTIME, walltime_s, 0),
    FIELD(queue, F_STRING, queue, DIRECTIVE),
    FIELD(project, F_STRING, project, DIRECTIVE),
    FIELD(modules, F_STRLIST, modules, 0),
    FIELD(setup, F_TEXT, setup, 0),
    FIELD(env, F_ENV, env, 0),
    FIELD(workdir, F_STRING, workdir, 0),
    INTFIELD(master_port, master_port, 0, 1, 65535),
    AGENT_INTFIELD(max_restarts, AGENT_ALWAYS, 0, JOB_MAX_RESTARTS_MAX, "--max-restarts"),
    AGENT_INTFIELD(rendezvous_timeout, AGENT_ALWAYS, 1, JOB_TIMEOUT_MAX_S, "--rdzv-timeout"),
    AGENT_INTFIELD(hang_timeout, AGENT_ALWAYS, 0, JOB_TIMEOUT_MAX_S, "--hang-timeout"),
    AGENT_INTFIELD(grace, 0, 1, 3600, "--grace"),
    AGENT_INTFIELD(output_stall_timeout, 0, 1, JOB_TIMEOUT_MAX_S, "--output-stall-timeout"),
    AGENT_FIELD(slow_factor, F_FACTOR, NULL, "--slow-factor"),
    AGENT_INTFIELD(slow_window, 0, 1, JOB_TIMEOUT_MAX_S, "--slow-window"),
    AGENT_FIELD(log_dir, F_STRING, NULL, "--log-dir"),
    AGENT_FIELD(error_file, F_STRING, NULL, "--error-file"),
    AGENT_FIELD(gpu_binding, F_CHOICE, job_gpu_binding_words, "--gpu-binding"),
    AGENT_FIELD(local_rank_arg, F_BOOL, NULL, "--local-rank-arg"),
    AGENT_FIELD(cpu_binding, F_CHOICE, job_cpu_binding_words, "--cpu-binding"),
    AGENT_FIELD(preflight, F_CHOICE, job_preflight_words, "--preflight"),
    {"share_record", F_CHOICE, offsetof(job_spec_t, share_record), 0, 0, 0, NULL, 0,
     share_record_words, NULL},
    {"checkpoint", F_MAP, 0, 0, 0, 0, checkpoint_fields, offsetof(job_spec_t, checkpoint.present),
     NULL, NULL},
    INTFIELD(requeue, requeue, 0, 0, JOB_REQUEUES_MAX),
    {"notify", F_MAP, 0, 0, 0, 0, notify_fields, offsetof(job_spec_t, notify.present), NULL, NULL},
    {"after", F_MAP, 0, 0, 0, 0, after_fields, offsetof(job_spec_t, after.present), NULL, NULL},
    {"container", F_MAP, 0, 0, 0, 0, container_fields, offsetof(job_spec_t, container.present),
     NULL, NULL},
    {"sweep", F_SWEEP, 0, 0, 0, 0, NULL, 0, NULL, NULL},
    FIELD(command, F_COMMAND, command, 0),
    FIELD(train, F_TRAIN, command, 0),
    {"pbs", F_MAP, 0, 0, 0, 0, pbs_fields, offsetof(job_spec_t, pbs.present), NULL, NULL},
    {"slurm", F_MAP, 0, 0, 0, 0, slurm_fields, offsetof(job_spec_t, slurm.present), NULL, NULL},
    {"sge", F_MAP, 0, 0, 0, 0, sge_fields, offsetof(job_spec_t, sge.present), NULL, NULL},
    {NULL, 0, 0, 0, 0, 0, NULL, 0, NULL, NULL},
};

typedef struct {
    yaml_document_t *doc;
    diag_t *diag;
    job_spec_t *spec;
    bool workload_seen; /* command: or train: was given (even if wrong) */
    const strv_t *sets; /* --set's overrides, and the nodes they made (spec_set.h) */
    spec_set_nodes_t made;
} loader_t;

static unsigned long node_line(const yaml_node_t *n)
{
    return (unsigned long)n->start_mark.line + 1;
}

static unsigned long node_col(const yaml_node_t *n)
{
    return (unsigned long)n->start_mark.column + 1;
}

static void record_loc(job_spec_t *spec, const char *field, const yaml_node_t *n)
{
    spec_field_loc_t *locs = realloc(spec->locs, (spec->loc_count + 1) * sizeof *locs);
    if (!locs)
        return;
    spec->locs = locs;
    char *copy = strdup(field);
    if (!copy)
        return;
    spec->locs[spec->loc_count++] = (spec_field_loc_t){copy, {node_line(n), node_col(n)}};
}

long spec_alloc_nodes(const job_spec_t *spec)
{
    return spec->nodes + spec->spares;
}

bool spec_command_has(const job_spec_t *spec, const char *arg)
{
    for (size_t i = 0; i < spec->command.count; i++)
        if (!strcmp(spec->command.items[i], arg))
            return true;
    return false;
}

spec_loc_t spec_field_loc(const job_spec_t *spec, const char *field)
{
    for (size_t i = 0; i < spec->loc_count; i++)
        if (!strcmp(spec->locs[i].field, field))
            return spec->locs[i].loc;
    return (spec_loc_t){0, 0};
}

/* A problem at node: its line and column in the file, or the --set that gave it. */
static __attribute__((format(printf, 4, 5))) void report(loader_t *ld, const yaml_node_t *node,
                                                         const char *field, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *set = spec_set_flag(&ld->made, ld->sets, (int)(node - ld->doc->nodes.start) + 1);
    if (set)
        diag_add_flag(ld->diag, "--set", "%s: %s", set, msg);
    else
        diag_add(ld->diag, node_line(node), node_col(node), field, "%s", msg);
}

static const char *scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

static bool is_plain(const yaml_node_t *n)
{
    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* A plain empty value, `~` or `null`: the field is given but has no value. */
static bool is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || !is_plain(n))
        return false;
    const char *s = scalar(n);
    return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

static const char *node_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_SCALAR_NODE:
        return is_plain(n) ? "a plain value" : "a quoted string";
    case YAML_SEQUENCE_NODE:
        return "a list";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "nothing";
    }
}

/* What an error message says it got: the value in quotes for a scalar, else its kind. */
static const char *describe(const yaml_node_t *n, char *buf, size_t size)
{
    if (n->type != YAML_SCALAR_NODE)
        return node_kind(n);
    snprintf(buf, size, "\"%s\"", scalar(n));
    return buf;
}

/* Checks a text value for what the field allows; returns false after reporting. */
static bool check_text(loader_t *ld, const yaml_node_t *n, const char *field, int flags,
                       bool multiline)
{
    const unsigned char *s = (const unsigned char *)scalar(n);
    if (!*s) {
        report(ld, n, field, "must not be empty");
        return false;
    }
    for (const unsigned char *p = s; *p; p++) {
        bool control = (*p < 0x20 && !(multiline && (*p == '\n' || *p == '\t'))) || *p == 0x7f;
        if (control || ((flags & DIRECTIVE_LINE) && (*p == '\n' || *p == '\r'))) {
            report(ld, n, field,
                   "contains a newline or control character, which cannot be "
                   "made safe in a job script directive");
            return false;
        }
        if ((flags & DIRECTIVE) && isspace(*p)) {
            report(ld, n, field,
                   "\"%s\" contains a blank, which a #PBS/#SBATCH directive "
                   "cannot carry",
                   (const char *)s);
            return false;
        }
    }
    return true;
}

int spec_strv_push(strv_t *v, const char *s, size_t len)
{
    char **items = realloc(v->items, (v->count + 1) * sizeof *items);
    if (!items)
        return -1;
    v->items = items;
    char *copy = strndup(s, len);
    if (!copy)
        return -1;
    v->items[v->count++] = copy;
    return 0;
}

int spec_append_args(job_spec_t *spec, char *const *args, int n, ddp_error_t *err)
{
    if (n > 0 && spec->command_is_shell)
        return ddp_error_set(err, "the spec's command is one shell string, which takes no more "
                                  "arguments: give it as a list to pass some");
    for (int i = 0; i < n; i++)
        if (spec_strv_push(&spec->command, args[i], strlen(args[i])))
            return ddp_error_set(err, "out of memory");
    return 0;
}

job_spec_t *spec_doctor_default(ddp_error_t *err)
{
    char *python[] = {"python3"};
    job_spec_t *spec = calloc(1, sizeof *spec);
    if (!spec || !(spec->path = strdup("(ddpjob doctor)")) || !(spec->name = strdup("doctor")) ||
        !(spec->preflight = strdup("only")) || spec_append_args(spec, python, 1, err)) {
        spec_destroy(spec);
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    spec->nodes = spec->min_nodes = 1;
    spec->procs_per_node = 1;
    spec->rendezvous_timeout = 60;
    spec->checkpoint.before_s = 180;
    spec->slow_factor = -1;
    return spec;
}

void spec_strv_free(strv_t *v)
{
    for (size_t i = 0; i < v->count; i++)
        free(v->items[i]);
    free(v->items);
    v->items = NULL;
    v->count = 0;
}

/* Field def's value in spec as the agent's option into args, when it is to be passed (*above:
 * whether the field above was, in; whether this one is, out). */
static int add_agent_arg(const job_spec_t *spec, const field_def_t *def, bool *above, strv_t *args)
{
    const char *at = (const char *)spec + def->offset;
    char number[64];
    const char *value = number;
    bool given;
    switch (def->type) {
    case F_INT:
        given = *(const long *)at != 0;
        snprintf(number, sizeof number, "%ld", *(const long *)at);
        break;
    case F_FACTOR:
        given = *(const double *)at >= 0;
        snprintf(number, sizeof number, "%g", *(const double *)at);
        break;
    case F_SIGNAME:
        given = *(const int *)at != 0;
        value = ddp_signal_name(*(const int *)at);
        break;
    case F_BOOL:
        given = *(const bool *)at;
        value = NULL;
        break;
    case F_STRLIST: /* the flag once per item */
        *above = ((const strv_t *)at)->count > 0;
        for (size_t i = 0; i < ((const strv_t *)at)->count; i++) {
            const char *item = ((const strv_t *)at)->items[i];
            if (spec_strv_push(args, def->agent_flag, strlen(def->agent_flag)) ||
                spec_strv_push(args, item, strlen(item)))
                return -1;
        }
        return 0;
    default: /* F_STRING, F_CHOICE */
        value = *(char *const *)at;
        given = value != NULL;
        break;
    }
    given = def->flags & AGENT_ALWAYS ? true : def->flags & AGENT_WITH_ABOVE ? *above : given;
    *above = given;
    if (!given)
        return 0;
    return spec_strv_push(args, def->agent_flag, strlen(def->agent_flag)) ||
           (value && spec_strv_push(args, value, strlen(value)));
}

/* Whether the agent runs the workers in the container itself: under pyxis srun starts the agent
 * inside the image, and the template passes the container to srun instead. */
static bool agent_runs_container(const job_spec_t *spec)
{
    const container_runtime_info_t *info =
        spec->container.present && spec->container.runtime
            ? container_runtime_info(container_runtime_parse(spec->container.runtime))
            : NULL;
    return info && !info->no_agent_why;
}

static int add_agent_args(const job_spec_t *spec, const field_def_t *table, strv_t *args)
{
    bool above = false;
    for (const field_def_t *def = table; def->name; def++) {
        if (def->sub == container_fields && !agent_runs_container(spec))
            continue;
        if ((def->type == F_MAP && add_agent_args(spec, def->sub, args)) ||
            (def->agent_flag && add_agent_arg(spec, def, &above, args)))
            return -1;
    }
    return 0;
}

/* The spec's env: reaches the program in the container whole, the host's PATH and the like
 * included when it names them (the agent keeps those out otherwise); a GPU job's container must
 * see the GPUs. */
static int add_container_extras(const job_spec_t *spec, strv_t *args)
{
    if (!agent_runs_container(spec))
        return 0;
    for (size_t i = 0; i < spec->env_count; i++)
        if (spec_strv_push(args, "--container-env", 15) ||
            spec_strv_push(args, spec->env[i].key, strlen(spec->env[i].key)))
            return -1;
    return spec->gpus_per_node > 0 ? spec_strv_push(args, "--container-gpus", 16) : 0;
}

int spec_agent_args(const job_spec_t *spec, strv_t *args)
{
    *args = (strv_t){0};
    if (add_agent_args(spec, top_fields, args) == 0 && add_container_extras(spec, args) == 0)
        return 0;
    spec_strv_free(args);
    return -1;
}

static void parse_string(loader_t *ld, yaml_node_t *n, const char *field, int flags, char **dst)
{
    if (n->type != YAML_SCALAR_NODE) {
        report(ld, n, field, "expected a string, got %s", node_kind(n));
        return;
    }
    /* An optional field written as "" is simply not set (`constraint: ""`). */
    if (!*scalar(n) && !(flags & REQUIRED))
        return;
    if (check_text(ld, n, field, flags, false))
        *dst = ddp_xstrdup(scalar(n));
}

static void parse_signame(loader_t *ld, yaml_node_t *n, const char *field, int *dst)
{
    char got[256];
    if (n->type != YAML_SCALAR_NODE || (*dst = ddp_parse_signal(scalar(n))) <= 0) {
        *dst = 0;
        report(ld, n, field, "expected a signal such as USR1 or SIGUSR2, got %s",
               describe(n, got, sizeof got));
    }
}

static void parse_text(loader_t *ld, yaml_node_t *n, const char *field, char **dst)
{
    if (n->type != YAML_SCALAR_NODE) {
        report(ld, n, field, "expected text, got %s", node_kind(n));
        return;
    }
    if (check_text(ld, n, field, 0, true))
        *dst = ddp_xstrdup(scalar(n));
}

static void parse_int(loader_t *ld, yaml_node_t *n, const field_def_t *def, const char *field,
                      long *dst)
{
    if (n->type != YAML_SCALAR_NODE || !is_plain(n)) {
        report(ld, n, field, "expected a whole number, got %s", node_kind(n));
        return;
    }
    const char *s = scalar(n);
    long v;
    if (ddp_parse_long(s, LONG_MIN, LONG_MAX, &v) ||
        !(isdigit((unsigned char)s[0]) || s[0] == '-')) {
        report(ld, n, field, "expected a whole number, got \"%s\"", s);
        return;
    }
    if (v < def->min || v > def->max) {
        if (def->min > 0 && v <= 0)
            report(ld, n, field, "must be at least %ld, got %ld", def->min, v);
        else
            report(ld, n, field, "must be between %ld and %ld, got %ld", def->min, def->max, v);
        return;
    }
    *dst = v;
}

/* nodes: N, or torchrun's MIN:MAX (an elastic world). */
static void parse_nodes(loader_t *ld, yaml_node_t *n, const field_def_t *def, const char *field)
{
    const char *s = n->type == YAML_SCALAR_NODE && is_plain(n) ? scalar(n) : NULL;
    const char *colon = s ? strchr(s, ':') : NULL;
    if (!colon) {
        parse_int(ld, n, def, field, &ld->spec->nodes);
        ld->spec->min_nodes = ld->spec->nodes;
        return;
    }
    char least[32];
    snprintf(least, sizeof least, "%.*s", (int)(colon - s), s);
    long lo, hi;
    if (ddp_parse_long(least, def->min, def->max, &lo) ||
        ddp_parse_long(colon + 1, def->min, def->max, &hi) || lo > hi) {
        report(ld, n, field, "expected a count, or MIN:MAX with 1 <= MIN <= MAX <= %ld, got \"%s\"",
               def->max, s);
        return;
    }
    ld->spec->min_nodes = lo;
    ld->spec->nodes = hi;
}

static void parse_factor(loader_t *ld, yaml_node_t *n, const char *field, double *dst)
{
    char got[256];
    double v;
    if (n->type != YAML_SCALAR_NODE || !is_plain(n) || ddp_parse_double(scalar(n), 0, 100, &v) ||
        (v > 0 && v <= 1)) {
        report(ld, n, field, "expected 0 (never) or a factor above 1 and at most 100, got %s",
               describe(n, got, sizeof got));
        return;
    }
    *dst = v;
}

static void parse_bool(loader_t *ld, yaml_node_t *n, const char *field, bool *dst)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "on", NULL};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "off", NULL};
    if (n->type == YAML_SCALAR_NODE && is_plain(n)) {
        for (int i = 0; yes[i]; i++)
            if (!strcmp(scalar(n), yes[i])) {
                *dst = true;
                return;
            }
        for (int i = 0; no[i]; i++)
            if (!strcmp(scalar(n), no[i])) {
                *dst = false;
                return;
            }
    }
    char got[256];
    report(ld, n, field, "expected true or false, got %s%s%s",
           n->type == YAML_SCALAR_NODE ? node_kind(n) : "", n->type == YAML_SCALAR_NODE ? " " : "",
           describe(n, got, sizeof got));
}

static void parse_size(loader_t *ld, yaml_node_t *n, const char *field, uint64_t *dst)
{
    char got[256];
    if (n->type != YAML_SCALAR_NODE || units_parse_size(scalar(n), dst) < 0)
        report(ld, n, field,
               "expected a size such as 380GB (units KB MB GB TB, K M G T, KiB MiB GiB TiB; at "
               "most 64TB), got %s",
               describe(n, got, sizeof got));
}

static void parse_walltime(loader_t *ld, yaml_node_t *n, const char *field, uint64_t *dst)
{
    char got[256];
    if (n->type != YAML_SCALAR_NODE || units_parse_walltime(scalar(n), dst) < 0) {
        report(ld, n, field, "expected [[HH:]MM:]SS or D-HH:MM:SS, got %s",
               describe(n, got, sizeof got));
        return;
    }
    const char *colon = strchr(scalar(n), ':');
    if (dst == &ld->spec->walltime_s) {
        ld->spec->walltime_mm_ss = colon && !strchr(colon + 1, ':') && !strchr(scalar(n), '-');
        ld->spec->walltime_bare = !colon && !strchr(scalar(n), '-');
    }
}

static void parse_strlist(loader_t *ld, yaml_node_t *n, const char *field, int flags, strv_t *dst)
{
    if (n->type == YAML_SCALAR_NODE && (flags & PLUS_LIST)) {
        if (!check_text(ld, n, field, flags, false))
            return;
        const char *s = scalar(n);
        if (s[0] == '+' || s[strlen(s) - 1] == '+' || strstr(s, "++")) {
            report(ld, n, field, "empty item in \"%s\"", s);
            return;
        }
        for (const char *p = s; *p;) {
            size_t len = strcspn(p, "+");
            spec_strv_push(dst, p, len);
            p += len + (p[len] == '+');
        }
        return;
    }
    if (n->type != YAML_SEQUENCE_NODE) {
        report(ld, n, field, "expected a list, got %s", node_kind(n));
        return;
    }
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        yaml_node_t *item = yaml_document_get_node(ld->doc, *it);
        if (item->type != YAML_SCALAR_NODE) {
            report(ld, item, field, "list items must be strings, got %s", node_kind(item));
            continue;
        }
        if (check_text(ld, item, field, flags, false))
            spec_strv_push(dst, scalar(item), strlen(scalar(item)));
    }
}

static void parse_env(loader_t *ld, yaml_node_t *n, const char *field)
{
    job_spec_t *spec = ld->spec;
    if (n->type != YAML_MAPPING_NODE) {
        report(ld, n, field, "expected a mapping NAME: value, got %s", node_kind(n));
        return;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(ld->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(ld->doc, p->value);
        if (k->type != YAML_SCALAR_NODE || !shquote_is_identifier(scalar(k))) {
            report(ld, k, field, "\"%s\" is not a valid environment variable name",
                   k->type == YAML_SCALAR_NODE ? scalar(k) : node_kind(k));
            continue;
        }
        const char *key = scalar(k);
        /* A variable the agent sets for every worker would be silently overridden. */
        if (!strncmp(key, "DDPJOB_", 7) || ddp_worker_env_owns(key)) {
            report(ld, k, field,
                   "%s is set by ddpjob-agent for each worker and cannot be set "
                   "in the spec",
                   key);
            continue;
        }
        for (size_t i = 0; i < spec->env_count; i++)
            if (!strcmp(spec->env[i].key, key))
                report(ld, k, field, "%s is given twice", key);
        if (v->type != YAML_SCALAR_NODE) {
            report(ld, v, field, "value of %s must be a string, got %s", key, node_kind(v));
            continue;
        }
        char where[160];
        snprintf(where, sizeof where, "%s.%s", field, key);
        record_loc(spec, where, v);
        spec->env = ddp_xrealloc(spec->env, (spec->env_count + 1) * sizeof *spec->env);
        spec->env[spec->env_count].key = ddp_xstrdup(key);
        spec->env[spec->env_count].value = ddp_xstrdup(scalar(v));
        spec->env_count++;
    }
}

static void parse_command(loader_t *ld, yaml_node_t *n, const char *field)
{
    job_spec_t *spec = ld->spec;
    if (n->type == YAML_SCALAR_NODE) {
        if (is_null(n) || !*scalar(n)) {
            report(ld, n, field, "must not be empty");
            return;
        }
        spec->command_is_shell = true;
        spec_strv_push(&spec->command, scalar(n), strlen(scalar(n)));
        return;
    }
    if (n->type != YAML_SEQUENCE_NODE) {
        report(ld, n, field, "expected a list of arguments or a string, got %s", node_kind(n));
        return;
    }
    if (n->data.sequence.items.top == n->data.sequence.items.start) {
        report(ld, n, field, "must not be empty: give the program and its arguments");
        return;
    }
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        yaml_node_t *item = yaml_document_get_node(ld->doc, *it);
        if (item->type != YAML_SCALAR_NODE) {
            report(ld, item, field, "arguments must be strings, got %s", node_kind(item));
            continue;
        }
        if (it == n->data.sequence.items.start && !*scalar(item)) {
            report(ld, item, field, "the program name must not be empty");
            continue;
        }
        spec_strv_push(&spec->command, scalar(item), strlen(scalar(item)));
    }
}

/* ddp-train's refusal of the train: block's options, at the value it names (in the file or a
 * --set), else at the block. */
static void report_train_error(loader_t *ld, yaml_node_t *map, const char *prefix,
                               const ddp_error_t *e)
{
    /* The error names the option ("--depth 0: bad value"): report it at that key. */
    char key[64] = "";
    if (!strncmp(e->msg, "--", 2)) {
        size_t len = strcspn(e->msg + 2, " :");
        snprintf(key, sizeof key, "%s.%.*s", prefix, (int)len, e->msg + 2);
        for (char *c = key; *c; c++)
            if (*c == '-')
                *c = '_';
    }
    yaml_node_pair_t *p = *key ? yaml_pair_of(ld->doc, map, key + strlen(prefix) + 1) : NULL;
    if (p)
        report(ld, yaml_document_get_node(ld->doc, p->value), key, "ddp-train would refuse it: %s",
               e->msg);
    else
        report(ld, map, prefix, "ddp-train would refuse it: %s", e->msg);
}

/* The train: block: each option of ddp-train's own table (train_options.h) as a YAML key with
 * underscores, a value option becoming --name-with-dashes VALUE and a flag true/false (--name,
 * or --no-name where there is one). Then ddp-train's own parser checks the result, so what
 * validates is what ddp-train accepts. */
static void parse_train(loader_t *ld, yaml_node_t *map, const char *prefix)
{
    job_spec_t *spec = ld->spec;
    if (map->type != YAML_MAPPING_NODE) {
        report(ld, map, prefix, "expected a mapping of ddp-train options (model: mlp, ...), got %s",
               node_kind(map));
        return;
    }
    enum { MAX_OPTIONS = 64 };
    char keys[MAX_OPTIONS][40];
    const char *names[MAX_OPTIONS + 1];
    size_t count = 0;
    for (; train_option_names[count].name && count < MAX_OPTIONS; count++) {
        snprintf(keys[count], sizeof keys[count], "%s", train_option_names[count].name);
        for (char *c = keys[count]; *c; c++)
            if (*c == '-')
                *c = '_';
        names[count] = keys[count];
    }
    names[count] = NULL;
    spec->command_is_train = true;
    spec_strv_push(&spec->command, "train", 5);
    size_t reported = ld->diag->count;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(ld->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(ld->doc, p->value);
        char field[128], flag[64];
        snprintf(field, sizeof field, "%.40s.%.80s", prefix,
                 k->type == YAML_SCALAR_NODE ? scalar(k) : "?");
        size_t i = 0;
        while (k->type == YAML_SCALAR_NODE && i < count && strcmp(names[i], scalar(k)))
            i++;
        if (i == count) {
            const char *hint = k->type == YAML_SCALAR_NODE ? diag_suggest(scalar(k), names) : NULL;
            report(ld, k, field, "unknown ddp-train option%s%s%s", hint ? " (did you mean " : "",
                   hint ? hint : "", hint ? "?)" : "");
            continue;
        }
        record_loc(spec, field, v);
        train_opt_form_t form = train_option_names[i].form;
        if (form != TRAIN_OPT_VALUE) {
            bool on = false;
            size_t before = ld->diag->count;
            parse_bool(ld, v, field, &on);
            if (ld->diag->count == before && (on || form == TRAIN_OPT_SWITCH)) {
                snprintf(flag, sizeof flag, "--%s%s", on ? "" : "no-", train_option_names[i].name);
                spec_strv_push(&spec->command, flag, strlen(flag));
            }
            continue;
        }
        if (v->type != YAML_SCALAR_NODE || !*scalar(v) || strchr(scalar(v), '\n')) {
            char got[256];
            report(ld, v, field, "expected one value, got %s", describe(v, got, sizeof got));
            continue;
        }
        snprintf(flag, sizeof flag, "--%s", train_option_names[i].name);
        spec_strv_push(&spec->command, flag, strlen(flag));
        spec_strv_push(&spec->command, scalar(v), strlen(scalar(v)));
    }
    if (ld->diag->count != reported)
        return;
    train_options_t checked;
    ddp_error_t err;
    if (train_options_parse((int)spec->command.count, spec->command.items, &checked, &err) == 0)
        return;
    report_train_error(ld, map, prefix, &err);
}

static void parse_enum(loader_t *ld, yaml_node_t *n, const char *field, const char *const *names,
                       int *dst)
{
    if (n->type == YAML_SCALAR_NODE) {
        for (int i = 0; names[i]; i++)
            if (!strcmp(scalar(n), names[i])) {
                *dst = i;
                return;
            }
    }
    char choices[256] = "";
    for (int i = 0; names[i]; i++)
        if (*names[i])
            snprintf(choices + strlen(choices), sizeof choices - strlen(choices), "%s%s",
                     *choices ? " or " : "", names[i]);
    const char *hint = n->type == YAML_SCALAR_NODE ? diag_suggest(scalar(n), names) : NULL;
    char got[256];
    report(ld, n, field, "expected %s, got %s%s%s%s", choices, describe(n, got, sizeof got),
           hint ? " (did you mean " : "", hint ? hint : "", hint ? "?)" : "");
}

static void parse_mapping(loader_t *ld, yaml_node_t *map, const field_def_t *table,
                          const char *prefix);

/* The fields that are one word of a list: PBS's launcher and resources (enums),
 * a choice (kept as its word). */
static void parse_word_field(loader_t *ld, yaml_node_t *v, const field_def_t *def,
                             const char *field, void *dst)
{
    static const char *const launcher_names[] = {"pbsdsh", "ssh", NULL};
    static const char *const resources_names[] = {"", "select", "gadi", NULL};
    int which = -1;
    size_t before = ld->diag->count;
    switch (def->type) {
    case F_LAUNCHER:
        which = PBS_LAUNCH_PBSDSH;
        parse_enum(ld, v, field, launcher_names, &which);
        *(pbs_launcher_t *)dst = (pbs_launcher_t)which;
        break;
    case F_PBS_RESOURCES:
        which = PBS_RESOURCES_UNSET;
        parse_enum(ld, v, field, resources_names, &which);
        *(pbs_resources_t *)dst = (pbs_resources_t)which;
        break;
    default: /* F_CHOICE */
        parse_enum(ld, v, field, def->choices, &which);
        if (ld->diag->count == before)
            *(char **)dst = ddp_xstrdup(def->choices[which]);
        break;
    }
}

/* command: or train:, the workload, which only one of them gives. */
static void parse_workload(loader_t *ld, yaml_node_t *v, const field_def_t *def, const char *field)
{
    ld->workload_seen = true;
    if (def->type == F_COMMAND && ld->spec->command_is_train)
        report(ld, v, field,
               "the spec already has a train: block; give command or train, not both");
    else if (def->type == F_TRAIN && ld->spec->command.count > 0)
        report(ld, v, field, "the spec already has a command; give command or train, not both");
    else if (def->type == F_COMMAND)
        parse_command(ld, v, field);
    else
        parse_train(ld, v, field);
}

static void parse_field(loader_t *ld, yaml_node_t *v, const field_def_t *def, const char *field)
{
    char *base = (char *)ld->spec;
    void *dst = base + def->offset;
    switch (def->type) {
    case F_STRING:
        parse_string(ld, v, field, def->flags, dst);
        break;
    case F_TEXT:
        parse_text(ld, v, field, dst);
        break;
    case F_INT:
        parse_int(ld, v, def, field, dst);
        break;
    case F_BOOL:
        parse_bool(ld, v, field, dst);
        break;
    case F_SIZE:
        parse_size(ld, v, field, dst);
        break;
    case F_WALLTIME:
        parse_walltime(ld, v, field, dst);
        break;
    case F_STRLIST:
        parse_strlist(ld, v, field, def->flags, dst);
        break;
    case F_ENV:
        parse_env(ld, v, field);
        break;
    case F_COMMAND:
    case F_TRAIN:
        parse_workload(ld, v, def, field);
        break;
    case F_SIGNAME:
        parse_signame(ld, v, field, dst);
        break;
    case F_FACTOR:
        parse_factor(ld, v, field, dst);
        break;
    case F_NODES:
        parse_nodes(ld, v, def, field);
        break;
    case F_SWEEP:
        break;
    case F_REPLACED:
        report(
            ld, v, field,
            "is gone: use checkpoint: {signal: USR2, before: 120}, which the agent sends once to "
            "each worker (Slurm's own signal reached every worker twice)");
        break;
    case F_LAUNCHER:
    case F_PBS_RESOURCES:
    case F_CHOICE:
        parse_word_field(ld, v, def, field, dst);
        break;
    case F_MAP:
        *(bool *)(base + def->present_offset) = true;
        if (v->type != YAML_MAPPING_NODE)
            report(ld, v, field, "expected a mapping, got %s", node_kind(v));
        else
            parse_mapping(ld, v, def->sub, field);
        break;
    }
}

static void parse_mapping(loader_t *ld, yaml_node_t *map, const field_def_t *table,
                          const char *prefix)
{
    size_t nfields = 0;
    while (table[nfields].name)
        nfields++;
    /* The names for suggestions, NULL-terminated, and which fields this mapping has set. */
    const char **names = calloc(nfields + 1, sizeof *names);
    bool *seen = calloc(nfields + 1, sizeof *seen);
    if (!names || !seen) {
        free(names);
        free(seen);
        report(ld, map, prefix, "out of memory");
        return;
    }
    for (size_t i = 0; i < nfields; i++)
        names[i] = table[i].name;

    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(ld->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(ld->doc, p->value);
        if (k->type != YAML_SCALAR_NODE) {
            report(ld, k, prefix, "keys must be plain names, got %s", node_kind(k));
            continue;
        }
        char field[128];
        snprintf(field, sizeof field, "%s%s%s", prefix ? prefix : "", prefix ? "." : "", scalar(k));
        size_t i = 0;
        while (i < nfields && strcmp(names[i], scalar(k)))
            i++;
        if (i == nfields) {
            const char *hint = diag_suggest(scalar(k), names);
            if (hint)
                report(ld, k, field, "unknown field (did you mean %s%s%s?)", prefix ? prefix : "",
                       prefix ? "." : "", hint);
            else
                report(ld, k, field, "unknown field");
            continue;
        }
        if (seen[i]) {
            report(ld, k, field, "given more than once");
            continue;
        }
        seen[i] = true;
        if (is_null(v) && !(table[i].flags & REQUIRED) && table[i].type != F_MAP)
            continue;
        record_loc(ld->spec, field, v);
        parse_field(ld, v, &table[i], field);
    }
    for (size_t i = 0; i < nfields; i++)
        if ((table[i].flags & REQUIRED) && !seen[i])
            diag_add(ld->diag, node_line(map), node_col(map), table[i].name, "missing (required)");
    free(names);
    free(seen);
}

/* Fields that only make sense together: the walltime contract's, and a report file every node
 * writes. */
/* A packed sweep's trial: one its allocation can hold, with no spares (the held nodes are the
 * spares' room: a trial that fails frees its nodes for the next). */
static void check_pack(const job_spec_t *spec, diag_t *diag)
{
    spec_loc_t at = spec_field_loc(spec, "nodes");
    if (!spec->sweep.pack_nodes)
        return;
    if (spec_alloc_nodes(spec) > spec->sweep.pack_nodes)
        diag_add(diag, at.line ? at.line : 1, at.line ? at.col : 1, "sweep.pack.nodes",
                 "trial %zu asks for %ld node(s); an allocation of the pack holds %ld",
                 spec->sweep.trial, spec_alloc_nodes(spec), spec->sweep.pack_nodes);
    at = spec_field_loc(spec, "spares");
    if (spec->spares)
        diag_add(diag, at.line ? at.line : 1, at.line ? at.col : 1, "spares",
                 "a packed sweep's trials take no spares: its held nodes are the room a trial "
                 "that failed leaves to the next");
    at = spec_field_loc(spec, "checkpoint.before");
    if (spec->checkpoint.signal && spec->sweep.pack_walltime_s &&
        (uint64_t)spec->checkpoint.before_s >= spec->sweep.pack_walltime_s)
        diag_add(diag, at.line ? at.line : 1, at.line ? at.col : 1, "checkpoint.before",
                 "%ld s is not less than sweep.pack.walltime (%llu s): no trial would start in a "
                 "link of the allocation",
                 spec->checkpoint.before_s, (unsigned long long)spec->sweep.pack_walltime_s);
}

static void check_combinations(const job_spec_t *spec, diag_t *diag)
{
    spec_loc_t at = spec_field_loc(spec, "checkpoint.before");
    if (spec->checkpoint.signal && spec->walltime_s &&
        (uint64_t)spec->checkpoint.before_s >= spec->walltime_s)
        diag_add(diag, at.line ? at.line : 1, at.line ? at.col : 1, "checkpoint.before",
                 "%ld s is not less than the walltime (%llu s): the checkpoint signal would come "
                 "before the job had done anything",
                 spec->checkpoint.before_s, (unsigned long long)spec->walltime_s);
    at = spec_field_loc(spec, "error_file");
    if (spec->error_file && spec->nodes > 1 && !strstr(spec->error_file, "%n"))
        diag_add(diag, at.line, at.col, "error_file",
                 "every node of the job would write \"%s\": put %%n (the node's rank) in the name",
                 spec->error_file);
    at = spec_field_loc(spec, "spares");
    if (spec->spares && spec->min_nodes != spec->nodes)
        diag_add(diag, at.line, at.col, "spares",
                 "an elastic world (nodes: %ld:%ld) has no spares: its agents beyond the most "
                 "nodes stand by already",
                 spec->min_nodes, spec->nodes);
    /* The name is a part of the record's folder's name (job_record.h). */
    at = spec_field_loc(spec, "name");
    if (spec->name && (strchr(spec->name, '/') || spec->name[0] == '.'))
        diag_add(diag, at.line, at.col, "name",
                 "\"%s\": a job's name may not hold '/' or start with '.' (it names the job's "
                 "record folder)",
                 spec->name);
    check_pack(spec, diag);
    at = spec_field_loc(spec, "requeue");
    if (spec->requeue && spec->command_is_train && !spec_command_has(spec, "--checkpoint-dir"))
        diag_add(diag, at.line, at.col, "requeue",
                 "a requeued train: run needs train.checkpoint_dir, or the next job has nothing to "
                 "resume from");
}

/* notify: something to send, to a URL a sender can take, on events it knows. The URL is a
 * secret: no problem says it. */
static void check_notify(const job_spec_t *spec, diag_t *diag)
{
    if (!spec->notify.present)
        return;
    spec_loc_t at = spec_field_loc(spec, "notify");
    if (!spec->notify.email && !spec->notify.webhook)
        diag_add(diag, at.line, at.col, "notify", "names no email: and no webhook: to send to");
    at = spec_field_loc(spec, "notify.webhook");
    const char *url = spec->notify.webhook;
    if (url && strncmp(url, "https://", 8) && strncmp(url, "http://", 7))
        diag_add(diag, at.line, at.col, "notify.webhook",
                 "not an http:// or https:// URL (the URL is not repeated here: it is a secret)");
    at = spec_field_loc(spec, "notify.on");
    for (size_t i = 0; i < spec->notify.on.count; i++) {
        size_t k = 0;
        while (spec_notify_events[k] && strcmp(spec_notify_events[k], spec->notify.on.items[i]))
            k++;
        if (!spec_notify_events[k])
            diag_add(diag, at.line, at.col, "notify.on",
                     "\"%s\" is no event: failed, requeued, completed or slow",
                     spec->notify.on.items[i]);
    }
}

/* The sweep's trial `trial` in place of the document's placeholders (sweep.h); its number and
 * parameters go into the spec's env once the fields are read (add_trial_env). */
static void apply_sweep(loader_t *ld, sweep_t *sw, size_t trial)
{
    /* A problem with the block (parallel: 0, say) leaves its trials to check too. */
    sweep_read(ld->doc, sw, ld->diag);
    if (sw->ntrials == 0)
        return;
    if (trial >= sw->ntrials) {
        diag_add(ld->diag, sw->line, sw->col, "sweep", "--trial %zu: the sweep has %zu trial%s",
                 trial, sw->ntrials, sw->ntrials == 1 ? "" : "s");
        return;
    }
    int *used = ddp_xcalloc(sw->nnames, sizeof *used);
    sweep_substitute(ld->doc, sw, trial, used, ld->diag);
    for (size_t i = 0; i < sw->nnames; i++)
        if (!used[i] && !sweep_misplaced(ld->doc, sw->names[i], ld->diag))
            diag_add(ld->diag, sw->line, sw->col, "sweep",
                     "%s is in no {%s} of command, env, train, log_dir, workdir or name "
                     "(misspelt?)",
                     sw->names[i], sw->names[i]);
    free(used);
    ld->spec->sweep.trial = trial;
    ld->spec->sweep.ntrials = sw->ntrials;
    ld->spec->sweep.parallel = sw->parallel ? sw->parallel : (long)sw->ntrials;
    snprintf(ld->spec->sweep.objective, sizeof ld->spec->sweep.objective, "%s", sw->objective);
    ld->spec->sweep.maximize = sw->maximize;
    ld->spec->sweep.pack_nodes = sw->pack_nodes;
    ld->spec->sweep.pack_allocations = sw->pack_allocations;
    ld->spec->sweep.pack_walltime_s = sw->pack_walltime_s;
}

static void add_env(job_spec_t *spec, const char *key, char *value)
{
    spec->env = ddp_xrealloc(spec->env, (spec->env_count + 1) * sizeof *spec->env);
    spec->env[spec->env_count++] = (env_var_t){ddp_xstrdup(key), value};
}

/* A trial's DDPJOB_TRIAL and DDPJOB_TRIAL_PARAMS. */
static void add_trial_env(job_spec_t *spec, const sweep_t *sw)
{
    char number[32];
    snprintf(number, sizeof number, "%zu", spec->sweep.trial);
    add_env(spec, SWEEP_TRIAL_ENV, ddp_xstrdup(number));
    add_env(spec, SWEEP_PARAMS_ENV, sweep_params_json(sw, spec->sweep.trial));
}

/* The spec's fields from the document's root, checked. After the sweep's problems
 * (`sweep_problems`) the rest is checked too, apart: what it finds at a place they named already
 * (procs_per_node: "{n}") is not said again. */
static void read_fields(loader_t *ld, yaml_node_t *root, const sweep_t *sw, int sweep_problems)
{
    diag_t *said = ld->diag, *diag = sweep_problems ? diag_create(said->file) : said;
    job_spec_t *spec = ld->spec;
    ld->diag = diag = diag ? diag : said;
    if (!root || (root->type == YAML_SCALAR_NODE && is_null(root))) {
        diag_add(diag, 1, 1, NULL, "the spec is empty; it needs at least name, nodes and command");
    } else if (root->type != YAML_MAPPING_NODE) {
        report(ld, root, NULL,
               "the spec must be a mapping of fields (name: ..., nodes: ...), got %s",
               node_kind(root));
    } else {
        parse_mapping(ld, root, top_fields, NULL);
        if (!ld->workload_seen)
            diag_add(diag, node_line(root), node_col(root), "command",
                     "missing (required, unless a train: block names the built-in workload)");
        if (spec->procs_per_node == 0)
            spec->procs_per_node = spec->gpus_per_node > 0 ? spec->gpus_per_node : 1;
        check_combinations(spec, diag);
        check_notify(spec, diag);
        if (sw->ntrials && !diag->count && !sweep_problems)
            add_trial_env(spec, sw);
    }
    if (diag != said) {
        diag_take_new_places(said, diag);
        diag_destroy(diag);
        ld->diag = said;
    }
}

job_spec_t *spec_load(const char *path, const strv_t *values, const strv_t *sets, size_t trial,
                      diag_t *diag, ddp_error_t *err)
{
    size_t len = 0;
    unsigned char *text = (unsigned char *)ddp_read_file(path, &len, err);
    if (!text)
        return NULL;
    job_spec_t *spec = calloc(1, sizeof *spec);
    if (!spec || !(spec->path = strdup(path))) {
        free(spec);
        free(text);
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    spec->rendezvous_timeout = 300;
    spec->checkpoint.before_s = 180;
    spec->slow_factor = -1;

    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        /* libyaml's marks are 0-based; context_mark points at the construct that was open. */
        diag_add(diag, (unsigned long)parser.problem_mark.line + 1,
                 (unsigned long)parser.problem_mark.column + 1, NULL, "YAML syntax error: %s%s%s",
                 parser.problem ? parser.problem : "unknown problem", parser.context ? " " : "",
                 parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        free(text);
        return spec;
    }
    loader_t ld = {&doc, diag, spec, false, sets, {0}};
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    sweep_t sw = {0};
    if (root && values && pipeline_put_values(&doc, values, diag))
        root = NULL; /* a value missing: its fields would be checked with the placeholder */
    if (root && root->type == YAML_MAPPING_NODE && sets && sets->count &&
        spec_set_apply(&doc, sets, &ld.made, diag))
        root = NULL; /* a set that cannot be applied: nothing more is checked */
    /* Adding nodes may have moved the document's nodes: the root is looked up again. */
    if (root)
        root = yaml_document_get_root_node(&doc);
    size_t set_problems = diag->count;
    if (root && root->type == YAML_MAPPING_NODE)
        apply_sweep(&ld, &sw, trial);
    if (root)
        root = yaml_document_get_root_node(&doc);
    if (!diag->count || diag->count > set_problems)
        read_fields(&ld, root, &sw, diag->count > set_problems);
    sweep_free(&sw);
    yaml_document_t extra;
    if (yaml_parser_load(&parser, &extra)) {
        if (yaml_document_get_root_node(&extra))
            diag_add(diag, (unsigned long)extra.start_mark.line + 1,
                     (unsigned long)extra.start_mark.column + 1, NULL,
                     "a spec file holds one YAML document; found another here");
        yaml_document_delete(&extra);
    }
    spec_set_nodes_free(&ld.made);
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    free(text);
    return spec;
}

void spec_destroy(job_spec_t *spec)
{
    if (!spec)
        return;
    free(spec->path);
    free(spec->name);
    for (size_t i = 0; i < spec->loc_count; i++)
        free(spec->locs[i].field);
    free(spec->locs);
    free(spec->site);
    free(spec->scheduler);
    free(spec->queue);
    free(spec->project);
    spec_strv_free(&spec->modules);
    free(spec->setup);
    for (size_t i = 0; i < spec->env_count; i++) {
        free(spec->env[i].key);
        free(spec->env[i].value);
    }
    free(spec->env);
    free(spec->workdir);
    free(spec->container.image);
    free(spec->container.runtime);
    spec_strv_free(&spec->container.mounts);
    free(spec->container.stage);
    free(spec->log_dir);
    free(spec->error_file);
    free(spec->share_record);
    free(spec->gpu_binding);
    free(spec->cpu_binding);
    free(spec->preflight);
    free(spec->notify.email);
    free(spec->notify.webhook);
    spec_strv_free(&spec->notify.on);
    spec_strv_free(&spec->after.ok);
    spec_strv_free(&spec->after.any);
    spec_strv_free(&spec->after.notok);
    spec_strv_free(&spec->command);
    spec_strv_free(&spec->pbs.storage);
    spec_strv_free(&spec->pbs.directives);
    free(spec->slurm.constraint);
    spec_strv_free(&spec->slurm.directives);
    free(spec->sge.pe);
    free(spec->sge.memory);
    spec_strv_free(&spec->sge.directives);
    free(spec);
}
