#include "cli/spec/datafile.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/ddp_portable.h"

char *datafile_self_dir(ddp_error_t *err)
{
    char *path = ddp_self_exe();
    if (!path) {
        ddp_error_set(err, "cannot find our own executable: %s", strerror(errno));
        return NULL;
    }
    char *dir = strdup(dirname(path));
    free(path);
    if (!dir)
        ddp_error_set(err, "out of memory");
    return dir;
}

int datafile_prefix(char *out, size_t size, ddp_error_t *err)
{
    char *self = datafile_self_dir(err);
    if (!self)
        return -1;
    snprintf(out, size, "%s/..", self);
    free(self);
    return 0;
}

int datafile_trees(const char *kind, const char *build_subdir, char *trees[2], ddp_error_t *err)
{
    trees[0] = trees[1] = NULL;
    char *self = datafile_self_dir(err);
    if (!self)
        return -1;
    if (asprintf(&trees[0], "%s/../share/ddpjob/%s", self, kind) < 0)
        trees[0] = NULL;
    if (asprintf(&trees[1], "%s/../%s", self, build_subdir) < 0)
        trees[1] = NULL;
    free(self);
    return 0;
}

/* path = dir/file when readable; 0 found, 1 not there, -1 out of memory. */
static int try_path(const char *dir, const char *file, char **path)
{
    if (asprintf(path, "%s/%s", dir, file) < 0) {
        *path = NULL;
        return -1;
    }
    if (access(*path, R_OK) == 0)
        return 0;
    free(*path);
    *path = NULL;
    return 1;
}

char *datafile_find(const char *what, const char *const *dirs, size_t ndirs, int installed,
                    const char *kind, const char *build_subdir, const char *file, ddp_error_t *err)
{
    char *path = NULL, *looked = NULL;
    size_t looked_len = 0;
    FILE *list = open_memstream(&looked, &looked_len);
    if (!list) {
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    int rc = 1;
    for (size_t i = 0; i < ndirs && rc == 1; i++) {
        if (!dirs[i] || !*dirs[i])
            continue;
        fprintf(list, "%s%s", ftell(list) ? ", " : "", dirs[i]);
        rc = try_path(dirs[i], file, &path);
    }
    if (rc == 1 && installed) {
        char *trees[2];
        if (datafile_trees(kind, build_subdir, trees, err)) {
            fclose(list);
            free(looked);
            return NULL;
        }
        fprintf(list, "%sthe install and build trees", ftell(list) ? ", " : "");
        for (int i = 0; i < 2 && rc == 1; i++)
            rc = trees[i] ? try_path(trees[i], file, &path) : -1;
        free(trees[0]);
        free(trees[1]);
    }
    fclose(list);
    if (rc < 0)
        ddp_error_set(err, "out of memory");
    else if (rc > 0)
        ddp_error_set(err, "%s %s not found (looked in %s)", what, file,
                      looked ? looked : "nothing");
    free(looked);
    return path;
}
