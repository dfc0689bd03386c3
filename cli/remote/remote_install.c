#include "cli/remote/remote_install.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_file.h"
#include "cli/remote/remote_command.h"
#include "cli/spec/shquote.h"

/* Where versions are installed there: the login user's own, closed to others; programs and
 * share files readable by all, as an install is. */
static const upload_place_t install_place = {.trusted = "~/.local/share/ddpjob", .keep = 0755};

/* The manifest of an installed tree: a few hundred lines. */
enum { MANIFEST_MAX = 1 << 20, MANIFEST_FILES_MAX = 4096 };

/* The paths SHA256SUMS lists ("HASH  PATH" lines), each a path inside the tree. */
static char **manifest_paths(char *text, size_t *n, ddp_error_t *err)
{
    char **paths = calloc(MANIFEST_FILES_MAX + 2, sizeof *paths);
    if (!paths) {
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    *n = 0;
    paths[(*n)++] = "share/ddpjob/SHA256SUMS";
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strlen(line) < 67 || strspn(line, "0123456789abcdef") != 64 ||
            strncmp(line + 64, "  ", 2) || *n > MANIFEST_FILES_MAX) {
            ddp_error_set(err, "share/ddpjob/SHA256SUMS: not a checksum list (\"%.80s\")", line);
            free(paths);
            return NULL;
        }
        paths[(*n)++] = line + 66;
    }
    return paths;
}

/* Runs `script` by bash on the cluster; its status, or -1 with err set. */
static int run_script(ssh_session_t *s, const char *script, int64_t deadline, remote_result_t *r,
                      ddp_error_t *err)
{
    char *command = shquote_for_any_shell("exec bash -s");
    int rc = command ? remote_command_run(s, command, script, strlen(script), deadline, r, err)
                     : ddp_error_set(err, "out of memory");
    free(command);
    return rc ? -1 : r->status;
}

/* Whether VERSION is there and whole; a broken one is moved aside. */
static int installed_whole(ssh_session_t *s, const char *version, int64_t deadline,
                           remote_result_t *r, ddp_error_t *err)
{
    char script[1024];
    snprintf(script, sizeof script,
             "d=$HOME/.local/share/ddpjob/%s\n"
             "[ -e \"$d\" ] || exit 3\n"
             "cd \"$d\" && sha256sum --quiet -c share/ddpjob/SHA256SUMS >/dev/null 2>&1 &&"
             " [ \"$(bin/ddpjob --version)\" = 'ddpjob %s' ] && exit 0\n"
             "mv -T \"$d\" \"$d.broken-$(date +%%s)\" && exit 4\n",
             version, version);
    int status = run_script(s, script, deadline, r, err);
    if (status < 0)
        return -1;
    if (status == 4)
        fprintf(stderr, "ddpjob: %s: ~/.local/share/ddpjob/%s was not whole: moved aside\n",
                ssh_session_where(s), version);
    return status == 0;
}

int remote_install(ssh_session_t *s, const char *prefix, const char *version, int64_t deadline,
                   int *installed, transfer_summary_t *sum, ddp_error_t *err)
{
    memset(sum, 0, sizeof *sum);
    *installed = 0;
    /* It reaches the cluster's shell as written. */
    if (!*version || strspn(version, "0123456789abcdefghijklmnopqrstuvwxyz.+-") != strlen(version))
        return ddp_error_set(err, "\"%s\" is no version", version);
    remote_result_t *r = malloc(sizeof *r);
    if (!r)
        return ddp_error_set(err, "out of memory");
    int whole = installed_whole(s, version, deadline, r, err);
    char path[4096], part[256], script[1024];
    char *text = NULL, **paths = NULL;
    size_t n = 0;
    snprintf(path, sizeof path, "%s/share/ddpjob/SHA256SUMS", prefix);
    snprintf(part, sizeof part, "~/.local/share/ddpjob/%s.part", version);
    int rc = whole < 0 ? -1 : 0;
    if (!rc && !whole &&
        (!(text = ddp_read_file_max(path, MANIFEST_MAX, NULL, err)) ||
         !(paths = manifest_paths(text, &n, err)) ||
         upload_files(s, prefix, paths, n, part, &install_place, deadline, sum, err)))
        rc = -1;
    snprintf(
        script, sizeof script,
        "cd ~/.local/share/ddpjob/%s.part && sha256sum --quiet -c share/ddpjob/SHA256SUMS 2>&1 &&"
        " [ \"$(bin/ddpjob --version)\" = 'ddpjob %s' ] && cd .. && mv -T %s.part %s\n",
        version, version, version, version);
    if (!rc && !whole && run_script(s, script, deadline, r, err) != 0)
        rc = r->status < 0 ? -1
                           : ddp_error_set(err,
                                           "%s: the files sent for ddpjob %s do not check there "
                                           "(sha256sum, or bin/ddpjob --version): %.300s",
                                           ssh_session_where(s), version, r->out);
    *installed = !rc && !whole;
    free(paths);
    free(text);
    free(r);
    return rc;
}
