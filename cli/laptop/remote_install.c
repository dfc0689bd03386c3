#include "cli/laptop/remote_install.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/ddp_file.h"
#include "cli/ssh/remote_command.h"
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
        fprintf(stderr,
                "ddpjob: %s: ~/.local/share/ddpjob/%s was not whole, or did not run there: moved "
                "aside\n",
                ssh_session_where(s), version);
    return status == 0;
}

/* The login node's architecture as `uname -m` names it ("x86_64", "aarch64"). */
static int cluster_arch(ssh_session_t *s, int64_t deadline, remote_result_t *r, char *arch,
                        size_t size, ddp_error_t *err)
{
    if (run_script(s, "uname -m\n", deadline, r, err) != 0)
        return r->status < 0 ? -1 : ddp_error_set(err, "uname -m failed there: %.200s", r->err);
    size_t len = strcspn(r->out, "\n");
    if (len >= size)
        return ddp_error_set(err, "uname -m said \"%.40s...\" there, which is no architecture",
                             r->out);
    memcpy(arch, r->out, len);
    arch[len] = '\0';
    return 0;
}

/* The architectures the local install holds cluster builds for, as "x86_64, aarch64". */
static void builds_held(const char *dir, char *out, size_t size)
{
    DIR *d = opendir(dir);
    size_t used = 0;
    out[0] = '\0';
    for (struct dirent *e; d && (e = readdir(d)) && used < size;)
        if (e->d_name[0] != '.')
            used += snprintf(out + used, size - used, "%s%s", used ? ", " : "", e->d_name);
    if (d)
        closedir(d);
}

int remote_install_build_for(const char *prefix, const char *arch, char *tree, size_t size,
                             ddp_error_t *err)
{
    /* An install holds them in lib/ddpjob/cluster; a build tree (build/cli/ddpjob's) in
     * build/scripts, where scripts/meson.build makes this machine's. */
    static const char *const places[] = {"lib/ddpjob/cluster", "scripts"};
    char dir[4000], sums[4608], held[512];
    /* What the cluster said: it becomes a path here. */
    if (!*arch || strspn(arch, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(arch))
        return ddp_error_set(err, "uname -m said \"%.40s\" there, which is no architecture", arch);
    for (size_t i = 0; i < sizeof places / sizeof *places; i++) {
        snprintf(tree, size, "%s/%s/%s", prefix, places[i], arch);
        snprintf(sums, sizeof sums, "%s/share/ddpjob/SHA256SUMS", tree);
        if (access(sums, R_OK) == 0)
            return 0;
    }
    snprintf(dir, sizeof dir, "%s/lib/ddpjob/cluster", prefix);
    builds_held(dir, held, sizeof held);
    return ddp_error_set(err,
                         "the cluster is %s; this ddpjob holds %s%s (%s): install ddpjob there "
                         "from its %s bundle (scripts/bundle.sh OUT_DIR %s), or build this "
                         "ddpjob with -Dcluster_arches=%s",
                         arch, *held ? "cluster builds for " : "no cluster build",
                         *held ? held : "", dir, arch, arch, arch);
}

/* The files of `tree` sent to VERSION.part there, checked and tried, and put in place; a try that
 * fails is removed, its cause in err. */
static int send_checked(ssh_session_t *s, const char *tree, const char *version, int64_t deadline,
                        transfer_summary_t *sum, remote_result_t *r, ddp_error_t *err)
{
    char path[4608], part[256], script[1536];
    snprintf(path, sizeof path, "%s/share/ddpjob/SHA256SUMS", tree);
    snprintf(part, sizeof part, "~/.local/share/ddpjob/%s.part", version);
    char *text = ddp_read_file_max(path, MANIFEST_MAX, NULL, err), **paths = NULL;
    size_t n = 0;
    int rc = !text || !(paths = manifest_paths(text, &n, err)) ||
                     upload_files(s, tree, paths, n, part, &install_place, deadline, sum, err)
                 ? -1
                 : 0;
    free(paths);
    free(text);
    if (rc) {
        /* What was sent of it goes too, where the link still holds (never run either way). */
        ddp_error_t ignored;
        snprintf(script, sizeof script, "rm -rf ~/.local/share/ddpjob/%s.part\n", version);
        run_script(s, script, deadline, r, &ignored);
        return -1;
    }
    snprintf(script, sizeof script,
             "cd ~/.local/share/ddpjob || exit 1\n"
             "failed() { echo \"$1\"; rm -rf %s.part; exit 5; }\n"
             "out=$(cd %s.part && sha256sum --quiet -c share/ddpjob/SHA256SUMS 2>&1) ||"
             " failed \"the files do not match their checksums: $out\"\n"
             "out=$(%s.part/bin/ddpjob --version 2>&1) ; [ \"$out\" = 'ddpjob %s' ] ||"
             " failed \"bin/ddpjob --version there said: ${out:-nothing}\"\n"
             "mv -T %s.part %s\n",
             version, version, version, version, version, version);
    if (run_script(s, script, deadline, r, err) != 0)
        rc = r->status < 0
                 ? -1
                 : ddp_error_set(err, "the ddpjob %s sent from %s does not run there: %.300s",
                                 version, tree, r->status == 5 ? r->out : r->err);
    return rc;
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
    char arch[64], tree[4096];
    int whole = 0;
    int rc = cluster_arch(s, deadline, r, arch, sizeof arch, err) ||
                     remote_install_build_for(prefix, arch, tree, sizeof tree, err) ||
                     (whole = installed_whole(s, version, deadline, r, err)) < 0 ||
                     (!whole && send_checked(s, tree, version, deadline, sum, r, err))
                 ? -1
                 : 0;
    *installed = !rc && !whole;
    free(r);
    return rc;
}
