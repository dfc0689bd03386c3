#include "runtime/base/ddp_net.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_portable.h"

int ddp_net_set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static int set_blocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags < 0 ? -1 : fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

int ddp_net_listen(const char *host, int port, int backlog, int *bound_port, ddp_error_t *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char service[16];
    const char *where = host && *host ? host : "*";
    snprintf(service, sizeof service, "%d", port);
    if (!host || !*host)
        hints.ai_family = AF_INET;
    int rc = getaddrinfo(host && *host ? host : NULL, service, &hints, &res);
    if (rc)
        return ddp_error_set(err, "cannot listen on %s:%d: %s", where, port, gai_strerror(rc));
    int fd = -1, saved = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = ddp_socket_cloexec(ai->ai_family, ai->ai_socktype, ai->ai_protocol, false);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0)
            break;
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        if (saved == EADDRINUSE)
            return ddp_error_code(err, EADDRINUSE,
                                  "cannot listen on %s:%d: the port is in use (another job or "
                                  "service holds it; choose another port)",
                                  where, port);
        return ddp_error_set(err, "cannot listen on %s:%d: %s", where, port, strerror(saved));
    }
    if (bound_port) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        getsockname(fd, (struct sockaddr *)&ss, &sl);
        *bound_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                     : ((struct sockaddr_in *)&ss)->sin_port);
    }
    return fd;
}

/* One non-blocking connect attempt to one address; returns 0 connected, else an errno. */
static int connect_one(int fd, const struct addrinfo *ai, int64_t deadline)
{
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
        return 0;
    if (errno != EINPROGRESS)
        return errno;
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    int n;
    while ((n = poll(&pfd, 1, ddp_ms_left(deadline))) < 0 && errno == EINTR) {
    }
    if (n == 0)
        return ETIMEDOUT;
    int soerr = 0;
    socklen_t len = sizeof soerr;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
    return soerr;
}

int ddp_net_connect_transient(const ddp_error_t *err)
{
    return err->code == ECONNREFUSED || err->code == EHOSTUNREACH || err->code == ENETUNREACH ||
           err->code == ETIMEDOUT;
}

int ddp_net_connect(const char *host, int port, int64_t deadline, ddp_error_t *err)
{
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc)
        return ddp_error_set(err, "cannot resolve %s: %s", host, gai_strerror(rc));
    int fd = -1, saved = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = ddp_socket_cloexec(ai->ai_family, ai->ai_socktype, ai->ai_protocol, true);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        saved = connect_one(fd, ai, deadline);
        if (saved == 0)
            break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0)
        return ddp_error_code(err, saved, "cannot connect to %s:%d: %s", host, port,
                              saved == ETIMEDOUT ? "timed out" : strerror(saved));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    set_blocking(fd);
    return fd;
}

/* Waits until fd is ready for `events` or the deadline passes. */
static int wait_ready(int fd, short events, int64_t deadline)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    for (;;) {
        int n = poll(&pfd, 1, ddp_ms_left(deadline));
        if (n > 0)
            return 0;
        if (n == 0)
            return ETIMEDOUT;
        if (errno != EINTR)
            return errno;
    }
}

int ddp_net_write_full(int fd, const void *buf, size_t len, int64_t deadline, ddp_error_t *err)
{
    const char *p = buf;
    /* The call is tried before poll: data has mostly arrived, or room is there, already, and a
     * store serving thousands of agents pays for every system call. */
    while (len > 0) {
        ssize_t n = send(fd, p, len, DDP_MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN)
                return ddp_error_set(err, "send: %s", strerror(errno));
            int werr = wait_ready(fd, POLLOUT, deadline);
            if (werr)
                return ddp_error_set(err, "send: %s", strerror(werr));
            continue;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int ddp_net_read_full(int fd, void *buf, size_t len, int64_t deadline, ddp_error_t *err)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_DONTWAIT);
        if (n == 0)
            return ddp_error_set(err, "receive: connection closed by peer");
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN)
                return ddp_error_set(err, "receive: %s", strerror(errno));
            int werr = wait_ready(fd, POLLIN, deadline);
            if (werr)
                return ddp_error_set(err, "receive: %s",
                                     werr == ETIMEDOUT ? "timed out" : strerror(werr));
            continue;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int ddp_net_free_port(ddp_error_t *err)
{
    int port = 0;
    int fd = ddp_net_listen(NULL, 0, 1, &port, err);
    if (fd < 0)
        return -1;
    close(fd);
    return port;
}

int ddp_net_is_local(const char *host)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res))
        return 0;
    int local = 0;
    /* An address is this host's exactly when a socket can be bound to it. */
    for (struct addrinfo *ai = res; ai && !local; ai = ai->ai_next) {
        int fd = ddp_socket_cloexec(ai->ai_family, ai->ai_socktype, ai->ai_protocol, false);
        local = fd >= 0 && bind(fd, ai->ai_addr, ai->ai_addrlen) == 0;
        if (fd >= 0)
            close(fd);
    }
    freeaddrinfo(res);
    return local;
}

void ddp_net_raise_descriptor_limit(void)
{
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        setrlimit(RLIMIT_NOFILE, &files);
    }
}

void ddp_net_hostname(char *buf, size_t size)
{
    if (gethostname(buf, size) != 0)
        snprintf(buf, size, "unknown");
    buf[size - 1] = '\0';
}
