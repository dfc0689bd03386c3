/* datafile: where ddpjob's data files (job-script templates, site profiles) are found: in
 * directories the user names first, then installed beside this program (PREFIX/share/ddpjob/KIND
 * for PREFIX/bin/ddpjob), then in the build tree (build/cli/ddpjob finds build/BUILD_SUBDIR). */
#ifndef DDPJOB_DATAFILE_H
#define DDPJOB_DATAFILE_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"

/* The directory holding this program; NULL with err set. */
char *datafile_self_dir(ddp_error_t *err);
/* The tree this program is installed in (PREFIX for PREFIX/bin/ddpjob; the build folder for
 * build/cli/ddpjob) into out; -1 with err set. */
int datafile_prefix(char *out, size_t size, ddp_error_t *err);

/* Where installed data of `kind` lies beside this program, and the build tree's folder:
 * trees[0] and trees[1], malloc'd (NULL where out of memory); -1 with err set when this
 * program cannot find itself. */
int datafile_trees(const char *kind, const char *build_subdir, char *trees[2], ddp_error_t *err);

/* The first readable `file` in `dirs` (NULL or empty entries are skipped), then, when
 * `installed` is set, in the install and build trees. Returns a malloc'd path, or NULL with err
 * naming `what` and where it was looked for. */
char *datafile_find(const char *what, const char *const *dirs, size_t ndirs, int installed,
                    const char *kind, const char *build_subdir, const char *file, ddp_error_t *err);

#endif
