#include "runtime/job/container_spec.h"

#include <stdio.h>
#include <string.h>

const char *const container_runtime_words[] = {"pyxis",       "enroot",       "apptainer",
                                               "singularity", "charliecloud", NULL};

container_runtime_t container_runtime_parse(const char *word)
{
    for (int i = 0; container_runtime_words[i]; i++)
        if (strcmp(word, container_runtime_words[i]) == 0)
            return (container_runtime_t)(CONTAINER_PYXIS + i);
    return CONTAINER_NONE;
}

const char *container_runtime_name(container_runtime_t runtime)
{
    return runtime >= CONTAINER_PYXIS && runtime <= CONTAINER_CHARLIECLOUD
               ? container_runtime_words[runtime - CONTAINER_PYXIS]
               : "none";
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

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n > k && strcmp(s + n - k, suffix) == 0;
}

bool container_image_fits(container_runtime_t runtime, const char *path, const char **wanted)
{
    switch (runtime) {
    case CONTAINER_PYXIS:
    case CONTAINER_ENROOT:
        *wanted = "a squashfs file (.sqsh or .squashfs)";
        return ends_with(path, ".sqsh") || ends_with(path, ".squashfs");
    case CONTAINER_APPTAINER:
    case CONTAINER_SINGULARITY:
        /* apptainer exec's own list of image files: SIF, SquashFS, ext3. */
        *wanted = "a SIF file (.sif), or a SquashFS (.sqsh) or ext3 (.img) image";
        return ends_with(path, ".sif") || ends_with(path, ".sqsh") ||
               ends_with(path, ".squashfs") || ends_with(path, ".img");
    case CONTAINER_CHARLIECLOUD:
        *wanted = "an image folder (ch-convert's output; not a .sif or .sqsh file)";
        return !ends_with(path, ".sif") && !ends_with(path, ".sqsh") &&
               !ends_with(path, ".squashfs");
    default:
        *wanted = "nothing";
        return false;
    }
}
