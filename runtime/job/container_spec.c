#include "runtime/job/container_spec.h"

#include <stdio.h>
#include <string.h>

const char *const container_runtime_words[] = {"pyxis",       "enroot",       "apptainer",
                                               "singularity", "charliecloud", NULL};
const int container_runtime_values[] = {CONTAINER_PYXIS, CONTAINER_ENROOT, CONTAINER_APPTAINER,
                                        CONTAINER_SINGULARITY, CONTAINER_CHARLIECLOUD};

#define SQUASHFS ".sqsh .squashfs"

/* enroot's mounts are fstab lines; it starts in the image's home folder, with no option for
 * another one; it passes only what its config's environ() prints. */
#define ENROOT_EXEC                                                                                \
    {                                                                                              \
        .start = {"start"}, .env = CONTAINER_ENV_CONFIG,                                           \
        .env_flag = "--conf=", .config_file = "enroot.conf", .bind_flag = "--mount",               \
        .bind_rw = "{src}:{dst}:none:x-create=auto,rbind,rw,nosuid",                               \
        .bind_ro = "{src}:{dst}:none:x-create=auto,rbind,ro,nosuid"                                \
    }
/* apptainer passes the environment itself but sets PATH and LD_LIBRARY_PATH from the image; its
 * binds are a list split at ',' and ':'. */
#define APPTAINER_EXEC                                                                             \
    {                                                                                              \
        .start = {"exec"}, .env = CONTAINER_ENV_FORCED, .env_flag = "--env=", .gpu_flag = "--nv",  \
        .bind_flag = "--bind", .bind_rw = "{src}:{dst}", .bind_ro = "{src}:{dst}:ro",              \
        .workdir_flag = "--pwd"                                                                    \
    }
/* ch-run's image is mounted read-only, so it binds onto folders the image has; it refuses to
 * start without $USER, which a scheduler's task may lack. */
#define CHARLIECLOUD_EXEC                                                                          \
    {                                                                                              \
        .env = CONTAINER_ENV_WHOLE, .bind_flag = "-b", .bind_rw = "{src}:{dst}",                   \
        .binds_any_name = true, .binds_onto_image = true, .shares_tmp = true,                      \
        .workdir_flag = "--cd", .after_image = "--", .needs_user = true                            \
    }

static const container_runtime_info_t runtimes[CONTAINER_RUNTIMES_END] = {
    [CONTAINER_PYXIS] =
        {"enroot", "version", SQUASHFS, "a squashfs file (.sqsh or .squashfs)",
         "pyxis is srun's (--container-image); it starts the agent inside the image",
         "pyxis unpacks the image into each node's enroot data folder itself: "
         "nothing to stage",
         NULL},
    [CONTAINER_ENROOT] = {"enroot", "version", SQUASHFS, "a squashfs file (.sqsh or .squashfs)",
                          NULL, NULL, NULL, ENROOT_EXEC},
    /* apptainer exec's own list of image files: SIF, SquashFS, ext3. */
    [CONTAINER_APPTAINER] = {"apptainer", "--version", ".sif " SQUASHFS " .img",
                             "a SIF file (.sif), or a SquashFS (.sqsh) or ext3 (.img) image", NULL,
                             NULL, NULL, APPTAINER_EXEC},
    [CONTAINER_SINGULARITY] = {"singularity", "--version", ".sif " SQUASHFS " .img",
                               "a SIF file (.sif), or a SquashFS (.sqsh) or ext3 (.img) image",
                               NULL, NULL, NULL, APPTAINER_EXEC},
    [CONTAINER_CHARLIECLOUD] = {"ch-run", "--version", NULL,
                                "an image folder (ch-convert's output; not a .sif or .sqsh file)",
                                NULL,
                                "charliecloud's image is a folder: only image files are staged",
                                "charliecloud's ch-run binds read-write only", CHARLIECLOUD_EXEC},
};

const container_runtime_info_t *container_runtime_info(container_runtime_t runtime)
{
    return runtime > CONTAINER_NONE && runtime < CONTAINER_RUNTIMES_END ? &runtimes[runtime] : NULL;
}

container_runtime_t container_runtime_parse(const char *word)
{
    /* A spec rendered before its runtime was settled names none. */
    if (!word)
        return CONTAINER_NONE;
    for (int i = CONTAINER_NONE + 1; i < CONTAINER_RUNTIMES_END; i++)
        if (strcmp(word, container_runtime_words[i - 1]) == 0)
            return (container_runtime_t)i;
    return CONTAINER_NONE;
}

const char *container_runtime_name(container_runtime_t runtime)
{
    return container_runtime_info(runtime) ? container_runtime_words[runtime - 1] : "none";
}

const char *container_runtime_choices(int agent_runs)
{
    static char lists[2][256];
    char *choices = lists[!!agent_runs];
    int taken[CONTAINER_RUNTIMES_END], n = 0;
    for (int i = CONTAINER_NONE + 1; i < CONTAINER_RUNTIMES_END; i++)
        if (!agent_runs || !runtimes[i].no_agent_why)
            taken[n++] = i;
    choices[0] = '\0';
    for (int k = 0; k < n; k++) {
        size_t len = strlen(choices);
        snprintf(choices + len, sizeof lists[0] - len, "%s%s",
                 k == 0       ? ""
                 : k + 1 == n ? " or "
                              : ", ",
                 container_runtime_words[taken[k] - 1]);
    }
    return choices;
}

static bool plain_path(const char *p)
{
    /* ".." could climb out of a Charliecloud image, where mount points are made. */
    if (p[0] != '/' || strstr(p, "/../") || (strlen(p) >= 3 && !strcmp(p + strlen(p) - 3, "/..")))
        return false;
    for (; *p; p++)
        if (*p == ',' || (unsigned char)*p <= ' ' || *p == 0x7f)
            return false;
    return true;
}

int container_mount_parse(char *text, container_mount_t *m, char *why, size_t why_size)
{
    char *dst = strchr(text, ':'), *flags = NULL;
    if (dst) {
        *dst++ = '\0';
        if ((flags = strchr(dst, ':')))
            *flags++ = '\0';
    }
    *m = (container_mount_t){text, dst && *dst ? dst : text, flags != NULL};
    if (!plain_path(m->src) || !plain_path(m->dst)) {
        snprintf(why, why_size,
                 "expected SRC[:DST[:ro]] with absolute paths (no commas or blanks)");
        return -1;
    }
    if (flags && strcmp(flags, "ro") != 0) {
        snprintf(why, why_size, "the only option after DST is ro, got \"%s\"", flags);
        return -1;
    }
    return 0;
}

/* Whether path's name ends in one of the blank-separated suffixes. */
static bool ends_with_one(const char *path, const char *suffixes)
{
    size_t n = strlen(path);
    for (const char *p = suffixes; *p;) {
        size_t k = strcspn(p, " ");
        if (n > k && strncmp(path + n - k, p, k) == 0)
            return true;
        p += k + (p[k] == ' ');
    }
    return false;
}

bool container_image_fits(container_runtime_t runtime, const char *path, const char **wanted)
{
    const container_runtime_info_t *info = container_runtime_info(runtime);
    *wanted = info ? info->image_kind : "nothing";
    if (!info)
        return false;
    if (info->image_suffixes)
        return ends_with_one(path, info->image_suffixes);
    for (int i = CONTAINER_NONE + 1; i < CONTAINER_RUNTIMES_END; i++)
        if (runtimes[i].image_suffixes && ends_with_one(path, runtimes[i].image_suffixes))
            return false;
    return true;
}
