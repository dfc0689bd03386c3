#include "ddp_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

char *ddp_read_file(const char *path, size_t *len, ddp_error_t *err)
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
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, n, mem);
    int read_failed = ferror(f);
    fclose(f);
    if (fclose(mem) != 0 || read_failed) {
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
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= sizeof tmp)
        return ddp_error_set(err, "%s: path too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0)
        return ddp_error_set(err, "%s: %s", path, strerror(errno));
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

int ddp_random(void *buf, size_t len)
{
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}
