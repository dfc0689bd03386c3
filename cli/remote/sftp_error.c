#include "cli/remote/sftp_error.h"

#include <string.h>

int sftp_refused(const char *where, LIBSSH2_SESSION *session, LIBSSH2_SFTP *sftp, int rc,
                 const char *what, const char *path, ddp_error_t *err)
{
    int code = rc ? rc : libssh2_session_last_errno(session);
    if (code == LIBSSH2_ERROR_SFTP_PROTOCOL && sftp) {
        unsigned long status = libssh2_sftp_last_error(sftp);
        const char *why =
            status == LIBSSH2_FX_PERMISSION_DENIED ? "permission denied"
            : status == LIBSSH2_FX_NO_SPACE_ON_FILESYSTEM || status == LIBSSH2_FX_QUOTA_EXCEEDED
                ? "no space left (the disk or the quota is full)"
            : status == LIBSSH2_FX_NO_SUCH_FILE        ? "no such file or folder"
            : status == LIBSSH2_FX_FILE_ALREADY_EXISTS ? "something is in the way"
            : status == LIBSSH2_FX_FAILURE
                ? "the host refused (OpenSSH's word for a full disk or quota, among "
                  "others)"
                : "failed";
        return ddp_error_set(err, "%s: %s %s: %s (SFTP status %lu)", where, what, path, why,
                             status);
    }
    char *msg = NULL;
    libssh2_session_last_error(session, &msg, NULL, 0);
    return ddp_error_set(err, "%s: %s %s: %s", where, what, path,
                         msg && *msg ? msg : "connection lost");
}

const char *sftp_path(const char *remote_dir)
{
    if (!strcmp(remote_dir, "~"))
        return ".";
    return strncmp(remote_dir, "~/", 2) ? remote_dir : remote_dir + 2;
}
