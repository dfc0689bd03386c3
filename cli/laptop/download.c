#include "cli/laptop/download.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <libssh2_sftp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/ddp_file.h"
#include "cli/ssh/sftp_error.h"

enum { COPY_CHUNK = 1 << 16 };

typedef struct {
    ssh_session_t *s;
    LIBSSH2_SESSION *session;
    LIBSSH2_SFTP *sftp;
    unsigned long uid; /* the login's */
    transfer_summary_t *sum;
    ddp_error_t *err;
} downloader_t;

static int refused(downloader_t *d, int rc, const char *what, const char *path)
{
    return sftp_refused(ssh_session_where(d->s), d->session, d->sftp, rc, what, path, d->err);
}

/* The folder `name` under dir_fd, made private where missing; never a link. */
static int open_dir_at(downloader_t *d, int dir_fd, const char *name, const char *shown)
{
    if (mkdirat(dir_fd, name, 0700) && errno != EEXIST)
        return ddp_error_set(d->err, "%s: %s", shown, strerror(errno)), -1;
    int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        ddp_error_set(d->err, "%s: %s here: not written through", shown,
                      errno == ELOOP || errno == ENOTDIR ? "a link or no folder" : strerror(errno));
    return fd;
}

static int copy_from(downloader_t *d, LIBSSH2_SFTP_HANDLE *h, int fd, const char *remote)
{
    static char chunk[COPY_CHUNK];
    ssize_t n;
    while ((n = libssh2_sftp_read(h, chunk, sizeof chunk)) > 0)
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(fd, chunk + done, (size_t)(n - done));
            if (w < 0)
                return ddp_error_set(d->err, "writing %s here: %s", remote, strerror(errno));
            done += w;
        }
    return n < 0 ? refused(d, (int)n, "cannot read", remote) : 0;
}

static int fetch_file(downloader_t *d, int dir_fd, const char *name, const char *remote,
                      const LIBSSH2_SFTP_ATTRIBUTES *a)
{
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        (uint64_t)st.st_size == a->filesize && (unsigned long)st.st_mtime == a->mtime) {
        d->sum->unchanged++;
        return 0;
    }
    unsigned char nonce[6];
    char part[512];
    if (ddp_random(nonce, sizeof nonce))
        return ddp_error_set(d->err, "no random bytes for a temporary name");
    snprintf(part, sizeof part, ".%.200s.ddpjob-fetch.%02x%02x%02x%02x%02x%02x", name, nonce[0],
             nonce[1], nonce[2], nonce[3], nonce[4], nonce[5]);
    int fd = openat(dir_fd, part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return ddp_error_set(d->err, "%s here: %s", remote, strerror(errno));
    LIBSSH2_SFTP_HANDLE *h = libssh2_sftp_open(d->sftp, remote, LIBSSH2_FXF_READ, 0);
    int rc = h ? copy_from(d, h, fd, remote) : refused(d, 0, "cannot open", remote);
    if (h)
        libssh2_sftp_close(h);
    struct timespec times[2] = {{(time_t)a->atime, 0}, {(time_t)a->mtime, 0}};
    if (!rc && (fchmod(fd, (mode_t)(a->permissions & 0755)) || futimens(fd, times)))
        rc = ddp_error_set(d->err, "%s here: %s", remote, strerror(errno));
    if (close(fd) && !rc)
        rc = ddp_error_set(d->err, "%s here: %s", remote, strerror(errno));
    if (!rc && renameat(dir_fd, part, dir_fd, name))
        rc = ddp_error_set(d->err, "%s here: %s", remote, strerror(errno));
    if (rc) {
        unlinkat(dir_fd, part, 0);
        return -1;
    }
    d->sum->sent++;
    d->sum->sent_bytes += a->filesize;
    return 0;
}

static int fetch_entry(downloader_t *d, int dir_fd, const char *name, const char *remote,
                       const LIBSSH2_SFTP_ATTRIBUTES *a);

static int fetch_dir(downloader_t *d, int dir_fd, const char *remote)
{
    LIBSSH2_SFTP_HANDLE *h = libssh2_sftp_opendir(d->sftp, remote);
    if (!h)
        return refused(d, 0, "cannot list", remote);
    char name[1024], sub[4096];
    LIBSSH2_SFTP_ATTRIBUTES a;
    int rc = 0, n;
    while (!rc && (n = libssh2_sftp_readdir(h, name, sizeof name - 1, &a)) > 0) {
        name[n] = '\0';
        if (!strcmp(name, ".") || !strcmp(name, ".."))
            continue;
        if (strchr(name, '/') ||
            snprintf(sub, sizeof sub, "%s/%s", remote, name) >= (int)sizeof sub)
            return libssh2_sftp_closedir(h), ddp_error_set(d->err, "%s/%s: no name", remote, name);
        rc = fetch_entry(d, dir_fd, name, sub, &a);
    }
    if (!rc && n < 0)
        rc = refused(d, n, "cannot list", remote);
    libssh2_sftp_closedir(h);
    return rc;
}

static int fetch_entry(downloader_t *d, int dir_fd, const char *name, const char *remote,
                       const LIBSSH2_SFTP_ATTRIBUTES *a)
{
    if (!(a->flags & LIBSSH2_SFTP_ATTR_PERMISSIONS) ||
        (!LIBSSH2_SFTP_S_ISDIR(a->permissions) && !LIBSSH2_SFTP_S_ISREG(a->permissions))) {
        d->sum->not_regular++;
        return 0;
    }
    if (LIBSSH2_SFTP_S_ISREG(a->permissions))
        return fetch_file(d, dir_fd, name, remote, a);
    /* What is fetched is read by its path there: only from folders no one else can write (the
     * job's folder itself is checked first; one the job made group-writable is left there). */
    ddp_error_t why;
    if (sftp_trusted_dir(ssh_session_where(d->s), remote, a, d->uid, 0, "", &why)) {
        d->sum->untrusted++;
        return 0;
    }
    int fd = open_dir_at(d, dir_fd, name, remote);
    if (fd < 0)
        return -1;
    int rc = fetch_dir(d, fd, remote);
    close(fd);
    return rc;
}

/* One asked path: the folders on its way opened here, then the entry itself. */
static int fetch_path(downloader_t *d, int root_fd, const char *root, const char *path)
{
    if (!*path || path[0] == '/' || strstr(path, "..") || strstr(path, "//"))
        return ddp_error_set(d->err, "\"%s\": not a path inside the job's folder", path);
    char remote[4096], rel[4096];
    if (snprintf(remote, sizeof remote, "%s/%s", root, path) >= (int)sizeof remote)
        return ddp_error_set(d->err, "%s: path too long", path);
    snprintf(rel, sizeof rel, "%s", path);
    size_t len = strlen(rel);
    while (len > 1 && rel[len - 1] == '/')
        rel[--len] = '\0';
    LIBSSH2_SFTP_ATTRIBUTES a;
    if (libssh2_sftp_lstat(d->sftp, remote, &a)) {
        if (libssh2_sftp_last_error(d->sftp) != LIBSSH2_FX_NO_SUCH_FILE)
            return refused(d, 0, "cannot look at", remote);
        d->sum->missing++;
        return 0;
    }
    int fd = dup(root_fd), rc;
    if (fd < 0)
        return ddp_error_set(d->err, "%s: %s", path, strerror(errno));
    char *name = rel;
    for (char *slash; fd >= 0 && (slash = strchr(name, '/')); name = slash + 1) {
        *slash = '\0';
        int sub = open_dir_at(d, fd, name, path);
        close(fd);
        fd = sub;
    }
    if (fd < 0)
        return -1;
    rc = fetch_entry(d, fd, name, remote, &a);
    close(fd);
    return rc;
}

int download_paths(ssh_session_t *s, const char *remote_dir, char *const *paths, size_t n,
                   const char *local_dir, int64_t deadline, transfer_summary_t *sum,
                   ddp_error_t *err)
{
    memset(sum, 0, sizeof *sum);
    downloader_t d = {.s = s, .sum = sum, .err = err};
    if (ddp_make_dirs(local_dir, 0700, err))
        return -1;
    int root_fd = open(local_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (root_fd < 0)
        return ddp_error_set(err, "%s: %s", local_dir, strerror(errno));
    const char *root = sftp_path(remote_dir);
    d.session = ssh_session_libssh2(s, deadline);
    d.sftp = libssh2_sftp_init(d.session);
    int rc = d.sftp ? sftp_login_uid(ssh_session_where(s), d.session, d.sftp, &d.uid, err)
                    : refused(&d, 0, "cannot start SFTP for", root);
    LIBSSH2_SFTP_ATTRIBUTES a;
    if (!rc && libssh2_sftp_lstat(d.sftp, root, &a))
        rc = refused(&d, 0, "cannot look at", root);
    else if (!rc && !LIBSSH2_SFTP_S_ISDIR(a.permissions))
        rc = ddp_error_set(err, "%s: %s: no folder", ssh_session_where(s), root);
    else if (!rc)
        rc = sftp_trusted_dir(ssh_session_where(s), root, &a, d.uid, 0, "", err);
    for (size_t i = 0; !rc && i < n; i++)
        rc = fetch_path(&d, root_fd, root, paths[i]);
    if (d.sftp)
        libssh2_sftp_shutdown(d.sftp);
    close(root_fd);
    return rc ? -1 : 0;
}
