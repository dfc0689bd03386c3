/* pg_tcp: the process group's CPU backend, over TCP.
 *
 * Every pair of ranks shares one connection (a full mesh made at create: rank r connects to the
 * ranks below it and accepts the ones above, each proving the group's nonce from the store).
 * Each connection carries two ordered byte streams, one per direction, so both ends agree on
 * what every byte is as long as they call operations in the same order.
 *
 * All work is a queue of transfers per peer and direction, driven by one progress loop over
 * nonblocking sockets (progress()). A transfer that finishes may run a step (reduce what it
 * received, forward it), which is how the collectives pipeline: the ring all_reduce queues its
 * segments and every received segment is reduced and sent on while the next one is arriving, so
 * sending and receiving never wait for each other and no segment size can deadlock on full
 * socket buffers.
 *
 * A peer whose connection closes or resets while an operation runs is named at once, whatever
 * the operation was waiting for (every connection is watched for hang-ups, so the ranks that
 * were not its neighbours in a ring learn of it too); nothing outlives the deadline.
 *
 * Ranks on one host (pg_shm_host_key) run the collectives through shared memory (pg_shm.c)
 * instead, keeping their connections for point to point and as the sign of life the shared
 * memory waits watch. When the group spans several hosts and some hold several ranks, all_reduce
 * is hierarchical (within each host, then the ring of the hosts' leaders over TCP, then back
 * within each host); the other collectives stay on the flat TCP algorithms. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_hmac.h"
#include "runtime/base/ddp_net.h"
#include "runtime/pg/pg_backend.h"
#include "runtime/pg/pg_reduce.h"
#include "runtime/pg/pg_shm.h"
#include "runtime/job/store_proto.h"

/* The pipelining unit: small enough that reducing one segment overlaps receiving the next, big
 * enough that per-segment costs vanish. */
#define SEGMENT_BYTES (256u << 10)
#define NONCE_HEX 32

typedef struct tcp tcp_t;
typedef struct xfer xfer_t;

/* One transfer on one peer's stream. `step`, when set, runs once it is complete. */
struct xfer {
    unsigned char *buf;
    size_t len, done;
    int peer;
    void (*step)(tcp_t *t, xfer_t *x);
    void *ctx;
    unsigned char *target;       /* where a received segment is reduced into or sent from again */
    const unsigned char *source; /* what a received segment is reduced with */
    int forward;
    int held;        /* a queued send whose data is not ready yet: the queue waits at it */
    xfer_t *release; /* the held send this transfer's completion makes ready */
    int finished;
    xfer_t *next;
};

typedef struct {
    int fd;
    xfer_t *send_head, *send_tail, *recv_head, *recv_tail;
} peer_t;

/* Ranks that run a TCP algorithm together, in ring order: everyone, or the hosts' leaders. */
typedef struct {
    int *ranks;
    int n, pos; /* pos: this rank's place in ranks (-1: not a member) */
} team_t;

struct tcp {
    int rank, size;
    int64_t timeout_ms;
    peer_t *peers;
    struct pollfd *pfd;
    int *pfd_peer;
    xfer_t *pool; /* the running collective's transfers (one collective at a time) */
    size_t pool_cap;
    unsigned char *stage; /* one segment: received data waiting to be reduced */
    int closing;          /* in the final barrier: peers that finished may close */
    team_t everyone;
    /* Ranks on this host share memory (pg_shm) when there are several. With several hosts too,
     * all_reduce is hierarchical: within each host, then between the hosts' leaders. */
    pg_shm_t *shm;
    team_t leaders;
    int hierarchical;
    int failed;         /* the queues were abandoned after an error */
    ddp_error_t *fault; /* set by a step that finds something wrong */
};

/* A user's isend/irecv: an 8-byte length header, then the payload. */
typedef struct {
    xfer_t header, body;
    unsigned char wire_len[8];
    size_t expected;
} request_t;

/* ---- the progress engine ------------------------------------------------------------------ */

static void enqueue(tcp_t *t, xfer_t *x, int send)
{
    peer_t *p = &t->peers[x->peer];
    xfer_t **head = send ? &p->send_head : &p->recv_head;
    xfer_t **tail = send ? &p->send_tail : &p->recv_tail;
    x->next = NULL;
    x->done = 0;
    x->finished = 0;
    if (*tail)
        (*tail)->next = x;
    else
        *head = x;
    *tail = x;
}

static void abandon_queues(tcp_t *t)
{
    for (int i = 0; i < t->size; i++) {
        peer_t *p = &t->peers[i];
        p->send_head = p->send_tail = p->recv_head = p->recv_tail = NULL;
    }
    t->failed = 1;
}

/* How long a failing rank waits before naming the peers that are gone: a dead process's
 * connections do not all end at the same instant, and a neighbour that failed because of it may
 * be seen first. */
#define LOSS_SETTLE_MS 100

/* Appends ", RANK" (or "RANK" first) to the list in buf while it fits. */
static void list_rank(char *buf, size_t size, size_t *len, int rank)
{
    if (*len + 16 < size)
        *len += (size_t)snprintf(buf + *len, size - *len, "%s%d", *len ? ", " : "", rank);
}

/* Whether peer i's connection has ended (hung up or failed). */
static int hung_up(const tcp_t *t, int i)
{
    struct pollfd pfd = {.fd = t->peers[i].fd, .events = POLLRDHUP};
    return pfd.fd >= 0 && poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Every peer whose connection has ended, `known` (detected by the caller) included: the one that
 * died first is seen together with those that failed because of it, so all are named. Only the
 * `n_suspects` ranks of `suspects` are looked at, where that is not NULL. */
static int peer_lost(tcp_t *t, int known, int errnum, const int *suspects, int n_suspects,
                     ddp_error_t *err)
{
    ddp_sleep_ms(LOSS_SETTLE_MS);
    char names[256] = "";
    size_t len = 0;
    int lost = 0;
    for (int k = 0; k < (suspects ? n_suspects : t->size); k++) {
        int i = suspects ? suspects[k] : k;
        peer_t *p = &t->peers[i];
        if (p->fd < 0)
            continue;
        if (i != known && !hung_up(t, i))
            continue;
        list_rank(names, sizeof names, &len, i);
        lost++;
    }
    abandon_queues(t);
    const char *whom = lost > 1 ? "ranks" : "rank";
    if (errnum)
        return ddp_error_set(err, "lost the connection to %s %s: %s", whom, names,
                             strerror(errnum));
    return ddp_error_set(err, "%s %s closed the connection (exited or died)", whom, names);
}

static void complete(tcp_t *t, xfer_t *x, int send)
{
    peer_t *p = &t->peers[x->peer];
    xfer_t **head = send ? &p->send_head : &p->recv_head;
    xfer_t **tail = send ? &p->send_tail : &p->recv_tail;
    *head = x->next;
    if (!*head)
        *tail = NULL;
    x->finished = 1;
    if (x->step)
        x->step(t, x);
}

/* Moves what the socket takes now in one direction of one peer's stream; -1 on error. */
static int pump_queue(tcp_t *t, int peer, int sending, ddp_error_t *err)
{
    peer_t *p = &t->peers[peer];
    xfer_t *x;
    while ((x = sending ? p->send_head : p->recv_head)) {
        if (x->held)
            return 0;
        if (x->done < x->len) {
            size_t want = x->len - x->done;
            ssize_t n = sending ? send(p->fd, x->buf + x->done, want, MSG_NOSIGNAL | MSG_DONTWAIT)
                                : recv(p->fd, x->buf + x->done, want, MSG_DONTWAIT);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    return 0;
                return peer_lost(t, peer, errno, NULL, 0, err);
            }
            if (n == 0)
                return peer_lost(t, peer, 0, NULL, 0, err);
            x->done += (size_t)n;
        }
        if (x->done == x->len)
            complete(t, x, sending);
        if (t->fault && t->fault->msg[0]) {
            abandon_queues(t);
            return -1;
        }
    }
    return 0;
}

/* Sends again after receiving: a receive may have released the send at the queue's head. */
static int pump(tcp_t *t, int peer, ddp_error_t *err)
{
    return pump_queue(t, peer, 1, err) || pump_queue(t, peer, 0, err) || pump_queue(t, peer, 1, err)
               ? -1
               : 0;
}

/* After a poll: a peer that hung up where nothing is expected from it is gone (where a receive
 * is pending, the data before the end is read first and the read sees the end). */
static int lost_peer(tcp_t *t, int n, ddp_error_t *err)
{
    for (int k = 0; k < n; k++) {
        peer_t *p = &t->peers[t->pfd_peer[k]];
        if ((t->pfd[k].revents & (POLLRDHUP | POLLHUP | POLLERR)) && !p->recv_head) {
            int soerr = 0;
            socklen_t optlen = sizeof soerr;
            getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &soerr, &optlen);
            return peer_lost(t, t->pfd_peer[k], soerr, NULL, 0, err);
        }
    }
    return 0;
}

typedef int (*done_fn)(const void *ctx);

static void waiting_names(tcp_t *t, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < t->size; i++)
        if (t->peers[i].send_head || t->peers[i].recv_head)
            list_rank(buf, size, &len, i);
}

/* The longest one poll of a wait sleeps, so that a time to give up set meanwhile is seen. */
#define GIVE_UP_POLL_MS 200
/* pg_give_up_waiting_at's time (0: none). Lock-free, so a signal handler may set it. */
static _Atomic int64_t give_up_at;

void pg_give_up_waiting_at(int64_t at)
{
    give_up_at = at;
}

/* Drives every queue until done(ctx) or the deadline (or the time to give up, if that is
 * sooner). */
static int progress(tcp_t *t, done_fn done, const void *ctx, int64_t deadline, ddp_error_t *err)
{
    ddp_error_t fault = {0};
    t->fault = &fault;
    int rc = -1;
    for (;;) {
        for (int i = 0; i < t->size; i++)
            if ((t->peers[i].send_head || t->peers[i].recv_head) && pump(t, i, err)) {
                if (fault.msg[0])
                    ddp_error_set(err, "%s", fault.msg);
                goto out;
            }
        if (done(ctx)) {
            rc = 0;
            goto out;
        }
        int n = 0;
        for (int i = 0; i < t->size; i++) {
            peer_t *p = &t->peers[i];
            if (p->fd < 0)
                continue;
            short events = (short)((p->send_head && !p->send_head->held ? POLLOUT : 0) |
                                   (p->recv_head ? POLLIN : 0));
            /* Idle connections are watched too, so a peer's death is news to every rank. */
            if (!events && t->closing)
                continue;
            t->pfd[n] = (struct pollfd){.fd = p->fd, .events = (short)(events | POLLRDHUP)};
            t->pfd_peer[n++] = i;
        }
        int64_t give_up = give_up_at;
        int giving_up = give_up && give_up < deadline;
        /* In slices: the signal that sets the time to give up may wake another thread. */
        int64_t left = ddp_ms_left(giving_up ? give_up : deadline);
        int ready = poll(t->pfd, (nfds_t)n, left < GIVE_UP_POLL_MS ? (int)left : GIVE_UP_POLL_MS);
        if (ready < 0 && errno != EINTR) {
            ddp_error_set(err, "poll: %s", strerror(errno));
            abandon_queues(t);
            goto out;
        }
        if (ready == 0 && giving_up && ddp_ms_left(give_up) == 0) {
            char who[256];
            waiting_names(t, who, sizeof who);
            ddp_error_set(err, "gave up waiting for rank(s) %s: this process was asked to stop",
                          who);
            abandon_queues(t);
            goto out;
        }
        if (ready == 0 && ddp_ms_left(deadline) == 0) {
            char who[256];
            waiting_names(t, who, sizeof who);
            ddp_error_set(err, "timed out after %.0f s waiting for rank(s) %s",
                          (double)t->timeout_ms / 1000, who);
            abandon_queues(t);
            goto out;
        }
        if (ready > 0 && lost_peer(t, n, err))
            goto out;
    }
out:
    t->fault = NULL;
    return rc;
}

static int xfer_finished(const void *ctx)
{
    return ((const xfer_t *)ctx)->finished;
}
static int counter_zero(const void *ctx)
{
    return *(const size_t *)ctx == 0;
}

/* ---- collectives as plans of transfers ---------------------------------------------------- */

/* One collective's transfers (in the group's pool, sized up front for the most the plan can
 * add) and a count of those not finished yet. Received segments that are reduced land at the
 * same offset in `out` as their other operand has in `in`, so the input is never copied first. */
typedef struct {
    xfer_t *pool;
    size_t used, pending;
    pg_reduce_fn reduce;
    size_t esize;
    unsigned char *stage;
    const unsigned char *in;
    unsigned char *out;
    int forward_to;
} plan_t;

static int plan_init(tcp_t *t, plan_t *pl, size_t cap, pg_reduce_fn reduce, size_t esize,
                     ddp_error_t *err)
{
    if (cap > t->pool_cap) {
        xfer_t *grown = realloc(t->pool, cap * sizeof *grown);
        if (!grown)
            return ddp_error_set(err, "out of memory for %zu transfers", cap);
        t->pool = grown;
        t->pool_cap = cap;
    }
    *pl = (plan_t){.pool = t->pool, .reduce = reduce, .esize = esize, .stage = t->stage};
    return 0;
}

static void plan_step(tcp_t *t, xfer_t *x);

static void plan_add(tcp_t *t, plan_t *pl, int peer, int send, unsigned char *buf,
                     unsigned char *target, size_t len, int forward)
{
    xfer_t *x = &pl->pool[pl->used++];
    *x = (xfer_t){.buf = buf,
                  .len = len,
                  .peer = peer,
                  .step = plan_step,
                  .ctx = pl,
                  .target = target,
                  .forward = forward};
    pl->pending++;
    enqueue(t, x, send);
}

static size_t segments(size_t len)
{
    return (len + SEGMENT_BYTES - 1) / SEGMENT_BYTES;
}

/* `len` bytes at `at` as the plan's next segments(len) transfers, not queued yet; with `reduce`
 * a received segment lands in the stage and is reduced into `at` with the input's same bytes.
 * Returns the first. */
static xfer_t *plan_segment_xfers(plan_t *pl, int peer, unsigned char *at, size_t len, int reduce)
{
    xfer_t *first = &pl->pool[pl->used];
    for (size_t off = 0; off < len; off += SEGMENT_BYTES) {
        xfer_t *x = &pl->pool[pl->used++];
        *x = (xfer_t){.buf = reduce ? pl->stage : at + off,
                      .len = len - off < SEGMENT_BYTES ? len - off : SEGMENT_BYTES,
                      .peer = peer,
                      .step = plan_step,
                      .ctx = pl,
                      .target = at + off};
        if (reduce)
            x->source = pl->in + (x->target - pl->out);
        pl->pending++;
    }
    return first;
}

/* Queues `len` bytes at `at` as segments, reduced (see plan_segment_xfers) when `reduce` and
 * sent on to pl->forward_to when `forward`. */
static void plan_segments(tcp_t *t, plan_t *pl, int peer, int send, unsigned char *at, size_t len,
                          int reduce, int forward)
{
    xfer_t *xs = plan_segment_xfers(pl, peer, at, len, reduce);
    for (size_t k = 0, n = segments(len); k < n; k++) {
        xs[k].forward = forward;
        enqueue(t, &xs[k], send);
    }
}

static void plan_step(tcp_t *t, xfer_t *x)
{
    plan_t *pl = x->ctx;
    pl->pending--;
    if (x->source)
        pl->reduce(x->target, x->source, pl->stage, x->len / pl->esize);
    if (x->release)
        x->release->held = 0;
    if (x->forward)
        plan_add(t, pl, pl->forward_to, 1, x->target, x->target, x->len, 0);
}

static int plan_run(tcp_t *t, plan_t *pl, ddp_error_t *err)
{
    return progress(t, counter_zero, &pl->pending, ddp_deadline_in(t->timeout_ms), err);
}

/* Chunk c of `count` elements split over n ranks: the first count % n chunks get one more. */
static void chunk(size_t count, int n, int c, size_t esize, size_t *off, size_t *len)
{
    size_t base = count / (size_t)n, rem = count % (size_t)n, uc = (size_t)c;
    *off = (uc * base + (uc < rem ? uc : rem)) * esize;
    *len = (base + (uc < rem)) * esize;
}

static int mod(int a, int n)
{
    return ((a % n) + n) % n;
}

/* The ring of a team from `in` to `out` (count elements; the same buffer for the all-gather
 * alone): reduce-scatter then all-gather, either phase optional. After reduce-scatter the member
 * at place r holds the reduction of chunk r in out. Received segments are reduced (or, in the
 * all-gather, stored) and sent on to the next member while later ones arrive. */
static int ring(tcp_t *t, const team_t *team, const unsigned char *in, unsigned char *out,
                size_t count, size_t esize, pg_reduce_fn reduce, int reduce_scatter, int all_gather,
                ddp_error_t *err)
{
    int n = team->n, r = team->pos;
    int next = team->ranks[mod(r + 1, n)], prev = team->ranks[mod(r - 1, n)];
    size_t off, len, total_segments = 0;
    for (int c = 0; c < n; c++) {
        chunk(count, n, c, esize, &off, &len);
        total_segments += segments(len);
    }
    plan_t pl;
    if (plan_init(t, &pl, 4 * total_segments, reduce_scatter ? reduce : NULL, esize, err))
        return -1;
    pl.in = in;
    pl.out = out;
    pl.forward_to = next;
    int last = n - 2;
    if (reduce_scatter) {
        chunk(count, n, mod(r - 1, n), esize, &off, &len);
        plan_segments(t, &pl, next, 1, (unsigned char *)in + off, len, 0, 0);
        for (int s = 0; s <= last; s++) {
            chunk(count, n, mod(r - 2 - s, n), esize, &off, &len);
            plan_segments(t, &pl, prev, 0, out + off, len, 1, s < last || all_gather);
        }
    } else {
        chunk(count, n, r, esize, &off, &len);
        plan_segments(t, &pl, next, 1, out + off, len, 0, 0);
    }
    if (all_gather)
        for (int s = 0; s <= last; s++) {
            chunk(count, n, mod(r - 1 - s, n), esize, &off, &len);
            plan_segments(t, &pl, prev, 0, out + off, len, 0, s < last);
        }
    return plan_run(t, &pl, err);
}

/* Two ranks exchange halves: each sends the raw half the other reduces and receives the raw
 * half it reduces, then each sends its reduced half back. A reduced segment goes out PAIR_LAG
 * segments after it was made, between the raw ones, while it is still in cache (waiting for the
 * whole raw half first would read it back from memory). Both ranks derive the same interleaved
 * order (merge()), so each stream still carries what the other side expects, and a reduced
 * segment only ever waits for raw segments sent before it: no deadlock. */
#define PAIR_LAG 4

/* Queues first[] and second[] as one stream: second[j] goes after first[j + lag]. */
static void merge(tcp_t *t, xfer_t *first, size_t n_first, xfer_t *second, size_t n_second,
                  int send)
{
    size_t j = 0;
    for (size_t i = 0; i < n_first; i++) {
        enqueue(t, &first[i], send);
        for (; j < n_second && j + PAIR_LAG <= i; j++)
            enqueue(t, &second[j], send);
    }
    for (; j < n_second; j++)
        enqueue(t, &second[j], send);
}

static int pair_all_reduce(tcp_t *t, const team_t *team, const unsigned char *in,
                           unsigned char *out, size_t count, size_t esize, pg_reduce_fn reduce,
                           ddp_error_t *err)
{
    int peer = team->ranks[1 - team->pos];
    size_t mine_off, mine_len, theirs_off, theirs_len;
    chunk(count, 2, team->pos, esize, &mine_off, &mine_len);
    chunk(count, 2, 1 - team->pos, esize, &theirs_off, &theirs_len);
    size_t nm = segments(mine_len), nt = segments(theirs_len);
    plan_t pl;
    if (plan_init(t, &pl, 2 * (nm + nt), reduce, esize, err))
        return -1;
    pl.in = in;
    pl.out = out;
    xfer_t *raw_out =
        plan_segment_xfers(&pl, peer, (unsigned char *)in + theirs_off, theirs_len, 0);
    xfer_t *done_out = plan_segment_xfers(&pl, peer, out + mine_off, mine_len, 0);
    xfer_t *raw_in = plan_segment_xfers(&pl, peer, out + mine_off, mine_len, 1);
    xfer_t *done_in = plan_segment_xfers(&pl, peer, out + theirs_off, theirs_len, 0);
    for (size_t k = 0; k < nm; k++) {
        done_out[k].held = 1;
        raw_in[k].release = &done_out[k];
    }
    merge(t, raw_out, nt, done_out, nm, 1);
    merge(t, raw_in, nm, done_in, nt, 0);
    return plan_run(t, &pl, err);
}

/* Small all_reduces are bound by round trips, not bandwidth: every rank sends its whole input
 * to every other at once (one round trip instead of the ring's 2(n-1) steps) and reduces all
 * inputs itself, in rank order, so every rank computes the bit-identical result. */
#define DIRECT_MAX_BYTES (16u << 10)

static int takes_direct(size_t bytes, int ranks)
{
    return bytes <= DIRECT_MAX_BYTES && bytes * (size_t)ranks <= SEGMENT_BYTES;
}

static int direct_all_reduce(tcp_t *t, const team_t *team, const void *in, void *out, size_t bytes,
                             size_t esize, pg_reduce_fn reduce, ddp_error_t *err)
{
    unsigned char *slots = t->stage, *mine = slots + bytes * (size_t)team->pos;
    plan_t pl;
    if (plan_init(t, &pl, 2 * (size_t)team->n, NULL, esize, err))
        return -1;
    memcpy(mine, in, bytes);
    for (int q = 0; q < team->n; q++)
        if (q != team->pos) {
            plan_add(t, &pl, team->ranks[q], 1, mine, NULL, bytes, 0);
            plan_add(t, &pl, team->ranks[q], 0, slots + bytes * (size_t)q, NULL, bytes, 0);
        }
    if (plan_run(t, &pl, err))
        return -1;
    reduce(out, slots, slots + bytes, bytes / esize);
    for (int q = 2; q < team->n; q++)
        reduce(out, out, slots + bytes * (size_t)q, bytes / esize);
    return 0;
}

/* Large buffers are aligned to and advised into huge pages: the kernel's socket copies and the
 * reductions then walk a handful of TLB entries instead of one per 4 KiB. */
#define HUGE_PAGE_BYTES (2u << 20)

static void *host_alloc(size_t bytes, ddp_error_t *err)
{
    void *p = NULL;
    if (bytes >= HUGE_PAGE_BYTES) {
        if (posix_memalign(&p, HUGE_PAGE_BYTES, bytes) == 0)
            madvise(p, bytes, MADV_HUGEPAGE);
    } else {
        p = malloc(bytes ? bytes : 1);
    }
    if (!p)
        ddp_error_set(err, "out of memory for %zu bytes", bytes);
    return p;
}

/* The caller's buffers: in this rank's shared heap where the host's ranks share memory, so that
 * all_reduce works on them in place (pg_shm_heap.h). */
static void *tcp_alloc(void *be, size_t bytes, ddp_error_t *err)
{
    tcp_t *t = be;
    void *p = t->shm ? pg_shm_alloc(t->shm, bytes) : NULL;
    return p ? p : host_alloc(bytes, err);
}

static void tcp_free(void *be, void *buf)
{
    tcp_t *t = be;
    if (!t->shm || !pg_shm_free(t->shm, buf))
        free(buf);
}

/* ---- shared memory ----------------------------------------------------------------------- */

/* What a collective on shared memory watches while it waits: the same deadline, time to give up
 * and dead-peer naming as the TCP progress loop. */
typedef struct {
    tcp_t *t;
    int64_t deadline;
} shm_wait_t;

static int shm_check(void *ctx, const int *late, int n_late, ddp_error_t *err)
{
    shm_wait_t *w = ctx;
    for (int k = 0; k < n_late; k++)
        if (hung_up(w->t, late[k]))
            return peer_lost(w->t, late[k], 0, late, n_late, err);
    int64_t give_up = give_up_at;
    int giving_up = give_up && ddp_ms_left(give_up) == 0;
    if (!giving_up && ddp_ms_left(w->deadline) > 0)
        return 0;
    char who[256] = "";
    size_t len = 0;
    for (int k = 0; k < n_late; k++)
        list_rank(who, sizeof who, &len, late[k]);
    if (giving_up)
        return ddp_error_set(err, "gave up waiting for rank(s) %s: this process was asked to stop",
                             who);
    return ddp_error_set(err, "timed out after %.0f s waiting for rank(s) %s",
                         (double)w->t->timeout_ms / 1000, who);
}

#define SHM_WATCH(t)                                                                               \
    (&(pg_shm_watch_t){shm_check, &(shm_wait_t){(t), ddp_deadline_in((t)->timeout_ms)}})

/* Whether a collective other than all_reduce runs on shared memory: when every rank is here. */
static int all_on_this_host(const tcp_t *t)
{
    return t->shm && !t->hierarchical;
}

/* ---- all_reduce ------------------------------------------------------------------------- */

static int team_all_reduce(tcp_t *t, const team_t *team, const void *in, void *out, size_t count,
                           size_t esize, pg_reduce_fn reduce, ddp_error_t *err)
{
    size_t bytes = count * esize;
    if (team->n == 1) {
        memmove(out, in, bytes);
        return 0;
    }
    if (takes_direct(bytes, team->n))
        return direct_all_reduce(t, team, in, out, bytes, esize, reduce, err);
    if (team->n == 2)
        return pair_all_reduce(t, team, in, out, count, esize, reduce, err);
    return ring(t, team, in, out, count, esize, reduce, 1, 1, err);
}

/* Each host's ranks reduce into their leader over shared memory, the leaders all_reduce over
 * TCP, and each leader broadcasts the result to its host's ranks. */
static int hierarchical_all_reduce(tcp_t *t, const void *in, void *out, size_t count, size_t esize,
                                   pg_reduce_fn reduce, ddp_error_t *err)
{
    if (t->shm) {
        if (pg_shm_reduce(t->shm, in, out, count, esize, reduce, 0, SHM_WATCH(t), err))
            return -1;
        in = out;
    }
    if (t->leaders.pos >= 0 && team_all_reduce(t, &t->leaders, in, out, count, esize, reduce, err))
        return -1;
    return t->shm ? pg_shm_broadcast(t->shm, out, count * esize, 0, SHM_WATCH(t), err) : 0;
}

static int tcp_all_reduce(void *be, const void *send, void *recv, size_t count, pg_dtype_t t_,
                          pg_op_t op, ddp_error_t *err)
{
    tcp_t *t = be;
    size_t esize = pg_dtype_size(t_);
    pg_reduce_fn reduce = pg_reducer(t_, op);
    pg_divide_fn divide = op == PG_AVG ? pg_divider(t_) : NULL;
    if (all_on_this_host(t))
        return pg_shm_all_reduce(t->shm, send, recv, count, esize, reduce, divide, SHM_WATCH(t),
                                 err);
    int rc;
    /* Small buffers: one round trip among all ranks beats the hierarchy's three steps. */
    if (t->hierarchical && !takes_direct(count * esize, t->size))
        rc = hierarchical_all_reduce(t, send, recv, count, esize, reduce, err);
    else
        rc = team_all_reduce(t, &t->everyone, send, recv, count, esize, reduce, err);
    if (rc)
        return -1;
    if (divide)
        divide(recv, count, t->size);
    return 0;
}

static int tcp_reduce_scatter(void *be, const void *send, void *recv, size_t count, pg_dtype_t t_,
                              pg_op_t op, ddp_error_t *err)
{
    tcp_t *t = be;
    size_t esize = pg_dtype_size(t_), bytes = count * esize;
    if (t->size == 1) {
        memmove(recv, send, bytes);
        return 0;
    }
    int rc;
    if (all_on_this_host(t)) {
        rc = pg_shm_reduce_scatter(t->shm, send, recv, count, esize, pg_reducer(t_, op),
                                   SHM_WATCH(t), err);
    } else {
        unsigned char *work = host_alloc(bytes * (size_t)t->size, err);
        if (!work)
            return -1;
        rc = ring(t, &t->everyone, send, work, count * (size_t)t->size, esize, pg_reducer(t_, op),
                  1, 0, err);
        if (rc == 0)
            memcpy(recv, work + bytes * (size_t)t->rank, bytes);
        free(work);
    }
    if (rc == 0 && op == PG_AVG)
        pg_reduce_divide(recv, count, t_, t->size);
    return rc;
}

static int tcp_all_gather(void *be, const void *send, void *recv, size_t count, pg_dtype_t t_,
                          ddp_error_t *err)
{
    tcp_t *t = be;
    size_t bytes = count * pg_dtype_size(t_);
    if (all_on_this_host(t))
        return pg_shm_all_gather(t->shm, send, recv, bytes, SHM_WATCH(t), err);
    memmove((unsigned char *)recv + bytes * (size_t)t->rank, send, bytes);
    return t->size > 1 ? ring(t, &t->everyone, recv, recv, count * (size_t)t->size,
                              pg_dtype_size(t_), NULL, 0, 1, err)
                       : 0;
}

/* A pipelined chain from the root: each rank stores the segments it receives and passes them
 * on, so the root sends the buffer once however many ranks there are. */
static int tcp_broadcast(void *be, void *buf, size_t count, pg_dtype_t t_, int root,
                         ddp_error_t *err)
{
    tcp_t *t = be;
    int n = t->size, pos = mod(t->rank - root, n);
    size_t bytes = count * pg_dtype_size(t_);
    if (n == 1)
        return 0;
    if (all_on_this_host(t))
        return pg_shm_broadcast(t->shm, buf, bytes, root, SHM_WATCH(t), err);
    plan_t pl;
    if (plan_init(t, &pl, 2 * segments(bytes), NULL, 1, err))
        return -1;
    pl.forward_to = mod(t->rank + 1, n);
    if (pos == 0)
        plan_segments(t, &pl, pl.forward_to, 1, buf, bytes, 0, 0);
    else
        plan_segments(t, &pl, mod(t->rank - 1, n), 0, buf, bytes, 0, pos < n - 1);
    return plan_run(t, &pl, err);
}

/* A pipelined chain towards the root, starting at the rank after it: each rank reduces its own
 * data with the segments it receives and passes them on. */
static int tcp_reduce(void *be, const void *send, void *recv, size_t count, pg_dtype_t t_,
                      pg_op_t op, int root, ddp_error_t *err)
{
    tcp_t *t = be;
    int n = t->size, pos = mod(t->rank - root - 1, n);
    size_t esize = pg_dtype_size(t_), bytes = count * esize;
    if (n == 1) {
        memmove(recv, send, bytes);
        return 0;
    }
    if (all_on_this_host(t)) {
        if (pg_shm_reduce(t->shm, send, recv, count, esize, pg_reducer(t_, op), root, SHM_WATCH(t),
                          err))
            return -1;
        if (t->rank == root && op == PG_AVG)
            pg_reduce_divide(recv, count, t_, n);
        return 0;
    }
    unsigned char *acc = t->rank == root ? recv : NULL;
    if (pos > 0 && !acc && !(acc = host_alloc(bytes, err)))
        return -1;
    plan_t pl;
    int rc = plan_init(t, &pl, 2 * segments(bytes), pg_reducer(t_, op), esize, err);
    if (rc == 0) {
        pl.in = send;
        pl.out = acc;
        pl.forward_to = mod(t->rank + 1, n);
        if (pos == 0)
            plan_segments(t, &pl, pl.forward_to, 1, (unsigned char *)send, bytes, 0, 0);
        else
            plan_segments(t, &pl, mod(t->rank - 1, n), 0, acc, bytes, 1, pos < n - 1);
        rc = plan_run(t, &pl, err);
    }
    if (acc != recv)
        free(acc);
    if (rc == 0 && t->rank == root && op == PG_AVG)
        pg_reduce_divide(recv, count, t_, n);
    return rc;
}

/* Scatter and gather: the root talks to every rank at once over its own connections. */
static int root_exchange(tcp_t *t, const void *root_buf, void *own, size_t bytes, int root,
                         int scatter, ddp_error_t *err)
{
    unsigned char *rb = (unsigned char *)root_buf;
    if (t->rank == root)
        memmove(scatter ? own : rb + bytes * (size_t)root,
                scatter ? rb + bytes * (size_t)root : own, bytes);
    if (t->size == 1)
        return 0;
    plan_t pl;
    if (plan_init(t, &pl, (size_t)t->size * segments(bytes), NULL, 1, err))
        return -1;
    if (t->rank == root) {
        for (int q = 0; q < t->size; q++)
            if (q != root)
                plan_segments(t, &pl, q, scatter, rb + bytes * (size_t)q, bytes, 0, 0);
    } else {
        plan_segments(t, &pl, root, !scatter, own, bytes, 0, 0);
    }
    return plan_run(t, &pl, err);
}

static int tcp_scatter(void *be, const void *send, void *recv, size_t count, pg_dtype_t t_,
                       int root, ddp_error_t *err)
{
    tcp_t *t = be;
    if (all_on_this_host(t))
        return pg_shm_scatter(t->shm, send, recv, count * pg_dtype_size(t_), root, SHM_WATCH(t),
                              err);
    return root_exchange(be, send, recv, count * pg_dtype_size(t_), root, 1, err);
}

static int tcp_gather(void *be, const void *send, void *recv, size_t count, pg_dtype_t t_, int root,
                      ddp_error_t *err)
{
    tcp_t *t = be;
    if (all_on_this_host(t))
        return pg_shm_gather(t->shm, send, recv, count * pg_dtype_size(t_), root, SHM_WATCH(t),
                             err);
    return root_exchange(be, recv, (void *)send, count * pg_dtype_size(t_), root, 0, err);
}

static int tcp_final_barrier(void *be, ddp_error_t *err)
{
    tcp_t *t = be;
    int32_t one = 1;
    t->closing = 1;
    return tcp_all_reduce(be, &one, &one, 1, PG_INT32, PG_SUM, err);
}

/* ---- point to point ----------------------------------------------------------------------- */

static void check_header(tcp_t *t, xfer_t *x)
{
    request_t *req = x->ctx;
    uint64_t len = 0;
    for (int i = 0; i < 8; i++)
        len = len << 8 | req->wire_len[i];
    if (len != req->expected && t->fault)
        ddp_error_set(t->fault, "rank %d sent %llu bytes, but the matching recv expects %zu",
                      x->peer, (unsigned long long)len, req->expected);
}

static void *start_p2p(tcp_t *t, void *buf, size_t bytes, int peer, int send, ddp_error_t *err)
{
    if (t->failed) {
        ddp_error_set(err, "the group failed earlier");
        return NULL;
    }
    request_t *req = calloc(1, sizeof *req);
    if (!req) {
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    req->expected = bytes;
    for (int i = 0; i < 8; i++)
        req->wire_len[i] = send ? (unsigned char)((uint64_t)bytes >> (56 - 8 * i)) : 0;
    req->header = (xfer_t){.buf = req->wire_len,
                           .len = 8,
                           .peer = peer,
                           .ctx = req,
                           .step = send ? NULL : check_header};
    req->body = (xfer_t){.buf = buf, .len = bytes, .peer = peer, .ctx = req};
    enqueue(t, &req->header, send);
    enqueue(t, &req->body, send);
    return req;
}

static void *tcp_isend(void *be, const void *buf, size_t bytes, int peer, ddp_error_t *err)
{
    return start_p2p(be, (void *)buf, bytes, peer, 1, err);
}

static void *tcp_irecv(void *be, void *buf, size_t bytes, int peer, ddp_error_t *err)
{
    return start_p2p(be, buf, bytes, peer, 0, err);
}

static int tcp_wait(void *be, void *r, ddp_error_t *err)
{
    tcp_t *t = be;
    request_t *req = r;
    int rc = -1;
    if (t->failed)
        ddp_error_set(err, "the group failed earlier");
    else
        rc = progress(t, xfer_finished, &req->body, ddp_deadline_in(t->timeout_ms), err);
    free(req);
    return rc;
}

/* ---- making the mesh ---------------------------------------------------------------------- */

static int set_peer_socket(int fd)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return ddp_net_set_nonblocking(fd);
}

/* Rank r's listening address as the others should dial it: the address its connection to the
 * store leaves from, i.e. the interface that reaches the master. */
static int local_address(int store_fd, char *ip, size_t size, ddp_error_t *err)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(store_fd, (struct sockaddr *)&ss, &len) < 0)
        return ddp_error_set(err, "getsockname: %s", strerror(errno));
    const void *addr = ss.ss_family == AF_INET6 ? (void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
                                                : (void *)&((struct sockaddr_in *)&ss)->sin_addr;
    if (!inet_ntop(ss.ss_family, addr, ip, (socklen_t)size))
        return ddp_error_set(err, "inet_ntop: %s", strerror(errno));
    return 0;
}

/* Publishes this rank's address and host and waits for everybody's; *addrs[i] is "IP PORT HOST".
 * Rank 0 makes the group's nonce and decides for all whether hosts share memory (*shm). */
static int exchange_addresses(tcp_t *t, ddp_store_client_t *store, int port, char **addrs,
                              char nonce[NONCE_HEX + 1], int *shm, ddp_error_t *err)
{
    char ip[INET6_ADDRSTRLEN], key[64], host[160], val[INET6_ADDRSTRLEN + 192];
    if (local_address(ddp_store_client_fd(store), ip, sizeof ip, err) ||
        pg_shm_host_key(host, sizeof host, err))
        return -1;
    if (t->rank == 0) {
        unsigned char raw[NONCE_HEX / 2];
        if (ddp_random(raw, sizeof raw))
            return ddp_error_set(err, "no random bytes for the group's nonce");
        ddp_hex(raw, sizeof raw, nonce);
        const char *shm_env = getenv("DDP_PG_SHM");
        nonce[NONCE_HEX] = shm_env && !strcmp(shm_env, "0") ? '0' : '1';
        if (ddp_store_set(store, "pg/nonce", nonce, NONCE_HEX + 1, err))
            return -1;
    }
    snprintf(key, sizeof key, "pg/addr/%d", t->rank);
    snprintf(val, sizeof val, "%s %d %s", ip, port, host);
    int64_t joined = 0;
    if (ddp_store_set(store, key, val, strlen(val), err) ||
        ddp_store_add(store, "pg/joined", 1, &joined, err))
        return -1;
    if (joined == t->size && ddp_store_set(store, "pg/ready", "1", 1, err))
        return -1;
    const char *ready = "pg/ready";
    int got = ddp_store_wait(store, &ready, 1, t->timeout_ms, NULL, NULL, err);
    if (got <= 0)
        return got < 0 ? -1
                       : ddp_error_set(err, "not every rank joined the group within %.0f s",
                                       (double)t->timeout_ms / 1000);
    char **keys = calloc((size_t)t->size, sizeof *keys);
    if (!keys)
        return ddp_error_set(err, "out of memory");
    int rc = 0;
    for (int i = 0; i < t->size && !rc; i++)
        rc = asprintf(&keys[i], "pg/addr/%d", i) < 0;
    if (rc)
        ddp_error_set(err, "out of memory");
    else
        rc = ddp_store_get_many(store, (const char *const *)keys, (size_t)t->size, addrs, err);
    char *nonce_val = NULL;
    size_t nonce_len = 0;
    if (!rc && ddp_store_get(store, "pg/nonce", &nonce_val, &nonce_len, err) != 1)
        rc = ddp_error_set(err, "rank 0 published no nonce");
    if (!rc && nonce_len != NONCE_HEX + 1)
        rc = ddp_error_set(err, "rank 0's nonce is malformed");
    if (!rc) {
        memcpy(nonce, nonce_val, NONCE_HEX);
        nonce[NONCE_HEX] = 0;
        *shm = nonce_val[NONCE_HEX] == '1';
    }
    free(nonce_val);
    for (int i = 0; i < t->size; i++)
        free(keys[i]);
    free(keys);
    for (int i = 0; i < t->size && !rc; i++)
        if (!addrs[i])
            rc = ddp_error_set(err, "rank %d published no address", i);
    return rc;
}

/* The hello a connecting rank sends: the nonce and its rank. */
typedef struct {
    char nonce[NONCE_HEX];
    unsigned char rank[4];
} hello_t;

static int dial_lower(tcp_t *t, char **addrs, const char *nonce, int64_t deadline, ddp_error_t *err)
{
    for (int j = 0; j < t->rank; j++) {
        char ip[INET6_ADDRSTRLEN];
        int port;
        if (sscanf(addrs[j], "%45s %d", ip, &port) != 2)
            return ddp_error_set(err, "rank %d's address \"%s\" is malformed", j, addrs[j]);
        int fd = ddp_net_connect(ip, port, deadline, err);
        if (fd < 0)
            return ddp_error_prefix(err, "cannot connect to rank %d", j);
        hello_t h;
        memcpy(h.nonce, nonce, NONCE_HEX);
        for (int i = 0; i < 4; i++)
            h.rank[i] = (unsigned char)((unsigned)t->rank >> (24 - 8 * i));
        t->peers[j].fd = fd;
        if (ddp_net_write_full(fd, &h, sizeof h, deadline, err))
            return ddp_error_prefix(err, "hello to rank %d", j);
    }
    return 0;
}

static int accept_higher(tcp_t *t, int listen_fd, const char *nonce, int64_t deadline,
                         ddp_error_t *err)
{
    int missing = t->size - 1 - t->rank;
    while (missing > 0) {
        struct pollfd pfd = {.fd = listen_fd, .events = POLLIN};
        int ready = poll(&pfd, 1, ddp_ms_left(deadline));
        if (ready <= 0 && ddp_ms_left(deadline) == 0)
            return ddp_error_set(err, "%d rank(s) above %d never connected within %.0f s", missing,
                                 t->rank, (double)t->timeout_ms / 1000);
        if (ready <= 0)
            continue;
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        hello_t h;
        memset(&h, 0, sizeof h);
        ddp_error_t ignored;
        int64_t hello_deadline =
            ddp_deadline_in(5000) < deadline ? ddp_deadline_in(5000) : deadline;
        unsigned rank = 0;
        if (ddp_net_read_full(fd, &h, sizeof h, hello_deadline, &ignored) == 0) {
            for (int i = 0; i < 4; i++)
                rank = rank << 8 | h.rank[i];
        }
        /* Strangers (wrong nonce, impossible or repeated rank) are dropped; the wait goes on. */
        if (memcmp(h.nonce, nonce, NONCE_HEX) != 0 || rank <= (unsigned)t->rank ||
            rank >= (unsigned)t->size || t->peers[rank].fd >= 0) {
            close(fd);
            continue;
        }
        t->peers[rank].fd = fd;
        missing--;
    }
    return 0;
}

/* ---- who shares a host ------------------------------------------------------------------ */

static const char *host_of(const char *addr)
{
    const char *host = strchr(addr, ' ');
    host = host ? strchr(host + 1, ' ') : NULL;
    return host ? host + 1 : "";
}

/* The teams (everyone, the hosts' leaders: each host's lowest rank) and this host's shared
 * memory, from the published addresses. */
static int make_teams(tcp_t *t, char **addrs, const char *nonce, int shm, int64_t deadline,
                      ddp_error_t *err)
{
    int n = t->size, *local = malloc((size_t)n * sizeof *local), n_local = 0, me = 0;
    t->everyone.ranks = malloc((size_t)n * sizeof *t->everyone.ranks);
    t->leaders.ranks = malloc((size_t)n * sizeof *t->leaders.ranks);
    if (!local || !t->everyone.ranks || !t->leaders.ranks) {
        free(local);
        return ddp_error_set(err, "out of memory");
    }
    t->everyone.n = n;
    t->everyone.pos = t->rank;
    t->leaders.pos = -1;
    const char *here = host_of(addrs[t->rank]);
    for (int i = 0; i < n; i++) {
        t->everyone.ranks[i] = i;
        int first_of_host = 1;
        for (int j = 0; j < i && first_of_host; j++)
            first_of_host = strcmp(host_of(addrs[j]), host_of(addrs[i])) != 0;
        if (first_of_host) {
            if (i == t->rank)
                t->leaders.pos = t->leaders.n;
            t->leaders.ranks[t->leaders.n++] = i;
        }
        if (!strcmp(host_of(addrs[i]), here)) {
            if (i == t->rank)
                me = n_local;
            local[n_local++] = i;
        }
    }
    int rc = 0;
    /* The same on every rank (from the same addresses), so all take the same path. */
    t->hierarchical = shm && t->leaders.n > 1 && t->leaders.n < n;
    if (shm && n_local > 1 && !(t->shm = pg_shm_create(local, n_local, me, nonce, deadline, err)))
        rc = -1;
    free(local);
    return rc;
}

static void tcp_destroy(void *be)
{
    tcp_t *t = be;
    if (!t)
        return;
    pg_shm_destroy(t->shm);
    free(t->everyone.ranks);
    free(t->leaders.ranks);
    for (int i = 0; t->peers && i < t->size; i++)
        if (t->peers[i].fd >= 0)
            close(t->peers[i].fd);
    free(t->peers);
    free(t->pfd);
    free(t->pfd_peer);
    free(t->pool);
    free(t->stage);
    free(t);
}

static void *tcp_create(const pg_world_t *w, ddp_store_client_t *store, int64_t timeout_ms,
                        ddp_error_t *err)
{
    tcp_t *t = calloc(1, sizeof *t);
    char **addrs = NULL;
    int listen_fd = -1;
    if (!t)
        goto oom;
    t->rank = w->rank;
    t->size = w->size;
    t->timeout_ms = timeout_ms;
    t->peers = calloc((size_t)w->size, sizeof *t->peers);
    t->pfd = calloc((size_t)w->size, sizeof *t->pfd);
    t->pfd_peer = calloc((size_t)w->size, sizeof *t->pfd_peer);
    t->stage = malloc(SEGMENT_BYTES);
    addrs = calloc((size_t)w->size, sizeof *addrs);
    if (!t->peers || !t->pfd || !t->pfd_peer || !t->stage || !addrs)
        goto oom;
    for (int i = 0; i < w->size; i++)
        t->peers[i].fd = -1;
    t->everyone = (team_t){.n = 1};
    if (w->size > 1) {
        int64_t deadline = ddp_deadline_in(timeout_ms);
        int port;
        char nonce[NONCE_HEX + 1];
        int shm;
        if ((listen_fd = ddp_net_listen(NULL, 0, w->size, &port, err)) < 0 ||
            exchange_addresses(t, store, port, addrs, nonce, &shm, err) ||
            dial_lower(t, addrs, nonce, deadline, err) ||
            accept_higher(t, listen_fd, nonce, deadline, err) ||
            make_teams(t, addrs, nonce, shm, deadline, err))
            goto error;
        for (int i = 0; i < w->size; i++)
            if (i != w->rank && set_peer_socket(t->peers[i].fd) < 0) {
                ddp_error_set(err, "cannot make the connection to rank %d nonblocking", i);
                goto error;
            }
        close(listen_fd);
        listen_fd = -1;
    }
    for (int i = 0; i < w->size; i++)
        free(addrs[i]);
    free(addrs);
    return t;
oom:
    ddp_error_set(err, "out of memory");
error:
    if (listen_fd >= 0)
        close(listen_fd);
    for (int i = 0; addrs && i < w->size; i++)
        free(addrs[i]);
    free(addrs);
    tcp_destroy(t);
    ddp_error_prefix(err, "tcp backend");
    return NULL;
}

static int tcp_supports(pg_dtype_t t)
{
    return pg_reducer(t, PG_SUM) != NULL;
}

static int tcp_copy(void *be, void *dst, const void *src, size_t bytes, ddp_error_t *err)
{
    memcpy(dst, src, bytes);
    return 0;
}

static int tcp_sync(void *be, ddp_error_t *err)
{
    return 0;
}

const pg_backend_t pg_tcp_backend = {
    .name = "tcp",
    .create = tcp_create,
    .destroy = tcp_destroy,
    .supports = tcp_supports,
    .alloc = tcp_alloc,
    .free = tcp_free,
    .copy_in = tcp_copy,
    .copy_out = tcp_copy,
    .sync = tcp_sync,
    .isend = tcp_isend,
    .irecv = tcp_irecv,
    .wait = tcp_wait,
    .final_barrier = tcp_final_barrier,
    .broadcast = tcp_broadcast,
    .reduce = tcp_reduce,
    .all_reduce = tcp_all_reduce,
    .scatter = tcp_scatter,
    .gather = tcp_gather,
    .all_gather = tcp_all_gather,
    .reduce_scatter = tcp_reduce_scatter,
};
