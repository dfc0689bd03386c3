/* remote_steps: what the commands run on a cluster from a laptop share (remote_steps.h). */
#include "cli/commands/remote_steps.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands/cluster_login.h"
#include "cli/commands/commands.h"
#include "cli/laptop/remote_install.h"
#include "cli/spec/datafile.h"
#include "cli/spec/shquote.h"
#include "cli/spec/units.h"
#include "runtime/base/ddp_clock.h"

char *remote_ddpjob_command(const char *cluster, const char *dir, char **words, int n,
                            const char *tail)
{
    int before_args = n;
    for (int i = 1; i < n && before_args == n; i++)
        before_args = strcmp(words[i], "--") ? n : i;
    char *dir_q = dir ? shquote(dir) : NULL, *script = NULL, *command = NULL, *run = NULL;
    if ((dir && !dir_q) ||
        asprintf(&script,
                 "b=$HOME/.local/share/ddpjob/%s/bin/ddpjob\n"
                 "if [ ! -x \"$b\" ]; then echo \"ddpjob: ddpjob %s is not installed on %s "
                 "(~/.local/share/ddpjob/%s): ddpjob submit --on %s installs it\" >&2; exit 3; fi\n"
                 "%s%s%s"
                 "exec \"$b\" ",
                 DDPJOB_VERSION, DDPJOB_VERSION, cluster, DDPJOB_VERSION, cluster, dir ? "d=" : "",
                 dir ? dir_q : "",
                 dir ? "\ncase $d in '~/'*) d=$HOME/${d#'~/'} ;; esac\ncd -- \"$d\" || exit 3\n"
                     : "") < 0)
        script = NULL;
    /* tail's words go before the workload's own arguments (after "--"), where options go. */
    if (script && asprintf(&run, "%s\"${@:1:%d}\"%s \"${@:%d}\"\n", script, before_args,
                           tail ? tail : "", before_args + 1) < 0)
        run = NULL;
    free(script);
    script = run;
    free(dir_q);
    char *script_q = script ? shquote(script) : NULL;
    free(script);
    size_t len = script_q ? strlen(script_q) + 64 : 0;
    for (int i = 0; script_q && i < n; i++)
        len += 4 * strlen(words[i]) + 3;
    char *bash = script_q ? malloc(len) : NULL;
    if (bash) {
        size_t at = (size_t)snprintf(bash, len, "exec bash -lc %s ddpjob", script_q);
        for (int i = 0; i < n; i++) {
            char *w = shquote(words[i]);
            if (!w) {
                free(bash);
                bash = NULL;
                break;
            }
            at += (size_t)snprintf(bash + at, len - at, " %s", w);
            free(w);
        }
    }
    free(script_q);
    command = bash ? shquote_for_any_shell(bash) : NULL;
    free(bash);
    return command;
}

int remote_load_profile(const char *command, const char *name, cluster_profile_t *c)
{
    char path[4096];
    ddp_error_t err;
    if (cluster_profile_load(name, c, path, sizeof path, &err) == 0)
        return EXIT_OK;
    fprintf(stderr, "ddpjob %s: %s\n", command, err.msg);
    return err.code == ENOENT ? EXIT_USAGE : EXIT_SYSTEM;
}

/* The spec's name as a folder's: the job's name, else the file's name less its extension. */
static int job_folder_name(const job_spec_t *spec, char *out, size_t size)
{
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", spec->path);
    snprintf(out, size, "%s", spec->name ? spec->name : basename(copy));
    if (!spec->name) {
        char *dot = strrchr(out, '.');
        if (dot && dot != out)
            *dot = '\0';
    }
    if (!*out || *out == '.' || *out == '-' ||
        strspn(out, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
            strlen(out))
        return -1;
    return 0;
}

static int plan_upload(const char *command, const char *what, job_files_t *f, uint64_t max_upload)
{
    ddp_error_t err;
    if (upload_plan(f->local_dir, &f->plan, &err)) {
        fprintf(stderr, "ddpjob %s: %s: %s; nothing sent\n", command, what, err.msg);
        return -1;
    }
    if (f->plan.bytes > max_upload) {
        char size[32], cap[32];
        units_format_size(f->plan.bytes, 0, size, sizeof size);
        units_format_size(max_upload, 0, cap, sizeof cap);
        fprintf(stderr,
                "ddpjob %s: %s: %s holds %s to send (%zu files and folders), over "
                "--max-upload %s: nothing sent; leave data behind in %s/.ddpjobignore, or say "
                "--max-upload %s\n",
                command, what, f->local_dir, size, f->plan.count, cap, f->local_dir, size);
        return -1;
    }
    return 0;
}

int remote_job_files(const char *command, const cluster_profile_t *c, const job_spec_t *spec,
                     uint64_t max_upload, job_files_t *f)
{
    if (job_folder_name(spec, f->folder, sizeof f->folder)) {
        fprintf(stderr,
                "ddpjob %s: %s: the job's name \"%s\" cannot name its folder on %s (letters, "
                "digits, '.', '_' and '-')\n",
                command, spec->path, f->folder, c->name);
        return -1;
    }
    snprintf(f->remote_dir, sizeof f->remote_dir, "%s/%s", c->remote_dir, f->folder);
    /* A workdir the spec names for the cluster (/scratch/...) is no folder here: then this one. */
    struct stat st;
    int workdir_here = spec->workdir && stat(spec->workdir, &st) == 0 && S_ISDIR(st.st_mode);
    f->local_dir = realpath(workdir_here ? spec->workdir : ".", NULL);
    f->spec_real = realpath(spec->path, NULL);
    if (!f->local_dir || !f->spec_real) {
        fprintf(stderr, "ddpjob %s: %s: %s\n", command, spec->path, strerror(errno));
        return -1;
    }
    size_t dir_len = strlen(f->local_dir);
    f->spec_inside = !strncmp(f->spec_real, f->local_dir, dir_len) && f->spec_real[dir_len] == '/';
    f->spec_there = f->spec_inside ? f->spec_real + dir_len + 1 : strrchr(f->spec_real, '/') + 1;
    return plan_upload(command, spec->path, f, max_upload);
}

int remote_folder_files(const char *command, const char *local_dir, const char *remote_dir,
                        uint64_t max_upload, job_files_t *f)
{
    snprintf(f->remote_dir, sizeof f->remote_dir, "%s", remote_dir);
    if (!(f->local_dir = strdup(local_dir))) {
        fprintf(stderr, "ddpjob %s: out of memory\n", command);
        return -1;
    }
    return plan_upload(command, local_dir, f, max_upload);
}

void remote_job_files_free(job_files_t *f)
{
    upload_plan_free(&f->plan);
    free(f->local_dir);
    free(f->spec_real);
}

int remote_send_job(const char *command, ssh_session_t *s, const cluster_profile_t *c,
                    job_files_t *f)
{
    int64_t deadline = ddp_deadline_in(TRANSFER_MS);
    transfer_summary_t sum = {0};
    ddp_error_t err;
    char text[256], prefix[PATH_MAX];
    int installed = 0;
    if (datafile_prefix(prefix, sizeof prefix, &err) ||
        remote_install(s, prefix, DDPJOB_VERSION, deadline, &installed, &sum, &err)) {
        fprintf(stderr, "ddpjob %s: %s: installing ddpjob %s there: %s\n", command, c->name,
                DDPJOB_VERSION, err.msg);
        return EXIT_SYSTEM;
    }
    if (installed)
        fprintf(stderr, "%s: installed ddpjob %s in ~/.local/share/ddpjob/%s\n", c->name,
                DDPJOB_VERSION, DDPJOB_VERSION);
    /* The user's alone there, or the team's to read (remote_share: group). */
    int group = cluster_profile_shared(c);
    const upload_place_t place = {
        .trusted = c->remote_dir, .keep = group ? 0750 : 0700, .group = group};
    int failed =
        upload_tree(s, f->local_dir, &f->plan, f->remote_dir, &place, deadline, &sum, &err);
    if (!failed && f->spec_there && !f->spec_inside) {
        char *base = f->spec_there;
        base[-1] = '\0';
        failed = upload_files(s, f->spec_real, &base, 1, f->remote_dir, &place, deadline,
                              &(transfer_summary_t){0}, &err);
        base[-1] = '/';
    }
    transfer_summary_text(&sum, "uploaded", text, sizeof text);
    if (failed) {
        fprintf(stderr, "ddpjob %s: %s: %s (%s); nothing %s\n", command, c->name, err.msg, text,
                strcmp(command, "run") ? "submitted" : "run");
        return EXIT_SYSTEM;
    }
    fprintf(stderr, "%s: %s to %s\n", c->name, text, f->remote_dir);
    return EXIT_OK;
}
