#include "datafile.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *datafile_self_dir(ddp_error_t *err)
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n < 0) {
        ddp_error_set(err, "cannot find our own executable: %s", strerror(errno));
        return NULL;
    }
    path[n] = '\0';
    char *dir = strdup(dirname(path));
    if (!dir)
        ddp_error_set(err, "out of memory");
    return dir;
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
        char *self = datafile_self_dir(err), *dir = NULL;
        if (!self) {
            fclose(list);
            free(looked);
            return NULL;
        }
        if (asprintf(&dir, "%s/../share/ddpjob/%s", self, kind) >= 0) {
            fprintf(list, "%sthe install and build trees", ftell(list) ? ", " : "");
            rc = try_path(dir, file, &path);
            free(dir);
        }
        if (rc == 1 && asprintf(&dir, "%s/../%s", self, build_subdir) >= 0) {
            rc = try_path(dir, file, &path);
            free(dir);
        }
        free(self);
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
