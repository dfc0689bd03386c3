/* sftp_error: what a host said when an SFTP step failed, in words a user acts on (a full disk or
 * quota, a permission refused, a file missing), for upload and download alike; and whether a
 * folder there may be written into or read from as the user's own. */
#ifndef DDPJOB_SFTP_ERROR_H
#define DDPJOB_SFTP_ERROR_H

#include <libssh2.h>
#include <libssh2_sftp.h>

#include "runtime/base/ddp_error.h"

/* Sets err to "WHERE: WHAT PATH: why" for the step that returned rc (0: the last error of the
 * session); returns -1. */
int sftp_refused(const char *where, LIBSSH2_SESSION *session, LIBSSH2_SFTP *sftp, int rc,
                 const char *what, const char *path, ddp_error_t *err);

/* The login user's uid there: its home folder's owner (SFTP says no name). -1 with err. */
int sftp_login_uid(const char *where, LIBSSH2_SESSION *session, LIBSSH2_SFTP *sftp,
                   unsigned long *uid, ddp_error_t *err);

/* Whether the folder `path` there, as `a` describes it, is the login's (uid) own that no one
 * else can write, or (team) a team's: group-writable where setgid and sticky. -1 with err
 * naming it, its owner and mode, and the mend, `hint` after it (EPERM). */
int sftp_trusted_dir(const char *where, const char *path, const LIBSSH2_SFTP_ATTRIBUTES *a,
                     unsigned long uid, int team, const char *hint, ddp_error_t *err);

/* SFTP's path for a remote folder as a profile writes it: "~/x" and "x" are from the login's
 * home, "~" is the home itself. */
const char *sftp_path(const char *remote_dir);

#endif
