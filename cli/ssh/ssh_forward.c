#include "cli/ssh/ssh_forward.h"

#include <errno.h>
#include <fcntl.h>
#include <libssh2.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"

/* Connections carried at once, at most; one more is closed as it comes. */
#define PASSES_MAX 64
#define PASS_BUF 32768
/* A channel opens (its first bytes sent) within this; the loop waits for it. */
#define OPEN_MS 30000
/* How long the loop sleeps with nothing moving. */
#define IDLE_POLL_MS 200

typedef struct {
    int fd;
    LIBSSH2_CHANNEL *ch;
    char up[PASS_BUF], down[PASS_BUF]; /* up: from fd to the channel; down: back */
    size_t up_len, up_off, down_len, down_off;
    int fd_ended, ch_ended, eof_sent, failed;
} pass_t;

static void set_blocking(LIBSSH2_SESSION *ls, int ms)
{
    libssh2_session_set_blocking(ls, ms > 0);
    if (ms > 0)
        libssh2_session_set_timeout(ls, ms);
}

/* A channel to fw's address with its opening sent; NULL when the server would not. */
static LIBSSH2_CHANNEL *open_pass(LIBSSH2_SESSION *ls, const ssh_forward_t *fw)
{
    set_blocking(ls, OPEN_MS);
    LIBSSH2_CHANNEL *ch = libssh2_channel_direct_tcpip_ex(ls, fw->host, fw->port, "127.0.0.1", 0);
    for (size_t done = 0; ch && done < fw->opening_len;) {
        ssize_t n =
            libssh2_channel_write(ch, (const char *)fw->opening + done, fw->opening_len - done);
        if (n < 0) {
            libssh2_channel_free(ch);
            ch = NULL;
        } else {
            done += (size_t)n;
        }
    }
    set_blocking(ls, 0);
    return ch;
}

static void close_pass(LIBSSH2_SESSION *ls, pass_t *p)
{
    set_blocking(ls, 1000);
    libssh2_channel_close(p->ch);
    libssh2_channel_free(p->ch);
    set_blocking(ls, 0);
    close(p->fd);
    p->ch = NULL;
    p->fd = -1;
}

/* Moves what can move without waiting; 1 when something did. */
static int step(pass_t *p)
{
    int moved = 0;
    if (!p->fd_ended && p->up_off == p->up_len) {
        ssize_t n = read(p->fd, p->up, sizeof p->up);
        if (n > 0) {
            p->up_len = (size_t)n;
            p->up_off = 0;
            moved = 1;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            p->fd_ended = 1;
            moved = 1;
        }
    }
    if (p->up_off < p->up_len) {
        ssize_t n = libssh2_channel_write(p->ch, p->up + p->up_off, p->up_len - p->up_off);
        if (n > 0)
            p->up_off += (size_t)n, moved = 1;
        else if (n != LIBSSH2_ERROR_EAGAIN)
            p->failed = 1;
    }
    if (p->fd_ended && p->up_off == p->up_len && !p->eof_sent) {
        int rc = libssh2_channel_send_eof(p->ch);
        p->eof_sent = rc == 0;
        p->failed |= rc < 0 && rc != LIBSSH2_ERROR_EAGAIN;
    }
    if (!p->ch_ended && p->down_off == p->down_len) {
        ssize_t n = libssh2_channel_read(p->ch, p->down, sizeof p->down);
        if (n > 0) {
            p->down_len = (size_t)n;
            p->down_off = 0;
            moved = 1;
        } else if ((n == 0 || n == LIBSSH2_ERROR_EAGAIN) && libssh2_channel_eof(p->ch)) {
            p->ch_ended = 1;
            shutdown(p->fd, SHUT_WR);
            moved = 1;
        } else if (n < 0 && n != LIBSSH2_ERROR_EAGAIN) {
            p->failed = 1;
        }
    }
    if (p->down_off < p->down_len) {
        ssize_t n = write(p->fd, p->down + p->down_off, p->down_len - p->down_off);
        if (n > 0)
            p->down_off += (size_t)n, moved = 1;
        else if (n < 0 && errno != EAGAIN && errno != EINTR)
            p->failed = 1;
    }
    return moved;
}

static int pass_done(const pass_t *p)
{
    return p->failed || (p->fd_ended && p->ch_ended && p->eof_sent && p->down_off == p->down_len);
}

/* A connection taken and its channel opened: 0 (one over PASSES_MAX closed as it came), or -1
 * with err when the server would not open the channel (forwarding refused there). */
static int take_connection(LIBSSH2_SESSION *ls, int lfd, const ssh_forward_t *fw, pass_t *passes,
                           ddp_error_t *err)
{
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        return 0;
    pass_t *p = NULL;
    for (int i = 0; i < PASSES_MAX && !p; i++)
        p = passes[i].ch ? NULL : &passes[i];
    LIBSSH2_CHANNEL *ch = p ? open_pass(ls, fw) : NULL;
    if (!ch) {
        close(fd);
        if (!p)
            return 0;
        char *msg = NULL;
        libssh2_session_last_error(ls, &msg, NULL, 0);
        return ddp_error_code(err, EPERM,
                              "the login node's SSH server would not carry a connection to %s:%d "
                              "(%s): is TCP forwarding allowed there (AllowTcpForwarding)?",
                              fw->host, fw->port, msg && *msg ? msg : "refused");
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    memset(p, 0, sizeof *p);
    p->fd = fd;
    p->ch = ch;
    return 0;
}

int ssh_forward_run(ssh_session_t *s, int lfd, const ssh_forward_t *fw, volatile sig_atomic_t *stop,
                    ssh_output_fn fn, void *arg, ddp_error_t *err)
{
    static pass_t passes[PASSES_MAX];
    LIBSSH2_SESSION *ls = ssh_session_libssh2(s, ddp_deadline_in(OPEN_MS));
    set_blocking(ls, 0);
    int rc = 0, moved = 0;
    while (!*stop) {
        struct pollfd pfd[2 + PASSES_MAX];
        int dir = libssh2_session_block_directions(ls);
        pfd[0] = (struct pollfd){lfd, POLLIN, 0};
        pfd[1] = (struct pollfd){
            ssh_session_socket(s),
            (short)(POLLIN | (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND ? POLLOUT : 0)), 0};
        for (int i = 0; i < PASSES_MAX; i++) {
            pass_t *p = &passes[i];
            short ev = 0;
            if (p->ch && !p->fd_ended && p->up_off == p->up_len)
                ev |= POLLIN;
            if (p->ch && p->down_off < p->down_len)
                ev |= POLLOUT;
            pfd[2 + i] = (struct pollfd){ev ? p->fd : -1, ev, 0};
        }
        /* libssh2 may hold a channel's data already read off the socket: no wait after a move. */
        if (poll(pfd, 2 + PASSES_MAX, moved ? 0 : IDLE_POLL_MS) < 0 && errno != EINTR)
            break;
        if ((pfd[0].revents & POLLIN) && take_connection(ls, lfd, fw, passes, err)) {
            rc = -1;
            break;
        }
        int ended = ssh_session_pump(s, 0, fn, arg, err);
        if (ended) {
            rc = ended < 0 ? -1 : 0;
            break;
        }
        moved = 0;
        for (int i = 0; i < PASSES_MAX; i++) {
            if (!passes[i].ch)
                continue;
            moved |= step(&passes[i]);
            if (pass_done(&passes[i]))
                close_pass(ls, &passes[i]);
        }
    }
    for (int i = 0; i < PASSES_MAX; i++)
        if (passes[i].ch)
            close_pass(ls, &passes[i]);
    return rc;
}
