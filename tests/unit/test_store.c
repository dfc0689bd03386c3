/* The rendezvous store and the rendezvous on it, over real loopback sockets. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_hmac.h"
#include "runtime/base/ddp_net.h"
#include "runtime/job/rendezvous.h"
#include "runtime/job/store_client.h"
#include "runtime/job/store_proto.h"
#include "runtime/job/store_server.h"
#include "tests/unit/tap.h"

static const char token[] = "job-token-for-tests";

/* The store's last lines: a line looked for may arrive from a relay behind later ones. */
#define LOG_LINES 32
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_log[LOG_LINES][512];
static unsigned log_next;

static void capture_log(void *ctx, const char *line)
{
    pthread_mutex_lock(&log_lock);
    snprintf(last_log[log_next++ % LOG_LINES], sizeof last_log[0], "%s", line);
    pthread_mutex_unlock(&log_lock);
}

static int log_contains(const char *needle)
{
    int64_t deadline = ddp_deadline_in(2000);
    for (;;) {
        pthread_mutex_lock(&log_lock);
        int found = 0;
        for (int i = 0; i < LOG_LINES && !found; i++)
            found = strstr(last_log[i], needle) != NULL;
        pthread_mutex_unlock(&log_lock);
        if (found || ddp_ms_left(deadline) == 0)
            return found;
        ddp_sleep_ms(5);
    }
}

static ddp_store_client_t *client(int port, const char *tok, ddp_error_t *err)
{
    return ddp_store_client_connect("127.0.0.1", port, tok, strlen(tok), ddp_deadline_in(2000),
                                    NULL, err);
}

/* A deadline, not a wait: long enough for a busy machine, where the store's relays are slow to
 * take a connection (2 s was once too short with other suites running). */
#define HANDSHAKE_DEADLINE_MS 20000

/* A connection that proves the token by hand (no store_client), for sending raw frames;
 * *accepted says whether the server's verdict and proof came back. */
static int hand_made_handshake(int port, int *accepted)
{
    ddp_error_t err;
    unsigned char hello[STORE_MAGIC_LEN + STORE_NONCE_LEN], answer[STORE_NONCE_LEN + STORE_MAC_LEN];
    unsigned char verdict[1 + STORE_MAC_LEN];
    int fd = ddp_net_connect("127.0.0.1", port, ddp_deadline_in(HANDSHAKE_DEADLINE_MS), &err);
    ddp_net_read_full(fd, hello, sizeof hello, ddp_deadline_in(HANDSHAKE_DEADLINE_MS), &err);
    memset(answer, 7, STORE_NONCE_LEN);
    ddp_store_auth_mac(token, strlen(token), "client", hello + STORE_MAGIC_LEN, answer,
                       answer + STORE_NONCE_LEN);
    ddp_net_write_full(fd, answer, sizeof answer, ddp_deadline_in(HANDSHAKE_DEADLINE_MS), &err);
    *accepted = ddp_net_read_full(fd, verdict, sizeof verdict,
                                  ddp_deadline_in(HANDSHAKE_DEADLINE_MS), &err) == 0 &&
                verdict[0] == STORE_ACCEPTED;
    return fd;
}

static void test_operations(int port)
{
    ddp_error_t err = {0};
    ddp_store_client_t *c = client(port, token, &err);
    ok(c != NULL, "client connects with the right token (%s)", err.msg);
    if (!c)
        return;
    ok(ddp_store_ping(c, &err) == 0, "ping");
    char *val = NULL;
    size_t len = 0;
    ok(ddp_store_get(c, "missing", &val, &len, &err) == 0, "get of an absent key says so");
    ok(ddp_store_set(c, "k", "v\0w", 3, &err) == 0, "set");
    ok(ddp_store_get(c, "k", &val, &len, &err) == 1 && len == 3 && !memcmp(val, "v\0w", 3),
       "get returns the bytes set, NUL included");
    free(val);
    int64_t sum = 0;
    ok(ddp_store_add(c, "n", 5, &sum, &err) == 0 && sum == 5, "add to an absent key starts at 0");
    ok(ddp_store_add(c, "n", -2, &sum, &err) == 0 && sum == 3, "add accumulates");
    ddp_store_client_t *mortal = client(port, token, &err);
    ok(mortal && ddp_store_set_on_close(mortal, "gone/x", "closed", 6, &err) == 0,
       "a client asks for a key to be set when it goes (%s)", err.msg);
    ok(ddp_store_get(c, "gone/x", &val, &len, &err) == 0, "which is not set while it is there");
    ddp_store_client_close(mortal);
    const char *gone_key = "gone/x";
    ok(ddp_store_wait(c, &gone_key, 1, 2000, NULL, &val, &err) == 1 && !strcmp(val, "closed"),
       "and is set when its connection closes");
    free(val);
    ok(ddp_store_add(c, "big", INT64_MAX, &sum, &err) == 0 &&
           ddp_store_add(c, "big", 1, &sum, &err) == -1 && strstr(err.msg, "outside the 64-bit"),
       "an add past INT64_MAX is refused (%s)", err.msg);
    ok(ddp_store_add(c, "big", INT64_MIN, &sum, &err) == 0 && sum == -1 &&
           ddp_store_add(c, "big", INT64_MIN, &sum, &err) == -1 &&
           ddp_store_add(c, "big", 0, &sum, &err) == 0 && sum == -1,
       "so is one below INT64_MIN, and the value stays as it was");
    ok(ddp_store_add(c, "k", 1, &sum, &err) == -1 && strstr(err.msg, "not an integer"),
       "add to a non-integer is an error: %s", err.msg);
    char *cur = NULL;
    ok(ddp_store_cas(c, "c", NULL, 0, "a", 1, &cur, &err) == 1 && cur && !strcmp(cur, "a"),
       "cas on an absent key swaps");
    free(cur);
    ok(ddp_store_cas(c, "c", NULL, 0, "b", 1, &cur, &err) == 0 && cur && !strcmp(cur, "a"),
       "cas expecting absence fails on a present key and returns the value");
    free(cur);
    ok(ddp_store_cas(c, "c", "a", 1, "b", 1, &cur, &err) == 1 && !strcmp(cur, "b"),
       "cas with the right expected value swaps");
    free(cur);
    int existed = 0;
    ok(ddp_store_delete(c, "c", &existed, &err) == 0 && existed, "delete of a present key");
    ok(ddp_store_get(c, "c", &val, NULL, &err) == 0, "deleted key is gone");
    ok(ddp_store_delete(c, "c", &existed, &err) == 0 && !existed, "delete of an absent key");
    /* An aged get: how long each value has been in the store, by the store's clock. */
    ok(ddp_store_set(c, "aged", "x", 1, &err) == 0, "set a key to age");
    ddp_sleep_ms(50);
    const char *aged_keys[] = {"aged", "never-set"};
    char *aged_vals[2];
    int64_t ages[2];
    ok(ddp_store_get_many_aged(c, aged_keys, 2, aged_vals, ages, &err) == 0 && aged_vals[0] &&
           !strcmp(aged_vals[0], "x") && !aged_vals[1],
       "an aged get reads each value (absent: none)");
    ok(ages[0] >= 50000 && ages[0] < 60000000 && ages[1] == 0,
       "with its age: at least the 50 ms since it was set");
    free(aged_vals[0]);

    const char *keys[] = {"never", "k"};
    int which = -1;
    ok(ddp_store_wait(c, keys, 2, 1000, &which, &val, &err) == 1 && which == 1 && !strcmp(val, "v"),
       "wait on a present key answers at once with its index");
    free(val);
    int64_t t0 = ddp_now_ms();
    ok(ddp_store_wait(c, keys, 1, 150, &which, &val, &err) == 0, "wait times out on an absent key");
    int64_t waited = ddp_now_ms() - t0;
    ok(waited >= 140 && waited < 1000, "the timeout is kept (%lld ms)", (long long)waited);
    ok(ddp_store_ping(c, &err) == 0, "the connection works after a timed-out wait");

    ddp_store_client_t *other = client(port, token, &err);
    ok(ddp_store_wait_send(c, keys, 1, 5000, &err) == 0, "a wait is parked");
    ok(ddp_store_set(other, "never", "now", 3, &err) == 0, "another client sets the key");
    ok(ddp_store_wait_recv(c, &which, &val, &err) == 1 && which == 0 && !strcmp(val, "now"),
       "the parked wait is answered by the other client's set");
    free(val);

    /* A PING sent while a WAIT is parked is answered after it. */
    int accepted = 0, fd = hand_made_handshake(port, &accepted);
    ddp_store_buf_t b = {0};
    size_t wait_end, mark;
    ddp_store_frame_begin(&b, &mark);
    ddp_store_put_u8(&b, STORE_WAIT);
    ddp_store_put_u32(&b, 5000);
    ddp_store_put_u32(&b, 1);
    ddp_store_put_str(&b, "later", 5);
    ddp_store_frame_end(&b, mark);
    wait_end = b.len;
    ddp_store_frame_begin(&b, &mark);
    ddp_store_put_u8(&b, STORE_PING);
    ddp_store_frame_end(&b, mark);
    struct pollfd early = {.fd = fd, .events = POLLIN};
    ddp_net_write_full(fd, b.data, wait_end, ddp_deadline_in(2000), &err);
    int quiet = poll(&early, 1, 200) == 0;
    ddp_net_write_full(fd, b.data + wait_end, b.len - wait_end, ddp_deadline_in(2000), &err);
    ddp_store_buf_free(&b);
    ok(accepted && quiet && poll(&early, 1, 200) == 0,
       "nothing is answered while the WAIT is parked, a PING sent after it included");
    ok(ddp_store_set(other, "later", "now", 3, &err) == 0, "another client sets its key");
    unsigned char head[4], body[64], pong[5];
    uint32_t wait_len = 0;
    int read_wait = ddp_net_read_full(fd, head, 4, ddp_deadline_in(2000), &err) == 0 &&
                    (wait_len = ddp_store_load_u32(head)) <= sizeof body &&
                    ddp_net_read_full(fd, body, wait_len, ddp_deadline_in(2000), &err) == 0;
    ok(read_wait && body[0] == STORE_OK, "the WAIT is answered first");
    ok(ddp_net_read_full(fd, pong, sizeof pong, ddp_deadline_in(2000), &err) == 0 &&
           ddp_store_load_u32(pong) == 1 && pong[4] == STORE_OK,
       "then the PING behind it");
    close(fd);
    ddp_store_client_close(other);

    char *big = calloc(1, STORE_MAX_VALUE + 1);
    ok(ddp_store_set(c, "big", big, STORE_MAX_VALUE, &err) == 0, "a value at the limit is stored");
    ok(ddp_store_get(c, "big", &val, &len, &err) == 1 && len == STORE_MAX_VALUE,
       "and read back whole");
    free(val);
    ok(ddp_store_set(c, "big", big, STORE_MAX_VALUE + 1, &err) == -1,
       "a value over the limit is refused by the client: %s", err.msg);
    free(big);
    ddp_store_client_close(c);
}

static void test_refusals(int port)
{
    ddp_error_t err = {0};
    ddp_store_client_t *c = client(port, "wrong-token", &err);
    ok(c == NULL && strstr(err.msg, "refused this job's token"), "a wrong token is refused: %s",
       err.msg);
    ok(log_contains("refused connection from 127.0.0.1"), "and the server logs the refusal");

    /* A peer that speaks garbage after the handshake: the server closes it and goes on. */
    int accepted;
    int fd = hand_made_handshake(port, &accepted);
    ok(accepted, "a hand-made handshake is accepted");
    unsigned char mac[1];
    const unsigned char huge[] = {0x7f, 0xff, 0xff, 0xff, STORE_GET};
    ddp_net_write_full(fd, huge, sizeof huge, ddp_deadline_in(2000), &err);
    ok(ddp_net_read_full(fd, mac, 1, ddp_deadline_in(2000), &err) == -1 &&
           strstr(err.msg, "closed"),
       "an oversized frame closes the connection: %s", err.msg);
    ok(log_contains("frame of 2147483647 bytes"), "and is logged");
    close(fd);

    fd = hand_made_handshake(port, &accepted);
    const unsigned char truncated[] = {0, 0, 0, 3, STORE_SET, 0, 9};
    ddp_net_write_full(fd, truncated, sizeof truncated, ddp_deadline_in(2000), &err);
    ok(ddp_net_read_full(fd, mac, 1, ddp_deadline_in(2000), &err) == -1,
       "a frame whose fields overrun it closes the connection");
    ok(log_contains("malformed request"), "and is logged as malformed");
    close(fd);

    /* A peer that reads the server's hello and never answers: closed after STORE_HANDSHAKE_MS. */
    unsigned char hello[STORE_MAGIC_LEN + STORE_NONCE_LEN];
    int mute = ddp_net_connect("127.0.0.1", port, ddp_deadline_in(2000), &err);
    int64_t mute_at = ddp_now_ms();
    ok(mute >= 0 && ddp_net_read_full(mute, hello, sizeof hello, ddp_deadline_in(2000), &err) == 0,
       "a peer reads the server's hello (%s)", err.msg);
    ok(ddp_net_read_full(mute, hello, 1, ddp_deadline_in(STORE_HANDSHAKE_MS + 3000), &err) == -1 &&
           strstr(err.msg, "closed") && ddp_now_ms() - mute_at >= STORE_HANDSHAKE_MS - 100,
       "a peer silent after the hello is closed after %d ms (%s)", STORE_HANDSHAKE_MS, err.msg);
    ok(log_contains("no handshake within"), "and is logged");
    close(mute);

    /* Half a request, then silence: closed after STORE_FRAME_IDLE_MS, not held for ever. */
    fd = hand_made_handshake(port, &accepted);
    const unsigned char half[] = {0, 0, 0, 100, STORE_SET};
    ddp_net_write_full(fd, half, sizeof half, ddp_deadline_in(2000), &err);
    int64_t sent = ddp_now_ms();
    ok(ddp_net_read_full(fd, mac, 1, ddp_deadline_in(STORE_FRAME_IDLE_MS + 3000), &err) == -1 &&
           strstr(err.msg, "closed") && ddp_now_ms() - sent >= STORE_FRAME_IDLE_MS - 100,
       "half a request then silence is closed after %d ms (%s)", STORE_FRAME_IDLE_MS, err.msg);
    close(fd);

    c = client(port, token, &err);
    ok(c && ddp_store_ping(c, &err) == 0, "the server still serves after all that");
    ddp_store_client_close(c);

    int busy_port = 0;
    ddp_error_t lerr = {0};
    int busy = ddp_net_listen("127.0.0.1", 0, 1, &busy_port, &lerr);
    ddp_store_server_t *s =
        ddp_store_server_start("127.0.0.1", busy_port, token, strlen(token), 0, NULL, NULL, &lerr);
    ok(s == NULL && strstr(lerr.msg, "in use"), "a port in use is named: %s", lerr.msg);
    close(busy);
    int64_t t0 = ddp_now_ms();
    c = client(busy_port, token, &err);
    ok(c == NULL && strstr(err.msg, "nobody listened"),
       "connecting where nobody listens fails at the deadline: %s", err.msg);
    ok(ddp_now_ms() - t0 >= 1900, "after retrying until then");
}

struct joiner {
    int port, node, nnodes, nproc, round;
    int64_t deadline;
    ddp_rdzv_result_t result;
    int rc;
    ddp_error_t err;
};

static void *join_thread(void *arg)
{
    struct joiner *j = arg;
    ddp_store_client_t *c = client(j->port, token, &j->err);
    j->rc = -1;
    if (c) {
        char host[32];
        snprintf(host, sizeof host, "host%d", j->node);
        ddp_rdzv_join_t spec = {.round = j->round,
                                .node_rank = j->node,
                                .nnodes = j->nnodes,
                                .nproc = j->nproc,
                                .host = host,
                                .worker_port = 4242,
                                .deadline = j->deadline};
        j->rc = ddp_rdzv_join(c, &spec, &j->result, &j->err);
        ddp_store_client_close(c);
    }
    return NULL;
}

static void test_rendezvous(int port)
{
    enum { N = 5 };
    const int nproc[N] = {2, 1, 3, 1, 2};
    struct joiner j[N];
    pthread_t t[N];
    /* Start in reverse so that node 0 is the last to arrive. */
    for (int i = N - 1; i >= 0; i--) {
        j[i] = (struct joiner){.port = port,
                               .node = i,
                               .nnodes = N,
                               .nproc = nproc[i],
                               .round = 0,
                               .deadline = ddp_deadline_in(5000)};
        pthread_create(&t[i], NULL, join_thread, &j[i]);
    }
    int all_ok = 1, base = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        if (j[i].rc || j[i].result.rank_base != base || j[i].result.world_size != 9 ||
            j[i].result.worker_port != 4242) {
            all_ok = 0;
            printf("# node %d: rc %d base %d world %d: %s\n", i, j[i].rc, j[i].result.rank_base,
                   j[i].result.world_size, j[i].err.msg);
        }
        base += nproc[i];
    }
    ok(all_ok, "5 nodes with 2,1,3,1,2 workers get node-major bases 0,2,3,6,7 of 9");
    ok(j[0].result.node_hosts && !strcmp(j[0].result.node_hosts[4], "host4"),
       "node 0 learns every node's host");
    for (int i = 0; i < N; i++)
        ddp_rdzv_result_free(&j[i].result);

    /* Node ranks 1 and 3 of 4 never come. */
    struct joiner a = {.port = port,
                       .node = 0,
                       .nnodes = 4,
                       .nproc = 1,
                       .round = 1,
                       .deadline = ddp_deadline_in(300)};
    struct joiner b = {.port = port,
                       .node = 2,
                       .nnodes = 4,
                       .nproc = 1,
                       .round = 1,
                       .deadline = ddp_deadline_in(300)};
    pthread_create(&t[0], NULL, join_thread, &a);
    pthread_create(&t[1], NULL, join_thread, &b);
    pthread_join(t[0], NULL);
    pthread_join(t[1], NULL);
    ok(a.rc == -1 && strstr(a.err.msg, "node rank(s) 1, 3 never arrived"),
       "a rendezvous timeout names the missing nodes: %s", a.err.msg);
    ok(b.rc == -1 && strstr(b.err.msg, "1, 3 never arrived"), "on every waiting agent");

    struct joiner dup = {.port = port,
                         .node = 2,
                         .nnodes = 4,
                         .nproc = 1,
                         .round = 1,
                         .deadline = ddp_deadline_in(300)};
    join_thread(&dup);
    ok(dup.rc == -1 && strstr(dup.err.msg, "node rank 2 has already joined from host host2"),
       "a node rank given twice is named: %s", dup.err.msg);
}

static int digest_is(const unsigned char got[DDP_SHA256_LEN], const char *hex)
{
    char text[2 * DDP_SHA256_LEN + 1];
    ddp_hex(got, DDP_SHA256_LEN, text);
    return strcmp(text, hex) == 0;
}

/* The handshake's MAC against FIPS 180-4 and RFC 4231 vectors (any other value and a store built
 * here would refuse a correct peer built elsewhere). */
static void test_hmac(void)
{
    unsigned char out[DDP_SHA256_LEN], key[131];
    ddp_sha256("", 0, out);
    ok(digest_is(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
       "sha256 of nothing");
    ddp_sha256("abc", 3, out);
    ok(digest_is(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
       "sha256 of abc");
    const char *two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    ddp_sha256(two_blocks, strlen(two_blocks), out);
    ok(digest_is(out, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
       "sha256 of 56 bytes (padding spills into a second block)");
    memset(key, 0x0b, 20);
    ddp_hmac_sha256(key, 20, "Hi There", 8, out);
    ok(digest_is(out, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
       "hmac-sha256, RFC 4231 case 1");
    memset(key, 0xaa, sizeof key);
    const char *msg = "Test Using Larger Than Block-Size Key - Hash Key First";
    ddp_hmac_sha256(key, sizeof key, msg, strlen(msg), out);
    ok(digest_is(out, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
       "hmac-sha256, RFC 4231 case 6 (key longer than a block)");
    ok(ddp_equal_secret("abcd", "abcd", 4) == 0 && ddp_equal_secret("abcd", "abce", 4) != 0,
       "secrets compare equal only when equal");
}

static atomic_int crowd_log_lines;

static void count_log(void *ctx, const char *line)
{
    crowd_log_lines++;
}

/* Reads the store's port on `go`, opens n connections to it that never finish a handshake (each
 * sends one byte of it when `one_byte`), says how many on `ready`, waits for a byte on `go`, then
 * writes how many of them the store has closed. Runs in a child process: a stranger. */
static void crowd(int n, int one_byte, int ready, int go) __attribute__((noreturn));
static void crowd(int n, int one_byte, int ready, int go)
{
    struct rlimit files;
    getrlimit(RLIMIT_NOFILE, &files);
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
    int port = 0;
    if (read(go, &port, sizeof port) != sizeof port)
        _exit(1);
    int *fds = calloc((size_t)n, sizeof *fds), opened = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (; fds && opened < n; opened++) {
        fds[opened] = socket(AF_INET, SOCK_STREAM, 0);
        if (fds[opened] < 0 || connect(fds[opened], (struct sockaddr *)&sa, sizeof sa))
            break;
        if (one_byte && write(fds[opened], "x", 1) != 1)
            break;
    }
    char byte = 0;
    if (write(ready, &opened, sizeof opened) < 0 || read(go, &byte, 1) < 0)
        _exit(1);
    int closed = 0;
    for (int i = 0; i < opened; i++) {
        char buf[64];
        ssize_t r;
        while ((r = recv(fds[i], buf, sizeof buf, MSG_DONTWAIT)) > 0)
            ;
        closed += r == 0 || (r < 0 && errno == ECONNRESET);
    }
    _exit(write(ready, &closed, sizeof closed) == sizeof closed ? 0 : 1);
}

typedef struct {
    pid_t pid;
    int to_parent[2], to_child[2];
} stranger_t;

static void stranger_start(stranger_t *x, int one_byte)
{
    if (pipe(x->to_parent) || pipe(x->to_child)) {
        x->pid = -1;
        return;
    }
    if ((x->pid = fork()) == 0)
        crowd(1100, one_byte, x->to_parent[1], x->to_child[0]);
}

/* 1100 connections from a stranger, more than the store's process may hold (a hard limit of
 * 1024 descriptors), do not keep a client with the token out: a store past its cap of unproven
 * connections drops the oldest, whatever they sent. */
static void crowded_store(stranger_t *x, const char *what)
{
    ddp_error_t err = {0};
    crowd_log_lines = 0;
    ddp_store_server_t *s =
        ddp_store_server_start("127.0.0.1", 0, token, strlen(token), 2, count_log, NULL, &err);
    ok(s != NULL, "a store starts with 256 descriptors (%s)", err.msg);
    struct rlimit files;
    getrlimit(RLIMIT_NOFILE, &files);
    ok(files.rlim_cur == files.rlim_max, "and raises the limit to the hard one (%llu)",
       (unsigned long long)files.rlim_cur);
    int port = s ? ddp_store_server_port(s) : 0, opened = 0, closed = -1;
    if (x->pid < 0 || write(x->to_child[1], &port, sizeof port) != sizeof port || !s) {
        if (x->pid > 0)
            kill(x->pid, SIGKILL);
        ddp_store_server_stop(s);
        return;
    }
    ok(read(x->to_parent[0], &opened, sizeof opened) == sizeof opened && opened == 1100,
       "a stranger opened %d %s connections", opened, what);
    ddp_store_client_t *c = client(port, token, &err);
    ok(c && ddp_store_ping(c, &err) == 0, "a client with the token still gets in (%s)",
       c ? "ok" : err.msg);
    ddp_store_client_close(c);
    ddp_sleep_ms(200);
    if (write(x->to_child[1], "", 1) != 1 ||
        read(x->to_parent[0], &closed, sizeof closed) != sizeof closed)
        closed = -1;
    size_t cap = (files.rlim_cur - 2 - STORE_SPARE_DESCRIPTORS) / 2;
    ok(closed >= 1100 - (int)cap, "the store dropped the oldest %s ones past its cap of %zu (%d)",
       what, cap, closed);
    ok(crowd_log_lines > 0 && crowd_log_lines < 10, "and logged that %d time(s), not once per drop",
       (int)crowd_log_lines);
    waitpid(x->pid, NULL, 0);
    ddp_store_server_stop(s);
}

static void test_crowded(void)
{
    /* Forked before the limit is lowered, for good: the strangers keep descriptors of their own. */
    stranger_t idle, one_byte;
    stranger_start(&idle, 0);
    stranger_start(&one_byte, 1);
    struct rlimit files;
    getrlimit(RLIMIT_NOFILE, &files);
    struct rlimit low = {256, files.rlim_max < 1024 ? files.rlim_max : 1024};
    setrlimit(RLIMIT_NOFILE, &low);
    crowded_store(&idle, "idle");
    crowded_store(&one_byte, "1-byte");
}

/* ---- relays: a store for more clients than its process may hold descriptors for ---- */

#define RELAY_CLIENTS 300
#define RELAY_LIMIT 160

struct relay_report {
    int relays_serving, held_pipe_closed, refusal_logged, loss_logged, relays_left;
};

/* This process's children (its store's relays): how many, and the first's pid. */
static int children(pid_t *first)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)getpid(), (int)getpid());
    FILE *f = fopen(path, "r");
    int n = 0, pid;
    while (f && fscanf(f, "%d", &pid) == 1)
        if (n++ == 0 && first)
            *first = pid;
    if (f)
        fclose(f);
    return n;
}

/* The store's process, under a hard limit of RELAY_LIMIT descriptors: sends its port (-1 and
 * why not) and serves; at a byte, kills one relay and answers; at the next, stops and reports
 * what it saw of its relays. */
static void relay_store_process(int to_parent, int from_parent)
{
    struct relay_report rep = {0};
    struct rlimit low = {RELAY_LIMIT, RELAY_LIMIT};
    int held[2], port = -1;
    ddp_error_t err = {0};
    ddp_store_server_t *s = NULL;
    if (setrlimit(RLIMIT_NOFILE, &low) || pipe(held) ||
        !(s = ddp_store_server_start("127.0.0.1", 0, token, strlen(token), RELAY_CLIENTS,
                                     capture_log, NULL, &err)))
        _exit(write(to_parent, &port, sizeof port) != sizeof port ||
              write(to_parent, err.msg, strlen(err.msg)) < 0);
    /* A relay holding this pipe's write end would keep its reader from ever seeing the end. */
    close(held[1]);
    struct pollfd pfd = {.fd = held[0], .events = POLLIN};
    char byte;
    rep.held_pipe_closed = poll(&pfd, 1, 5000) == 1 && read(held[0], &byte, 1) == 0;
    port = ddp_store_server_port(s);
    if (write(to_parent, &port, sizeof port) != sizeof port || read(from_parent, &byte, 1) != 1)
        _exit(1);
    pid_t victim = 0;
    rep.relays_serving = children(&victim);
    rep.refusal_logged = log_contains("wrong job token");
    rep.loss_logged =
        victim > 0 && kill(victim, SIGKILL) == 0 && log_contains("is gone (signal 9)");
    if (write(to_parent, &byte, 1) != 1 || read(from_parent, &byte, 1) != 1)
        _exit(1);
    ddp_store_server_stop(s);
    rep.relays_left = children(NULL);
    _exit(write(to_parent, &rep, sizeof rep) == sizeof rep ? 0 : 1);
}

static void relay_checks(int port, ddp_store_client_t **c)
{
    ddp_error_t err = {0};
    int failed = 0;
    for (int i = 0; i < RELAY_CLIENTS && !failed; i++) {
        char key[32], val[32];
        snprintf(key, sizeof key, "k%d", i);
        snprintf(val, sizeof val, "v%d", i);
        failed = ddp_store_set(c[i], key, val, strlen(val), &err) != 0 ||
                 ddp_store_add(c[i], "count", 1, &(int64_t){0}, &err) != 0;
    }
    char *val = NULL;
    size_t len = 0;
    int64_t count = 0;
    ok(!failed && ddp_store_get(c[0], "k299", &val, &len, &err) == 1 && !strcmp(val, "v299") &&
           ddp_store_add(c[299], "count", 0, &count, &err) == 0 && count == RELAY_CLIENTS,
       "every client's keys are one store's, whichever relay holds it (%s)", err.msg);
    free(val);
    const char *go = "go";
    for (int i = 1; i < RELAY_CLIENTS && !failed; i++)
        failed = ddp_store_wait_send(c[i], &go, 1, 10000, &err) != 0;
    int woken = 0;
    if (!failed && ddp_store_set(c[0], "go", "1", 1, &err) == 0)
        for (int i = 1; i < RELAY_CLIENTS; i++, val = NULL) {
            int which = -1;
            woken += ddp_store_wait_recv(c[i], &which, &val, &err) == 1 && !strcmp(val, "1");
            free(val);
        }
    ok(woken == RELAY_CLIENTS - 1, "one SET wakes %d clients waiting through relays (%s)", woken,
       err.msg);
    size_t big_len = STORE_MAX_VALUE;
    char *big = malloc(big_len);
    memset(big, 'b', big_len);
    ok(ddp_store_set(c[5], "big", big, big_len, &err) == 0 &&
           ddp_store_get(c[6], "big", &val, &len, &err) == 1 && len == big_len &&
           !memcmp(val, big, len),
       "a value of the largest size passes both ways (%s)", err.msg);
    free(val);
    free(big);
    int64_t t0 = ddp_now_ms();
    const char *never = "never";
    ok(ddp_store_wait(c[7], &never, 1, 300, NULL, NULL, &err) == 0 && ddp_now_ms() - t0 >= 300,
       "a WAIT through a relay times out");
    ok(ddp_store_set_on_close(c[8], "gone", "bye", 3, &err) == 0, "a key to set on close");
    ddp_store_client_close(c[8]);
    c[8] = NULL;
    const char *gone = "gone";
    ok(ddp_store_wait(c[9], &gone, 1, 5000, NULL, &val, &err) == 1 && !strcmp(val, "bye"),
       "is set when its client, on a relay, goes (%s)", err.msg);
    free(val);
}

/* What the core closes is closed at the client: a frame of length zero is malformed. */
static void relay_malformed(int port)
{
    int accepted = 0;
    int fd = hand_made_handshake(port, &accepted);
    unsigned char zero[4] = {0};
    char buf[16];
    ddp_error_t err;
    ok(accepted && ddp_net_write_full(fd, zero, sizeof zero, ddp_deadline_in(2000), &err) == 0 &&
           ddp_net_read_full(fd, buf, 1, ddp_deadline_in(5000), &err) != 0,
       "a malformed frame through a relay ends its connection (%s)", err.msg);
    close(fd);
}

static void test_relays(void)
{
    ddp_net_raise_descriptor_limit();
    int to_parent[2], to_child[2];
    if (pipe(to_parent) || pipe(to_child)) {
        ok(0, "pipes for the store's process");
        return;
    }
    pid_t child = fork();
    if (child == 0)
        relay_store_process(to_parent[1], to_child[0]);
    struct relay_report rep = {0};
    int port = -1;
    if (read(to_parent[0], &port, sizeof port) != sizeof port || port < 0) {
        char why[1024] = "";
        close(to_parent[1]);
        ssize_t got = read(to_parent[0], why, sizeof why - 1);
        ok(0, "a store under %d descriptors for %d clients starts (%s)", RELAY_LIMIT, RELAY_CLIENTS,
           got > 0 ? why : "no word");
        waitpid(child, NULL, 0);
        return;
    }
    ddp_store_client_t *c[RELAY_CLIENTS];
    ddp_error_t err = {0};
    int connected = 0;
    for (int i = 0; i < RELAY_CLIENTS; i++)
        connected += (c[i] = client(port, token, &err)) != NULL;
    ok(connected == RELAY_CLIENTS,
       "%d clients hold connections at once to a store whose process may hold %d (%s)", connected,
       RELAY_LIMIT, err.msg);
    if (connected == RELAY_CLIENTS)
        relay_checks(port, c);
    relay_malformed(port);
    ddp_store_client_t *stranger = client(port, "another-token", &err);
    ok(!stranger && strstr(err.msg, "refused"), "a relay refuses another job's token: %s", err.msg);
    ddp_store_client_close(stranger);
    char byte;
    int cut = 0;
    if (write(to_child[1], "", 1) == 1 && read(to_parent[0], &byte, 1) == 1)
        for (int i = 0; i < RELAY_CLIENTS; i++)
            cut += c[i] && ddp_store_ping(c[i], &err) != 0;
    ok(cut > 0 && cut < connected,
       "a relay killed takes its %d clients' connections with it, and only theirs", cut);
    for (int i = 0; i < RELAY_CLIENTS; i++)
        ddp_store_client_close(c[i]);
    if (write(to_child[1], "", 1) != 1 || read(to_parent[0], &rep, sizeof rep) != sizeof rep)
        rep.relays_serving = -1;
    ok(rep.held_pipe_closed, "relays hold none of the process's other descriptors");
    ok(rep.relays_serving > 1, "%d relay processes served them", rep.relays_serving);
    ok(rep.refusal_logged, "a relay's refusal reaches the store's log");
    ok(rep.loss_logged, "and so does the loss of a relay");
    ok(rep.relays_left == 0, "none is left once the store stops (%d)", rep.relays_left);
    int status = -1;
    waitpid(child, &status, 0);
    ok(status == 0, "the store's process ended well");
}

int main(void)
{
    test_hmac();
    test_relays();
    ddp_error_t err = {0};
    ddp_store_server_t *s =
        ddp_store_server_start("127.0.0.1", 0, token, strlen(token), 0, capture_log, NULL, &err);
    ok(s != NULL, "server starts on a free port (%s)", err.msg);
    if (!s)
        return done_testing();
    int port = ddp_store_server_port(s);
    test_operations(port);
    test_refusals(port);
    test_rendezvous(port);
    ddp_store_server_stop(s);
    /* Last: it lowers this process's hard descriptor limit for good. */
    test_crowded();
    return done_testing();
}
