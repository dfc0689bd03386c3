/* upload: a job's local folder sent to a folder on a cluster over SFTP (the same SSH login as
 * the commands), sending only what changed: a file whose size, modification time and mode there
 * are what this upload would give it is left alone.
 *
 * Here: the tree is walked once, into a plan, before anything is sent (so a tree that grows while
 * it is sent, the remote folder mounted inside it, is sent as it was). What ignore_rules leaves
 * behind is not taken; neither, at any depth and whatever .ddpjobignore says, are the folders and
 * files of credentials (upload_never); links and other files that are neither regular files nor
 * folders are not followed or sent, and counted. A home folder, or a folder above one, is refused
 * whole.
 *
 * There: the folder uploaded into (the place's `trusted` folder and each folder below it, made or
 * found) must be the login user's own that no one else can write, or nothing is sent: in a
 * project's shared folder another member could otherwise read what is sent or swap what the job
 * runs. A team's folder (place.group) may be group-writable where it is setgid and sticky, as a
 * team's shared folder is. Each file is written under a temporary name with its mode (the local
 * one, less what the place keeps private) and time, then put in place, so a file cut short (a
 * full disk, a lost connection) is never taken for whole. Nothing is written outside the remote
 * folder. */
#ifndef DDPJOB_UPLOAD_H
#define DDPJOB_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/base/ddp_error.h"
#include "cli/ssh/ssh_session.h"

/* What a transfer (this upload, or download.h's) did. */
typedef struct {
    size_t sent, unchanged, ignored, not_regular, missing, credentials;
    size_t untrusted; /* folders there others can write: not fetched from */
    uint64_t sent_bytes;
} transfer_summary_t;

/* One file or folder of a plan, from the folder planned ("a/b.py"); its mode and times are
 * read again when it is sent. */
typedef struct {
    char *rel;
    bool is_dir;
    uint64_t size;
} upload_entry_t;

/* A local tree as it will be sent: its entries, each folder before what it holds; the bytes of
 * its files; what was left behind (ignored, not_regular, credentials). */
typedef struct {
    upload_entry_t *entries;
    size_t count;
    uint64_t bytes;
    transfer_summary_t left;
} upload_plan_t;

/* Where an upload goes there and how it is kept. */
typedef struct {
    const char *trusted; /* this folder and every one below it: the login user's own, closed */
    mode_t keep;         /* the bits of a local mode given to a file there (0700: private) */
    bool group;          /* a team's: `trusted` may be group-writable when setgid and sticky;
                          * folders made 2750 */
} upload_place_t;

/* Whether `rel` (a path from the uploaded folder) names credentials that never leave the laptop:
 * .ssh, .gnupg, .aws, .netrc, ddpjob's own configuration and state, and the like. */
bool upload_never(const char *rel);

/* Walks local_dir into *p (its .ddpjobignore read). -1 with err: a home folder or one above it,
 * an unreadable folder, a tree deeper than UPLOAD_DEPTH_MAX. */
int upload_plan(const char *local_dir, upload_plan_t *p, ddp_error_t *err);
void upload_plan_free(upload_plan_t *p);

/* Sends plan p of local_dir to remote_dir (absolute, or from the login's home: "~/x" or "x"),
 * making it and its folders as needed. On failure err says what failed and *sum what had been
 * sent by then. */
int upload_tree(ssh_session_t *s, const char *local_dir, const upload_plan_t *p,
                const char *remote_dir, const upload_place_t *place, int64_t deadline,
                transfer_summary_t *sum, ddp_error_t *err);

/* The same for the files `paths` name (relative to local_root, no ".."), with the folders they
 * lie in: a chosen few of a tree that holds more (an installed ddpjob among other software). */
int upload_files(ssh_session_t *s, const char *local_root, char *const *paths, size_t n,
                 const char *remote_dir, const upload_place_t *place, int64_t deadline,
                 transfer_summary_t *sum, ddp_error_t *err);

/* "uploaded 3 files, 41 KiB; 212 unchanged" (`verb` first; what was left behind, and what was
 * not there, where anything was). */
void transfer_summary_text(const transfer_summary_t *sum, const char *verb, char *out, size_t size);

#endif
