#include "cli/commands/submit_steps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/view/job_notify.h"
#include "cli/jobs/job_record.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"
#include "runtime/base/spawn.h"

/* How long qsub/sbatch may take before we give up on them. */
#define SUBMIT_TIMEOUT_MS (120 * 1000)

char *render_to_string(const job_spec_t *spec, const render_opts_t *ro, int *exit_code)
{
    char *text = NULL;
    size_t len = 0;
    ddp_error_t err;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        fprintf(stderr, "ddpjob: out of memory\n");
        *exit_code = EXIT_SYSTEM;
        return NULL;
    }
    int rc = render_script(spec, ro, mem, stderr, &err);
    fclose(mem);
    if (rc < 0) {
        fprintf(stderr, "ddpjob: %s\n", err.msg);
        free(text);
        *exit_code = EXIT_SYSTEM;
        return NULL;
    }
    return text;
}

int make_record(const job_spec_t *spec, const sched_ops_t *ops, const char *jobdir,
                const char *script_text, const char *at, const job_record_t *held, char **dir,
                ddp_error_t *err)
{
    job_record_t r = {.submitted = (int64_t)time(NULL),
                      .nodes = (int)spec->nodes,
                      .procs_per_node = (int)spec->procs_per_node,
                      .walltime_s = (int64_t)spec->walltime_s,
                      .requeue = (int)spec->requeue,
                      .group_readable = spec->share_record && !strcmp(spec->share_record, "group")};
    char *workdir = realpath(jobdir, NULL), *spec_path = realpath(spec->path, NULL);
    snprintf(r.name, sizeof r.name, "%s", held && held->name[0] ? held->name : spec->name);
    if (held) {
        /* A run in a held allocation takes this many of its nodes (dev_record.h). */
        if (held->held_in[0])
            r.nodes = (int)spec_alloc_nodes(spec);
        r.held = held->held;
        r.idle_s = held->idle_s;
        snprintf(r.held_in, sizeof r.held_in, "%s", held->held_in);
    }
    snprintf(r.scheduler, sizeof r.scheduler, "%s", ops->name);
    snprintf(r.workdir, sizeof r.workdir, "%s", workdir ? workdir : jobdir);
    snprintf(r.spec, sizeof r.spec, "%s", spec_path ? spec_path : spec->path);
    if (spec->checkpoint.signal)
        snprintf(r.checkpoint_signal, sizeof r.checkpoint_signal, "%s",
                 ddp_signal_name(spec->checkpoint.signal));
    for (size_t i = 0; i + 1 < spec->command.count && !spec->command_is_shell; i++)
        if (!strcmp(spec->command.items[i], "--checkpoint-dir")) {
            const char *d = spec->command.items[i + 1];
            char whole[8300];
            snprintf(whole, sizeof whole, "%s%s%s", d[0] == '/' ? "" : r.workdir,
                     d[0] == '/' ? "" : "/", d);
            if (strlen(whole) < sizeof r.checkpoint_dir)
                memcpy(r.checkpoint_dir, whole, strlen(whole) + 1);
        }
    free(workdir);
    free(spec_path);
    char *spec_text = ddp_read_file(spec->path, NULL, err);
    int rc = -1;
    if (spec_text && at) {
        rc = job_record_create_at(at, &r, spec_text, script_text, err);
        if (rc == 0 && !(*dir = strdup(at))) {
            job_record_remove(at);
            rc = ddp_error_set(err, "out of memory");
        }
    } else if (spec_text) {
        rc = job_record_create(&r, spec_text, script_text, dir, err);
    }
    free(spec_text);
    /* A scheduler's env_flag (qsub -v) takes VAR=VALUE,...: a record path with a comma cannot
     * travel. */
    if (rc == 0 && strpbrk(*dir, ",'\"\n")) {
        ddp_error_set(err,
                      "its folder %s holds a comma or quote, which a job's environment "
                      "cannot carry",
                      *dir);
        job_record_remove(*dir);
        free(*dir);
        *dir = NULL;
        rc = -1;
    }
    /* The webhook's URL is a secret: in the record, not in the script. */
    if (rc == 0 && spec->notify.webhook &&
        job_notify_save(*dir, spec->notify.webhook, spec->notify.on.items, spec->notify.on.count,
                        err)) {
        job_record_remove(*dir);
        free(*dir);
        *dir = NULL;
        rc = -1;
    }
    return rc;
}

void record_handoff(const sched_ops_t *ops, const char *record, const job_output_t *output,
                    char *var, size_t size, char **extra, size_t *n)
{
    setenv(JOB_RECORD_ENV, record, 1);
    if (!ops->env_flag)
        return;
    int moved = output && output->moved;
    snprintf(var, size, "%s=%s%s%s%s", JOB_RECORD_ENV, record, moved ? "," JOB_OUTPUT_ENV "=" : "",
             moved ? output->dir : "", moved ? "/" : "");
    extra[(*n)++] = (char *)ops->env_flag;
    extra[(*n)++] = var;
}

int place_output(const char *wanted, job_output_t *out)
{
    ddp_error_t err;
    if (job_output_place(wanted, out, &err)) {
        fprintf(stderr, "ddpjob: no safe place for the job's output file: %s\n", err.msg);
        return EXIT_SYSTEM;
    }
    return EXIT_OK;
}

void record_submitted(const char *record, const char *job_id, int indexed)
{
    ddp_error_t err;
    job_record_t submitted = {0};
    if (job_record_add_link(record, 0, job_id, &err) ||
        (indexed && job_record_read(record, &submitted, &err)))
        fprintf(stderr, "ddpjob: warning: job %s: its record %s is incomplete: %s\n", job_id,
                record, err.msg);
    else if (indexed && job_index_add(&submitted, job_id, &err))
        fprintf(stderr, "ddpjob: warning: job %s is not in the index of jobs: %s\n", job_id,
                err.msg);
    if (submitted.dir)
        job_record_free(&submitted);
}

int write_job_script(const job_spec_t *spec, const sched_ops_t *ops, const char *jobdir,
                     const char *text, char *file, size_t size, char **script)
{
    ddp_error_t err;
    struct stat st;
    if (stat(jobdir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "ddpjob: %s: workdir %s is not a directory\n", spec->path, jobdir);
        return EXIT_SYSTEM;
    }
    sched_script_file(ops, spec, file, size);
    if (asprintf(script, "%s/%s", jobdir, file) < 0) {
        *script = NULL;
        return EXIT_SYSTEM;
    }
    if (ddp_write_file_atomic(*script, text, strlen(text), 0700, &err) < 0) {
        fprintf(stderr, "ddpjob: %s\n", err.msg);
        return EXIT_SYSTEM;
    }
    return EXIT_OK;
}

/* The script opened for the submitter, once, without following a link: a regular file of this
 * user's that others cannot write, holding `text` (when not NULL). Its folder may be a team's
 * workdir, where another member can swap the file under its name between its writing and the
 * submitter's reading it: the submitter reads it through this descriptor (/dev/fd/N into
 * fd_path), which nothing renamed afterwards can change. The descriptor, or -1 with err. */
static int open_checked_script(const char *jobdir, const char *script, const char *text,
                               char *fd_path, size_t size, ddp_error_t *err)
{
    char path[8192];
    snprintf(path, sizeof path, "%s%s%s", *script == '/' ? "" : jobdir, *script == '/' ? "" : "/",
             script);
    int fd = open(path, O_RDONLY | O_NOFOLLOW);
    if (fd < 0)
        return ddp_error_set(err, "%s: %s", path,
                             errno == ELOOP ? "a symbolic link" : strerror(errno));
    struct stat st;
    char *got = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & (S_IWGRP | S_IWOTH))) {
        ddp_error_set(err,
                      "%s: not a file of this user's own that others cannot write (uid %u, "
                      "mode %04o): another user changed it; not submitted",
                      path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    } else if (text &&
               ((size_t)st.st_size != strlen(text) || !(got = malloc((size_t)st.st_size + 1)) ||
                pread(fd, got, (size_t)st.st_size, 0) != st.st_size ||
                memcmp(got, text, (size_t)st.st_size))) {
        ddp_error_set(err, "%s: not the script just written (changed since): not submitted", path);
    } else {
        free(got);
        snprintf(fd_path, size, "/dev/fd/%d", fd);
        return fd;
    }
    free(got);
    close(fd);
    return -1;
}

int run_submitter(const sched_ops_t *ops, char **sub_argv, const char *jobdir, const char *script,
                  const char *text, char *job_id, size_t size)
{
    ddp_spawn_result_t res = {0};
    ddp_error_t err;
    int code = EXIT_OK;
    char fd_path[32];
    size_t last = 0;
    while (sub_argv[last + 1])
        last++;
    int fd = open_checked_script(jobdir, sub_argv[last], text, fd_path, sizeof fd_path, &err);
    if (fd < 0) {
        fprintf(stderr, "ddpjob: cannot submit %s: %s\n", script, err.msg);
        return EXIT_SYSTEM;
    }
    char *named = sub_argv[last];
    sub_argv[last] = fd_path;
    if (ddp_spawn_capture(sub_argv, jobdir, SUBMIT_TIMEOUT_MS, &res, &err) < 0) {
        fprintf(stderr, "ddpjob: cannot submit %s: %s (is this a %s login node?)\n", script,
                err.msg, ops->name);
        code = EXIT_SUBMITTER;
    } else if (res.status != 0 || ops->parse_job_id(res.out, job_id, size) < 0) {
        size_t len = strlen(res.err);
        while (len > 0 && res.err[len - 1] == '\n')
            res.err[--len] = '\0';
        if (res.status != 0)
            fprintf(stderr, "ddpjob: %s failed (exit status %d) submitting %s:\n%s\n",
                    ops->submit_program, res.status, script, *res.err ? res.err : "(no output)");
        else
            fprintf(stderr, "ddpjob: %s printed no job id for %s (stdout: \"%s\")\n",
                    ops->submit_program, script, res.out);
        code = EXIT_SUBMITTER;
    }
    sub_argv[last] = named;
    close(fd);
    ddp_spawn_result_free(&res);
    return code;
}

int submit_script(const sched_ops_t *ops, const char *dir, const char *file, const char *text,
                  char **extra, int dry, char *id, size_t size)
{
    char *argv[16];
    size_t n = 0;
    argv[n++] = (char *)ops->submit_program;
    for (size_t i = 0; ops->submit_args[i]; i++)
        argv[n++] = (char *)ops->submit_args[i];
    for (size_t i = 0; extra && extra[i]; i++)
        argv[n++] = extra[i];
    argv[n++] = (char *)file;
    argv[n] = NULL;
    if (!dry)
        return run_submitter(ops, argv, dir, file, text, id, size);
    printf("would run in %s:", dir);
    for (size_t i = 0; i < n; i++)
        printf(" %s", argv[i]);
    printf("\n");
    return EXIT_OK;
}
