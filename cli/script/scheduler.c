#include "cli/script/scheduler.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_file.h"
#include "cli/jobs/sched_query.h"
#include "cli/spec/units.h"

static int fill_directives(tmpl_ctx_t *ctx, const strv_t *directives)
{
    if (tmpl_declare_list(ctx, "directives") < 0)
        return -1;
    for (size_t i = 0; i < directives->count; i++) {
        tmpl_ctx_t *item = tmpl_add_item(ctx, "directives");
        if (!item || tmpl_set(item, "directive", directives->items[i]) < 0)
            return -1;
    }
    return 0;
}

/* PBS Pro's chunks: one per node (select=N:ncpus=C:ngpus=G:mem=M), each on its own host
 * (place=scatter), so every resource is per node. */
static int pbs_fill_select(const job_spec_t *spec, tmpl_ctx_t *ctx)
{
    char *select = NULL, buf[64];
    size_t len = 0;
    FILE *f = open_memstream(&select, &len);
    if (!f)
        return -1;
    fprintf(f, "%ld", spec_alloc_nodes(spec));
    if (spec->cpus_per_node)
        fprintf(f, ":ncpus=%ld", spec->cpus_per_node);
    if (spec->gpus_per_node)
        fprintf(f, ":ngpus=%ld", spec->gpus_per_node);
    if (spec->mem_bytes) {
        units_format_size(spec->mem_bytes, 1, buf, sizeof buf);
        fprintf(f, ":mem=%s", buf);
    }
    if (spec->pbs.jobfs_bytes) {
        units_format_size(spec->pbs.jobfs_bytes, 1, buf, sizeof buf);
        fprintf(f, ":jobfs=%s", buf);
    }
    fclose(f);
    int rc = select ? tmpl_set(ctx, "select", select) : -1;
    free(select);
    rc |= tmpl_set(ctx, "place", spec->pbs.exclusive ? "scatter:excl" : "scatter");
    rc |= tmpl_set(ctx, "ncpus", "") | tmpl_set(ctx, "ngpus", "") | tmpl_set(ctx, "mem", "") |
          tmpl_set(ctx, "jobfs", "");
    return rc;
}

/* Gadi counts ncpus, ngpus, mem and jobfs per job and its hooks spread them over whole nodes, so
 * per-node values are multiplied by the node count. */
static int pbs_fill_gadi(const job_spec_t *spec, tmpl_ctx_t *ctx)
{
    char buf[64];
    long nodes = spec_alloc_nodes(spec);
    int rc = tmpl_set(ctx, "select", "") | tmpl_set(ctx, "place", "");
    rc |= spec->cpus_per_node ? tmpl_setf(ctx, "ncpus", "%ld", spec->cpus_per_node * nodes)
                              : tmpl_set(ctx, "ncpus", "");
    rc |= spec->gpus_per_node ? tmpl_setf(ctx, "ngpus", "%ld", spec->gpus_per_node * nodes)
                              : tmpl_set(ctx, "ngpus", "");
    units_format_size(spec->mem_bytes * (uint64_t)nodes, 1, buf, sizeof buf);
    rc |= tmpl_set(ctx, "mem", spec->mem_bytes ? buf : "");
    units_format_size(spec->pbs.jobfs_bytes * (uint64_t)nodes, 1, buf, sizeof buf);
    rc |= tmpl_set(ctx, "jobfs", spec->pbs.jobfs_bytes ? buf : "");
    return rc;
}

static int pbs_fill(const job_spec_t *spec, tmpl_ctx_t *ctx)
{
    char buf[64];
    int rc = spec->pbs.resources == PBS_RESOURCES_GADI ? pbs_fill_gadi(spec, ctx)
                                                       : pbs_fill_select(spec, ctx);
    units_format_hms(spec->walltime_s, buf, sizeof buf);
    rc |= tmpl_set(ctx, "walltime", spec->walltime_s ? buf : "");

    char *storage = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&storage, &len);
    if (!f)
        return -1;
    for (size_t i = 0; i < spec->pbs.storage.count; i++)
        fprintf(f, "%s%s", i ? "+" : "", spec->pbs.storage.items[i]);
    fclose(f);
    rc |= tmpl_set(ctx, "storage", storage ? storage : "");
    free(storage);
    rc |= tmpl_set_bool(ctx, "launch_pbsdsh", spec->pbs.launcher == PBS_LAUNCH_PBSDSH);
    rc |= tmpl_set_bool(ctx, "launch_ssh", spec->pbs.launcher == PBS_LAUNCH_SSH);
    rc |= fill_directives(ctx, &spec->pbs.directives);
    return rc ? -1 : 0;
}

static int slurm_fill(const job_spec_t *spec, tmpl_ctx_t *ctx)
{
    char buf[64];
    int rc = 0;
    rc |= spec->cpus_per_node ? tmpl_setf(ctx, "cpus_per_node", "%ld", spec->cpus_per_node)
                              : tmpl_set(ctx, "cpus_per_node", "");
    rc |= spec->gpus_per_node ? tmpl_setf(ctx, "gpus_per_node", "%ld", spec->gpus_per_node)
                              : tmpl_set(ctx, "gpus_per_node", "");
    units_format_size(spec->mem_bytes, 0, buf, sizeof buf);
    rc |= tmpl_set(ctx, "mem", spec->mem_bytes ? buf : "");
    units_format_slurm_time(spec->walltime_s, buf, sizeof buf);
    rc |= tmpl_set(ctx, "time", spec->walltime_s ? buf : "");
    rc |= tmpl_set(ctx, "constraint", spec->slurm.constraint ? spec->slurm.constraint : "");
    rc |= tmpl_set_bool(ctx, "exclusive", spec->slurm.exclusive);
    rc |= fill_directives(ctx, &spec->slurm.directives);
    return rc ? -1 : 0;
}

static void pbs_note_ignored(const job_spec_t *spec, FILE *notes)
{
    if (spec->slurm.present)
        fprintf(notes, "note: %s: the slurm: block is left out of a PBS script\n", spec->path);
}

static void slurm_note_ignored(const job_spec_t *spec, FILE *notes)
{
    if (spec->pbs.present)
        fprintf(notes,
                "note: %s: the pbs: block (storage, jobfs, launcher, directives) is left "
                "out of a Slurm script\n",
                spec->path);
}

/* qsub prints the id alone: "140873987.gadi-pbs" (or "1" from slurm-wlm-torque's qsub). */
static int pbs_parse_job_id(const char *output, char *out, size_t outsize)
{
    const char *p = output;
    while (*p && isspace((unsigned char)*p))
        p++;
    size_t len = strcspn(p, " \t\r\n");
    if (len == 0 || len >= outsize || !isdigit((unsigned char)*p))
        return -1;
    memcpy(out, p, len);
    out[len] = '\0';
    return 0;
}

/* `sbatch --parsable` prints "JOBID" or "JOBID;CLUSTER". */
static int slurm_parse_job_id(const char *output, char *out, size_t outsize)
{
    const char *p = output;
    while (*p && isspace((unsigned char)*p))
        p++;
    size_t len = strspn(p, "0123456789");
    if (len == 0 || len >= outsize)
        return -1;
    memcpy(out, p, len);
    out[len] = '\0';
    return 0;
}

/* qsub -o DIR/: PBS copies the file into it under the job's id, JOBID.OU (a subjob's
 * SEQ[K].server.OU); NAME.oSEQ would need the id before qsub gives it. */
static void pbs_output_args(const char *dir, int array, char *buf, size_t size, char **extra,
                            size_t *n)
{
    (void)array;
    snprintf(buf, size, "%s/", dir);
    extra[(*n)++] = "-o";
    extra[(*n)++] = buf;
}

/* The template's own name, %x-%j.out, in dir; an array's tasks by the array's id and index. */
static void slurm_output_args(const char *dir, int array, char *buf, size_t size, char **extra,
                              size_t *n)
{
    snprintf(buf, size, "--output=%s/%s", dir, array ? "%x-%A_%a.out" : "%x-%j.out");
    extra[(*n)++] = buf;
}

static void pbs_after_args(const char *depend, char *buf, size_t size, char **extra, size_t *n)
{
    snprintf(buf, size, "depend=%s", depend);
    extra[(*n)++] = "-W";
    extra[(*n)++] = buf;
}

/* A job whose afterok or afternotok can no longer be met is cancelled, not left pending for
 * ever (DependencyNeverSatisfied), as PBS deletes it. */
static void slurm_after_args(const char *depend, char *buf, size_t size, char **extra, size_t *n)
{
    snprintf(buf, size, "--dependency=%s", depend);
    extra[(*n)++] = buf;
    if (strstr(depend, "afterok") || strstr(depend, "afternotok"))
        extra[(*n)++] = "--kill-on-invalid-dep=yes";
}

/* Through the job's record, which the batch script's supervisor watches: qsig reaches only the
 * first node's session, and ends the job's login shell, and with it the job, at once. */
static int pbs_ask_checkpoint(const char *job_id, const char *record_dir, const char *sig,
                              ddp_error_t *err)
{
    (void)job_id;
    char path[8192];
    snprintf(path, sizeof path, "%s/checkpoint-request", record_dir);
    return ddp_write_file_atomic(path, sig, strlen(sig), 0600, err) < 0 ? -1 : 0;
}

/* To the job's steps (the agents), not to its batch shell. */
static int slurm_ask_checkpoint(const char *job_id, const char *record_dir, const char *sig,
                                ddp_error_t *err)
{
    (void)record_dir;
    char *argv[] = {"scancel", "--signal", (char *)sig, "--", (char *)job_id, NULL};
    int failed;
    return sched_run(argv, NULL, 0, &failed, err);
}

static const char *const no_args[] = {NULL};
static const char *const sbatch_args[] = {"--parsable", NULL};

/* PBS's -m letters know only a job's abort (a) and its end (e). */
static void pbs_mail_events(bool failed, bool completed, bool requeued, char *out, size_t size)
{
    snprintf(out, size, "%s%s", failed ? "a" : "", failed || completed || requeued ? "e" : "");
}

static void slurm_mail_events(bool failed, bool completed, bool requeued, char *out, size_t size)
{
    snprintf(out, size, "%s%s%s%s%s", failed ? "FAIL" : "", failed && completed ? "," : "",
             completed ? "END" : "", requeued && (failed || completed) ? "," : "",
             requeued ? "REQUEUE" : "");
}

static bool pbs_needs_node_script(const job_spec_t *spec)
{
    return spec->pbs.launcher == PBS_LAUNCH_SSH;
}

/* The server's name, the first word of qstat -B's third line; -1 when qstat cannot say. */
static int pbs_server_name(char *name, size_t size)
{
    char *argv[] = {"qstat", "-B", NULL}, *out = NULL;
    int failed;
    ddp_error_t err;
    int rc = -1;
    /* "Server  Max ...\n-------- ---\nNAME  0  ...\n" */
    if (sched_run(argv, &out, 1, &failed, &err) == 0 && !failed && out) {
        const char *line = out;
        for (int skip = 0; skip < 2 && line; skip++)
            line = (line = strchr(line, '\n')) ? line + 1 : NULL;
        size_t len = line ? strcspn(line, " \t\n") : 0;
        if (len && len < size) {
            snprintf(name, size, "%.*s", (int)len, line);
            rc = 0;
        }
    }
    free(out);
    return rc;
}

/* A job's SLURM_ARRAY_TASK_ID reaches a job sbatch'ed from it; its SLURM_CONF is the cluster's. */
static const char *const slurm_env_kept[] = {"SLURM_CONF", NULL};

static const sched_ops_t sched_table[] = {
    {.kind = SCHED_PBS,
     .name = "pbs",
     .display = "PBS",
     .template_file = "pbs.sh",
     .script_suffix = ".pbs",
     .submit_program = "qsub",
     .submit_args = no_args,
     .fill = pbs_fill,
     .note_ignored = pbs_note_ignored,
     .parse_job_id = pbs_parse_job_id,
     .output_args = pbs_output_args,
     .after_args = pbs_after_args,
     .cancel_program = "qdel",
     .ask_checkpoint = pbs_ask_checkpoint,
     .array_directive = "#PBS -J ",
     .array_index_var = "PBS_ARRAY_INDEX",
     .task_workdir_var = "PBS_O_WORKDIR",
     .mail_events = pbs_mail_events,
     .needs_node_script = pbs_needs_node_script,
     .env_flag = "-v",
     .server_name = pbs_server_name,
     .container_runtime = "apptainer"},
    {.kind = SCHED_SLURM,
     .name = "slurm",
     .display = "Slurm",
     .template_file = "slurm.sh",
     .script_suffix = ".sbatch",
     .submit_program = "sbatch",
     .submit_args = sbatch_args,
     .fill = slurm_fill,
     .note_ignored = slurm_note_ignored,
     .parse_job_id = slurm_parse_job_id,
     .output_args = slurm_output_args,
     .after_args = slurm_after_args,
     .cancel_program = "scancel",
     .ask_checkpoint = slurm_ask_checkpoint,
     .array_directive = "#SBATCH --array=",
     .array_index_var = "SLURM_ARRAY_TASK_ID",
     .mail_events = slurm_mail_events,
     .job_env_prefix = "SLURM_",
     .job_env_kept = slurm_env_kept,
     .container_runtime = "pyxis",
     .container_agent_inside = true},
};

const sched_ops_t *sched_get(sched_kind_t kind)
{
    for (size_t i = 0; i < sizeof sched_table / sizeof sched_table[0]; i++)
        if (sched_table[i].kind == kind)
            return &sched_table[i];
    return NULL;
}

void sched_leave_job_env(void)
{
    extern char **environ;
    for (size_t i = 0; i < sizeof sched_table / sizeof sched_table[0]; i++) {
        const sched_ops_t *ops = &sched_table[i];
        size_t plen = ops->job_env_prefix ? strlen(ops->job_env_prefix) : 0;
        for (size_t e = 0; plen && environ[e];) {
            const char *eq = strchr(environ[e], '=');
            size_t len = eq ? (size_t)(eq - environ[e]) : strlen(environ[e]);
            int kept = strncmp(environ[e], ops->job_env_prefix, plen) != 0;
            for (const char *const *k = ops->job_env_kept; !kept && k && *k; k++)
                kept = strlen(*k) == len && !strncmp(environ[e], *k, len);
            if (kept) {
                e++;
                continue;
            }
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)len, environ[e]);
            unsetenv(name); /* environ shrinks: the same index holds the next */
        }
    }
}

int sched_cancel(const sched_ops_t *ops, char *const *ids, size_t n, ddp_error_t *err)
{
    char **argv = calloc(n + 3, sizeof *argv);
    if (!argv)
        return ddp_error_set(err, "out of memory");
    argv[0] = (char *)ops->cancel_program;
    argv[1] = "--"; /* the ids were checked when they were read; this is the second lock */
    memcpy(argv + 2, ids, n * sizeof *ids);
    int failed, rc = sched_run(argv, NULL, 1, &failed, err);
    free(argv);
    return rc;
}

void sched_script_file(const sched_ops_t *ops, const job_spec_t *spec, char *out, size_t outsize)
{
    char base[300];
    if (spec->sweep.ntrials)
        snprintf(base, sizeof base, "%s.t%zu", spec->name, spec->sweep.trial);
    else
        snprintf(base, sizeof base, "%s", spec->name);
    size_t i = 0;
    for (; base[i] && i + strlen(ops->script_suffix) + 1 < outsize; i++)
        out[i] = (isalnum((unsigned char)base[i]) || strchr("._-", base[i])) ? base[i] : '_';
    snprintf(out + i, outsize - i, "%s", ops->script_suffix);
}

int sched_array_job_id(sched_kind_t kind, const char *task_id, char *out, size_t outsize)
{
    const char *open = strchr(task_id, '['), *close = open ? strchr(open, ']') : NULL;
    const char *under = strrchr(task_id, '_');
    int n = kind == SCHED_PBS && close
                ? snprintf(out, outsize, "%.*s[]%s", (int)(open - task_id), task_id, close + 1)
            : kind == SCHED_SLURM && under
                ? snprintf(out, outsize, "%.*s", (int)(under - task_id), task_id)
                : -1;
    return n < 0 || (size_t)n >= outsize ? -1 : 0;
}

int sched_array_task_id(sched_kind_t kind, const char *array_id, size_t k, char *out,
                        size_t outsize)
{
    const char *brackets = strstr(array_id, "[]");
    int n = kind == SCHED_PBS && brackets
                ? snprintf(out, outsize, "%.*s[%zu]%s", (int)(brackets - array_id), array_id, k,
                           brackets + 2)
            : kind == SCHED_SLURM ? snprintf(out, outsize, "%s_%zu", array_id, k)
                                  : -1;
    return n < 0 || (size_t)n >= outsize ? -1 : 0;
}
