#include "cli/sched/sched_pbs.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_file.h"
#include "cli/spec/units.h"

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
    rc |= sched_fill_directives(ctx, &spec->pbs.directives);
    return rc ? -1 : 0;
}

static void pbs_note_ignored(const job_spec_t *spec, FILE *notes)
{
    if (spec->slurm.present)
        fprintf(notes, "note: %s: the slurm: block is left out of a PBS script\n", spec->path);
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

static void pbs_after_args(const char *depend, char *buf, size_t size, char **extra, size_t *n)
{
    snprintf(buf, size, "depend=%s", depend);
    extra[(*n)++] = "-W";
    extra[(*n)++] = buf;
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

/* PBS's -m letters know only a job's abort (a) and its end (e). */
static void pbs_mail_events(bool failed, bool completed, bool requeued, char *out, size_t size)
{
    snprintf(out, size, "%s%s", failed ? "a" : "", failed || completed || requeued ? "e" : "");
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

/* A task of array ARRAY[].server is ARRAY[K].server. */
static int pbs_array_task_id(const char *array_id, size_t k, char *out, size_t outsize)
{
    const char *brackets = strstr(array_id, "[]");
    int n = brackets ? snprintf(out, outsize, "%.*s[%zu]%s", (int)(brackets - array_id), array_id,
                                k, brackets + 2)
                     : -1;
    return n < 0 || (size_t)n >= outsize ? -1 : 0;
}

static int pbs_array_job_id(const char *task_id, char *out, size_t outsize)
{
    const char *open = strchr(task_id, '['), *close = open ? strchr(open, ']') : NULL;
    int n =
        close ? snprintf(out, outsize, "%.*s[]%s", (int)(open - task_id), task_id, close + 1) : -1;
    return n < 0 || (size_t)n >= outsize ? -1 : 0;
}

/* PBS Pro job names: at most 236 characters, starting with a letter, then letters, digits and
 * `_ . + -` (qsub refuses anything else). */
static bool pbs_name_ok(const char *name)
{
    if (!isalpha((unsigned char)name[0]) || strlen(name) > 236)
        return false;
    for (const char *p = name; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_.+-", *p))
            return false;
    return true;
}

static void pbs_check_spec(const job_spec_t *spec, diag_t *diag)
{
    spec_loc_t name_at = spec_field_loc(spec, "name");
    if (spec->name && !pbs_name_ok(spec->name))
        diag_add(diag, name_at.line, name_at.col, "name",
                 "\"%s\" is not a valid PBS job name (a letter, then letters, digits, _ . + -; "
                 "at most 236 characters)",
                 spec->name);
}

/* -J FIRST-LAST, %CAP after it. */
static void pbs_array_range(size_t ntrials, long parallel, char *out, size_t size)
{
    if (parallel > 0 && (size_t)parallel < ntrials)
        snprintf(out, size, "#PBS -J 0-%zu%%%ld", ntrials - 1, parallel);
    else
        snprintf(out, size, "#PBS -J 0-%zu", ntrials - 1);
}

static const char *const no_args[] = {NULL};

const sched_ops_t sched_pbs_ops = {
    .name = "pbs",
    .display = "PBS",
    .template_file = "pbs.sh",
    .script_suffix = ".pbs",
    .submit_program = "qsub",
    .version_command = "qstat --version",
    .submit_args = no_args,
    .fill = pbs_fill,
    .note_ignored = pbs_note_ignored,
    .parse_job_id = pbs_parse_job_id,
    .output_args = pbs_output_args,
    .after_args = pbs_after_args,
    .cancel_program = "qdel",
    .ask_checkpoint = pbs_ask_checkpoint,
    .options_end = "--",
    .array_range = pbs_array_range,
    .array_index_var = "PBS_ARRAY_INDEX",
    .task_workdir_var = "PBS_O_WORKDIR",
    .mail_events = pbs_mail_events,
    .needs_node_script = pbs_needs_node_script,
    .env_flag = "-v",
    .server_name = pbs_server_name,
    .container_runtime = "apptainer",
    .check_spec = pbs_check_spec,
    .query = sched_pbs_query,
    .sources = {"qstat"},
    .explain_pending = sched_pbs_explain_pending,
    .starts_by_itself = sched_pbs_starts_by_itself,
    .array_task_id = pbs_array_task_id,
    .array_job_id = pbs_array_job_id,
};
