#include "runtime/base/ddp_portable.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__APPLE__)
#include <mach-o/dyld.h>
#endif

#if !DDP_LINUX
static int set_cloexec(int fd)
{
    int flags = fcntl(fd, F_GETFD);
    return flags < 0 ? -1 : fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

static int set_nosigpipe(int fd)
{
#ifdef SO_NOSIGPIPE
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#else
    (void)fd;
    return 0;
#endif
}

static int close_keeping_errno(int fd)
{
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
}
#endif

int ddp_pipe_cloexec(int fds[2])
{
#if DDP_LINUX
    return pipe2(fds, O_CLOEXEC);
#else
    if (pipe(fds) < 0)
        return -1;
    if (set_cloexec(fds[0]) < 0 || set_cloexec(fds[1]) < 0) {
        close_keeping_errno(fds[1]);
        return close_keeping_errno(fds[0]);
    }
    return 0;
#endif
}

int ddp_socket_cloexec(int domain, int type, int protocol, bool nonblock)
{
#if DDP_LINUX
    return socket(domain, type | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), protocol);
#else
    int fd = socket(domain, type, protocol);
    if (fd < 0)
        return -1;
    if (set_cloexec(fd) < 0 || set_nosigpipe(fd) < 0 ||
        (nonblock && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0))
        return close_keeping_errno(fd);
    return fd;
#endif
}

int ddp_socketpair_cloexec(int domain, int type, int sv[2])
{
#if DDP_LINUX
    return socketpair(domain, type | SOCK_CLOEXEC, 0, sv);
#else
    if (socketpair(domain, type, 0, sv) < 0)
        return -1;
    for (int i = 0; i < 2; i++)
        if (set_cloexec(sv[i]) < 0 || set_nosigpipe(sv[i]) < 0) {
            close_keeping_errno(sv[1]);
            return close_keeping_errno(sv[0]);
        }
    return 0;
#endif
}

#if !DDP_LINUX && !defined(__APPLE__)
static const char *noted_argv0;
#endif

void ddp_self_exe_note(const char *argv0)
{
#if !DDP_LINUX && !defined(__APPLE__)
    noted_argv0 = argv0;
#else
    (void)argv0;
#endif
}

#if !DDP_LINUX && !defined(__APPLE__)
/* argv[0] as a shell found it: a path when it has a slash, else the first PATH entry holding an
 * executable of that name. */
static char *found_on_path(const char *name, char *out)
{
    if (strchr(name, '/'))
        return realpath(name, out);
    const char *path = getenv("PATH");
    for (const char *p = path ? path : ""; *p;) {
        size_t len = strcspn(p, ":");
        char candidate[PATH_MAX];
        if ((size_t)snprintf(candidate, sizeof candidate, "%.*s/%s", (int)len, len ? p : ".",
                             name) < sizeof candidate &&
            access(candidate, X_OK) == 0)
            return realpath(candidate, out);
        p += len + (p[len] == ':');
    }
    errno = ENOENT;
    return NULL;
}
#endif

char *ddp_self_exe(void)
{
    char path[PATH_MAX];
#if DDP_LINUX
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n < 0)
        return NULL;
    path[n] = '\0';
    return strdup(path);
#elif defined(__APPLE__)
    char real[PATH_MAX];
    uint32_t size = sizeof path;
    if (_NSGetExecutablePath(path, &size) != 0) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    return realpath(path, real) ? strdup(real) : NULL;
#else
    if (!noted_argv0) {
        errno = ENOENT;
        return NULL;
    }
    return found_on_path(noted_argv0, path) ? strdup(path) : NULL;
#endif
}

static void merge(char *a, char *tmp, size_t n, size_t size,
                  int (*cmp)(const void *, const void *, void *), void *arg)
{
    if (n < 2)
        return;
    size_t half = n / 2;
    merge(a, tmp, half, size, cmp, arg);
    merge(a + half * size, tmp, n - half, size, cmp, arg);
    size_t i = 0, j = half, k = 0;
    while (i < half && j < n) {
        /* Ties take the left run's first: the sort is stable. */
        size_t from = cmp(a + j * size, a + i * size, arg) < 0 ? j++ : i++;
        memcpy(tmp + k++ * size, a + from * size, size);
    }
    memcpy(tmp + k * size, a + i * size, (half - i) * size);
    k += half - i;
    memcpy(tmp + k * size, a + j * size, (n - j) * size);
    memcpy(a, tmp, n * size);
}

void ddp_sort_r(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *, void *),
                void *arg)
{
    char *a = base, *tmp = n > 1 && n <= SIZE_MAX / size ? malloc(n * size) : NULL;
    if (tmp) {
        merge(a, tmp, n, size, cmp, arg);
        free(tmp);
        return;
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && cmp(a + (j - 1) * size, a + j * size, arg) > 0; j--)
            for (size_t b = 0; b < size; b++) {
                char c = a[j * size + b];
                a[j * size + b] = a[(j - 1) * size + b];
                a[(j - 1) * size + b] = c;
            }
}
