/* store_relay: the store's relay processes (store_link.h), from both ends: the core forking
 * them and serving what they pass on, and a relay's own life. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_net.h"
#include "runtime/job/store_server_internal.h"

/* How long a relay whose link has ended is given to end itself. */
#define RELAY_END_MS 1000

int relay_process(ddp_store_server_t *s, conn_t *c)
{
    if (c->state == CONN_HANDSHAKE && conn_handshake(s, c))
        return -1;
    if (c->state == CONN_READY) {
        if (!c->link_id) {
            c->link_id = (uint64_t)++s->generation << 32 | (uint32_t)c->fd;
            if (store_link_put(&s->uplink, LINK_OPEN, c->link_id, c->peer, strlen(c->peer)))
                return -1;
        }
        if (store_link_put_data(&s->uplink, c->link_id, c->in.data, c->in.len))
            return -1;
        c->in.len = 0;
    }
    return conn_flush(s, c);
}

/* ---- links ---- */

/* The core's connection for a link id, or NULL for one it has closed. */
static conn_t *relay_conn(const relay_t *r, uint64_t id)
{
    uint32_t slot = (uint32_t)id;
    conn_t *c = slot < r->conns_cap ? r->conns[slot] : NULL;
    return c && c->link_id == id ? c : NULL;
}

/* A connection a relay has let in: the core's from now on. */
static int relay_open(ddp_store_server_t *s, relay_t *r, const store_link_msg_t *m)
{
    uint32_t slot = (uint32_t)m->id;
    conn_t *c = conns_reserve(&r->conns, &r->conns_cap, slot) ? NULL : calloc(1, sizeof *c);
    if (!c)
        return -1;
    if (r->conns[slot]) {
        r->conns[slot]->link_ended = 1;
        conn_close(s, r->conns[slot]);
    }
    c->fd = -1;
    c->relay = r;
    c->link_id = m->id;
    c->state = CONN_READY;
    c->accepted_at = c->input_at = ddp_now_ms();
    snprintf(c->peer, sizeof c->peer, "%.*s", (int)m->len, (const char *)m->data);
    r->conns[slot] = c;
    return 0;
}

/* A connection's bytes, passed on by its relay: read as if from its socket. */
static int relay_data(ddp_store_server_t *s, conn_t *c, const store_link_msg_t *m)
{
    if (ddp_store_buf_reserve(&c->in, m->len))
        return -1;
    memcpy(c->in.data + c->in.len, m->data, m->len);
    c->in.len += m->len;
    c->input_at = ddp_now_ms();
    return conn_process(s, c);
}

/* What a relay sent: 0, or -1 when its link has ended or broken. */
static int relay_input(ddp_store_server_t *s, relay_t *r)
{
    int rc = store_link_read(&r->link), got;
    store_link_msg_t m;
    while ((got = store_link_next(&r->link, &m)) == 1) {
        conn_t *c = relay_conn(r, m.id);
        switch (m.kind) {
        case LINK_OPEN:
            if (relay_open(s, r, &m))
                store_link_put(&r->link, LINK_CLOSE, m.id, NULL, 0);
            break;
        case LINK_DATA:
            if (c && relay_data(s, c, &m))
                conn_close(s, c);
            break;
        case LINK_CLOSED:
            if (c) {
                c->link_ended = 1;
                conn_close(s, c);
            }
            break;
        case LINK_LOG:
            server_log(s, "%.*s", (int)m.len, (const char *)m.data);
            break;
        default:
            return -1;
        }
    }
    return got < 0 ? -1 : rc;
}

void relay_lost(ddp_store_server_t *s, relay_t *r)
{
    size_t held = 0;
    for (size_t i = 0; i < r->conns_cap; i++)
        if (r->conns[i]) {
            held++;
            r->conns[i]->link_ended = 1;
            conn_close(s, r->conns[i]);
        }
    free(r->conns);
    r->conns = NULL;
    r->conns_cap = 0;
    if (r->link.fd >= 0)
        epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, r->link.fd, NULL);
    store_link_free(&r->link);
    if (r->pid <= 0)
        return;
    /* A link ends when its relay does (its descriptors close before it can be reaped), so it
     * is given a moment; one still running then has nothing left to do, and is ended. */
    int status = 0, ended_itself = 1;
    int64_t deadline = ddp_deadline_in(s->stopping ? 0 : RELAY_END_MS);
    pid_t got;
    while ((got = waitpid(r->pid, &status, WNOHANG)) == 0 && ddp_ms_left(deadline) > 0)
        ddp_sleep_ms(1);
    if (got == 0 && kill(r->pid, SIGKILL) == 0) {
        ended_itself = 0;
        got = waitpid(r->pid, &status, 0);
    }
    char how[48] = "its link broke";
    if (ended_itself)
        snprintf(how, sizeof how, "%s %d", WIFSIGNALED(status) ? "signal" : "exit status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    if (got == r->pid && !s->stopping)
        server_log(s, "store: relay process %d is gone (%s), and with it %zu connections",
                   (int)r->pid, how, held);
    r->pid = 0;
}

/* Sends what a link can take now and watches it for room while some is left. */
static int link_flush(ddp_store_server_t *s, store_link_t *l, uint32_t *events)
{
    if (l->fd < 0 || store_link_flush(l))
        return -1;
    uint32_t want = EPOLLIN | (store_link_unsent(l) ? EPOLLOUT : 0);
    if (want == *events)
        return 0;
    struct epoll_event ev = {.events = want, .data.fd = l->fd};
    *events = want;
    return epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, l->fd, &ev);
}

static relay_t *relay_for_fd(ddp_store_server_t *s, int fd)
{
    for (size_t i = 0; i < s->nrelays; i++)
        if (s->relays[i].link.fd == fd)
            return &s->relays[i];
    return NULL;
}

/* In a relay: what the core sent. 0, or -1 when the link has ended (and so has the relay). */
static int uplink_input(ddp_store_server_t *s)
{
    int rc = store_link_read(&s->uplink), got;
    store_link_msg_t m;
    while ((got = store_link_next(&s->uplink, &m)) == 1) {
        uint32_t slot = (uint32_t)m.id;
        conn_t *c = slot < s->conns_cap ? s->conns[slot] : NULL;
        if (!c || c->link_id != m.id)
            continue;
        if (m.kind == LINK_CLOSE) {
            c->link_ended = 1;
            conn_close(s, c);
        } else if (m.kind != LINK_DATA || ddp_store_buf_reserve(&c->out, m.len)) {
            return -1;
        } else {
            memcpy(c->out.data + c->out.len, m.data, m.len);
            c->out.len += m.len;
            if (conn_flush(s, c))
                conn_close(s, c);
        }
    }
    return got < 0 ? -1 : rc;
}

/* In a relay: sends to the core, waiting for room while too much is unsent (the clients'
 * bytes stay in their sockets meanwhile). The core reads its links on every turn, so the
 * wait ends unless the core has ended, and then so does the link. */
static int uplink_flush(ddp_store_server_t *s)
{
    while (store_link_unsent(&s->uplink) > UPLINK_HIGH_WATER) {
        struct pollfd pfd = {.fd = s->uplink.fd, .events = POLLOUT};
        if (store_link_flush(&s->uplink) || (poll(&pfd, 1, TICK_MS) < 0 && errno != EINTR) ||
            (pfd.revents & (POLLERR | POLLHUP)))
            return -1;
    }
    return link_flush(s, &s->uplink, &s->uplink_events);
}

int flush_links(ddp_store_server_t *s)
{
    if (s->is_relay)
        return uplink_flush(s);
    for (size_t i = 0; i < s->nrelays; i++)
        if (s->relays[i].link.fd >= 0 && link_flush(s, &s->relays[i].link, &s->relays[i].events))
            relay_lost(s, &s->relays[i]);
    return 0;
}

int link_event(ddp_store_server_t *s, int fd, uint32_t ev)
{
    if (s->is_relay)
        return (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && uplink_input(s) ? -1 : 0;
    relay_t *r = relay_for_fd(s, fd);
    if (r && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && relay_input(s, r))
        relay_lost(s, r);
    return 0;
}

static void relay_log(void *ctx, const char *line)
{
    ddp_store_server_t *s = ctx;
    store_link_put(&s->uplink, LINK_LOG, 0, line, strlen(line));
}

/* The kernel's default ceiling on any process's descriptors (fs.nr_open). */
#define NR_OPEN_DEFAULT (1u << 20)

/* close_range(2) by its number (musl has no wrapper), one by one where the kernel (before 5.9)
 * has none. */
static void close_descriptors(unsigned first, unsigned last)
{
    if (syscall(SYS_close_range, first, last, 0) == 0)
        return;
    size_t limit = descriptor_limit() < NR_OPEN_DEFAULT ? descriptor_limit() : NR_OPEN_DEFAULT;
    for (size_t fd = first; fd <= last && fd < limit; fd++)
        close((int)fd);
}

/* Closes every descriptor above stderr but a and b. */
static void close_all_but(int a, int b)
{
    int lo = a < b ? a : b, hi = a < b ? b : a;
    if (lo > 3)
        close_descriptors(3, (unsigned)lo - 1);
    if (hi > lo + 1)
        close_descriptors((unsigned)lo + 1, (unsigned)hi - 1);
    close_descriptors((unsigned)hi + 1, ~0u);
}

/* A relay process: the listener and its link are all it keeps of the process it was forked
 * from (whose other descriptors, such as its workers' pipes, must not be held open here), and
 * it serves until the link ends or the thread that started the store does. */
static void relay_run(const ddp_store_server_t *core, int link_fd, pid_t core_pid)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != core_pid)
        _exit(1);
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    close_all_but(core->listen_fd, link_fd);
    ddp_store_server_t *s = calloc(1, sizeof *s);
    if (!s)
        _exit(1);
    s->is_relay = s->accepting = 1;
    s->pending_cap = pending_cap(0);
    s->listen_fd = core->listen_fd;
    s->stop_fd = -1;
    s->token = core->token;
    s->token_len = core->token_len;
    s->uplink.fd = link_fd;
    s->uplink_events = EPOLLIN;
    s->log = relay_log;
    s->log_ctx = s;
    ddp_net_set_nonblocking(link_fd);
    struct epoll_event lev = {.events = EPOLLIN, .data.fd = s->listen_fd};
    struct epoll_event uev = {.events = EPOLLIN, .data.fd = link_fd};
    if ((s->epoll_fd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &lev) ||
        epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, link_fd, &uev))
        _exit(1);
    server_main(s);
    _exit(0);
}

size_t descriptor_limit(void)
{
    struct rlimit files;
    if (getrlimit(RLIMIT_NOFILE, &files) || files.rlim_cur == RLIM_INFINITY)
        return SIZE_MAX;
    return (size_t)files.rlim_cur;
}

int relays_needed(size_t clients, size_t *n, ddp_error_t *err)
{
    size_t limit = descriptor_limit();
    *n = 0;
    /* One client always fits: what else the process runs out of, it says itself. */
    if (limit == SIZE_MAX || clients <= 1 || clients + STORE_SPARE_DESCRIPTORS <= limit)
        return 0;
    size_t room = limit > 2 * STORE_SPARE_DESCRIPTORS ? limit - STORE_SPARE_DESCRIPTORS : 0;
    /* Relays race for each connection and a full one leaves it to the others, so a quarter more
     * room than the clients need keeps them from filling up on the way. */
    size_t want = clients + clients / 4;
    *n = room ? (want + room - 1) / room : 0;
    if (!room || *n > STORE_MAX_RELAYS)
        return ddp_error_set(err,
                             "the store keeps a descriptor for each of its %zu clients, and one "
                             "process here may hold %zu (the hard RLIMIT_NOFILE, `ulimit -Hn`): "
                             "that takes more than %d relay processes; raise the hard limit",
                             clients, limit, STORE_MAX_RELAYS);
    return 0;
}

int start_relays(ddp_store_server_t *s, size_t n, ddp_error_t *err)
{
    if (!(s->relays = calloc(n, sizeof *s->relays)))
        return ddp_error_set(err, "out of memory");
    pid_t core = getpid();
    while (s->nrelays < n) {
        relay_t *r = &s->relays[s->nrelays];
        int link[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, link))
            return ddp_error_set(err, "store: cannot link a relay process: %s", strerror(errno));
        r->pid = fork();
        if (r->pid == 0)
            relay_run(s, link[1], core);
        close(link[1]);
        if (r->pid < 0) {
            close(link[0]);
            return ddp_error_set(err, "store: cannot start a relay process: %s", strerror(errno));
        }
        r->link.fd = link[0];
        r->events = EPOLLIN;
        s->nrelays++;
        ddp_net_set_nonblocking(link[0]);
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = link[0]};
        if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, link[0], &ev))
            return ddp_error_set(err, "store: %s", strerror(errno));
    }
    return 0;
}
