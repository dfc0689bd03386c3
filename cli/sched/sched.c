#include "cli/sched/sched.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/spawn.h"
#include "cli/sched/sched_pbs.h"
#include "cli/sched/sched_sge.h"
#include "cli/sched/sched_slurm.h"

#define SCHED_RUN_TIMEOUT_MS 60000

static const sched_ops_t *const sched_table[] = {&sched_pbs_ops, &sched_slurm_ops, &sched_sge_ops};
#define SCHED_COUNT (sizeof sched_table / sizeof sched_table[0])

const sched_ops_t *sched_at(size_t i)
{
    return i < SCHED_COUNT ? sched_table[i] : NULL;
}

const sched_ops_t *sched_by_name(const char *name)
{
    for (size_t i = 0; name && i < SCHED_COUNT; i++)
        if (!strcmp(sched_table[i]->name, name))
            return sched_table[i];
    return NULL;
}

const char *const *sched_name_list(void)
{
    static const char *names[SCHED_COUNT + 1];
    for (size_t i = 0; i < SCHED_COUNT; i++)
        names[i] = sched_table[i]->name;
    return names;
}

void sched_names(const char *sep, const char *last_sep, char *out, size_t size)
{
    size_t len = 0;
    if (size)
        out[0] = 0;
    for (size_t i = 0; i < SCHED_COUNT && len < size; i++)
        len += (size_t)snprintf(out + len, size - len, "%s%s",
                                !i                    ? ""
                                : i + 1 < SCHED_COUNT ? sep
                                                      : last_sep,
                                sched_table[i]->name);
}

int sched_fill_directives(tmpl_ctx_t *ctx, const strv_t *directives)
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

void sched_leave_job_env(void)
{
    extern char **environ;
    for (size_t i = 0; i < SCHED_COUNT; i++) {
        const sched_ops_t *ops = sched_table[i];
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

void sched_set_task_workdir(const char *workdir)
{
    for (size_t i = 0; i < SCHED_COUNT; i++) {
        const char *var = sched_table[i]->task_workdir_var;
        if (var && getenv(var))
            setenv(var, workdir, 1);
    }
}

int sched_cancel(const sched_ops_t *ops, char *const *ids, size_t n, ddp_error_t *err)
{
    char **argv = calloc(n + 3, sizeof *argv);
    if (!argv)
        return ddp_error_set(err, "out of memory");
    size_t a = 0;
    argv[a++] = (char *)ops->cancel_program;
    /* The ids were checked when they were read (a digit first); this is the second lock. */
    if (ops->options_end)
        argv[a++] = (char *)ops->options_end;
    memcpy(argv + a, ids, n * sizeof *ids);
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

int sched_run(char **argv, char **out, int failure_ok, int *failed, ddp_error_t *err)
{
    ddp_spawn_result_t res = {0};
    if (out)
        *out = NULL;
    *failed = 0;
    if (ddp_spawn_capture(argv, NULL, SCHED_RUN_TIMEOUT_MS, &res, err) < 0)
        return ddp_error_prefix(err, "%s", argv[0]);
    if (res.status != 0) {
        *failed = 1;
        if (!failure_ok) {
            size_t len = strlen(res.err);
            while (len && res.err[len - 1] == '\n')
                res.err[--len] = 0;
            ddp_error_set(err, "%s failed (exit status %d): %s", argv[0], res.status,
                          *res.err ? res.err : "(no output)");
            ddp_spawn_result_free(&res);
            return -1;
        }
    }
    if (out) {
        *out = res.out;
        res.out = NULL;
    }
    ddp_spawn_result_free(&res);
    return 0;
}
