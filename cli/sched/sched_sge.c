#include "cli/sched/sched_sge.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_file.h"
#include "cli/spec/units.h"

/* Grid Engine counts slots, and its per-job requests (-l h_vmem, mem_free, gpu) are per slot:
 * a node's memory and GPUs are divided among its workers' slots, rounded up. */
static uint64_t per_slot(uint64_t per_node, long procs)
{
    return procs > 1 ? (per_node + (uint64_t)procs - 1) / (uint64_t)procs : per_node;
}

static int sge_fill(const job_spec_t *spec, tmpl_ctx_t *ctx)
{
    char buf[64];
    long procs = spec->procs_per_node > 0 ? spec->procs_per_node : 1;
    int rc = tmpl_set(ctx, "pe", spec->sge.pe ? spec->sge.pe : "");
    rc |= tmpl_setf(ctx, "slots", "%ld", spec_alloc_nodes(spec) * procs);
    units_format_hms(spec->walltime_s, buf, sizeof buf);
    rc |= tmpl_set(ctx, "h_rt", spec->walltime_s ? buf : "");
    units_format_size(per_slot(spec->mem_bytes, procs), 0, buf, sizeof buf);
    rc |= tmpl_set(ctx, "mem_resource", spec->sge.memory ? spec->sge.memory : "h_vmem");
    rc |= tmpl_set(ctx, "mem_per_slot", spec->mem_bytes ? buf : "");
    rc |= spec->gpus_per_node
              ? tmpl_setf(ctx, "gpus_per_slot", "%llu",
                          (unsigned long long)per_slot((uint64_t)spec->gpus_per_node, procs))
              : tmpl_set(ctx, "gpus_per_slot", "");
    rc |= sched_fill_directives(ctx, &spec->sge.directives);
    return rc ? -1 : 0;
}

static void sge_note_ignored(const job_spec_t *spec, FILE *notes)
{
    if (spec->pbs.present || spec->slurm.present)
        fprintf(notes, "note: %s: the %s block is left out of a Grid Engine script\n", spec->path,
                spec->pbs.present ? "pbs:" : "slurm:");
}

/* qsub -terse prints the id alone: "140" for a job, "140.1-8:1" for an array (whose id, as
 * every command takes it, is 140). */
static int sge_parse_job_id(const char *output, char *out, size_t outsize)
{
    const char *p = output;
    while (*p && isspace((unsigned char)*p))
        p++;
    size_t len = strspn(p, "0123456789");
    if (len == 0 || len >= outsize || (p[len] && !strchr(". \t\r\n", p[len])))
        return -1;
    memcpy(out, p, len);
    out[len] = '\0';
    return 0;
}

/* qsub -o DIR/: the file is DIR/NAME.oJOB (an array task's NAME.oJOB.TASK); -j y joins stderr. */
static void sge_output_args(const char *dir, int array, char *buf, size_t size, char **extra,
                            size_t *n)
{
    (void)array;
    snprintf(buf, size, "%s/", dir);
    extra[(*n)++] = "-o";
    extra[(*n)++] = buf;
}

/* -hold_jid waits for the jobs to end, however they end: Grid Engine has no afterok. The ids of
 * "afterok:1:2,afterany:3" as its list "1,2,3"; where some must have succeeded or failed, the job
 * is told which (SGE_AFTER_ENV, -v), and its script checks their accounting as it starts. */
static void sge_after_args(const char *depend, char *buf, size_t size, char **extra, size_t *n)
{
    size_t len = 0;
    buf[0] = 0;
    for (const char *p = depend; *p && len + 1 < size;) {
        p += strcspn(p, ":");
        while (*p == ':') {
            p++;
            size_t id = strcspn(p, ":,");
            len += (size_t)snprintf(buf + len, size - len, "%s%.*s", len ? "," : "", (int)id, p);
            p += id;
        }
        p += *p == ',';
    }
    extra[(*n)++] = "-hold_jid";
    extra[(*n)++] = buf;
    if (!strstr(depend, "afterok") && !strstr(depend, "afternotok"))
        return;
    /* VAR=afterok:1:2+afterany:3 after the list, in buf: -v takes commas as its own. */
    char *var = buf + len + 1;
    if (len + 1 >= size)
        return;
    int w = snprintf(var, size - len - 1, "%s=", SGE_AFTER_ENV);
    for (const char *p = depend; w > 0 && (size_t)w < size - len - 1 && *p; p++)
        var[w++] = *p == ',' ? '+' : *p;
    if (w <= 0 || (size_t)w >= size - len - 1)
        return;
    var[w] = 0;
    extra[(*n)++] = "-v";
    extra[(*n)++] = var;
}

/* Through the job's record, which the script's supervisor watches (as PBS's): qdel's -notify
 * signal comes only before a kill, and qmod -s would suspend the job. */
static int sge_ask_checkpoint(const char *job_id, const char *record_dir, const char *sig,
                              ddp_error_t *err)
{
    (void)job_id;
    char path[8192];
    snprintf(path, sizeof path, "%s/checkpoint-request", record_dir);
    return ddp_write_file_atomic(path, sig, strlen(sig), 0600, err) < 0 ? -1 : 0;
}

/* qsub -m letters: a (aborted), e (ended). */
static void sge_mail_events(bool failed, bool completed, bool requeued, char *out, size_t size)
{
    snprintf(out, size, "%s%s", failed ? "a" : "", failed || completed || requeued ? "e" : "");
}

/* Task k (from 0) of array ARRAY is ARRAY.(k+1). */
static int sge_array_task_id(const char *array_id, size_t k, char *out, size_t outsize)
{
    int n = strchr(array_id, '.') ? -1 : snprintf(out, outsize, "%s.%zu", array_id, k + 1);
    return n < 0 || (size_t)n >= outsize ? -1 : 0;
}

static int sge_array_job_id(const char *task_id, char *out, size_t outsize)
{
    const char *dot = strchr(task_id, '.');
    int n = dot ? snprintf(out, outsize, "%.*s", (int)(dot - task_id), task_id) : -1;
    return n < 0 || (size_t)n >= outsize ? -1 : 0;
}

/* -t FIRST-LAST with -tc, its cap, on a line of its own. */
static void sge_array_range(size_t ntrials, long parallel, char *out, size_t size)
{
    int n = snprintf(out, size, "#$ -t 1-%zu", ntrials);
    if (parallel > 0 && (size_t)parallel < ntrials && n > 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, "\n#$ -tc %ld", parallel);
}

/* Grid Engine's job names: no blanks, and none of / : @ \ * ? (qsub refuses them); not starting
 * with a digit (qdel and qstat take such a name for an id). */
static void sge_check_spec(const job_spec_t *spec, diag_t *diag)
{
    spec_loc_t name_at = spec_field_loc(spec, "name");
    if (spec->name && (isdigit((unsigned char)spec->name[0]) || strpbrk(spec->name, "/:@\\*? \t")))
        diag_add(diag, name_at.line, name_at.col, "name",
                 "\"%s\" is not a valid Grid Engine job name (no blanks or / : @ \\ * ?, and "
                 "not a digit first)",
                 spec->name);
    if (!spec->sge.pe) {
        spec_loc_t at = spec_field_loc(spec, "scheduler");
        diag_add(diag, at.line, at.col, "sge.pe",
                 "a Grid Engine job needs a parallel environment that gives it whole nodes "
                 "(`qconf -spl` lists them; its allocation_rule the slots per host): sge: {pe: "
                 "NAME}, or a site profile's sge_pe:");
    }
}

/* The cell's qmaster host (act_qmaster), for a site profile to recognise; -1 when this host is
 * in no cell. */
static int sge_server_name(char *name, size_t size)
{
    const char *root = getenv("SGE_ROOT"), *cell = getenv("SGE_CELL");
    if (!root || !*root)
        return -1;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/common/act_qmaster", root, cell && *cell ? cell : "default");
    ddp_error_t err;
    char *text = ddp_read_file_max(path, 4096, NULL, &err);
    size_t len = text ? strcspn(text, " \t\r\n") : 0;
    int rc = len && len < size ? 0 : -1;
    if (rc == 0)
        snprintf(name, size, "%.*s", (int)len, text);
    free(text);
    return rc;
}

static const char *const qsub_args[] = {"-terse", NULL};

const sched_ops_t sched_sge_ops = {
    .name = "sge",
    .display = "Grid Engine",
    .template_file = "sge.sh",
    .script_suffix = ".sge",
    .submit_program = "qsub",
    .version_command = "qstat -help",
    .submit_args = qsub_args,
    .fill = sge_fill,
    .note_ignored = sge_note_ignored,
    .parse_job_id = sge_parse_job_id,
    .output_args = sge_output_args,
    .after_args = sge_after_args,
    .cancel_program = "qdel",
    .ask_checkpoint = sge_ask_checkpoint,
    .array_range = sge_array_range,
    .array_first_task = 1,
    .array_index_var = "SGE_TASK_ID",
    .task_workdir_var = "SGE_O_WORKDIR",
    .mail_events = sge_mail_events,
    .no_hold_why = "an allocation held for runs (ddpjob dev, a packed sweep) is not on Grid "
                   "Engine yet: submit the runs, or the sweep as an array (arrays: in the site "
                   "profile)",
    .env_flag = "-v",
    .server_name = sge_server_name,
    .container_runtime = "apptainer",
    .check_spec = sge_check_spec,
    .query = sched_sge_query,
    .sources = {"qstat", "qacct"},
    .explain_pending = sched_sge_explain_pending,
    .starts_by_itself = sched_sge_starts_by_itself,
    .array_task_id = sge_array_task_id,
    .array_job_id = sge_array_job_id,
};
