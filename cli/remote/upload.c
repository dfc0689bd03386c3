#include "cli/remote/upload.h"

#include <dirent.h>
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
#include "cli/remote/ignore_rules.h"
#include "cli/remote/sftp_error.h"

/* A .ddpjobignore is a few lines: anything near this is not one. */
enum { IGNORE_FILE_MAX = 1 << 20, COPY_CHUNK = 1 << 16 };

typedef struct {
    ssh_session_t *s;
    LIBSSH2_SESSION *session;
    LIBSSH2_SFTP *sftp;
    ignore_rules_t rules;
    transfer_summary_t *sum;
    ddp_error_t *err;
} uploader_t;

static int refused(uploader_t *u, int rc, const char *what, const char *path)
{
    return sftp_refused(ssh_session_where(u->s), u->session, u->sftp, rc, what, path, u->err);
}

/* remote's folder, made with `mode` where missing; a link there is not written through. */
static int ensure_dir(uploader_t *u, const char *remote, unsigned mode)
{
    LIBSSH2_SFTP_ATTRIBUTES a;
    int rc = libssh2_sftp_lstat(u->sftp, remote, &a);
    if (rc == 0) {
        if (LIBSSH2_SFTP_S_ISDIR(a.permissions))
            return 0;
        return ddp_error_set(u->err, "%s: %s is there and is no folder%s: not written through",
                             ssh_session_where(u->s), remote,
                             LIBSSH2_SFTP_S_ISLNK(a.permissions) ? " (a link)" : "");
    }
    if (libssh2_sftp_last_error(u->sftp) != LIBSSH2_FX_NO_SUCH_FILE)
        return refused(u, rc, "cannot look at", remote);
    rc = libssh2_sftp_mkdir(u->sftp, remote, mode);
    return rc ? refused(u, rc, "cannot make the folder", remote) : 0;
}

/* mkdir -p of the remote root, component by component. */
static int ensure_root(uploader_t *u, const char *root)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", root);
    for (char *slash = path + 1; (slash = strchr(slash, '/')); slash++) {
        *slash = '\0';
        if (ensure_dir(u, path, 0700))
            return -1;
        *slash = '/';
    }
    return ensure_dir(u, path, 0700);
}

static int unchanged(uploader_t *u, const char *remote, const struct stat *st)
{
    LIBSSH2_SFTP_ATTRIBUTES a;
    return libssh2_sftp_lstat(u->sftp, remote, &a) == 0 && LIBSSH2_SFTP_S_ISREG(a.permissions) &&
           a.filesize == (uint64_t)st->st_size && a.mtime == (unsigned long)st->st_mtime &&
           (a.permissions & 07777) == (st->st_mode & 07777);
}

static int copy_to(uploader_t *u, int fd, LIBSSH2_SFTP_HANDLE *h, const char *remote)
{
    static char chunk[COPY_CHUNK];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) > 0)
        for (ssize_t done = 0; done < n;) {
            ssize_t w = libssh2_sftp_write(h, chunk + done, (size_t)(n - done));
            if (w < 0)
                return refused(u, (int)w, "cannot write", remote);
            done += w;
        }
    return n < 0
               ? ddp_error_set(u->err, "reading the local file for %s: %s", remote, strerror(errno))
               : 0;
}

/* One file: written under a temporary name (made fresh: a link there is removed, not
 * followed), given the local mode and times, then put in place. */
static int send_file(uploader_t *u, int dir_fd, const char *name, const char *remote,
                     const struct stat *st)
{
    if (unchanged(u, remote, st)) {
        u->sum->unchanged++;
        return 0;
    }
    int fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return ddp_error_set(u->err, "%s: %s", name, strerror(errno));
    char part[4200];
    snprintf(part, sizeof part, "%s.ddpjob-upload", remote);
    libssh2_sftp_unlink(u->sftp, part);
    LIBSSH2_SFTP_HANDLE *h = libssh2_sftp_open_ex(
        u->sftp, part, (unsigned)strlen(part),
        LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_EXCL, 0600, LIBSSH2_SFTP_OPENFILE);
    int rc = h ? copy_to(u, fd, h, remote) : refused(u, 0, "cannot create", part);
    close(fd);
    if (h && libssh2_sftp_close(h) && !rc)
        rc = refused(u, 0, "cannot finish writing", remote);
    LIBSSH2_SFTP_ATTRIBUTES a = {
        .flags = LIBSSH2_SFTP_ATTR_PERMISSIONS | LIBSSH2_SFTP_ATTR_ACMODTIME,
        .permissions = st->st_mode & 07777,
        .atime = (unsigned long)st->st_atime,
        .mtime = (unsigned long)st->st_mtime,
    };
    int step;
    if (!rc && (step = libssh2_sftp_setstat(u->sftp, part, &a)))
        rc = refused(u, step, "cannot set the mode and time of", remote);
    /* SFTP's rename keeps an existing target (OpenSSH), and libssh2 1.10 has no posix-rename. */
    libssh2_sftp_unlink(u->sftp, remote);
    if (!rc && (step = libssh2_sftp_rename_ex(
                    u->sftp, part, (unsigned)strlen(part), remote, (unsigned)strlen(remote),
                    LIBSSH2_SFTP_RENAME_OVERWRITE | LIBSSH2_SFTP_RENAME_ATOMIC |
                        LIBSSH2_SFTP_RENAME_NATIVE)))
        rc = refused(u, step, "cannot put in place", remote);
    if (rc) {
        libssh2_sftp_unlink(u->sftp, part);
        return -1;
    }
    u->sum->sent++;
    u->sum->sent_bytes += (uint64_t)st->st_size;
    return 0;
}

static int send_dir(uploader_t *u, const char *local, const char *rel, const char *remote);

static int send_entry(uploader_t *u, int dir_fd, const char *local, const char *rel,
                      const char *remote, const char *name)
{
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW))
        return ddp_error_set(u->err, "%s/%s: %s", local, name, strerror(errno));
    char sub_rel[4096], sub_local[4096], sub_remote[4096];
    snprintf(sub_rel, sizeof sub_rel, "%s%s%s", rel, *rel ? "/" : "", name);
    int is_dir = S_ISDIR(st.st_mode);
    if (!is_dir && !S_ISREG(st.st_mode)) {
        u->sum->not_regular++;
        return 0;
    }
    if (ignore_rules_skip(&u->rules, sub_rel, is_dir)) {
        u->sum->ignored++;
        return 0;
    }
    if (snprintf(sub_remote, sizeof sub_remote, "%s/%s", remote, name) >= (int)sizeof sub_remote ||
        snprintf(sub_local, sizeof sub_local, "%s/%s", local, name) >= (int)sizeof sub_local)
        return ddp_error_set(u->err, "%s: path too long", sub_rel);
    if (!is_dir)
        return send_file(u, dir_fd, name, sub_remote, &st);
    /* The user's mode, but never one that keeps the upload itself out. */
    return ensure_dir(u, sub_remote, (st.st_mode & 07777) | 0700) ||
           send_dir(u, sub_local, sub_rel, sub_remote);
}

static int send_dir(uploader_t *u, const char *local, const char *rel, const char *remote)
{
    int fd = open(local, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return ddp_error_set(u->err, "%s: %s", local, strerror(errno));
    }
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            rc = send_entry(u, dirfd(d), local, rel, remote, e->d_name);
    closedir(d);
    return rc;
}

static int read_rules(const char *local_dir, ignore_rules_t *rules, ddp_error_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/.ddpjobignore", local_dir);
    char *text =
        access(path, F_OK) == 0 ? ddp_read_file_max(path, IGNORE_FILE_MAX, NULL, err) : NULL;
    if (!text && access(path, F_OK) == 0)
        return -1;
    int rc = ignore_rules_parse(text, rules, err);
    free(text);
    return rc;
}

/* SFTP started on s's login; *root is remote_dir as SFTP takes it (paths without a leading '/'
 * are from the login's home). */
static int start(uploader_t *u, const char *remote_dir, int64_t deadline, const char **root)
{
    *root = sftp_path(remote_dir);
    u->session = ssh_session_libssh2(u->s, deadline);
    u->sftp = libssh2_sftp_init(u->session);
    return u->sftp ? ensure_root(u, *root) : refused(u, 0, "cannot start SFTP for", *root);
}

int upload_tree(ssh_session_t *s, const char *local_dir, const char *remote_dir, int64_t deadline,
                transfer_summary_t *sum, ddp_error_t *err)
{
    memset(sum, 0, sizeof *sum);
    uploader_t u = {.s = s, .sum = sum, .err = err};
    if (read_rules(local_dir, &u.rules, err))
        return -1;
    const char *root;
    int rc = start(&u, remote_dir, deadline, &root) || send_dir(&u, local_dir, "", root) ? -1 : 0;
    if (u.sftp)
        libssh2_sftp_shutdown(u.sftp);
    ignore_rules_free(&u.rules);
    return rc;
}

/* One listed file: its folders made as they are here, then the file itself. */
static int send_listed(uploader_t *u, const char *local_root, const char *path, const char *root)
{
    if (!*path || path[0] == '/' || strstr(path, "..") || strstr(path, "//"))
        return ddp_error_set(u->err, "\"%s\": not a path inside %s", path, local_root);
    char local[4096], remote[4096];
    if (snprintf(local, sizeof local, "%s/%s", local_root, path) >= (int)sizeof local ||
        snprintf(remote, sizeof remote, "%s/%s", root, path) >= (int)sizeof remote)
        return ddp_error_set(u->err, "%s: path too long", path);
    size_t root_len = strlen(root) + 1, local_len = strlen(local_root) + 1;
    for (char *slash = strchr(remote + root_len, '/'); slash; slash = strchr(slash + 1, '/')) {
        struct stat st;
        *slash = '\0';
        local[local_len + (size_t)(slash - remote - root_len)] = '\0';
        int rc = stat(local, &st) ? ddp_error_set(u->err, "%s: %s", local, strerror(errno))
                                  : ensure_dir(u, remote, (st.st_mode & 07777) | 0700);
        *slash = '/';
        local[local_len + (size_t)(slash - remote - root_len)] = '/';
        if (rc)
            return -1;
    }
    char *base = strrchr(local, '/');
    *base = '\0';
    int dir_fd = open(local, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    *base = '/';
    struct stat st;
    int rc = dir_fd < 0 || fstatat(dir_fd, base + 1, &st, AT_SYMLINK_NOFOLLOW)
                 ? ddp_error_set(u->err, "%s: %s", local, strerror(errno))
             : !S_ISREG(st.st_mode) ? ddp_error_set(u->err, "%s: not a regular file", local)
                                    : send_file(u, dir_fd, base + 1, remote, &st);
    if (dir_fd >= 0)
        close(dir_fd);
    return rc;
}

int upload_files(ssh_session_t *s, const char *local_root, char *const *paths, size_t n,
                 const char *remote_dir, int64_t deadline, transfer_summary_t *sum,
                 ddp_error_t *err)
{
    memset(sum, 0, sizeof *sum);
    uploader_t u = {.s = s, .sum = sum, .err = err};
    const char *root;
    int rc = start(&u, remote_dir, deadline, &root);
    for (size_t i = 0; !rc && i < n; i++)
        rc = send_listed(&u, local_root, paths[i], root);
    if (u.sftp)
        libssh2_sftp_shutdown(u.sftp);
    return rc ? -1 : 0;
}

void transfer_summary_text(const transfer_summary_t *sum, const char *verb, char *out, size_t size)
{
    int n = snprintf(out, size, "%s %zu file%s, %llu KiB; %zu unchanged", verb, sum->sent,
                     sum->sent == 1 ? "" : "s",
                     (unsigned long long)((sum->sent_bytes + 1023) / 1024), sum->unchanged);
    if (n > 0 && (size_t)n < size && (sum->ignored || sum->not_regular))
        n += snprintf(out + n, size - (size_t)n,
                      "; left behind: %zu ignored, %zu links or other files", sum->ignored,
                      sum->not_regular);
    if (n > 0 && (size_t)n < size && sum->missing)
        snprintf(out + n, size - (size_t)n, "; %zu not there", sum->missing);
}
