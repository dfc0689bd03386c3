#include "cli/sched/sched_slurm.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cli/spec/units.h"

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
    units_format_days_hms(spec->walltime_s, buf, sizeof buf);
    rc |= tmpl_set(ctx, "time", spec->walltime_s ? buf : "");
    rc |= tmpl_set(ctx, "constraint", spec->slurm.constraint ? spec->slurm.constraint : "");
    rc |= tmpl_set_bool(ctx, "exclusive", spec->slurm.exclusive);
    rc |= sched_fill_directives(ctx, &spec->slurm.directives);
    return rc ? -1 : 0;
}

static void slurm_note_ignored(const job_spec_t *spec, FILE *notes)
{
    if (spec->pbs.present)
        fprintf(notes,
                "note: %s: the pbs: block (storage, jobfs, launcher, directives) is left "
                "out of a Slurm script\n",
                spec->path);
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

/* The template's own name, %x-%j.out, in dir; an array's tasks by the array's id and index. */
static void slurm_output_args(const char *dir, int array, char *buf, size_t size, char **extra,
                              size_t *n)
{
    snprintf(buf, size, "--output=%s/%s", dir, array ? "%x-%A_%a.out" : "%x-%j.out");
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

/* To the job's steps (the agents), not to its batch shell. */
static int slurm_ask_checkpoint(const char *job_id, const char *record_dir, const char *sig,
                                ddp_error_t *err)
{
    (void)record_dir;
    char *argv[] = {"scancel", "--signal", (char *)sig, "--", (char *)job_id, NULL};
    int failed;
    return sched_run(argv, NULL, 0, &failed, err);
}

static void slurm_mail_events(bool failed, bool completed, bool requeued, char *out, size_t size)
{
    snprintf(out, size, "%s%s%s%s%s", failed ? "FAIL" : "", failed && completed ? "," : "",
             completed ? "END" : "", requeued && (failed || completed) ? "," : "",
             requeued ? "REQUEUE" : "");
}

/* A task of array ARRAY is ARRAY_K. */
static int slurm_array_task_id(const char *array_id, size_t k, char *out, size_t outsize)
{
    int n = snprintf(out, outsize, "%s_%zu", array_id, k);
    return n < 0 || (size_t)n >= outsize ? -1 : 0;
}

static int slurm_array_job_id(const char *task_id, char *out, size_t outsize)
{
    const char *under = strrchr(task_id, '_');
    int n = under ? snprintf(out, outsize, "%.*s", (int)(under - task_id), task_id) : -1;
    return n < 0 || (size_t)n >= outsize ? -1 : 0;
}

/* --array=FIRST-LAST, %CAP after it. */
static void slurm_array_range(size_t ntrials, long parallel, char *out, size_t size)
{
    if (parallel > 0 && (size_t)parallel < ntrials)
        snprintf(out, size, "#SBATCH --array=0-%zu%%%ld", ntrials - 1, parallel);
    else
        snprintf(out, size, "#SBATCH --array=0-%zu", ntrials - 1);
}

static const char *const sbatch_args[] = {"--parsable", NULL};

/* A job's SLURM_ARRAY_TASK_ID reaches a job sbatch'ed from it; its SLURM_CONF is the cluster's. */
static const char *const slurm_env_kept[] = {"SLURM_CONF", NULL};

const sched_ops_t sched_slurm_ops = {
    .name = "slurm",
    .display = "Slurm",
    .template_file = "slurm.sh",
    .script_suffix = ".sbatch",
    .submit_program = "sbatch",
    .version_command = "sbatch --version",
    .submit_args = sbatch_args,
    .fill = slurm_fill,
    .note_ignored = slurm_note_ignored,
    .parse_job_id = slurm_parse_job_id,
    .output_args = slurm_output_args,
    .after_args = slurm_after_args,
    .cancel_program = "scancel",
    .ask_checkpoint = slurm_ask_checkpoint,
    .options_end = "--",
    .array_range = slurm_array_range,
    .array_index_var = "SLURM_ARRAY_TASK_ID",
    .mail_events = slurm_mail_events,
    .job_env_prefix = "SLURM_",
    .job_env_kept = slurm_env_kept,
    .container_runtime = "pyxis",
    .container_agent_inside = true,
    .query = sched_slurm_query,
    .sources = {"squeue", "sacct"},
    .reason_needed = true,
    .explain_pending = sched_slurm_explain_pending,
    .starts_by_itself = sched_slurm_starts_by_itself,
    .state_from_word = sched_slurm_state,
    .array_task_id = slurm_array_task_id,
    .array_job_id = slurm_array_job_id,
};
