#include "runtime/base/ddp_file.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/ddp_hmac.h"

char *ddp_read_file(const char *path, size_t *len, ddp_error_t *err)
{
    return ddp_read_file_max(path, SIZE_MAX, len, err);
}

char *ddp_read_file_max(const char *path, size_t max, size_t *len, ddp_error_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        ddp_error_set(err, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&text, &size);
    if (!mem) {
        fclose(f);
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    char chunk[65536];
    size_t n;
    size_t total = 0;
    while (total <= max && (n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        fwrite(chunk, 1, n, mem);
        total += n;
    }
    int read_failed = ferror(f);
    fclose(f);
    if (fclose(mem) != 0 || read_failed || total > max) {
        if (total > max)
            ddp_error_set(err, "%s: larger than %zu bytes", path, max);
        else
            ddp_error_set(err, "%s: %s", path, read_failed ? "read error" : "out of memory");
        free(text);
        return NULL;
    }
    if (len)
        *len = size;
    return text;
}

int ddp_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode,
                          ddp_error_t *err)
{
    char tmp[4096];
    int fd = -1;
    /* A name nobody can guess, made new: a file or link planted in the folder is never opened. */
    for (int tries = 0; fd < 0 && tries < 16; tries++) {
        unsigned char r[6];
        char hex[2 * sizeof r + 1];
        if (ddp_random(r, sizeof r))
            return ddp_error_set(err, "%s: no random bytes for a temporary name", path);
        ddp_hex(r, sizeof r, hex);
        if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%s", path, hex) >= sizeof tmp)
            return ddp_error_set(err, "%s: path too long", path);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0 && errno != EEXIST)
            return ddp_error_set(err, "%s: %s", path, strerror(errno));
    }
    if (fd < 0)
        return ddp_error_set(err, "%s: no free temporary name", path);
    const char *p = data;
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, p + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ddp_error_set(err, "%s: %s", path, n < 0 ? strerror(errno) : "short write");
            goto error;
        }
        done += (size_t)n;
    }
    if (fsync(fd) < 0) {
        ddp_error_set(err, "%s: fsync: %s", path, strerror(errno));
        goto error;
    }
    close(fd);
    fd = -1;
    if (rename(tmp, path) < 0) {
        ddp_error_set(err, "%s: %s", path, strerror(errno));
        goto error;
    }
    /* The rename itself is durable only once the folder is. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = 0;
    int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return 0;
error:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return -1;
}

char *ddp_read_own_file(const char *path, mode_t closed, size_t max, size_t *len, ddp_error_t *err)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        ddp_error_code(err, e == ELOOP ? EPERM : e, "%s: %s", path,
                       e == ELOOP ? "a symbolic link: not trusted" : strerror(e));
        return NULL;
    }
    struct stat st;
    char *text = NULL;
    ssize_t got = -1;
    mode_t open_bits = 0;
    if (fstat(fd, &st) != 0) {
        ddp_error_set(err, "%s: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        ddp_error_code(err, EPERM, "%s: not a regular file", path);
    } else if (st.st_uid != geteuid()) {
        ddp_error_code(err, EPERM, "%s: owned by uid %u, not by this user: not trusted", path,
                       (unsigned)st.st_uid);
    } else if ((open_bits = st.st_mode & closed)) {
        ddp_error_code(err, EPERM, "%s: others can %s it (mode %04o): not trusted; chmod 600 %s",
                       path, open_bits & (S_IWGRP | S_IWOTH) ? "write" : "read",
                       (unsigned)(st.st_mode & 07777), path);
    } else if ((size_t)st.st_size > max) {
        ddp_error_set(err, "%s: larger than %zu bytes", path, max);
    } else if (!(text = calloc(1, (size_t)st.st_size + 1))) {
        ddp_error_set(err, "out of memory");
    } else if ((got = read(fd, text, (size_t)st.st_size)) != st.st_size) {
        ddp_error_set(err, "%s: could not be read whole", path);
    }
    close(fd);
    if (got < 0 || got != st.st_size) {
        free(text);
        return NULL;
    }
    if (len)
        *len = (size_t)got;
    return text;
}

int ddp_append_line(const char *path, const char *line, ddp_error_t *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return ddp_error_set(err, "%s: %s", path, strerror(errno));
    ssize_t n = write(fd, line, strlen(line));
    int bad = n != (ssize_t)strlen(line);
    if (close(fd) || bad)
        return ddp_error_set(err, "%s: cannot append to it", path);
    return 0;
}

int ddp_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int ddp_make_dirs(const char *path, mode_t mode, ddp_error_t *err)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
        return ddp_error_set(err, "%s: path too long", path);
    for (char *p = buf + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(buf, mode) != 0 && errno != EEXIST)
            return ddp_error_code(err, errno, "cannot make %s: %s", buf, strerror(errno));
        if (c == '\0')
            return 0;
        *p = c;
    }
}

/* "user (uid N)" for an error message. */
static void owner_name(uid_t uid, char *out, size_t size)
{
    struct passwd pw, *found = NULL;
    char buf[1024];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found)
        snprintf(out, size, "%s (uid %u)", found->pw_name, (unsigned)uid);
    else
        snprintf(out, size, "uid %u", (unsigned)uid);
}

/* A folder of this user's that neither group nor others can write, as `st` describes it. */
static int own_dir_check(const char *path, const struct stat *st, ddp_error_t *err)
{
    char owner[300];
    if (!S_ISDIR(st->st_mode))
        return ddp_error_code(err, EPERM, "%s: not a folder", path);
    if (st->st_uid != geteuid()) {
        owner_name(st->st_uid, owner, sizeof owner);
        return ddp_error_code(err, EPERM, "%s: refusing a folder owned by %s, not by this user",
                              path, owner);
    }
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return ddp_error_code(err, EPERM,
                              "%s: refusing a folder that others can write (mode %04o): "
                              "chmod go-w it, or remove it",
                              path, (unsigned)(st->st_mode & 07777));
    return 0;
}

int ddp_check_private_dir(const char *path, ddp_error_t *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return ddp_error_code(err, errno, "%s: %s", path, strerror(errno));
    if (S_ISLNK(st.st_mode))
        return ddp_error_code(err, EPERM,
                              "%s: refusing a symbolic link where a folder of ours "
                              "belongs",
                              path);
    return own_dir_check(path, &st, err);
}

int ddp_check_path_closed(const char *path, ddp_error_t *err)
{
    char *real = realpath(path, NULL);
    if (!real)
        return ddp_error_code(err, errno, "%s: %s", path, strerror(errno));
    int rc = 0;
    for (char *end = real + strlen(real); rc == 0 && end;) {
        struct stat st;
        char keep = *end;
        *end = 0;
        const char *folder = *real ? real : "/";
        if (stat(folder, &st) != 0)
            rc = ddp_error_code(err, errno, "%s: %s", folder, strerror(errno));
        else if ((st.st_uid != geteuid() && st.st_uid != 0) ||
                 ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)))
            rc = ddp_error_code(err, EPERM, "%s (owner uid %u, mode %04o) is open to others",
                                folder, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
        *end = keep;
        if (end == real)
            break;
        while (end > real && *--end != '/')
            ;
    }
    free(real);
    return rc;
}

int ddp_hold_own_dir(const char *path, char *held, size_t size, ddp_error_t *err)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return ddp_error_code(err, errno, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        ddp_error_code(err, errno, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (own_dir_check(path, &st, err)) {
        close(fd);
        return -1;
    }
    snprintf(held, size, "/proc/self/fd/%d", fd);
    return fd;
}

int ddp_hold_private_dir_at(int dir_fd, const char *name, const char *shown, ddp_error_t *err)
{
    if (mkdirat(dir_fd, name, 0700) != 0 && errno != EEXIST)
        return ddp_error_code(err, errno, "cannot make %s: %s", shown, strerror(errno));
    int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        ddp_error_code(err, errno, "cannot open %s: %s%s", shown, strerror(errno),
                       errno == ELOOP || errno == ENOTDIR ? " (not a folder: a link?)" : "");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (st.st_uid != geteuid() || (st.st_mode & 077)) {
        char owner[300];
        owner_name(st.st_uid, owner, sizeof owner);
        ddp_error_code(err, EPERM,
                       "refusing %s: not a private folder of this user's (owner %s, "
                       "mode %04o)",
                       shown, owner, (unsigned)(st.st_mode & 07777));
        close(fd);
        return -1;
    }
    return fd;
}

int ddp_private_dir(const char *path, ddp_error_t *err)
{
    if (mkdir(path, 0700) == 0)
        return 0;
    if (errno != EEXIST)
        return ddp_error_code(err, errno, "cannot make %s: %s", path, strerror(errno));
    return ddp_check_private_dir(path, err);
}

int ddp_random(void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        /* getentropy: POSIX.1-2024, glibc 2.25, musl, macOS 10.12; 256 bytes at most a call. */
        size_t n = len < 256 ? len : 256;
        if (getentropy(p, n) < 0)
            return -1;
        p += n;
        len -= n;
    }
    return 0;
}
