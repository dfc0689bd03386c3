/* download: files of a job's folder on a cluster brought back over SFTP (`ddpjob fetch`),
 * getting only what changed: a file whose size and modification time here are its own there is
 * left alone. Links and other files there that are neither regular files nor folders are not
 * followed or fetched, and counted. Each file is written here under a fresh temporary name
 * (never through a link), given its mode there (less group and other write) and its time, then
 * renamed into place; a folder on the way that is a link here is not written through. Nothing
 * is written outside the local folder. */
#ifndef DDPJOB_DOWNLOAD_H
#define DDPJOB_DOWNLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "cli/ssh/ssh_session.h"
#include "cli/laptop/upload.h"

/* Fetches each of `paths` (a file or a folder, relative to remote_dir, no "..") into the same
 * place under local_dir (made, private, where missing). A path not there is counted in
 * sum->missing, not an error. On failure err says what failed and *sum what had come by then. */
int download_paths(ssh_session_t *s, const char *remote_dir, char *const *paths, size_t n,
                   const char *local_dir, int64_t deadline, transfer_summary_t *sum,
                   ddp_error_t *err);

#endif
