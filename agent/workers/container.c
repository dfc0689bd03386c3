#include "agent/workers/container.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/spawn.h"
#include "runtime/job/node_source.h"

/* How long a GPU job's check may take: the image's start and nvidia-smi. */
#define GPU_CHECK_MS 60000

extern char **environ;

/* The variables that describe the host's own files: an image has its own, so enroot, which
 * passes only what it is told, is not told these (apptainer and ch-run follow their own rules:
 * apptainer sets PATH and LD_LIBRARY_PATH from the image, ch-run passes everything). XDG_ and
 * ENROOT_ are enroot's own besides; SHLVL and _ the shell's. */
static const char *const host_layout_vars[] = {
    "PATH",      "LD_LIBRARY_PATH", "LD_PRELOAD", "HOME",       "SHELL",       "PWD",
    "OLDPWD",    "TMPDIR",          "MANPATH",    "MODULEPATH", "MODULESHOME", "LOADEDMODULES",
    "_LMFILES_", "PYTHONHOME",      "PYTHONPATH", "SHLVL",      "_",           NULL};
static const char *const host_layout_prefixes[] = {"BASH_FUNC_", "ENROOT_", "XDG_", NULL};

const char *container_program(container_runtime_t runtime)
{
    const container_runtime_info_t *info = container_runtime_info(runtime);
    return info ? info->program : "none";
}

/* Whether program is an executable file in one of PATH's folders. */
static int on_path(const char *program)
{
    const char *path = getenv("PATH");
    char dir[4096], file[4200];
    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(dir, sizeof dir, "%.*s", (int)n, p);
        snprintf(file, sizeof file, "%s/%s", n ? dir : ".", program);
        if (access(file, X_OK) == 0)
            return 1;
        p += n + (p[n] == ':');
    }
    return 0;
}

int container_check(const container_t *c, ddp_error_t *err)
{
    const char *program = container_program(c->runtime), *rt = container_runtime_name(c->runtime);
    if (!on_path(program))
        return ddp_error_set(err, "container: the %s runtime's program %s is not on PATH here", rt,
                             program);
    /* $USER, which a scheduler's task may lack, where the program needs it. */
    const container_runtime_info_t *info = container_runtime_info(c->runtime);
    struct passwd *pw;
    if (info && info->exec.needs_user && !getenv("USER") &&
        (!(pw = getpwuid(getuid())) || setenv("USER", pw->pw_name, 1) != 0))
        return ddp_error_set(err, "container: %s needs $USER, which is not set here", program);
    struct stat st;
    int want_dir = info && !info->image_suffixes;
    if (stat(c->image, &st) != 0 || access(c->image, R_OK) != 0)
        return ddp_error_set(err, "container image %s (%s): %s", c->image, rt, strerror(errno));
    if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
        return ddp_error_set(err, "container image %s (%s): not %s", c->image, rt,
                             want_dir ? "a folder" : "a file");
    return 0;
}

typedef struct {
    char **v;
    size_t n, cap;
} argv_t;

static void append(argv_t *a, char *word)
{
    if (a->n + 2 > a->cap) {
        a->cap = a->cap ? 2 * a->cap : 32;
        a->v = ddp_xrealloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = word;
    a->v[a->n] = NULL;
}

static void push(argv_t *a, const char *s)
{
    append(a, ddp_xstrdup(s));
}

__attribute__((format(printf, 2, 3))) static void pushf(argv_t *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *word = ddp_xcalloc((size_t)n + 1, 1);
    va_start(ap, fmt);
    vsnprintf(word, (size_t)n + 1, fmt, ap);
    va_end(ap);
    append(a, word);
}

static int host_layout(const char *var, size_t len)
{
    for (const char *const *p = host_layout_vars; *p; p++)
        if (strlen(*p) == len && strncmp(var, *p, len) == 0)
            return 1;
    for (const char *const *p = host_layout_prefixes; *p; p++)
        if (strncmp(var, *p, strlen(*p)) == 0)
            return 1;
    return 0;
}

/* The environment's options: CONFIG's file (container_prepare wrote it in dir), or FORCED's
 * names again (the runtime passes the environment but sets the host-layout ones from the
 * image); the GPU option on a node with NVIDIA GPUs. */
static void add_env(argv_t *a, const container_t *c, const container_exec_t *x, char *const *env,
                    const char *dir)
{
    if (x->env == CONTAINER_ENV_CONFIG && dir)
        pushf(a, "%s%s/%s", x->env_flag, dir, x->config_file);
    for (char *const *e = env; x->env == CONTAINER_ENV_FORCED && *e; e++)
        for (size_t i = 0; i < c->nenv_names; i++) {
            size_t len = strlen(c->env_names[i]);
            if (strncmp(*e, c->env_names[i], len) == 0 && (*e)[len] == '=' && host_layout(*e, len))
                pushf(a, "%s%s", x->env_flag, *e);
        }
    if (x->gpu_flag && access("/dev/nvidiactl", F_OK) == 0)
        push(a, x->gpu_flag);
}

int container_prepare(const container_t *c, const char *dir, ddp_error_t *err)
{
    const container_runtime_info_t *info = container_runtime_info(c->runtime);
    if (!info || info->exec.env != CONTAINER_ENV_CONFIG)
        return 0;
    /* enroot starts the image with the environment its config's environ() prints: the worker's
     * (enroot's own process has it), less the host's layout, in one awk rather than an --env and
     * an awk per variable (0.3 s for 60 variables). */
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, info->exec.config_file);
    FILE *f = fopen(path, "wx");
    if (!f)
        return ddp_error_set(err, "cannot write %s: %s", path, strerror(errno));
    fputs("# ddpjob-agent's: the worker's environment, less the host's layout (container.h)\n"
          "environ() {\n    awk 'BEGIN { for (k in ENVIRON) if ((k !~ /^(",
          f);
    for (const char *const *p = host_layout_vars; *p; p++)
        fprintf(f, "%s%s", p == host_layout_vars ? "" : "|", *p);
    fputs(")$/ && k !~ /^(", f);
    for (const char *const *p = host_layout_prefixes; *p; p++)
        fprintf(f, "%s%s", p == host_layout_prefixes ? "" : "|", *p);
    fputs(")/) || k ~ /^(", f);
    for (size_t i = 0; i < c->nenv_names; i++)
        fprintf(f, "%s%s", i ? "|" : "", c->env_names[i]);
    /* enroot's NVIDIA hook gives the container the GPUs this variable names. */
    fprintf(
        f, ")$/) print k \"=\" ENVIRON[k]%s }'\n}\n",
        access("/dev/nvidiactl", F_OK) == 0
            ? "; if (!(\"NVIDIA_VISIBLE_DEVICES\" in ENVIRON)) print \"NVIDIA_VISIBLE_DEVICES=all\""
            : "");
    if (fclose(f) != 0)
        return ddp_error_set(err, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

/* A runtime that binds only onto folders the image has (its image mounted read-only): the image
 * folder, the user's own, is given the ones missing. */
static int image_mount_point(const container_t *c, const char *dst, ddp_error_t *err)
{
    char point[8300];
    snprintf(point, sizeof point, "%s%s", c->image, dst);
    struct stat st;
    if (stat(point, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    if (ddp_make_dirs(point, 0755, err))
        return ddp_error_prefix(err,
                                "container: %s binds only onto folders the image has, and %s "
                                "has no %s",
                                container_program(c->runtime), c->image, dst);
    return 0;
}

static int under_tmp(const char *path)
{
    return strcmp(path, "/tmp") == 0 || strncmp(path, "/tmp/", 5) == 0;
}

/* A bind's pattern with {src} and {dst} filled in. */
static void push_bind(argv_t *a, const char *pattern, const char *src, const char *dst)
{
    size_t size = strlen(pattern) + 1;
    for (const char *p = pattern; (p = strchr(p, '{')); p++)
        size += strlen(src) + strlen(dst);
    char *word = ddp_xcalloc(size, 1), *w = word;
    for (const char *p = pattern; *p;) {
        const char *fill = !strncmp(p, "{src}", 5) ? src : !strncmp(p, "{dst}", 5) ? dst : NULL;
        if (fill) {
            w = stpcpy(w, fill);
            p += 5;
        } else {
            *w++ = *p++;
        }
    }
    append(a, word);
}

static int add_mount(argv_t *a, const container_t *c, const container_exec_t *x, const char *src,
                     const char *dst, int ro, ddp_error_t *err)
{
    /* enroot's mounts are fstab lines with ':' for blanks, apptainer's binds a list split at ','
     * and ':': a folder of ours (the working folder, say) that holds one cannot be said. */
    if (!x->binds_any_name && (strpbrk(src, ":, \t\n") || strpbrk(dst, ":, \t\n")))
        return ddp_error_set(
            err, "container: %s cannot bind %s: its name holds a ':', ',' or blank",
            container_runtime_name(c->runtime), strpbrk(src, ":, \t\n") ? src : dst);
    if (ro && !x->bind_ro)
        return ddp_error_set(err, "container: %s (%s)",
                             container_runtime_info(c->runtime)->no_read_only_why, src);
    if (x->shares_tmp && strcmp(src, dst) == 0 && under_tmp(src))
        return 0;
    if (x->binds_onto_image && image_mount_point(c, dst, err))
        return -1;
    push(a, x->bind_flag);
    push_bind(a, ro ? x->bind_ro : x->bind_rw, src, dst);
    return 0;
}

static int add_mounts(argv_t *a, const container_t *c, const container_exec_t *x, const char *cwd,
                      const char *dir, ddp_error_t *err)
{
    if (add_mount(a, c, x, cwd, cwd, 0, err) || (dir && add_mount(a, c, x, dir, dir, 0, err)))
        return -1;
    for (size_t i = 0; i < c->nmounts; i++)
        if (add_mount(a, c, x, c->mounts[i].src, c->mounts[i].dst, c->mounts[i].read_only, err))
            return -1;
    return 0;
}

void container_exec(const container_t *c, char *const *command, ddp_error_t *err)
{
    char cwd[4096] = "", dir[4200];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/ddpjob-exec.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
    if (container_check(c, err))
        return;
    if (!getcwd(cwd, sizeof cwd) || !mkdtemp(dir)) {
        ddp_error_set(err, "%s: %s", cwd[0] ? dir : "getcwd", strerror(errno));
        return;
    }
    char **argv = container_prepare(c, dir, err)
                      ? NULL
                      : container_command(c, command, environ, cwd, dir, err);
    if (!argv)
        return;
    execvp(argv[0], argv);
    ddp_error_set(err, "%s: %s", argv[0], strerror(errno));
    container_command_free(argv);
}

char **container_command(const container_t *c, char *const *command, char *const *env,
                         const char *cwd, const char *dir, ddp_error_t *err)
{
    const container_exec_t *x = &container_runtime_info(c->runtime)->exec;
    argv_t a = {0};
    push(&a, container_program(c->runtime));
    for (const char *const *w = x->start; *w; w++)
        push(&a, *w);
    add_env(&a, c, x, env, dir);
    if (add_mounts(&a, c, x, cwd, dir, err)) {
        container_command_free(a.v);
        return NULL;
    }
    if (x->workdir_flag) {
        push(&a, x->workdir_flag);
        push(&a, cwd);
    }
    push(&a, c->image);
    if (x->after_image)
        push(&a, x->after_image);
    if (!x->workdir_flag) {
        /* No option for the working folder (enroot starts in the image's home folder). */
        push(&a, "/bin/sh");
        push(&a, "-c");
        push(&a, "cd -- \"$1\" && shift && exec \"$@\"");
        push(&a, "sh");
        push(&a, cwd);
    }
    for (char *const *w = command; *w; w++)
        push(&a, *w);
    return a.v;
}

void container_command_free(char **argv)
{
    for (char **w = argv; w && *w; w++)
        free(*w);
    free(argv);
}

static const char *stage_dir(const char *stage)
{
    if (strcmp(stage, "jobfs") != 0)
        return stage;
    const char *dirs[] = {node_source_local_disk(), getenv("TMPDIR")};
    for (int i = 0; i < 2; i++)
        if (dirs[i] && *dirs[i])
            return dirs[i];
    return "/tmp";
}

/* Copies the open file in to the new file path, which nobody else can have made (O_EXCL in a
 * folder of ours). */
static int copy_file(int in, const char *path, ddp_error_t *err)
{
    int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0)
        return ddp_error_set(err, "%s: %s", path, strerror(errno));
    static char buf[1 << 20];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0) {
                ddp_error_set(err, "writing %s: %s", path, strerror(errno));
                close(out);
                return -1;
            }
            done += w;
        }
    if (n < 0 || close(out) != 0)
        return ddp_error_set(err, "copying to %s: %s", path, strerror(errno));
    return 0;
}

int container_stage(const container_t *c, char **folder, char **image, ddp_error_t *err)
{
    const char *dir = stage_dir(c->stage), *base = strrchr(c->image, '/');
    *folder = *image = NULL;
    int in = open(c->image, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (in < 0 || fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
        ddp_error_set(err, "container: staging %s: %s", c->image,
                      in < 0 ? strerror(errno) : "not a file (only image files are staged)");
        goto fail;
    }
    *folder = ddp_xcalloc(strlen(dir) + 32, 1);
    sprintf(*folder, "%s/ddpjob-image.XXXXXX", dir);
    if (!mkdtemp(*folder)) {
        ddp_error_set(err, "container: staging into %s: %s", dir, strerror(errno));
        free(*folder);
        *folder = NULL;
        goto fail;
    }
    *image = ddp_xcalloc(strlen(*folder) + strlen(base) + 1, 1);
    sprintf(*image, "%s%s", *folder, base);
    if (copy_file(in, *image, err)) {
        ddp_error_prefix(err, "container: staging %s", c->image);
        goto fail;
    }
    close(in);
    return 0;
fail:
    if (in >= 0)
        close(in);
    container_unstage(*folder, *image);
    *folder = *image = NULL;
    return -1;
}

void container_unstage(char *folder, char *image)
{
    if (image)
        unlink(image);
    if (folder)
        rmdir(folder);
    free(image);
    free(folder);
}

int container_check_gpus(const container_t *c, ddp_error_t *err)
{
    char cwd[4096], *command[] = {"nvidia-smi", "-L", NULL};
    if (!getcwd(cwd, sizeof cwd))
        return ddp_error_set(err, "getcwd: %s", strerror(errno));
    char **argv = container_command(c, command, environ, cwd, NULL, err);
    if (!argv)
        return -1;
    ddp_spawn_result_t r = {0};
    int ran = ddp_spawn_capture(argv, NULL, GPU_CHECK_MS, &r, err) == 0;
    container_command_free(argv);
    int seen = ran && r.status == 0 && r.out && strncmp(r.out, "GPU ", 4) == 0;
    if (!seen && ran) {
        const char *said = r.err && *r.err ? r.err : r.out ? r.out : "";
        ddp_error_set(err,
                      "container: a GPU job, but the image %s (%s) sees no GPU: nvidia-smi -L "
                      "inside it exited %d: %.*s",
                      c->image, container_runtime_name(c->runtime), r.status,
                      (int)strcspn(said, "\n"), said);
    } else if (!seen) {
        ddp_error_prefix(err, "container: nvidia-smi -L inside %s", c->image);
    }
    ddp_spawn_result_free(&r);
    return seen ? 0 : -1;
}

void container_free(container_t *c)
{
    free(c->image);
    for (size_t i = 0; i < c->nmounts; i++)
        free((char *)c->mounts[i].src);
    free(c->mounts);
    for (size_t i = 0; i < c->nenv_names; i++)
        free(c->env_names[i]);
    free(c->env_names);
    free(c->stage);
    *c = (container_t){0};
}
