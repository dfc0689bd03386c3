/* sftp_error: what a host said when an SFTP step failed, in words a user acts on (a full disk or
 * quota, a permission refused, a file missing), for upload and download alike. */
#ifndef DDPJOB_SFTP_ERROR_H
#define DDPJOB_SFTP_ERROR_H

#include <libssh2.h>
#include <libssh2_sftp.h>

#include "runtime/base/ddp_error.h"

/* Sets err to "WHERE: WHAT PATH: why" for the step that returned rc (0: the last error of the
 * session); returns -1. */
int sftp_refused(const char *where, LIBSSH2_SESSION *session, LIBSSH2_SFTP *sftp, int rc,
                 const char *what, const char *path, ddp_error_t *err);

/* SFTP's path for a remote folder as a profile writes it: "~/x" and "x" are from the login's
 * home, "~" is the home itself. */
const char *sftp_path(const char *remote_dir);

#endif
