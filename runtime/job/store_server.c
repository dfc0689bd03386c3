#include "runtime/job/store_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_net.h"
#include "runtime/base/ddp_parse.h"
#include "runtime/base/ddp_hmac.h"
#include "runtime/job/store_proto.h"
#include "runtime/job/store_server_internal.h"

/* Connections that have not proven the token yet are capped at pending_cap(), derived from the
 * descriptor limit: strangers who reach the port can hold at most half of what the job's own
 * clients and the agent's workers leave, each for at most STORE_HANDSHAKE_MS. Past the cap one
 * is dropped for each that arrives, whatever it sent: first the oldest holding part of a
 * handshake (a real client sends its answer whole, in one segment), then the oldest silent for
 * PENDING_STALE_MS, else the oldest of all. Real clients that lose their connection this way
 * try again (store_client.h). */
#define PENDING_MIN 16
#define PENDING_STALE_MS 1000
/* How many of the oldest unproven connections one drop looks at: a flood is shed in constant
 * time per connection. */
#define SHED_LOOK 256
/* The kernel's queue of connections not yet accepted holds the job's agents, at least this many:
 * agents that start at once are then queued, not dropped (each dropped SYN costs its agent a
 * second or more). Linux caps it at net.core.somaxconn, 4,096 by default. */
#define LISTEN_BACKLOG_MIN 4096
/* Refusals are logged at most once per this many ms, with a count of those left unsaid. */
#define REFUSAL_LOG_MS 1000

void server_log(ddp_store_server_t *s, const char *fmt, ...)
{
    if (!s->log)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    s->log(s->log_ctx, line);
}

/* A refused or dropped connection: logged at a bounded rate (a flood of them must not flood the
 * job's log). */
static void refusal_log(ddp_store_server_t *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void refusal_log(ddp_store_server_t *s, const char *fmt, ...)
{
    int64_t now = ddp_now_ms();
    if (s->refusal_logged_at && now - s->refusal_logged_at < REFUSAL_LOG_MS) {
        s->refusals_unsaid++;
        return;
    }
    char line[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (s->refusals_unsaid)
        server_log(s, "%s (and %lu more refused or dropped in the last %.0f s)", line,
                   s->refusals_unsaid, (now - s->refusal_logged_at) / 1000.0);
    else
        server_log(s, "%s", line);
    s->refusal_logged_at = now;
    s->refusals_unsaid = 0;
}

/* ---- keys ---- */

static uint64_t hash_key(const char *key, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 1099511628211ull;
    return h;
}

static int table_grow(ddp_store_server_t *s)
{
    size_t cap = s->table_cap ? s->table_cap * 2 : 1024;
    entry_t **table = calloc(cap, sizeof *table);
    if (!table)
        return -1;
    for (size_t i = 0; i < s->table_cap; i++) {
        entry_t *e = s->table[i];
        if (!e)
            continue;
        size_t j = hash_key(e->key, e->key_len) & (cap - 1);
        while (table[j])
            j = (j + 1) & (cap - 1);
        table[j] = e;
    }
    free(s->table);
    s->table = table;
    s->table_cap = cap;
    return 0;
}

/* The entry for key, created (absent, no waiters) when `create` is set. Entries are never
 * removed: DEL only marks them absent, which keeps linear probing simple. */
static entry_t *table_find(ddp_store_server_t *s, const unsigned char *key, size_t len, int create)
{
    if (s->table_cap) {
        size_t j = hash_key((const char *)key, len) & (s->table_cap - 1);
        for (entry_t *e; (e = s->table[j]); j = (j + 1) & (s->table_cap - 1))
            if (e->key_len == len && memcmp(e->key, key, len) == 0)
                return e;
    }
    if (!create)
        return NULL;
    if ((s->table_used + 1) * 2 > s->table_cap && table_grow(s))
        return NULL;
    entry_t *e = calloc(1, sizeof *e);
    if (!e || !(e->key = malloc(len + 1))) {
        free(e);
        return NULL;
    }
    memcpy(e->key, key, len);
    e->key[len] = '\0';
    e->key_len = len;
    size_t j = hash_key(e->key, len) & (s->table_cap - 1);
    while (s->table[j])
        j = (j + 1) & (s->table_cap - 1);
    s->table[j] = e;
    s->table_used++;
    return e;
}

static void entry_free(entry_t *e)
{
    free(e->key);
    free(e->val);
    free(e->waiters);
    free(e);
}

/* ---- connections ---- */

static void expiry_at(ddp_store_server_t *s, int64_t at)
{
    if (at < s->next_expiry)
        s->next_expiry = at;
}

/* A handshake's or WAIT's time, `ms` from now, which the expiry scan then looks for. */
static void conn_set_deadline(ddp_store_server_t *s, conn_t *c, int64_t ms)
{
    c->deadline = ddp_deadline_in(ms);
    expiry_at(s, c->deadline);
}

static int conn_watch(ddp_store_server_t *s, conn_t *c, uint32_t events)
{
    if (c->relay || events == c->events)
        return 0;
    struct epoll_event ev = {.events = events | EPOLLRDHUP, .data.fd = c->fd};
    c->events = events;
    return epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void entry_drop_waiter(entry_t *e, conn_t *c, size_t slot)
{
    size_t pos = c->waiting_pos[slot];
    struct waiter last = e->waiters[--e->nwaiters];
    e->waiters[pos] = last;
    last.conn->waiting_pos[last.slot] = pos;
}
static void pending_unlink(ddp_store_server_t *s, conn_t *c)
{
    *(c->pending_prev ? &c->pending_prev->pending_next : &s->pending_oldest) = c->pending_next;
    *(c->pending_next ? &c->pending_next->pending_prev : &s->pending_newest) = c->pending_prev;
    c->pending_prev = c->pending_next = NULL;
}

static void conn_unpark(ddp_store_server_t *s, conn_t *c)
{
    for (size_t i = 0; i < c->nwaiting; i++)
        entry_drop_waiter(c->waiting_on[i], c, i);
    free(c->waiting_on);
    free(c->waiting_pos);
    c->waiting_on = NULL;
    c->waiting_pos = NULL;
    c->nwaiting = 0;
    if (c->state != CONN_READY)
        s->nparked--;
    if (c->state == CONN_HANDSHAKE) {
        s->npending--;
        pending_unlink(s, c);
    }
    c->state = CONN_READY;
}

static void set_on_close(ddp_store_server_t *s, const unsigned char *key, size_t key_len,
                         const unsigned char *val, size_t val_len);

void conn_close(ddp_store_server_t *s, conn_t *c)
{
    if (c->state == CONN_WAITING || c->state == CONN_HANDSHAKE)
        conn_unpark(s, c);
    if (c->queued)
        s->ready[c->queued - 1] = NULL;
    if (c->relay) {
        /* A link that fails here is found broken, and dealt with, when next flushed. */
        if (!c->link_ended)
            store_link_put(&c->relay->link, LINK_CLOSE, c->link_id, NULL, 0);
        c->relay->conns[(uint32_t)c->link_id] = NULL;
    } else {
        epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        s->conns[c->fd] = NULL;
        if (c->link_id && !c->link_ended)
            store_link_put(&s->uplink, LINK_CLOSED, c->link_id, NULL, 0);
    }
    if (c->partial)
        s->npartial--;
    ddp_store_buf_free(&c->in);
    ddp_store_buf_free(&c->out);
    /* Set once the connection is gone: waking the key's waiters may close others. */
    if (c->close_key && !s->stopping)
        set_on_close(s, c->close_key, c->close_key_len, c->close_val, c->close_val_len);
    free(c->close_key);
    free(c->close_val);
    free(c);
}

static void queue_ready(ddp_store_server_t *s, conn_t *c)
{
    if (c->queued)
        return;
    if (s->nready == s->ready_cap) {
        size_t cap = s->ready_cap ? s->ready_cap * 2 : 64;
        conn_t **ready = realloc(s->ready, cap * sizeof *ready);
        if (!ready)
            return;
        s->ready = ready;
        s->ready_cap = cap;
    }
    s->ready[s->nready++] = c;
    c->queued = s->nready;
}

int conn_flush(ddp_store_server_t *s, conn_t *c)
{
    if (c->relay) {
        if (store_link_put_data(&c->relay->link, c->link_id, c->out.data, c->out.len))
            return -1;
        c->out.len = c->out_sent = 0;
        return 0;
    }
    while (c->out_sent < c->out.len) {
        ssize_t n = send(c->fd, c->out.data + c->out_sent, c->out.len - c->out_sent,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                break;
            return -1;
        }
        c->out_sent += (size_t)n;
    }
    if (c->out_sent == c->out.len)
        c->out.len = c->out_sent = 0;
    uint32_t events = c->out.len ? EPOLLOUT : 0;
    /* A parked WAIT reads on until it holds input (its client sends nothing meanwhile, mostly):
     * not watching while parked would cost two epoll_ctl calls per waiting agent. */
    if (c->state == CONN_HANDSHAKE || (c->state == CONN_READY && c->out.len < OUT_HIGH_WATER) ||
        (c->state == CONN_WAITING && !c->in.len))
        events |= EPOLLIN;
    return conn_watch(s, c, events);
}

size_t pending_cap(size_t clients)
{
    size_t limit = descriptor_limit();
    if (limit == SIZE_MAX)
        return SIZE_MAX;
    size_t kept = clients + STORE_SPARE_DESCRIPTORS;
    size_t cap = limit > kept ? (limit - kept) / 2 : 0;
    return cap > PENDING_MIN ? cap : PENDING_MIN;
}

/* An unauthenticated connection that has sent nothing (not even into the socket) for
 * PENDING_STALE_MS. */
static int stale_pending(const conn_t *c, int64_t now)
{
    int queued = 0;
    return c->in.len == 0 && now - c->accepted_at >= PENDING_STALE_MS &&
           ioctl(c->fd, FIONREAD, &queued) == 0 && queued == 0;
}

/* Drops one unproven connection other than `newest`, as the rule above picks it. */
static void shed_one(ddp_store_server_t *s, const conn_t *newest)
{
    int64_t now = ddp_now_ms();
    conn_t *partial = NULL, *stale = NULL, *oldest = NULL;
    int looked = 0;
    for (conn_t *c = s->pending_oldest; c && looked < SHED_LOOK && !partial;
         c = c->pending_next, looked++) {
        if (c == newest)
            continue;
        if (c->in.len > 0)
            partial = c;
        else if (!stale && stale_pending(c, now))
            stale = c;
        if (!oldest)
            oldest = c;
    }
    conn_t *victim = partial ? partial : stale ? stale : oldest;
    if (!victim)
        return;
    refusal_log(s,
                "store: dropped connection from %s: %zu connections have not proven the job "
                "token (limit %zu here)",
                victim->peer, s->npending, s->pending_cap);
    conn_close(s, victim);
}

int conns_reserve(conn_t ***conns, size_t *cap, size_t index)
{
    if (index < *cap)
        return 0;
    size_t grown = *cap ? *cap : 256;
    while (grown <= index)
        grown *= 2;
    conn_t **table = realloc(*conns, grown * sizeof *table);
    if (!table)
        return -1;
    memset(table + *cap, 0, (grown - *cap) * sizeof *table);
    *conns = table;
    *cap = grown;
    return 0;
}

static void accept_all(ddp_store_server_t *s)
{
    for (;;) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        int fd = accept4(s->listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if ((errno == EMFILE || errno == ENFILE) && s->npending > 0) {
                /* A stranger's connection makes room for the next, which may be an agent's. */
                shed_one(s, NULL);
                continue;
            }
            if (errno == EMFILE || errno == ENFILE) {
                /* Out of descriptors: stop accepting until the next tick rather than spin. A
                 * full relay is no news: the others take the connections it leaves. */
                if (!s->is_relay)
                    refusal_log(s, "store: cannot accept more connections: %s", strerror(errno));
                epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->listen_fd, NULL);
                s->accept_paused = 1;
            }
            return;
        }
        conn_t *c =
            conns_reserve(&s->conns, &s->conns_cap, (size_t)fd) ? NULL : calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->state = CONN_HANDSHAKE;
        conn_set_deadline(s, c, STORE_HANDSHAKE_MS);
        char addr[INET6_ADDRSTRLEN] = "?";
        int port = 0;
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &sin->sin_addr, addr, sizeof addr);
            port = ntohs(sin->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &sin6->sin6_addr, addr, sizeof addr);
            port = ntohs(sin6->sin6_port);
        }
        snprintf(c->peer, sizeof c->peer, "%s:%d", addr, port);
        c->accepted_at = ddp_now_ms();
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        s->conns[fd] = c;
        s->nparked++;
        s->npending++;
        c->pending_prev = s->pending_newest;
        *(s->pending_newest ? &s->pending_newest->pending_next : &s->pending_oldest) = c;
        s->pending_newest = c;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.fd = fd};
        c->events = EPOLLIN;
        if (ddp_random(c->nonce, sizeof c->nonce) ||
            ddp_store_buf_reserve(&c->out, STORE_MAGIC_LEN + STORE_NONCE_LEN) ||
            epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
            conn_close(s, c);
            continue;
        }
        memcpy(c->out.data, STORE_MAGIC, STORE_MAGIC_LEN);
        memcpy(c->out.data + STORE_MAGIC_LEN, c->nonce, STORE_NONCE_LEN);
        c->out.len = STORE_MAGIC_LEN + STORE_NONCE_LEN;
        if (conn_flush(s, c)) {
            conn_close(s, c);
            continue;
        }
        if (s->npending > s->pending_cap)
            shed_one(s, c);
    }
}

int conn_handshake(ddp_store_server_t *s, conn_t *c)
{
    if (c->in.len < STORE_NONCE_LEN + STORE_MAC_LEN)
        return 0;
    const unsigned char *client_nonce = c->in.data;
    unsigned char expected[STORE_MAC_LEN];
    ddp_store_auth_mac(s->token, s->token_len, "client", c->nonce, client_nonce, expected);
    if (ddp_equal_secret(expected, c->in.data + STORE_NONCE_LEN, STORE_MAC_LEN) != 0) {
        refusal_log(s, "store: refused connection from %s: wrong job token", c->peer);
        /* Best effort: if it does not go out, the client sees a drop and tries again. */
        const unsigned char refused = STORE_REFUSED;
        send(c->fd, &refused, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        return -1;
    }
    unsigned char mac[STORE_MAC_LEN];
    ddp_store_auth_mac(s->token, s->token_len, "server", c->nonce, client_nonce, mac);
    size_t used = STORE_NONCE_LEN + STORE_MAC_LEN;
    memmove(c->in.data, c->in.data + used, c->in.len - used);
    c->in.len -= used;
    conn_unpark(s, c);
    if (ddp_store_buf_reserve(&c->out, 1 + STORE_MAC_LEN))
        return -1;
    c->out.data[c->out.len++] = STORE_ACCEPTED;
    memcpy(c->out.data + c->out.len, mac, STORE_MAC_LEN);
    c->out.len += STORE_MAC_LEN;
    return 0;
}

/* Appends a reply frame: status, then what `fill` adds. */
static int reply_begin(conn_t *c, enum store_status status, size_t *mark)
{
    return ddp_store_frame_begin(&c->out, mark) || ddp_store_put_u8(&c->out, (uint8_t)status) ? -1
                                                                                              : 0;
}

static int reply_value(conn_t *c, uint32_t index, const entry_t *e)
{
    size_t mark;
    if (reply_begin(c, STORE_OK, &mark) || ddp_store_put_u32(&c->out, index) ||
        ddp_store_put_str(&c->out, e->val, e->val_len))
        return -1;
    ddp_store_frame_end(&c->out, mark);
    return 0;
}

/* Answers every WAIT parked on e, which has just been set. */
static void entry_wake(ddp_store_server_t *s, entry_t *e)
{
    while (e->nwaiters) {
        conn_t *c = e->waiters[e->nwaiters - 1].conn;
        uint32_t index = (uint32_t)e->waiters[e->nwaiters - 1].slot;
        conn_unpark(s, c);
        if (reply_value(c, index, e) || conn_flush(s, c)) {
            conn_close(s, c);
            continue;
        }
        queue_ready(s, c);
    }
}

static int entry_assign(ddp_store_server_t *s, entry_t *e, const void *val, size_t len)
{
    unsigned char *copy = malloc(len ? len : 1);
    if (!copy)
        return -1;
    if (len)
        memcpy(copy, val, len);
    free(e->val);
    e->val = copy;
    e->val_len = len;
    e->present = 1;
    e->set_at_us = ddp_now_us();
    entry_wake(s, e);
    return 0;
}

static void set_on_close(ddp_store_server_t *s, const unsigned char *key, size_t key_len,
                         const unsigned char *val, size_t val_len)
{
    entry_t *e = table_find(s, key, key_len, 1);
    if (!e || entry_assign(s, e, val, val_len))
        server_log(s, "store: out of memory setting a key for a closed connection");
}

/* Holds copies of key and value for conn_close; a later call replaces them. */
static int bind_on_close(conn_t *c, const unsigned char *key, size_t key_len,
                         const unsigned char *val, size_t val_len)
{
    unsigned char *k = malloc(key_len ? key_len : 1), *v = malloc(val_len ? val_len : 1);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    memcpy(k, key, key_len);
    memcpy(v, val, val_len);
    free(c->close_key);
    free(c->close_val);
    c->close_key = k;
    c->close_key_len = key_len;
    c->close_val = v;
    c->close_val_len = val_len;
    return 0;
}

static int parse_i64(const unsigned char *p, size_t len, int64_t *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return -1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    long v;
    if (ddp_parse_long(buf, LONG_MIN, LONG_MAX, &v))
        return -1;
    *out = v;
    return 0;
}

static int handle_wait(ddp_store_server_t *s, conn_t *c, ddp_store_reader_t *r)
{
    uint32_t timeout_ms = ddp_store_get_u32(r);
    uint32_t nkeys = ddp_store_get_u32(r);
    if (r->bad || nkeys == 0 || nkeys > STORE_MAX_WAIT_KEYS)
        return -1;
    entry_t **on = calloc(nkeys, sizeof *on);
    if (!on)
        return -1;
    for (uint32_t i = 0; i < nkeys; i++) {
        const unsigned char *key;
        size_t len = ddp_store_get_str(r, &key, STORE_MAX_KEY);
        if (r->bad || !(on[i] = table_find(s, key, len, 1))) {
            free(on);
            return -1;
        }
    }
    if (r->p != r->end) {
        free(on);
        return -1;
    }
    for (uint32_t i = 0; i < nkeys; i++)
        if (on[i]->present) {
            int rc = reply_value(c, i, on[i]);
            free(on);
            return rc;
        }
    if (timeout_ms == 0) {
        size_t mark;
        free(on);
        if (reply_begin(c, STORE_TIMEOUT, &mark))
            return -1;
        ddp_store_frame_end(&c->out, mark);
        return 0;
    }
    size_t *pos = calloc(nkeys, sizeof *pos);
    if (!pos) {
        free(on);
        return -1;
    }
    /* Parked before the waiters are added, so that a failure part way (the caller closes the
     * connection) unparks exactly those added. */
    c->waiting_on = on;
    c->waiting_pos = pos;
    c->nwaiting = 0;
    c->state = CONN_WAITING;
    conn_set_deadline(s, c, timeout_ms);
    s->nparked++;
    for (uint32_t i = 0; i < nkeys; i++) {
        entry_t *e = on[i];
        if (e->nwaiters == e->waiters_cap) {
            size_t cap = e->waiters_cap ? e->waiters_cap * 2 : 4;
            struct waiter *w = realloc(e->waiters, cap * sizeof *w);
            if (!w)
                return -1;
            e->waiters = w;
            e->waiters_cap = cap;
        }
        pos[i] = e->nwaiters;
        e->waiters[e->nwaiters++] = (struct waiter){.conn = c, .slot = i};
        c->nwaiting = i + 1;
    }
    return 0;
}

/* Handles one request frame; -1 means the request was malformed or memory ran out, and the
 * connection is closed. */
/* The replies of the operations on one key: each writes its reply frame's body after `mark`. */
static int op_get(conn_t *c, const entry_t *e)
{
    if (!e || !e->present)
        return 0;
    return ddp_store_put_str(&c->out, e->val, e->val_len);
}

static int op_get_aged(conn_t *c, const entry_t *e)
{
    if (!e || !e->present)
        return 0;
    return ddp_store_put_str(&c->out, e->val, e->val_len) ||
           ddp_store_put_i64(&c->out, ddp_now_us() - e->set_at_us);
}

static int op_del(conn_t *c, entry_t *e)
{
    int had = e && e->present;
    if (had) {
        free(e->val);
        e->val = NULL;
        e->val_len = 0;
        e->present = 0;
    }
    return ddp_store_put_u8(&c->out, (uint8_t)had);
}

/* ADD: why the sum cannot be made (NULL: it can, into *sum). */
static const char *add_refusal(const entry_t *e, int64_t delta, int64_t *sum)
{
    int64_t now = 0;
    if (e->present && parse_i64(e->val, e->val_len, &now))
        return "the value is not an integer";
    if (__builtin_add_overflow(now, delta, sum))
        return "the sum is outside the 64-bit integer range";
    return NULL;
}

static int op_add(ddp_store_server_t *s, conn_t *c, entry_t *e, int64_t sum)
{
    char text[32];
    int n = snprintf(text, sizeof text, "%" PRId64, sum);
    return entry_assign(s, e, text, (size_t)n) || ddp_store_put_i64(&c->out, sum);
}

static int op_cas(ddp_store_server_t *s, conn_t *c, entry_t *e, const ddp_store_request_t *q)
{
    int matches = q->has_expected ? e->present && e->val_len == q->expected_len &&
                                        (q->expected_len == 0 ||
                                         memcmp(e->val, q->expected, q->expected_len) == 0)
                                  : !e->present;
    if (matches && entry_assign(s, e, q->val, q->val_len))
        return -1;
    return ddp_store_put_u8(&c->out, (uint8_t)matches) ||
           ddp_store_put_u8(&c->out, (uint8_t)e->present) ||
           ddp_store_put_str(&c->out, e->val, e->val_len);
}

static int handle_request(ddp_store_server_t *s, conn_t *c, const unsigned char *body, size_t len)
{
    ddp_store_request_t q;
    ddp_store_reader_t rest;
    if (ddp_store_decode_request(body, len, &q, &rest))
        return -1;
    if (q.op == STORE_WAIT)
        return handle_wait(s, c, &rest);
    /* Reads leave a missing key missing; every other operation makes its entry. */
    int gets = q.op == STORE_GET || q.op == STORE_GET_AGED, reads = gets || q.op == STORE_DEL;
    entry_t *e = q.key ? table_find(s, q.key, q.key_len, !reads) : NULL;
    if (q.key && !e && !reads)
        return -1;
    int64_t sum = 0;
    const char *refused = q.op == STORE_ADD ? add_refusal(e, q.delta, &sum) : NULL;
    enum store_status status = refused                      ? STORE_ERROR
                               : gets && !(e && e->present) ? STORE_NOT_FOUND
                                                            : STORE_OK;
    size_t mark;
    if (reply_begin(c, status, &mark))
        return -1;
    int rc = 0;
    switch (q.op) {
    case STORE_SET:
        rc = entry_assign(s, e, q.val, q.val_len);
        break;
    case STORE_SET_ON_CLOSE:
        rc = bind_on_close(c, q.key, q.key_len, q.val, q.val_len);
        break;
    case STORE_GET:
        rc = op_get(c, e);
        break;
    case STORE_GET_AGED:
        rc = op_get_aged(c, e);
        break;
    case STORE_DEL:
        rc = op_del(c, e);
        break;
    case STORE_ADD:
        rc = refused ? ddp_store_put_str(&c->out, refused, strlen(refused)) : op_add(s, c, e, sum);
        break;
    case STORE_CAS:
        rc = op_cas(s, c, e, &q);
        break;
    }
    if (rc)
        return -1;
    ddp_store_frame_end(&c->out, mark);
    return 0;
}

/* When c's handshake, WAIT or half-sent request runs out (INT64_MAX: never). */
static int64_t conn_expiry(const conn_t *c)
{
    int64_t at = c->state == CONN_READY ? INT64_MAX : c->deadline;
    if (c->partial && c->input_at + STORE_FRAME_IDLE_MS < at)
        at = c->input_at + STORE_FRAME_IDLE_MS;
    return at;
}

static int serve_input(ddp_store_server_t *s, conn_t *c)
{
    if (c->state == CONN_HANDSHAKE && conn_handshake(s, c))
        return -1;
    size_t used = 0;
    while (c->state == CONN_READY && c->out.len < OUT_HIGH_WATER && c->in.len - used >= 4) {
        uint32_t len = ddp_store_load_u32(c->in.data + used);
        if (len == 0 || len > STORE_MAX_FRAME) {
            server_log(s, "store: closed connection from %s: frame of %u bytes (limit %d)", c->peer,
                       len, STORE_MAX_FRAME);
            return -1;
        }
        if (c->in.len - used - 4 < len)
            break;
        if (handle_request(s, c, c->in.data + used + 4, len)) {
            server_log(s, "store: closed connection from %s: malformed request", c->peer);
            return -1;
        }
        used += 4 + (size_t)len;
    }
    if (used) {
        memmove(c->in.data, c->in.data + used, c->in.len - used);
        c->in.len -= used;
    }
    int partial = c->state == CONN_READY && c->in.len > 0;
    if (partial != c->partial) {
        c->partial = partial;
        if (partial) {
            s->npartial++;
            expiry_at(s, conn_expiry(c));
        } else
            s->npartial--;
    }
    return conn_flush(s, c);
}

int conn_process(ddp_store_server_t *s, conn_t *c)
{
    int rc = s->is_relay ? relay_process(s, c) : serve_input(s, c);
    /* Given back once empty: thousands of parked agents hold none. */
    if (!rc && !c->in.len)
        ddp_store_buf_free(&c->in);
    return rc;
}

static int conn_read(conn_t *c)
{
    /* Read here, then kept at its size: a connection's buffer fits what it was sent (an agent's
     * few hundred bytes), not the most one read could bring. */
    unsigned char chunk[65536];
    for (;;) {
        ssize_t n = recv(c->fd, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n == 0)
            return -1;
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        if (ddp_store_buf_reserve(&c->in, (size_t)n))
            return -1;
        memcpy(c->in.data + c->in.len, chunk, (size_t)n);
        c->in.len += (size_t)n;
        c->input_at = ddp_now_ms();
        /* Drained, or a whole frame's worth is buffered: process before reading more. */
        if ((size_t)n < sizeof chunk || c->in.len > STORE_MAX_FRAME + 4)
            return 0;
    }
}

/* Ends c if its handshake, its WAIT or its half-sent request has run out of time. */
static void expire_conn(ddp_store_server_t *s, conn_t *c, int64_t now)
{
    if (c->partial && now - c->input_at > STORE_FRAME_IDLE_MS) {
        refusal_log(s, "store: closed connection from %s: half a request, then nothing for %d ms",
                    c->peer, STORE_FRAME_IDLE_MS);
        conn_close(s, c);
        return;
    }
    if (c->state == CONN_READY || c->deadline > now)
        return;
    if (c->state == CONN_HANDSHAKE) {
        refusal_log(s, "store: closed connection from %s: no handshake within %d ms", c->peer,
                    STORE_HANDSHAKE_MS);
        conn_close(s, c);
        return;
    }
    size_t mark;
    conn_unpark(s, c);
    if (reply_begin(c, STORE_TIMEOUT, &mark)) {
        conn_close(s, c);
        return;
    }
    ddp_store_frame_end(&c->out, mark);
    if (conn_flush(s, c))
        conn_close(s, c);
    else
        queue_ready(s, c);
}

/* Expires what is due in one table of connections (closing some) and notes when the rest are. */
static void expire_table(ddp_store_server_t *s, conn_t **conns, size_t cap, int64_t now)
{
    for (size_t i = 0; i < cap && (s->nparked || s->npartial); i++) {
        if (conns[i])
            expire_conn(s, conns[i], now);
        if (conns[i])
            expiry_at(s, conn_expiry(conns[i]));
    }
}

/* Ends handshakes, WAITs and half-sent requests whose time has passed. */
static void expire(ddp_store_server_t *s)
{
    int64_t now = ddp_now_ms();
    if (now >= s->next_expiry) {
        s->next_expiry = INT64_MAX;
        expire_table(s, s->conns, s->conns_cap, now);
        for (size_t r = 0; r < s->nrelays; r++)
            expire_table(s, s->relays[r].conns, s->relays[r].conns_cap, now);
    }
    if (s->accept_paused) {
        struct epoll_event ev = {.events = EPOLLIN, .data.fd = s->listen_fd};
        if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &ev) == 0)
            s->accept_paused = 0;
    }
}

static void process_ready(ddp_store_server_t *s)
{
    for (size_t i = 0; i < s->nready; i++) {
        conn_t *c = s->ready[i];
        if (!c)
            continue;
        c->queued = 0;
        if (conn_process(s, c))
            conn_close(s, c);
    }
    s->nready = 0;
}

void *server_main(void *arg)
{
    ddp_store_server_t *s = arg;
    struct epoll_event events[256];
    int64_t next_tick = ddp_deadline_in(TICK_MS);
    for (;;) {
        int timeout = s->nparked || s->npartial || s->accept_paused ? ddp_ms_left(next_tick) : -1;
        int n = epoll_wait(s->epoll_fd, events, 256, timeout);
        if (n < 0 && errno != EINTR)
            break;
        /* Accepted on every turn, not only when the listener is among the events: while the
         * store works through a burst, arrivals would otherwise fill the kernel's accept queue
         * (4096 at most), and a connection it drops waits a second for its SYN-ACK again. */
        if (s->accepting && !s->accept_paused)
            accept_all(s);
        for (int i = 0; i < n; i++) {
            int fd = events[i].data.fd;
            if (fd == s->stop_fd)
                return NULL;
            if (fd == s->listen_fd)
                continue;
            conn_t *c = (size_t)fd < s->conns_cap ? s->conns[fd] : NULL;
            uint32_t ev = events[i].events;
            if (!c) {
                if (link_event(s, fd, ev))
                    return NULL;
                continue;
            }
            int closing =
                (ev & (EPOLLERR | EPOLLHUP)) || ((ev & EPOLLRDHUP) && c->state == CONN_WAITING);
            if (!closing && (ev & EPOLLIN))
                closing = conn_read(c) || conn_process(s, c);
            if (!closing && (ev & EPOLLOUT))
                closing = conn_flush(s, c) || (queue_ready(s, c), 0);
            if (closing)
                conn_close(s, c);
        }
        process_ready(s);
        if (ddp_ms_left(next_tick) == 0) {
            expire(s);
            process_ready(s);
            next_tick = ddp_deadline_in(TICK_MS);
        }
        if (flush_links(s))
            return NULL;
    }
    return NULL;
}

static void server_free(ddp_store_server_t *s)
{
    s->stopping = 1;
    for (size_t fd = 0; fd < s->conns_cap; fd++)
        if (s->conns[fd])
            conn_close(s, s->conns[fd]);
    for (size_t i = 0; i < s->nrelays; i++)
        relay_lost(s, &s->relays[i]);
    free(s->relays);
    for (size_t i = 0; i < s->table_cap; i++)
        if (s->table[i])
            entry_free(s->table[i]);
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    if (s->epoll_fd >= 0)
        close(s->epoll_fd);
    if (s->stop_fd >= 0)
        close(s->stop_fd);
    if (s->token)
        explicit_bzero(s->token, s->token_len);
    free(s->token);
    free(s->conns);
    free(s->table);
    free(s->ready);
    free(s);
}

ddp_store_server_t *ddp_store_server_start(const char *host, int port, const void *token,
                                           size_t token_len, size_t clients, store_log_fn log,
                                           void *log_ctx, ddp_error_t *err)
{
    ddp_store_server_t *s = calloc(1, sizeof *s);
    if (!s) {
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    s->listen_fd = s->epoll_fd = s->stop_fd = -1;
    ddp_net_raise_descriptor_limit();
    size_t nrelays;
    if (relays_needed(clients, &nrelays, err))
        goto error;
    s->pending_cap = pending_cap(nrelays ? 0 : clients);
    s->log = log;
    s->log_ctx = log_ctx;
    if (!(s->token = malloc(token_len ? token_len : 1))) {
        ddp_error_set(err, "out of memory");
        goto error;
    }
    memcpy(s->token, token, token_len);
    s->token_len = token_len;
    size_t backlog = clients > LISTEN_BACKLOG_MIN ? clients : LISTEN_BACKLOG_MIN;
    if ((s->listen_fd = ddp_net_listen(host, port, backlog < INT_MAX ? (int)backlog : INT_MAX,
                                       &s->port, err)) < 0)
        goto error;
    ddp_net_set_nonblocking(s->listen_fd);
    s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event lev = {.events = EPOLLIN, .data.fd = s->listen_fd};
    struct epoll_event sev = {.events = EPOLLIN, .data.fd = s->stop_fd};
    s->accepting = nrelays == 0;
    if (s->epoll_fd < 0 || s->stop_fd < 0 ||
        (s->accepting && epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &lev)) ||
        epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->stop_fd, &sev)) {
        ddp_error_set(err, "store: %s", strerror(errno));
        goto error;
    }
    if (nrelays && start_relays(s, nrelays, err))
        goto error;
    if (nrelays)
        server_log(s,
                   "store: %zu relay processes hold the connections of its %zu clients (a "
                   "process here may hold %zu descriptors)",
                   nrelays, clients, descriptor_limit());
    int rc = pthread_create(&s->thread, NULL, server_main, s);
    if (rc) {
        ddp_error_set(err, "store: cannot start its thread: %s", strerror(rc));
        goto error;
    }
    return s;
error:
    server_free(s);
    return NULL;
}

int ddp_store_server_port(const ddp_store_server_t *s)
{
    return s->port;
}

void ddp_store_server_stop(ddp_store_server_t *s)
{
    if (!s)
        return;
    uint64_t one = 1;
    if (write(s->stop_fd, &one, sizeof one) != sizeof one)
        pthread_cancel(s->thread);
    pthread_join(s->thread, NULL);
    server_free(s);
}
