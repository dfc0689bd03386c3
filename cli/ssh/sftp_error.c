#include "cli/ssh/sftp_error.h"

#include <errno.h>

#include <string.h>
#include <sys/stat.h>

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

int sftp_login_uid(const char *where, LIBSSH2_SESSION *session, LIBSSH2_SFTP *sftp,
                   unsigned long *uid, ddp_error_t *err)
{
    LIBSSH2_SFTP_ATTRIBUTES home;
    int rc = libssh2_sftp_stat(sftp, ".", &home);
    if (rc)
        return sftp_refused(where, session, sftp, rc, "cannot look at", "the home folder", err);
    if (!(home.flags & LIBSSH2_SFTP_ATTR_UIDGID))
        return ddp_error_set(err, "%s: the server does not say who owns the home folder", where);
    *uid = home.uid;
    return 0;
}

int sftp_trusted_dir(const char *where, const char *path, const LIBSSH2_SFTP_ATTRIBUTES *a,
                     unsigned long uid, int team, const char *hint, ddp_error_t *err)
{
    unsigned long mode = a->permissions & 07777;
    int team_folder = team && !(mode & 002) && (mode & S_ISGID) && (mode & S_ISVTX);
    const char *why = NULL;
    if (!(a->flags & LIBSSH2_SFTP_ATTR_UIDGID))
        why = "its owner is not said by the server";
    else if (a->uid != uid)
        why = "owned by another user";
    else if ((mode & 022) && !team_folder)
        why = team ? "others can write it, and it is not a team's folder (setgid and sticky, no "
                     "write by others)"
                   : "others can write it";
    if (!why)
        return 0;
    return ddp_error_code(err, EPERM,
                          "%s: %s (uid %lu, mode %04lo): %s: not trusted; make it yours and chmod "
                          "go-w it there, or choose another remote_dir (ddpjob cluster add NAME "
                          "--remote-dir DIR)%s",
                          where, path, a->uid, mode, why, hint);
}
