/* ddp_file: whole files read into memory (specs, templates, node files) or written atomically
 * (job scripts, checkpoints, data sets): never half a file under the final name, even after a
 * crash; folders made with their parents; random bytes from the kernel. */
#ifndef DDP_FILE_H
#define DDP_FILE_H

#include <stddef.h>
#include <sys/types.h>

#include "ddp_error.h"

/* Reads all of `path` into a malloc'd buffer with a NUL after the last byte; *len (if not NULL)
 * gets the byte count, which may include NUL bytes of the file itself. On failure returns NULL
 * and err says "PATH: reason". */
char *ddp_read_file(const char *path, size_t *len, ddp_error_t *err);

/* Writes `len` bytes to PATH.tmp.PID (created with `mode`, less the umask), fsyncs it, renames
 * it over `path` and fsyncs the folder. On failure the temporary file is removed and err says
 * "PATH: reason". */
int ddp_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
                          ddp_error_t *err);

/* mkdir -p: `path` and the folders above it that are missing, each with `mode` (less the umask).
 * On failure err says which folder and why. */
int ddp_make_dirs(const char *path, mode_t mode, ddp_error_t *err);

/* Fills buf with random bytes from the kernel (tokens, nonces); -1 when it cannot. */
int ddp_random(void *buf, size_t len);

#endif
