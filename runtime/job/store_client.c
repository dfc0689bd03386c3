#include "runtime/job/store_client.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_net.h"
#include "runtime/base/ddp_hmac.h"
#include "runtime/job/store_proto.h"

struct ddp_store_client {
    int fd;
    char where[300];
    int64_t timeout_ms;
    int64_t wait_deadline; /* of the WAIT sent by ddp_store_wait_send */
    int wait_unread;       /* that WAIT's reply is still to come (its caller gave up on it) */
    ddp_store_buf_t out;
    unsigned char *reply;
    size_t reply_cap;
};

static int client_fail(ddp_store_client_t *c, ddp_error_t *err)
{
    return ddp_error_prefix(err, "store %s", c->where);
}

/* One try's share of the wait: a store that stalls mid-handshake is tried again, each try
 * twice as patient as the last (up to CONNECT_TRY_MAX_MS), so that a store busy with thousands
 * of agents is not answered with thousands of new connections. */
#define CONNECT_TRY_MS 1000
#define CONNECT_TRY_MAX_MS 8000

/* Fails with ETIMEDOUT or ECONNRESET where the store did not get as far as judging the token
 * (worth another try), else with what settles it. */
static int handshake(ddp_store_client_t *c, const void *token, size_t token_len, int64_t deadline,
                     ddp_error_t *err)
{
    unsigned char hello[STORE_MAGIC_LEN + STORE_NONCE_LEN];
    ddp_error_t why;
    if (ddp_net_read_full(c->fd, hello, sizeof hello, deadline, &why))
        return ddp_error_code(err, ETIMEDOUT,
                              "no store greeting (%s): node 0 is busy or stopped, or another "
                              "service holds this port",
                              why.msg);
    if (memcmp(hello, STORE_MAGIC, STORE_MAGIC_LEN) != 0)
        return ddp_error_code(err, EPROTO, "the service on this port is not a ddpjob store");
    const unsigned char *server_nonce = hello + STORE_MAGIC_LEN;
    unsigned char answer[STORE_NONCE_LEN + STORE_MAC_LEN];
    if (ddp_random(answer, STORE_NONCE_LEN))
        return ddp_error_set(err, "no random bytes for the handshake");
    ddp_store_auth_mac(token, token_len, "client", server_nonce, answer, answer + STORE_NONCE_LEN);
    if (ddp_net_write_full(c->fd, answer, sizeof answer, deadline, &why))
        return ddp_error_code(err, ECONNRESET, "handshake: %s", why.msg);
    unsigned char verdict, server_mac[STORE_MAC_LEN], expected[STORE_MAC_LEN];
    if (ddp_net_read_full(c->fd, &verdict, 1, deadline, &why))
        return ddp_error_code(
            err, ECONNRESET, "the store dropped the connection during the handshake (%s)", why.msg);
    if (verdict != STORE_ACCEPTED)
        return ddp_error_code(err, EACCES,
                              "refused this job's token (wrong DDPJOB_TOKEN, or "
                              "another job's store on this port)");
    if (ddp_net_read_full(c->fd, server_mac, sizeof server_mac, deadline, &why))
        return ddp_error_set(err, "handshake: %s", why.msg);
    ddp_store_auth_mac(token, token_len, "server", server_nonce, answer, expected);
    if (ddp_equal_secret(server_mac, expected, STORE_MAC_LEN) != 0)
        return ddp_error_code(err, EACCES,
                              "does not know this job's token (another job's store "
                              "on this port?)");
    return 0;
}

ddp_store_client_t *ddp_store_client_connect(const char *host, int port, const void *token,
                                             size_t token_len, int64_t deadline,
                                             const ddp_store_connect_hooks_t *hooks,
                                             ddp_error_t *err)
{
    ddp_error_t unread;
    if (!err)
        err = &unread;
    ddp_store_client_t *c = calloc(1, sizeof *c);
    if (!c) {
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    c->timeout_ms = 30000;
    c->fd = -1;
    snprintf(c->where, sizeof c->where, "%s:%d", host, port);
    int64_t start = ddp_now_ms(), next_note = start + STORE_CONNECT_NOTE_MS;
    /* Tries again while nobody listens or the host cannot be reached yet, and after a handshake
     * the store dropped (it sheds the oldest unproven connections when strangers crowd it). */
    int64_t try_ms = CONNECT_TRY_MS;
    for (int64_t backoff = 5;; backoff = backoff * 2 > 250 ? 250 : backoff * 2) {
        if (hooks && hooks->cancelled && hooks->cancelled(hooks->ctx)) {
            ddp_error_code(err, ECANCELED, "connecting to the store at %s: cancelled", c->where);
            break;
        }
        int64_t try_until = ddp_deadline_in(try_ms);
        if (try_until > deadline)
            try_until = deadline;
        c->fd = ddp_net_connect(host, port, try_until, err);
        if (c->fd < 0) {
            if (err->code == ECONNREFUSED && ddp_ms_left(deadline) == 0)
                ddp_error_code(err, ECONNREFUSED,
                               "cannot connect to %s: nobody listened there before the deadline",
                               c->where);
        } else if (handshake(c, token, token_len, try_until, err) == 0) {
            return c;
        } else {
            close(c->fd);
            c->fd = -1;
            client_fail(c, err);
        }
        int retryable = ddp_net_connect_transient(err) || err->code == ECONNRESET;
        if (!retryable || ddp_ms_left(deadline) == 0)
            break;
        if (err->code == ETIMEDOUT && try_ms < CONNECT_TRY_MAX_MS)
            try_ms *= 2;
        int64_t now = ddp_now_ms();
        if (hooks && hooks->waiting && now >= next_note) {
            char line[2048];
            snprintf(line, sizeof line, "still waiting for the store at %s (%lld of %lld s): %s",
                     c->where, (long long)((now - start) / 1000),
                     (long long)((deadline - start + 500) / 1000), err->msg);
            hooks->waiting(hooks->ctx, line);
            next_note = now + STORE_CONNECT_NOTE_MS;
        }
        int64_t left = ddp_ms_left(deadline);
        ddp_sleep_ms(backoff < left ? backoff : left);
    }
    ddp_store_client_close(c);
    return NULL;
}

void ddp_store_client_close(ddp_store_client_t *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    ddp_store_buf_free(&c->out);
    free(c->reply);
    free(c);
}

void ddp_store_client_set_timeout(ddp_store_client_t *c, int64_t ms)
{
    c->timeout_ms = ms;
}

int ddp_store_client_fd(const ddp_store_client_t *c)
{
    return c->fd;
}

static int read_reply(ddp_store_client_t *c, ddp_store_reader_t *r, int64_t deadline,
                      ddp_error_t *err);

/* Sends the frame built in c->out. */
static int send_request(ddp_store_client_t *c, int64_t deadline, ddp_error_t *err)
{
    /* Replies come in order: one to a WAIT left unread is read, and dropped, first. */
    ddp_store_reader_t dropped;
    if (c->wait_unread) {
        if (read_reply(c, &dropped, c->wait_deadline, err))
            return -1;
        c->wait_unread = 0;
    }
    int rc = ddp_net_write_full(c->fd, c->out.data, c->out.len, deadline, err);
    c->out.len = 0;
    return rc ? client_fail(c, err) : 0;
}

/* Reads one reply frame; r covers its body. */
static int read_reply(ddp_store_client_t *c, ddp_store_reader_t *r, int64_t deadline,
                      ddp_error_t *err)
{
    unsigned char head[4];
    if (ddp_net_read_full(c->fd, head, 4, deadline, err))
        return client_fail(c, err);
    uint32_t len = ddp_store_load_u32(head);
    if (len == 0 || len > STORE_MAX_FRAME) {
        ddp_error_set(err, "malformed reply (frame of %u bytes)", len);
        return client_fail(c, err);
    }
    if (len > c->reply_cap) {
        unsigned char *p = realloc(c->reply, len);
        if (!p)
            return ddp_error_set(err, "out of memory");
        c->reply = p;
        c->reply_cap = len;
    }
    if (ddp_net_read_full(c->fd, c->reply, len, deadline, err))
        return client_fail(c, err);
    *r = (ddp_store_reader_t){.p = c->reply, .end = c->reply + len};
    return 0;
}

/* Sends the request in c->out and reads its reply within the per-request timeout. */
static int roundtrip(ddp_store_client_t *c, ddp_store_reader_t *r, ddp_error_t *err)
{
    int64_t deadline = ddp_deadline_in(c->timeout_ms);
    if (send_request(c, deadline, err) || read_reply(c, r, deadline, err))
        return -1;
    return 0;
}

static int begin(ddp_store_client_t *c, enum store_op op, const char *key, size_t *mark,
                 ddp_error_t *err)
{
    if (key && strlen(key) > STORE_MAX_KEY)
        return ddp_error_set(err, "store key longer than %d bytes", STORE_MAX_KEY);
    c->out.len = 0;
    if (ddp_store_frame_begin(&c->out, mark) || ddp_store_put_u8(&c->out, (uint8_t)op) ||
        (key && ddp_store_put_str(&c->out, key, strlen(key))))
        return ddp_error_set(err, "out of memory");
    return 0;
}

static int finish(ddp_store_client_t *c, size_t mark, int rc, ddp_error_t *err)
{
    if (rc)
        return ddp_error_set(err, "out of memory");
    ddp_store_frame_end(&c->out, mark);
    return 0;
}

static int malformed(ddp_store_client_t *c, ddp_error_t *err)
{
    ddp_error_set(err, "malformed reply");
    return client_fail(c, err);
}

/* A NUL-terminated copy of a string field. */
static char *copy_value(const unsigned char *s, size_t len)
{
    char *v = malloc(len + 1);
    if (v) {
        if (len)
            memcpy(v, s, len);
        v[len] = '\0';
    }
    return v;
}

int ddp_store_ping(ddp_store_client_t *c, ddp_error_t *err)
{
    size_t mark;
    ddp_store_reader_t r;
    if (begin(c, STORE_PING, NULL, &mark, err) || finish(c, mark, 0, err) || roundtrip(c, &r, err))
        return -1;
    return ddp_store_get_u8(&r) != STORE_OK || r.bad ? malformed(c, err) : 0;
}

/* A request of a key and a value, answered with a bare OK: SET and SET_ON_CLOSE. */
static int key_value_request(ddp_store_client_t *c, enum store_op op, const char *key,
                             const void *val, size_t len, ddp_error_t *err)
{
    size_t mark;
    ddp_store_reader_t r;
    if (len > STORE_MAX_VALUE)
        return ddp_error_set(err, "store value longer than %d bytes", STORE_MAX_VALUE);
    if (begin(c, op, key, &mark, err) ||
        finish(c, mark, ddp_store_put_str(&c->out, val, len), err) || roundtrip(c, &r, err))
        return -1;
    return ddp_store_get_u8(&r) != STORE_OK || r.bad ? malformed(c, err) : 0;
}

int ddp_store_set(ddp_store_client_t *c, const char *key, const void *val, size_t len,
                  ddp_error_t *err)
{
    return key_value_request(c, STORE_SET, key, val, len, err);
}

int ddp_store_set_on_close(ddp_store_client_t *c, const char *key, const void *val, size_t len,
                           ddp_error_t *err)
{
    return key_value_request(c, STORE_SET_ON_CLOSE, key, val, len, err);
}

int ddp_store_get(ddp_store_client_t *c, const char *key, char **val, size_t *len, ddp_error_t *err)
{
    size_t mark;
    ddp_store_reader_t r;
    if (begin(c, STORE_GET, key, &mark, err) || finish(c, mark, 0, err) || roundtrip(c, &r, err))
        return -1;
    uint8_t status = ddp_store_get_u8(&r);
    if (status == STORE_NOT_FOUND && !r.bad)
        return 0;
    const unsigned char *s;
    size_t n = ddp_store_get_str(&r, &s, STORE_MAX_VALUE);
    if (status != STORE_OK || r.bad)
        return malformed(c, err);
    if (len)
        *len = n;
    if (!(*val = copy_value(s, n)))
        return ddp_error_set(err, "out of memory");
    return 1;
}

static int add_request(ddp_store_client_t *c, const char *key, int64_t delta, ddp_error_t *err)
{
    size_t mark;
    return ddp_store_frame_begin(&c->out, &mark) || ddp_store_put_u8(&c->out, STORE_ADD) ||
                   ddp_store_put_str(&c->out, key, strlen(key)) || ddp_store_put_i64(&c->out, delta)
               ? ddp_error_set(err, "out of memory")
               : (ddp_store_frame_end(&c->out, mark), 0);
}

static int add_reply(ddp_store_client_t *c, const char *key, ddp_store_reader_t *r, int64_t *result,
                     ddp_error_t *err)
{
    uint8_t status = ddp_store_get_u8(r);
    if (status == STORE_ERROR) {
        const unsigned char *s;
        size_t n = ddp_store_get_str(r, &s, STORE_MAX_VALUE);
        ddp_error_set(err, "add to %s: %.*s", key, r->bad ? 0 : (int)n, s ? (const char *)s : "");
        return client_fail(c, err);
    }
    int64_t v = ddp_store_get_i64(r);
    if (status != STORE_OK || r->bad)
        return malformed(c, err);
    if (result)
        *result = v;
    return 0;
}

int ddp_store_add(ddp_store_client_t *c, const char *key, int64_t delta, int64_t *result,
                  ddp_error_t *err)
{
    ddp_store_reader_t r;
    if (strlen(key) > STORE_MAX_KEY)
        return ddp_error_set(err, "store key longer than %d bytes", STORE_MAX_KEY);
    c->out.len = 0;
    if (add_request(c, key, delta, err) || roundtrip(c, &r, err))
        return -1;
    return add_reply(c, key, &r, result, err);
}

static int cas_request(ddp_store_client_t *c, const char *key, const void *expected,
                       size_t expected_len, const void *desired, size_t desired_len,
                       ddp_error_t *err)
{
    size_t mark;
    if (desired_len > STORE_MAX_VALUE || expected_len > STORE_MAX_VALUE)
        return ddp_error_set(err, "store value longer than %d bytes", STORE_MAX_VALUE);
    if (ddp_store_frame_begin(&c->out, &mark) || ddp_store_put_u8(&c->out, STORE_CAS) ||
        ddp_store_put_str(&c->out, key, strlen(key)) ||
        ddp_store_put_u8(&c->out, expected != NULL) ||
        ddp_store_put_str(&c->out, expected, expected ? expected_len : 0) ||
        ddp_store_put_str(&c->out, desired, desired_len))
        return ddp_error_set(err, "out of memory");
    ddp_store_frame_end(&c->out, mark);
    return 0;
}

static int cas_reply(ddp_store_client_t *c, ddp_store_reader_t *r, char **current, ddp_error_t *err)
{
    uint8_t status = ddp_store_get_u8(r);
    uint8_t swapped = ddp_store_get_u8(r);
    uint8_t present = ddp_store_get_u8(r);
    const unsigned char *s;
    size_t n = ddp_store_get_str(r, &s, STORE_MAX_VALUE);
    if (status != STORE_OK || r->bad)
        return malformed(c, err);
    if (current) {
        *current = NULL;
        if (present && !(*current = copy_value(s, n)))
            return ddp_error_set(err, "out of memory");
    }
    return swapped ? 1 : 0;
}

int ddp_store_cas(ddp_store_client_t *c, const char *key, const void *expected, size_t expected_len,
                  const void *desired, size_t desired_len, char **current, ddp_error_t *err)
{
    ddp_store_reader_t r;
    if (strlen(key) > STORE_MAX_KEY)
        return ddp_error_set(err, "store key longer than %d bytes", STORE_MAX_KEY);
    c->out.len = 0;
    if (cas_request(c, key, expected, expected_len, desired, desired_len, err) ||
        roundtrip(c, &r, err))
        return -1;
    return cas_reply(c, &r, current, err);
}

int ddp_store_batch(ddp_store_client_t *c, ddp_store_batch_op_t *ops, size_t n, ddp_error_t *err)
{
    c->out.len = 0;
    for (size_t i = 0; i < n; i++) {
        ddp_store_batch_op_t *o = &ops[i];
        if (strlen(o->key) > STORE_MAX_KEY)
            return ddp_error_set(err, "store key longer than %d bytes", STORE_MAX_KEY);
        int rc = o->op == STORE_BATCH_ADD ? add_request(c, o->key, o->delta, err)
                                          : cas_request(c, o->key, o->expected, o->expected_len,
                                                        o->desired, o->desired_len, err);
        if (rc)
            return -1;
    }
    int64_t deadline = ddp_deadline_in(c->timeout_ms);
    if (send_request(c, deadline, err))
        return -1;
    for (size_t i = 0; i < n; i++) {
        ddp_store_batch_op_t *o = &ops[i];
        ddp_store_reader_t r;
        if (read_reply(c, &r, deadline, err))
            return -1;
        if (o->op == STORE_BATCH_ADD ? add_reply(c, o->key, &r, &o->sum, err)
                                     : (o->swapped = cas_reply(c, &r, &o->current, err)) < 0)
            return -1;
    }
    return 0;
}

int ddp_store_wait_send(ddp_store_client_t *c, const char *const *keys, size_t nkeys,
                        int64_t timeout_ms, ddp_error_t *err)
{
    size_t mark;
    if (nkeys == 0 || nkeys > STORE_MAX_WAIT_KEYS)
        return ddp_error_set(err, "a wait takes 1 to %d keys", STORE_MAX_WAIT_KEYS);
    if (timeout_ms < 0)
        timeout_ms = 0;
    if (timeout_ms > UINT32_MAX)
        timeout_ms = UINT32_MAX;
    if (begin(c, STORE_WAIT, NULL, &mark, err))
        return -1;
    int rc = ddp_store_put_u32(&c->out, (uint32_t)timeout_ms) ||
             ddp_store_put_u32(&c->out, (uint32_t)nkeys);
    for (size_t i = 0; i < nkeys && !rc; i++) {
        if (strlen(keys[i]) > STORE_MAX_KEY)
            return ddp_error_set(err, "store key longer than %d bytes", STORE_MAX_KEY);
        rc = ddp_store_put_str(&c->out, keys[i], strlen(keys[i]));
    }
    if (finish(c, mark, rc, err))
        return -1;
    if (send_request(c, ddp_deadline_in(c->timeout_ms), err))
        return -1;
    c->wait_deadline = ddp_deadline_in(timeout_ms + c->timeout_ms);
    c->wait_unread = 1;
    return 0;
}

int ddp_store_wait_recv(ddp_store_client_t *c, int *which, char **val, ddp_error_t *err)
{
    ddp_store_reader_t r;
    if (read_reply(c, &r, c->wait_deadline, err))
        return -1;
    c->wait_unread = 0;
    uint8_t status = ddp_store_get_u8(&r);
    if (status == STORE_TIMEOUT && !r.bad)
        return 0;
    uint32_t index = ddp_store_get_u32(&r);
    const unsigned char *s;
    size_t n = ddp_store_get_str(&r, &s, STORE_MAX_VALUE);
    if (status != STORE_OK || r.bad)
        return malformed(c, err);
    if (which)
        *which = (int)index;
    if (val && !(*val = copy_value(s, n)))
        return ddp_error_set(err, "out of memory");
    return 1;
}

int ddp_store_wait(ddp_store_client_t *c, const char *const *keys, size_t nkeys, int64_t timeout_ms,
                   int *which, char **val, ddp_error_t *err)
{
    if (ddp_store_wait_send(c, keys, nkeys, timeout_ms, err))
        return -1;
    return ddp_store_wait_recv(c, which, val, err);
}

/* Requests per pipelined batch: their replies stay far below what the server buffers for one
 * connection before it stops reading (OUT_HIGH_WATER), so neither side can block the other. */
#define PIPELINE_BATCH 256

/* Appends one request frame to c->out (without sending it). */
static int append_request(ddp_store_client_t *c, enum store_op op, const char *key, const char *val,
                          ddp_error_t *err)
{
    size_t mark;
    if (strlen(key) > STORE_MAX_KEY)
        return ddp_error_set(err, "store key longer than %d bytes", STORE_MAX_KEY);
    if (ddp_store_frame_begin(&c->out, &mark) || ddp_store_put_u8(&c->out, (uint8_t)op) ||
        ddp_store_put_str(&c->out, key, strlen(key)) ||
        (val && ddp_store_put_str(&c->out, val, strlen(val))))
        return ddp_error_set(err, "out of memory");
    ddp_store_frame_end(&c->out, mark);
    return 0;
}

/* Sends batches of GET (vals != NULL) or SET requests and reads their replies in order. */
/* GET_AGED also reads each value's age into ages[i]. */
static int pipeline(ddp_store_client_t *c, enum store_op op, const char *const *keys,
                    const char *const *set_vals, char **got_vals, int64_t *ages, size_t n,
                    ddp_error_t *err)
{
    for (size_t first = 0; first < n; first += PIPELINE_BATCH) {
        size_t count = n - first < PIPELINE_BATCH ? n - first : PIPELINE_BATCH;
        int64_t deadline = ddp_deadline_in(c->timeout_ms);
        c->out.len = 0;
        for (size_t i = first; i < first + count; i++)
            if (append_request(c, op, keys[i], set_vals ? set_vals[i] : NULL, err))
                return -1;
        if (send_request(c, deadline, err))
            return -1;
        for (size_t i = first; i < first + count; i++) {
            ddp_store_reader_t r;
            if (read_reply(c, &r, deadline, err))
                return -1;
            uint8_t status = ddp_store_get_u8(&r);
            if (op == STORE_SET || status == STORE_NOT_FOUND) {
                if (r.bad || (op == STORE_SET && status != STORE_OK))
                    return malformed(c, err);
                continue;
            }
            const unsigned char *v;
            size_t len = ddp_store_get_str(&r, &v, STORE_MAX_VALUE);
            if (op == STORE_GET_AGED)
                ages[i] = ddp_store_get_i64(&r);
            if (status != STORE_OK || r.bad)
                return malformed(c, err);
            if (!(got_vals[i] = copy_value(v, len)))
                return ddp_error_set(err, "out of memory");
        }
    }
    return 0;
}

int ddp_store_get_many(ddp_store_client_t *c, const char *const *keys, size_t n, char **vals,
                       ddp_error_t *err)
{
    memset(vals, 0, n * sizeof *vals);
    return pipeline(c, STORE_GET, keys, NULL, vals, NULL, n, err);
}

int ddp_store_get_many_aged(ddp_store_client_t *c, const char *const *keys, size_t n, char **vals,
                            int64_t *ages_us, ddp_error_t *err)
{
    memset(vals, 0, n * sizeof *vals);
    memset(ages_us, 0, n * sizeof *ages_us);
    return pipeline(c, STORE_GET_AGED, keys, NULL, vals, ages_us, n, err);
}

int ddp_store_set_many(ddp_store_client_t *c, const char *const *keys, const char *const *vals,
                       size_t n, ddp_error_t *err)
{
    return pipeline(c, STORE_SET, keys, vals, NULL, NULL, n, err);
}

int ddp_store_delete(ddp_store_client_t *c, const char *key, int *existed, ddp_error_t *err)
{
    size_t mark;
    ddp_store_reader_t r;
    if (begin(c, STORE_DEL, key, &mark, err) || finish(c, mark, 0, err) || roundtrip(c, &r, err))
        return -1;
    uint8_t status = ddp_store_get_u8(&r);
    uint8_t was = ddp_store_get_u8(&r);
    if (status != STORE_OK || r.bad)
        return malformed(c, err);
    if (existed)
        *existed = was;
    return 0;
}
