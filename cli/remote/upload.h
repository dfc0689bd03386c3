/* upload: a job's local folder sent to a folder on a cluster over SFTP (the same SSH login as
 * the commands), sending only what changed: a file whose size, modification time and mode there
 * are its own here is left alone. What ignore_rules leaves behind is not sent; links and other
 * files that are neither regular files nor folders are not followed or sent, and counted. Each
 * file is written under a temporary name, given the local mode and modification time, then put
 * in place, so a file cut short (a full disk, a lost connection) is never taken for whole.
 * Nothing is written outside the remote folder. */
#ifndef DDPJOB_UPLOAD_H
#define DDPJOB_UPLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "cli/remote/ssh_session.h"

/* What a transfer (this upload, or download.h's) did. */
typedef struct {
    size_t sent, unchanged, ignored, not_regular, missing;
    uint64_t sent_bytes;
} transfer_summary_t;

/* Sends local_dir's tree to remote_dir (absolute, or from the login's home: "~/x" or "x"),
 * making it and its folders as needed. On failure err says what failed and *sum what had been
 * sent by then. */
int upload_tree(ssh_session_t *s, const char *local_dir, const char *remote_dir, int64_t deadline,
                transfer_summary_t *sum, ddp_error_t *err);

/* The same for the files `paths` name (relative to local_root, no ".."), with the folders they
 * lie in: a chosen few of a tree that holds more (an installed ddpjob among other software). */
int upload_files(ssh_session_t *s, const char *local_root, char *const *paths, size_t n,
                 const char *remote_dir, int64_t deadline, transfer_summary_t *sum,
                 ddp_error_t *err);

/* "uploaded 3 files, 41 KiB; 212 unchanged" (`verb` first; what was left behind, and what was
 * not there, where anything was). */
void transfer_summary_text(const transfer_summary_t *sum, const char *verb, char *out, size_t size);

#endif
