#include "cli/launch/node_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_net.h"

/* The largest frame either side sends or takes. */
#define FRAME_MAX 65536
/* A frame, once its first byte came, arrives whole within this. */
#define FRAME_MS 10000
/* The client's connection is made within this. */
#define CONNECT_MS 30000
/* How often the server looks whether its program has ended. */
#define CHILD_LOOK_MS 100
/* A shell's program still there this long after its client went is killed. */
#define HANGUP_GRACE_MS 10000
/* How often a shell's node side looks for a new notice. */
#define NOTICE_MS 1000
/* Connections a forwarded port passes at once, at most. */
#define PASSING_MAX 256

static int send_frame(int fd, char type, const void *data, uint32_t len, ddp_error_t *err)
{
    unsigned char head[5] = {(unsigned char)type, (unsigned char)(len >> 24),
                             (unsigned char)(len >> 16), (unsigned char)(len >> 8),
                             (unsigned char)len};
    int64_t deadline = ddp_deadline_in(FRAME_MS);
    if (ddp_net_write_full(fd, head, sizeof head, deadline, err) ||
        (len && ddp_net_write_full(fd, data, len, deadline, err)))
        return -1;
    return 0;
}

/* The next frame into buf (FRAME_MAX bytes): its type, or -1 with err (the peer gone: code 0). */
static int read_frame(int fd, unsigned char *buf, uint32_t *len, ddp_error_t *err)
{
    unsigned char head[5];
    int64_t deadline = ddp_deadline_in(FRAME_MS);
    if (ddp_net_read_full(fd, head, sizeof head, deadline, err))
        return -1;
    *len = (uint32_t)head[1] << 24 | (uint32_t)head[2] << 16 | (uint32_t)head[3] << 8 | head[4];
    if (*len > FRAME_MAX)
        return ddp_error_set(err, "a frame of %u bytes: not a relay's", (unsigned)*len);
    if (*len && ddp_net_read_full(fd, buf, *len, deadline, err))
        return -1;
    return head[0];
}

/* Equal in time whatever the bytes: the token is a secret. */
static int token_equal(const unsigned char *got, size_t len, const char *token)
{
    size_t want = strlen(token);
    unsigned char diff = len != want;
    for (size_t i = 0; i < want; i++)
        diff |= (unsigned char)(i < len ? got[i] : 0) ^ (unsigned char)token[i];
    return diff == 0;
}

/* The first client within the deadline that sends the token: its connection, or -1 with err. */
static int accept_client(int lfd, const char *token, int64_t deadline, ddp_error_t *err)
{
    static unsigned char buf[FRAME_MAX];
    for (;;) {
        int64_t left = ddp_ms_left(deadline);
        if (left == 0)
            return ddp_error_set(err, "no client came within the time given");
        struct pollfd p = {lfd, POLLIN, 0};
        if (poll(&p, 1, (int)left) <= 0)
            continue;
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            continue;
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        uint32_t len;
        ddp_error_t ferr;
        if (read_frame(fd, buf, &len, &ferr) == 'T' && token_equal(buf, len, token))
            return fd;
        close(fd);
    }
}

static void set_window(int fd, const unsigned char *b, uint32_t len)
{
    if (len < 4)
        return;
    struct winsize w = {.ws_row = (unsigned short)(b[0] << 8 | b[1]),
                        .ws_col = (unsigned short)(b[2] << 8 | b[3])};
    ioctl(fd, TIOCSWINSZ, &w);
}

/* argv on a new pseudo-terminal in cwd: its pid, with *master its side; -1 with err. */
static pid_t start_on_pty(const char *cwd, char *const *argv, int *master, ddp_error_t *err)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    const char *slave = m >= 0 && !grantpt(m) && !unlockpt(m) ? ptsname(m) : NULL;
    if (!slave) {
        if (m >= 0)
            close(m);
        return ddp_error_set(err, "no pseudo-terminal: %s", strerror(errno));
    }
    fcntl(m, F_SETFD, FD_CLOEXEC);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(m);
        return ddp_error_set(err, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        setsid();
        int s = open(slave, O_RDWR);
        if (s < 0)
            _exit(126);
        ioctl(s, TIOCSCTTY, 0);
        dup2(s, 0);
        dup2(s, 1);
        dup2(s, 2);
        if (s > 2)
            close(s);
        /* A terminal's program takes signals as a login's does: a batch system may start its
         * tasks with some ignored (pbs_mom: SIGHUP), which exec would keep. */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        const int defaults[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGPIPE, SIGCHLD,
                                SIGUSR1, SIGUSR2, SIGTSTP, SIGTTIN, SIGTTOU, SIGALRM};
        for (size_t i = 0; i < sizeof defaults / sizeof *defaults; i++)
            signal(defaults[i], SIG_DFL);
        if (chdir(cwd) != 0)
            fprintf(stderr, "ddpjob shell: %s: %s\n", cwd, strerror(errno));
        execvp(argv[0], argv);
        fprintf(stderr, "ddpjob shell: %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    *master = m;
    return pid;
}

static int shell_status(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* The notice file's line, when it is new since `shown` (kept there): to the client's terminal,
 * on a line of its own. */
static void pass_notice(int cfd, const char *notice, char *shown, size_t size)
{
    ddp_error_t err;
    char *text = notice ? ddp_read_own_file(notice, S_IWGRP | S_IWOTH, size - 1, NULL, &err) : NULL;
    if (text && strcmp(text, shown)) {
        snprintf(shown, size, "%s", text);
        char line[600];
        int n = snprintf(line, sizeof line, "\r\n%.*s\r\n", (int)strcspn(text, "\n"), text);
        send_frame(cfd, 'D', line, (uint32_t)(n < (int)sizeof line ? n : (int)sizeof line - 1),
                   &err);
    }
    free(text);
}

/* Relays between the client (cfd) and the program's terminal (m) until the program has ended
 * and said all it wrote: its status; -1 with err. Each new line of `notice` (may be NULL) is
 * shown to the client as it comes. */
static int serve_relay(int cfd, int m, pid_t pid, const char *notice, ddp_error_t *err)
{
    static unsigned char buf[FRAME_MAX];
    char shown[512] = "";
    int status = -1, client = 1, term = 1;
    int64_t next_notice = 0, hung_up = 0;
    while (term || status < 0) {
        if (client && ddp_now_ms() >= next_notice) {
            pass_notice(cfd, notice, shown, sizeof shown);
            next_notice = ddp_now_ms() + NOTICE_MS;
        }
        struct pollfd p[2] = {{client ? cfd : -1, POLLIN, 0}, {term ? m : -1, POLLIN, 0}};
        poll(p, 2, CHILD_LOOK_MS);
        if (p[0].revents) {
            uint32_t len;
            ddp_error_t ferr;
            int type = read_frame(cfd, buf, &len, &ferr);
            if (type == 'D')
                ddp_write_all(m, buf, len);
            else if (type == 'W')
                set_window(m, buf, len);
            else if (type == 'E')
                ddp_write_all(m, "\004", 1);
            else if (type < 0) {
                /* The client went: the terminal hangs up, as a closed ssh session's does. */
                client = 0;
                hung_up = ddp_now_ms();
                kill(-pid, SIGHUP);
            }
        }
        if (p[1].revents) {
            ssize_t n = read(m, buf, sizeof buf);
            if (n <= 0)
                term = 0;
            else if (client && send_frame(cfd, 'D', buf, (uint32_t)n, err))
                client = 0;
        }
        int ws;
        if (status < 0 && waitpid(pid, &ws, WNOHANG) == pid)
            status = shell_status(ws);
        /* A program that outlives its hang-up (nohup) has nobody to serve. */
        if (status < 0 && hung_up && ddp_now_ms() - hung_up > HANGUP_GRACE_MS)
            kill(-pid, SIGKILL);
    }
    if (!client)
        return status;
    unsigned char s[4] = {0, 0, 0, (unsigned char)status};
    return send_frame(cfd, 'X', s, 4, err) ? -1 : status;
}

/* Listens on every address at a port the kernel picks and says where in `endpoint` ("HOST
 * PORT\n", written atomically): the listening descriptor, or -1 with err. */
static int listen_and_say(const char *endpoint, int backlog, ddp_error_t *err)
{
    int port;
    int lfd = ddp_net_listen(NULL, 0, backlog, &port, err);
    if (lfd < 0)
        return -1;
    char host[256], line[320];
    if (gethostname(host, sizeof host) != 0) {
        close(lfd);
        return ddp_error_set(err, "gethostname: %s", strerror(errno));
    }
    host[sizeof host - 1] = 0;
    int n = snprintf(line, sizeof line, "%s %d\n", host, port);
    if (ddp_write_file_atomic(endpoint, line, (size_t)n, 0600, err)) {
        close(lfd);
        return -1;
    }
    return lfd;
}

int relay_serve(const char *endpoint, const char *token, const char *cwd, char *const *argv,
                const char *notice, int accept_ms, ddp_error_t *err)
{
    int lfd = listen_and_say(endpoint, 4, err);
    if (lfd < 0)
        return -1;
    int cfd = accept_client(lfd, token, ddp_deadline_in(accept_ms), err);
    close(lfd);
    if (cfd < 0)
        return -1;
    int m = -1;
    pid_t pid = start_on_pty(cwd, argv, &m, err);
    int rc = pid < 0 ? -1 : serve_relay(cfd, m, pid, notice, err);
    if (pid >= 0)
        close(m);
    close(cfd);
    return rc;
}

/* ---- the client --------------------------------------------------------------------------- */

static volatile sig_atomic_t window_changed;

static void on_window_change(int sig)
{
    (void)sig;
    window_changed = 1;
}

static int send_window(int fd, ddp_error_t *err)
{
    struct winsize w;
    if (ioctl(0, TIOCGWINSZ, &w) != 0)
        return 0;
    unsigned char b[4] = {(unsigned char)(w.ws_row >> 8), (unsigned char)w.ws_row,
                          (unsigned char)(w.ws_col >> 8), (unsigned char)w.ws_col};
    return send_frame(fd, 'W', b, 4, err);
}

void relay_make_raw(struct termios *t)
{
    t->c_iflag &= ~(tcflag_t)(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR | ICRNL | IXON);
    t->c_oflag &= ~(tcflag_t)OPOST;
    t->c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
    t->c_cflag &= ~(tcflag_t)(CSIZE | PARENB);
    t->c_cflag |= CS8;
    t->c_cc[VMIN] = 1;
    t->c_cc[VTIME] = 0;
}

/* Relays this terminal and the connection until the server says the program's status. */
static int attach_relay(int fd, ddp_error_t *err)
{
    static unsigned char buf[FRAME_MAX];
    int input = 1;
    for (;;) {
        if (window_changed) {
            window_changed = 0;
            if (send_window(fd, err))
                return -1;
        }
        /* Output whose reader is gone (a pipe to an SSH session that closed) ends the relay,
         * and with it, as a hang-up, the program on the node. */
        struct pollfd p[3] = {{input ? 0 : -1, POLLIN, 0}, {fd, POLLIN, 0}, {1, 0, 0}};
        if (poll(p, 3, -1) < 0)
            continue;
        if (p[2].revents & (POLLERR | POLLHUP))
            return ddp_error_set(err, "its output's reader went before the program ended");
        if (p[0].revents) {
            /* Input the node's side no longer takes (its program has ended, its status on the
             * way) is dropped: the status still comes. */
            ssize_t n = read(0, buf, sizeof buf);
            ddp_error_t dropped;
            if (n <= 0) {
                input = 0;
                send_frame(fd, 'E', NULL, 0, &dropped);
            } else if (send_frame(fd, 'D', buf, (uint32_t)n, &dropped)) {
                input = 0;
            }
        }
        if (p[1].revents) {
            uint32_t len;
            int type = read_frame(fd, buf, &len, err);
            if (type < 0)
                return ddp_error_prefix(err, "the node's side went before the program ended");
            if (type == 'D')
                ddp_write_all(1, buf, len);
            else if (type == 'X' && len == 4)
                return buf[3];
        }
    }
}

int relay_attach(const char *host, int port, const char *token, ddp_error_t *err)
{
    int fd = ddp_net_connect(host, port, ddp_deadline_in(CONNECT_MS), err);
    if (fd < 0)
        return -1;
    int tty = isatty(0);
    struct termios saved;
    int rc = send_frame(fd, 'T', token, (uint32_t)strlen(token), err);
    if (!rc && tty && tcgetattr(0, &saved) == 0) {
        struct sigaction sa = {.sa_handler = on_window_change};
        sigaction(SIGWINCH, &sa, NULL);
        struct termios raw = saved;
        relay_make_raw(&raw);
        /* Not TCSAFLUSH: what was typed before the shell came goes to it. */
        tcsetattr(0, TCSADRAIN, &raw);
        rc = send_window(fd, err);
    } else {
        tty = 0;
    }
    if (!rc)
        rc = attach_relay(fd, err);
    if (tty)
        tcsetattr(0, TCSADRAIN, &saved);
    close(fd);
    return rc;
}

/* ---- a forwarded port --------------------------------------------------------------------- */

/* Passes bytes both ways between a and b until both have ended (each end's close passed on as a
 * half close). */
static void pass_both(int a, int b)
{
    static unsigned char buf[FRAME_MAX];
    int open_a = 1, open_b = 1;
    while (open_a || open_b) {
        struct pollfd p[2] = {{open_a ? a : -1, POLLIN, 0}, {open_b ? b : -1, POLLIN, 0}};
        if (poll(p, 2, -1) < 0)
            continue;
        for (int i = 0; i < 2; i++) {
            if (!p[i].revents)
                continue;
            int from = i ? b : a, to = i ? a : b;
            ssize_t n = read(from, buf, sizeof buf);
            if (n > 0 && ddp_write_all(to, buf, (size_t)n) == 0)
                continue;
            *(i ? &open_b : &open_a) = 0;
            shutdown(to, SHUT_WR);
            if (n < 0)
                return;
        }
    }
}

/* A child that passes the bytes between a and b, then ends; the parent keeps neither. */
static pid_t pass_in_child(int a, int b)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        pass_both(a, b);
        _exit(0);
    }
    close(a);
    close(b);
    return pid;
}

static void reap_children(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

/* A client's connection to the node's side, past its token: its purpose frame's type ('C',
 * 'F'), or -1 when it is none of the session's. */
static int take_purpose(int fd, const char *token)
{
    static unsigned char buf[FRAME_MAX];
    uint32_t len;
    ddp_error_t err;
    if (read_frame(fd, buf, &len, &err) != 'T' || !token_equal(buf, len, token))
        return -1;
    int type = read_frame(fd, buf, &len, &err);
    return type == 'C' || type == 'F' ? type : -1;
}

int relay_serve_port(const char *endpoint, const char *token, int port, int accept_ms,
                     ddp_error_t *err)
{
    int lfd = listen_and_say(endpoint, 16, err);
    if (lfd < 0)
        return -1;
    int control = -1, rc = 0;
    pid_t passing[PASSING_MAX] = {0};
    int64_t deadline = ddp_deadline_in(accept_ms);
    for (;;) {
        for (int i = 0; i < PASSING_MAX; i++)
            if (passing[i] && waitpid(passing[i], NULL, WNOHANG) == passing[i])
                passing[i] = 0;
        if (control < 0 && ddp_ms_left(deadline) == 0) {
            rc = ddp_error_set(err, "no client came within the time given");
            break;
        }
        struct pollfd p[2] = {{lfd, POLLIN, 0}, {control, POLLIN, 0}};
        if (poll(p, 2, CHILD_LOOK_MS * 10) <= 0)
            continue;
        if (p[1].revents) {
            char byte;
            if (read(control, &byte, 1) <= 0)
                break; /* the client stopped forwarding */
        }
        if (!p[0].revents)
            continue;
        int fd = accept(lfd, NULL, NULL);
        if (fd < 0)
            continue;
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        int purpose = take_purpose(fd, token);
        if (purpose == 'C' && control < 0) {
            control = fd;
            continue;
        }
        int slot = -1;
        for (int i = 0; i < PASSING_MAX && slot < 0; i++)
            slot = passing[i] ? -1 : i;
        int there = purpose == 'F' && control >= 0 && slot >= 0
                        ? ddp_net_connect("127.0.0.1", port, ddp_deadline_in(FRAME_MS), err)
                        : -1;
        if (there < 0)
            close(fd);
        else
            passing[slot] = pass_in_child(fd, there);
    }
    close(lfd);
    if (control >= 0)
        close(control);
    for (int i = 0; i < PASSING_MAX; i++)
        if (passing[i] > 0) {
            kill(passing[i], SIGTERM);
            waitpid(passing[i], NULL, 0);
        }
    return rc;
}

/* A connection of the client's to the node's side, past its token and purpose; -1 with err. */
static int open_to_node(const char *host, int port, const char *token, char purpose,
                        ddp_error_t *err)
{
    int fd = ddp_net_connect(host, port, ddp_deadline_in(CONNECT_MS), err);
    if (fd < 0)
        return -1;
    if (send_frame(fd, 'T', token, (uint32_t)strlen(token), err) ||
        send_frame(fd, purpose, NULL, 0, err)) {
        close(fd);
        return -1;
    }
    return fd;
}

int relay_control(const char *host, int port, const char *token, ddp_error_t *err)
{
    return open_to_node(host, port, token, 'C', err);
}

size_t relay_forward_opening(const char *token, unsigned char *out, size_t size)
{
    size_t len = strlen(token), need = 5 + len + 5;
    if (size < need)
        return 0;
    const unsigned char heads[2][5] = {{'T', (unsigned char)(len >> 24), (unsigned char)(len >> 16),
                                        (unsigned char)(len >> 8), (unsigned char)len},
                                       {'F', 0, 0, 0, 0}};
    memcpy(out, heads[0], 5);
    memcpy(out + 5, token, len);
    memcpy(out + 5 + len, heads[1], 5);
    return need;
}

static volatile sig_atomic_t forward_stop;

static void on_forward_stop(int sig)
{
    (void)sig;
    forward_stop = 1;
}

int relay_forward(const char *host, int port, const char *token, int local_port,
                  void (*ready)(void *), void *arg, ddp_error_t *err)
{
    int lfd = ddp_net_listen("127.0.0.1", local_port, 16, NULL, err);
    if (lfd < 0)
        return -1;
    int control = relay_control(host, port, token, err);
    if (control < 0) {
        close(lfd);
        return -1;
    }
    struct sigaction sa = {.sa_handler = on_forward_stop};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (ready)
        ready(arg);
    int rc = 0;
    while (!forward_stop) {
        reap_children();
        struct pollfd p[2] = {{lfd, POLLIN, 0}, {control, POLLIN, 0}};
        if (poll(p, 2, CHILD_LOOK_MS * 10) <= 0)
            continue;
        if (p[1].revents) {
            rc = ddp_error_set(err, "the node's side ended");
            break;
        }
        int fd = p[0].revents ? accept(lfd, NULL, NULL) : -1;
        if (fd < 0)
            continue;
        fcntl(fd, F_SETFD, FD_CLOEXEC);
        int there = open_to_node(host, port, token, 'F', err);
        if (there < 0)
            close(fd);
        else
            pass_in_child(fd, there);
    }
    close(lfd);
    close(control);
    reap_children();
    return rc;
}
