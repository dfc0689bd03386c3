/* ddp_file: whole small files (specs, templates, node files) read into memory. */
#ifndef DDP_FILE_H
#define DDP_FILE_H

#include <stddef.h>

#include "ddp_error.h"

/* Reads all of `path` into a malloc'd buffer with a NUL after the last byte; *len (if not NULL)
 * gets the byte count, which may include NUL bytes of the file itself. On failure returns NULL
 * and err says "PATH: reason". */
char *ddp_read_file(const char *path, size_t *len, ddp_error_t *err);

#endif
