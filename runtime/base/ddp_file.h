/* ddp_file: whole files read into memory (specs, templates, node files) or written atomically
 * (job scripts, checkpoints, data sets): never half a file under the final name, even after a
 * crash; lines appended whole; folders made with their parents; private folders in places other
 * users can write (made fresh, or reused only when they are the user's own); random bytes from the
 * kernel. */
#ifndef DDP_FILE_H
#define DDP_FILE_H

#include <stddef.h>
#include <sys/types.h>

#include "runtime/base/ddp_error.h"

/* Reads all of `path` into a malloc'd buffer with a NUL after the last byte; *len (if not NULL)
 * gets the byte count, which may include NUL bytes of the file itself. On failure returns NULL
 * and err says "PATH: reason". */
char *ddp_read_file(const char *path, size_t *len, ddp_error_t *err);
/* The same for a file another process wrote (records, progress, metrics): one over `max` bytes
 * is refused ("PATH: larger than MAX bytes"), so a hostile or runaway file cannot fill memory. */
char *ddp_read_file_max(const char *path, size_t max, size_t *len, ddp_error_t *err);

/* The same for a file only this user may change (a configuration) or also read (a secret): opened
 * without following a link, then checked on that descriptor: a regular file this user owns with
 * none of `closed`'s mode bits (S_IWGRP | S_IWOTH, or S_IRWXG | S_IRWXO), at most `max` bytes.
 * Else NULL with err "PATH: why" (code EPERM for a file not trusted, ENOENT for none there). */
char *ddp_read_own_file(const char *path, mode_t closed, size_t max, size_t *len, ddp_error_t *err);

/* Writes `len` bytes to a new PATH.tmp.RANDOM (created with O_EXCL and O_NOFOLLOW, so nothing
 * planted under that name is followed or reused; `mode` less the umask), fsyncs it, renames it
 * over `path` and fsyncs the folder. On failure the temporary file is removed and err says
 * "PATH: reason". */
int ddp_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
                          ddp_error_t *err);

/* Appends `line` to `path` (made 0600 where missing; never through a link) in one write, so the
 * lines of several writers never interleave. */
int ddp_append_line(const char *path, const char *line, ddp_error_t *err);
/* Writes all len bytes to fd, through short writes and EINTR; -1 (errno set) when it cannot. */
int ddp_write_all(int fd, const void *buf, size_t len);

/* mkdir -p: `path` and the folders above it that are missing, each with `mode` (less the umask).
 * On failure err says which folder and why. */
int ddp_make_dirs(const char *path, mode_t mode, ddp_error_t *err);

/* A folder of the user's own where others may write the place around it (a shared workdir,
 * /tmp, a team's log folder): made with mode 0700, or, when it is there already, reused only if
 * it is a folder (not a symbolic link) owned by this user that neither group nor others can
 * write. Otherwise err names the path and why (its owner, its mode), code EPERM. The folder
 * above must exist. */
int ddp_private_dir(const char *path, ddp_error_t *err);
/* Only the check of ddp_private_dir, for a folder that must already be there. */
int ddp_check_private_dir(const char *path, ddp_error_t *err);
/* The same check made on a descriptor that stays open: `path` (links followed: the folder reached
 * is what is checked) opened as a folder this user owns that neither group nor others can write,
 * and *held set to a path through that descriptor ("/proc/self/fd/N"). In a team's folder another
 * member may rename a folder above and plant their own under the old name: what is reached
 * through `held` is the folder checked, whatever is renamed after. Returns the descriptor (close
 * it when done), or -1 with err as ddp_check_private_dir's. */
int ddp_hold_own_dir(const char *path, char *held, size_t size, ddp_error_t *err);
/* The folder `name` in the folder dir_fd holds (AT_FDCWD: `name` is a path), made with mode 0700
 * where missing, opened without following a link and checked on its descriptor: this user's,
 * closed to group and others. Returns the descriptor, or -1 with err naming it as `shown`. */
int ddp_hold_private_dir_at(int dir_fd, const char *name, const char *shown, ddp_error_t *err);

/* Whether nobody but this user (and root) can rename or replace anything on the way to `path`:
 * the folder it names (links resolved) and every folder above it are this user's or root's, and
 * writable by group or others only where sticky (/tmp). A path that passes is safe to hand to a
 * program that opens it by name as this user (a scheduler writing a job's output). 0, or -1 with
 * err naming the first folder that fails, its owner and mode (code EPERM). */
int ddp_check_path_closed(const char *path, ddp_error_t *err);

/* Fills buf with random bytes from the kernel (tokens, nonces); -1 when it cannot. */
int ddp_random(void *buf, size_t len);

#endif
