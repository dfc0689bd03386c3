#include "runtime/pg/pg_shm.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_net.h"
#include "runtime/pg/pg_shm_heap.h"

/* Counters sit on lines of their own (two cache lines: the adjacent-line prefetcher would
 * otherwise make neighbours share). */
#define LINE 128
/* Stage slots per rank: how many blocks may be in flight at once. */
#define DEPTH 4
/* One block's bytes per rank (all its pieces). Small enough that the stages stay in the
 * caches between the copy in and the reads of the owners. */
#define BLOCK_BYTES (256u << 10)
#define PIECE_MIN 1024u
/* All-reduces up to this size take one step: every rank reduces every stage itself, which
 * saves the second wait of the owner scheme where latency, not bandwidth, is what counts. */
#define SMALL_BYTES (16u << 10)
/* How long a waiting rank spins (or yields) before it sleeps, how often it runs the caller's
 * check, and the longest single sleep (so that the check keeps its rhythm). */
#define SPIN_NS 50000
#define SPIN_OVERSUBSCRIBED_NS 2000000
#define CHECK_NS 1000000
#define SLEEP_NS 20000000
#define NONCE_HEX 32
/* The zero-copy all_reduce's unit: an owner reduces this much from every rank's buffer, then
 * writes it into every rank's result while it is still in the cache. */
#define ZERO_COPY_PIECE (64u << 10)
/* From this size on, results go out with stores that bypass the caches (every member's buffers
 * together outgrow them): the piece is reduced into a scratch buffer that stays in L2, then
 * streamed to every member's output, so no output line is read before it is written. */
#define STREAM_BYTES (8u << 20)

typedef struct {
    _Atomic uint64_t value;
    char pad[LINE - sizeof(uint64_t)];
} counter_t;

/* What a rank says of its all_reduce buffers first: whether both lie in its heap, and where. A
 * rank rewrites it only after its last collective ended, which every member had to read it for. */
typedef struct {
    uint64_t in, out;
    uint32_t in_heap;
    char pad[LINE - 2 * sizeof(uint64_t) - sizeof(uint32_t)];
} announce_t;

/* How far a rank got, in blocks since the group began. */
typedef struct {
    counter_t written, reduced, finished;
    announce_t announce;
} progress_t;

typedef struct {
    _Atomic uint32_t
        doorbell; /* bumped (and futex-woken) when a counter moves and someone sleeps */
    char pad0[LINE - sizeof(uint32_t)];
    _Atomic uint32_t sleepers;
    char pad1[LINE - sizeof(uint32_t)];
} header_t;

struct pg_shm {
    int n, me;
    int *members;
    int *late;
    size_t piece, block; /* block = n * piece */
    unsigned char *base;
    size_t size;
    header_t *header;
    progress_t *progress;
    unsigned char *stages, *results;
    uint64_t seq; /* blocks used so far: the same on every member */
    pg_shm_heap_t *heap;
    unsigned char *scratch; /* ZERO_COPY_PIECE bytes */
    int oversubscribed;
};

typedef enum {
    ALL_REDUCE,
    REDUCE,
    REDUCE_SCATTER,
    BROADCAST,
    ALL_GATHER,
    GATHER,
    SCATTER,
    SMALL_ALL_REDUCE,
} kind_t;

typedef struct {
    kind_t kind;
    const unsigned char *in;
    unsigned char *out;
    size_t count, esize; /* elements in all (split kinds) or per chunk */
    pg_reduce_fn reduce;
    pg_divide_fn divide; /* all_reduce's AVG, or NULL */
    int root;
} op_t;

/* ---- the segment ------------------------------------------------------------------------ */

static size_t segment_size(size_t n, size_t piece)
{
    return sizeof(header_t) + n * sizeof(progress_t) + n * DEPTH * (n * piece) + n * DEPTH * piece;
}

static void layout(pg_shm_t *s, unsigned char *base)
{
    s->base = base;
    s->header = (header_t *)base;
    s->progress = (progress_t *)(base + sizeof(header_t));
    s->stages = (unsigned char *)(s->progress + s->n);
    s->results = s->stages + (size_t)s->n * DEPTH * s->block;
}

static unsigned char *stage(const pg_shm_t *s, int rank, uint64_t block)
{
    return s->stages + ((size_t)rank * DEPTH + block % DEPTH) * s->block;
}

static unsigned char *result(const pg_shm_t *s, int owner, uint64_t block)
{
    return s->results + ((size_t)owner * DEPTH + block % DEPTH) * s->piece;
}

int pg_shm_host_key(char *key, size_t size, ddp_error_t *err)
{
    size_t len;
    char *boot = ddp_read_file("/proc/sys/kernel/random/boot_id", &len, err);
    struct stat st;
    if (!boot)
        return -1;
    boot[strcspn(boot, "\n")] = 0;
    int rc = 0;
    if (stat("/proc/self/ns/net", &st) < 0)
        rc = ddp_error_set(err, "/proc/self/ns/net: %s", strerror(errno));
    else
        snprintf(key, size, "%s:%llx:%llx", boot, (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino);
    free(boot);
    return rc;
}

/* The hello a member sends the leader: the nonce and its global rank. */
typedef struct {
    char nonce[NONCE_HEX];
    uint32_t rank;
} hello_t;

static socklen_t socket_address(struct sockaddr_un *sa, const char *nonce, int leader)
{
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    /* Abstract (leading NUL): no file to remove, gone when the socket closes. */
    int len = snprintf(sa->sun_path + 1, sizeof sa->sun_path - 1, "ddp-pg-%s-%d", nonce, leader);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
}

static int same_user(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == geteuid();
}

/* One message on a unix socket: `len` bytes, with a descriptor when pass_fd >= 0. */
static int send_with_fd(int fd, const void *data, size_t len, int pass_fd, int64_t deadline,
                        ddp_error_t *err)
{
    char control[CMSG_SPACE(sizeof(int))] = {0};
    struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (pass_fd >= 0) {
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    if (poll(&pfd, 1, ddp_ms_left(deadline)) <= 0 ||
        sendmsg(fd, &msg, MSG_NOSIGNAL) != (ssize_t)len)
        return ddp_error_set(err, "cannot hand shared memory over: %s", strerror(errno));
    return 0;
}

/* The other end of send_with_fd: the descriptor that came with `len` bytes, or -1. */
static int receive_with_fd(int fd, void *data, size_t len, int64_t deadline, ddp_error_t *err)
{
    char control[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = data, .iov_len = len};
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    if (poll(&pfd, 1, ddp_ms_left(deadline)) <= 0)
        return ddp_error_set(err, "shared memory was never handed over");
    ssize_t got = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    struct cmsghdr *c = got >= 0 ? CMSG_FIRSTHDR(&msg) : NULL;
    int passed = -1;
    if (c && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
        memcpy(&passed, CMSG_DATA(c), sizeof passed);
    if (got == (ssize_t)len && passed >= 0)
        return passed;
    if (passed >= 0)
        close(passed);
    return ddp_error_set(err, "receiving shared memory: %s",
                         got < 0 ? strerror(errno) : "no descriptor came");
}

/* The leader: accepts every other member that proves the nonce (with its heap), then hands
 * each the segment and every member's heap. heap_fds[i] gets member i's (the caller closes). */
static int serve_members(pg_shm_t *s, int listen_fd, int memfd, const char *nonce, int *heap_fds,
                         int64_t deadline, ddp_error_t *err)
{
    int *conns = malloc((size_t)s->n * sizeof *conns);
    int missing = s->n - 1, rc = -1;
    if (!conns)
        return ddp_error_set(err, "out of memory");
    for (int i = 0; i < s->n; i++)
        conns[i] = -1;
    while (missing > 0) {
        struct pollfd pfd = {.fd = listen_fd, .events = POLLIN};
        if (poll(&pfd, 1, ddp_ms_left(deadline)) <= 0 && ddp_ms_left(deadline) == 0) {
            ddp_error_set(err, "%d rank(s) of this host never came for the segment", missing);
            goto out;
        }
        int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        hello_t h = {0};
        ddp_error_t ignored;
        int64_t hello_deadline =
            ddp_deadline_in(5000) < deadline ? ddp_deadline_in(5000) : deadline;
        int index = -1, heap_fd = -1;
        if (same_user(fd) &&
            (heap_fd = receive_with_fd(fd, &h, sizeof h, hello_deadline, &ignored)) >= 0 &&
            memcmp(h.nonce, nonce, NONCE_HEX) == 0)
            for (int i = 1; i < s->n; i++)
                if ((uint32_t)s->members[i] == h.rank && conns[i] < 0)
                    index = i;
        /* Strangers are dropped; the wait goes on. */
        if (index < 0) {
            if (heap_fd >= 0)
                close(heap_fd);
            close(fd);
            continue;
        }
        conns[index] = fd;
        heap_fds[index] = heap_fd;
        missing--;
    }
    for (int i = 1; i < s->n; i++) {
        const char byte = 1;
        if (send_with_fd(conns[i], &byte, 1, memfd, deadline, err))
            goto out;
        for (int j = 0; j < s->n; j++)
            if (send_with_fd(conns[i], &byte, 1, heap_fds[j], deadline, err))
                goto out;
    }
    rc = 0;
out:
    for (int i = 0; i < s->n; i++)
        if (conns[i] >= 0)
            close(conns[i]);
    free(conns);
    return rc;
}

/* A member: asks the leader (which may not listen yet) for the segment, handing over its heap;
 * heap_fds gets every member's. */
static int fetch_segment(pg_shm_t *s, const char *nonce, int *heap_fds, int64_t deadline,
                         ddp_error_t *err)
{
    struct sockaddr_un sa;
    socklen_t sa_len = socket_address(&sa, nonce, s->members[0]);
    for (;;) {
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return ddp_error_set(err, "socket: %s", strerror(errno));
        if (connect(fd, (struct sockaddr *)&sa, sa_len) == 0) {
            hello_t h = {.rank = (uint32_t)s->members[s->me]};
            memcpy(h.nonce, nonce, NONCE_HEX);
            char byte;
            int memfd = -1;
            if (!same_user(fd))
                ddp_error_set(err, "the host's segment is offered by another user");
            else if (send_with_fd(fd, &h, sizeof h, pg_shm_heap_fd(s->heap), deadline, err) == 0 &&
                     (memfd = receive_with_fd(fd, &byte, 1, deadline, err)) >= 0)
                for (int j = 0; j < s->n; j++)
                    if ((heap_fds[j] = receive_with_fd(fd, &byte, 1, deadline, err)) < 0) {
                        close(memfd);
                        memfd = -1;
                        break;
                    }
            close(fd);
            return memfd;
        }
        int errnum = errno;
        close(fd);
        if (errnum != ECONNREFUSED && errnum != ENOENT)
            return ddp_error_set(err, "connect: %s", strerror(errnum));
        if (ddp_ms_left(deadline) == 0)
            return ddp_error_set(err, "rank %d (this host's first) never offered the segment",
                                 s->members[0]);
        ddp_sleep_ms(2);
    }
}

static void close_all(int *fds, int n)
{
    for (int i = 0; fds && i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    free(fds);
}

static int cpus_available(void)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

pg_shm_t *pg_shm_create(const int *members, int n, int me, const char *nonce, int64_t deadline,
                        ddp_error_t *err)
{
    pg_shm_t *s = calloc(1, sizeof *s);
    int memfd = -1, listen_fd = -1, *heap_fds = NULL;
    if (!s || !(s->members = malloc((size_t)n * sizeof *s->members)) ||
        !(s->late = malloc((size_t)n * sizeof *s->late)) ||
        !(heap_fds = malloc((size_t)n * sizeof *heap_fds))) {
        ddp_error_set(err, "out of memory");
        goto error;
    }
    for (int i = 0; i < n; i++)
        heap_fds[i] = -1;
    memcpy(s->members, members, (size_t)n * sizeof *members);
    s->n = n;
    s->me = me;
    s->piece = (BLOCK_BYTES / (size_t)n) & ~(size_t)63;
    if (s->piece < PIECE_MIN)
        s->piece = PIECE_MIN;
    s->block = (size_t)n * s->piece;
    s->size = segment_size((size_t)n, s->piece);
    s->oversubscribed = n > cpus_available();
    if (!(s->heap = pg_shm_heap_create(n, me, err)) ||
        posix_memalign((void **)&s->scratch, 64, ZERO_COPY_PIECE)) {
        if (s->heap)
            ddp_error_set(err, "out of memory");
        goto error;
    }
    if (me == 0) {
        struct sockaddr_un sa;
        socklen_t sa_len = socket_address(&sa, nonce, members[0]);
        if ((memfd = (int)syscall(SYS_memfd_create, "ddp-pg", MFD_CLOEXEC)) < 0 ||
            ftruncate(memfd, (off_t)s->size) < 0) {
            ddp_error_set(err, "cannot make a %zu-byte segment: %s", s->size, strerror(errno));
            goto error;
        }
        if ((listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
            bind(listen_fd, (struct sockaddr *)&sa, sa_len) < 0 || listen(listen_fd, n) < 0) {
            ddp_error_set(err, "cannot offer the segment: %s", strerror(errno));
            goto error;
        }
        heap_fds[0] = dup(pg_shm_heap_fd(s->heap));
        if (serve_members(s, listen_fd, memfd, nonce, heap_fds, deadline, err))
            goto error;
    } else if ((memfd = fetch_segment(s, nonce, heap_fds, deadline, err)) < 0) {
        goto error;
    } else {
        struct stat st;
        if (fstat(memfd, &st) < 0 || (size_t)st.st_size != s->size) {
            ddp_error_set(err, "the segment from rank %d has the wrong size", members[0]);
            goto error;
        }
    }
    void *base = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, memfd, 0);
    if (base == MAP_FAILED) {
        ddp_error_set(err, "cannot map the segment: %s", strerror(errno));
        goto error;
    }
    layout(s, base);
    if (pg_shm_heap_map(s->heap, heap_fds, err))
        goto error;
    close_all(heap_fds, n);
    close(memfd);
    if (listen_fd >= 0)
        close(listen_fd);
    return s;
error:
    close_all(heap_fds, n);
    if (memfd >= 0)
        close(memfd);
    if (listen_fd >= 0)
        close(listen_fd);
    pg_shm_destroy(s);
    ddp_error_prefix(err, "shared memory of this host's %d ranks", n);
    return NULL;
}

void pg_shm_destroy(pg_shm_t *s)
{
    if (!s)
        return;
    if (s->base)
        munmap(s->base, s->size);
    pg_shm_heap_destroy(s->heap);
    free(s->scratch);
    free(s->members);
    free(s->late);
    free(s);
}

void *pg_shm_alloc(pg_shm_t *s, size_t bytes)
{
    return pg_shm_heap_alloc(s->heap, bytes);
}

int pg_shm_free(pg_shm_t *s, void *p)
{
    return pg_shm_heap_free(s->heap, p);
}

/* ---- waiting ---------------------------------------------------------------------------- */

static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void publish(pg_shm_t *s, counter_t *c, uint64_t value)
{
    atomic_store(&c->value, value);
    if (atomic_load(&s->header->sleepers)) {
        atomic_fetch_add(&s->header->doorbell, 1);
        syscall(SYS_futex, &s->header->doorbell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    }
}

/* Whether every member's counter (written, reduced or finished) reached `value`. */
static int all_reached(const pg_shm_t *s, size_t which, uint64_t value)
{
    for (int q = 0; q < s->n; q++) {
        const counter_t *c = (const counter_t *)((const char *)&s->progress[q] + which);
        if (atomic_load_explicit(&c->value, memory_order_acquire) < value)
            return 0;
    }
    return 1;
}

#define WRITTEN offsetof(progress_t, written)
#define REDUCED offsetof(progress_t, reduced)
#define FINISHED offsetof(progress_t, finished)

/* The members that have not finished the collective ending at block `end`. */
static int late_members(pg_shm_t *s, uint64_t end)
{
    int n = 0;
    for (int q = 0; q < s->n; q++)
        if (q != s->me && atomic_load(&s->progress[q].finished.value) < end)
            s->late[n++] = s->members[q];
    return n;
}

/* ---- one collective --------------------------------------------------------------------- */

static int has_reduction(kind_t k)
{
    return k == ALL_REDUCE || k == REDUCE || k == REDUCE_SCATTER;
}
static int splits_buffer(kind_t k)
{
    return k == ALL_REDUCE || k == REDUCE || k == BROADCAST;
}

/* Chunk j (owner j's part): where it starts in `in` and in `out`, and its length. */
static void chunk_of(const pg_shm_t *s, const op_t *op, int j, size_t *in_off, size_t *out_off,
                     size_t *len)
{
    if (splits_buffer(op->kind)) {
        size_t base = op->count / (size_t)s->n, rem = op->count % (size_t)s->n, uj = (size_t)j;
        *in_off = *out_off = (uj * base + (uj < rem ? uj : rem)) * op->esize;
        *len = (base + (uj < rem)) * op->esize;
        return;
    }
    *len = op->count * op->esize;
    *in_off = op->kind == REDUCE_SCATTER || op->kind == SCATTER ? (size_t)j * *len : 0;
    *out_off = op->kind == ALL_GATHER || op->kind == GATHER ? (size_t)j * *len : 0;
}

/* Piece `k` of chunk j; its length is 0 past the chunk's end. */
static size_t piece_of(const pg_shm_t *s, const op_t *op, int j, size_t k, size_t *in_off,
                       size_t *out_off)
{
    size_t len, at = k * s->piece;
    chunk_of(s, op, j, in_off, out_off, &len);
    *in_off += at;
    *out_off += at;
    return len > at ? (len - at < s->piece ? len - at : s->piece) : 0;
}

/* Whether this rank copies piece j into its stage. */
static int writes_piece(const pg_shm_t *s, const op_t *op, int j)
{
    switch (op->kind) {
    case BROADCAST:
        return s->me == op->root;
    case SCATTER:
        return s->me == op->root && j != s->me;
    case ALL_GATHER:
    case GATHER:
        return j == s->me;
    default:
        return j != s->me; /* an owner reads its own piece where it is */
    }
}

static void copy_in(pg_shm_t *s, const op_t *op, size_t k)
{
    unsigned char *to = stage(s, s->me, s->seq + k);
    if (op->kind == SMALL_ALL_REDUCE) {
        memcpy(to, op->in, op->count * op->esize);
        return;
    }
    for (int j = 0; j < s->n; j++) {
        size_t in_off, out_off, len = piece_of(s, op, j, k, &in_off, &out_off);
        if (len && writes_piece(s, op, j))
            memcpy(to + (size_t)j * s->piece, op->in + in_off, len);
    }
}

/* The owner's piece over every stage, its own input first and then the others in rank order
 * (every rank takes the owner's result, so all agree bit for bit). */
static void reduce_piece(pg_shm_t *s, const op_t *op, size_t k)
{
    size_t in_off, out_off, len = piece_of(s, op, s->me, k, &in_off, &out_off);
    if (!len)
        return;
    int direct = op->kind == REDUCE_SCATTER || (op->kind == REDUCE && s->me == op->root);
    unsigned char *dst = direct ? op->out + out_off : result(s, s->me, s->seq + k);
    const unsigned char *acc = op->in + in_off;
    for (int q = 0; q < s->n; q++)
        if (q != s->me) {
            op->reduce(dst, acc, stage(s, q, s->seq + k) + (size_t)s->me * s->piece,
                       len / op->esize);
            acc = dst;
        }
    if (op->divide)
        op->divide(dst, len / op->esize, s->n);
}

static void copy_out(pg_shm_t *s, const op_t *op, size_t k)
{
    uint64_t block = s->seq + k;
    if (op->kind == SMALL_ALL_REDUCE) {
        size_t count = op->count;
        op->reduce(op->out, stage(s, 0, block), stage(s, 1, block), count);
        for (int q = 2; q < s->n; q++)
            op->reduce(op->out, op->out, stage(s, q, block), count);
        if (op->divide)
            op->divide(op->out, count, s->n);
        return;
    }
    int me = s->me, root = op->root;
    for (int j = 0; j < s->n; j++) {
        size_t in_off, out_off, len = piece_of(s, op, j, k, &in_off, &out_off);
        const unsigned char *from = NULL;
        switch (op->kind) {
        case ALL_REDUCE:
            from = result(s, j, block);
            break;
        case REDUCE:
            from = me == root && j != me ? result(s, j, block) : NULL;
            break;
        case BROADCAST:
            from = me != root ? stage(s, root, block) + (size_t)j * s->piece : NULL;
            break;
        case SCATTER:
            from = me != root && j == me ? stage(s, root, block) + (size_t)j * s->piece : NULL;
            break;
        case ALL_GATHER:
            from = j != me ? stage(s, j, block) + (size_t)j * s->piece : NULL;
            break;
        case GATHER:
            from = me == root && j != me ? stage(s, j, block) + (size_t)j * s->piece : NULL;
            break;
        default:
            break;
        }
        if (len && from)
            memcpy(op->out + out_off, from, len);
    }
}

typedef enum { IDLE, COPY_OUT, REDUCE_PIECE, COPY_IN } phase_t;

/* The next step this rank may take: the oldest block's first (it frees a slot soonest). */
static phase_t next_phase(const pg_shm_t *s, const op_t *op, size_t nb, size_t cin, size_t red,
                          size_t cout)
{
    int reduces = has_reduction(op->kind);
    size_t ready_for_out = reduces ? red : cin;
    if (cout < ready_for_out && all_reached(s, reduces ? REDUCED : WRITTEN, s->seq + cout + 1))
        return COPY_OUT;
    if (reduces && red < cin && all_reached(s, WRITTEN, s->seq + red + 1))
        return REDUCE_PIECE;
    uint64_t block = s->seq + cin;
    if (cin < nb && (block < DEPTH || all_reached(s, FINISHED, block - DEPTH + 1)))
        return COPY_IN;
    return IDLE;
}

typedef struct {
    int64_t idle_since, last_check;
} waiter_t;

typedef int (*ready_fn)(const pg_shm_t *s, const void *ctx);

/* One turn of waiting while nothing can be done: spins (or yields) a while, then sleeps on the
 * doorbell; every CHECK_NS runs the caller's check over the members that have not finished
 * block end - 1. Returns -1 when the check ends the wait. */
static int idle_turn(pg_shm_t *s, waiter_t *wt, uint64_t end, ready_fn ready, const void *ctx,
                     const pg_shm_watch_t *w, ddp_error_t *err)
{
    int64_t now = (int64_t)(ddp_now_s() * 1e9);
    if (!wt->idle_since)
        wt->idle_since = wt->last_check = now;
    if (now - wt->last_check >= CHECK_NS) {
        wt->last_check = now;
        int n_late = late_members(s, end);
        /* A member seen late, then gone, may have finished and left in between (it publishes
         * its progress before it closes its connection): only a failure over the same late
         * members stands. */
        if (w->check(w->ctx, s->late, n_late, err) && late_members(s, end) == n_late)
            return -1;
    }
    if (now - wt->idle_since < (s->oversubscribed ? SPIN_OVERSUBSCRIBED_NS : SPIN_NS)) {
        if (s->oversubscribed)
            sched_yield();
        else
            relax();
        return 0;
    }
    /* Registered as a sleeper before the last look, so a counter that moves after it also
     * rings the doorbell: no wake-up is lost. */
    atomic_fetch_add(&s->header->sleepers, 1);
    atomic_thread_fence(memory_order_seq_cst);
    uint32_t bell = atomic_load(&s->header->doorbell);
    if (!ready(s, ctx)) {
        struct timespec slice = {.tv_sec = 0, .tv_nsec = SLEEP_NS};
        syscall(SYS_futex, &s->header->doorbell, FUTEX_WAIT, bell, &slice, NULL, 0);
    }
    atomic_fetch_sub(&s->header->sleepers, 1);
    wt->last_check = 0;
    return 0;
}

typedef struct {
    const op_t *op;
    size_t nb, cin, red, cout;
} run_state_t;

static int can_step(const pg_shm_t *s, const void *ctx)
{
    const run_state_t *r = ctx;
    return next_phase(s, r->op, r->nb, r->cin, r->red, r->cout) != IDLE;
}

static int run(pg_shm_t *s, const op_t *op, size_t nb, const pg_shm_watch_t *w, ddp_error_t *err)
{
    progress_t *mine = &s->progress[s->me];
    run_state_t r = {.op = op, .nb = nb};
    waiter_t wt = {0};
    while (r.cout < nb) {
        switch (next_phase(s, op, nb, r.cin, r.red, r.cout)) {
        case COPY_OUT:
            copy_out(s, op, r.cout);
            publish(s, &mine->finished, s->seq + ++r.cout);
            wt.idle_since = 0;
            continue;
        case REDUCE_PIECE:
            reduce_piece(s, op, r.red);
            publish(s, &mine->reduced, s->seq + ++r.red);
            wt.idle_since = 0;
            continue;
        case COPY_IN:
            copy_in(s, op, r.cin);
            publish(s, &mine->written, s->seq + ++r.cin);
            wt.idle_since = 0;
            continue;
        case IDLE:
            break;
        }
        if (idle_turn(s, &wt, s->seq + nb, can_step, &r, w, err))
            return -1;
    }
    s->seq += nb;
    return 0;
}

typedef struct {
    size_t which;
    uint64_t value;
} reach_t;

static int everyone_reached(const pg_shm_t *s, const void *ctx)
{
    const reach_t *r = ctx;
    return all_reached(s, r->which, r->value);
}

/* Waits until every member's counter `which` reached `value`. */
static int wait_all(pg_shm_t *s, size_t which, uint64_t value, const pg_shm_watch_t *w,
                    ddp_error_t *err)
{
    reach_t r = {which, value};
    waiter_t wt = {0};
    while (!all_reached(s, which, value))
        if (idle_turn(s, &wt, value, everyone_reached, &r, w, err))
            return -1;
    return 0;
}

/* Block `seq` of an all_reduce: every member says where its buffers are and waits for the
 * others'. 1 when every member's lie in its heap (zero copy), 0 when not, -1 on failure. */
static int announce(pg_shm_t *s, const op_t *op, const pg_shm_watch_t *w, ddp_error_t *err)
{
    progress_t *mine = &s->progress[s->me];
    size_t bytes = op->count * op->esize;
    uint64_t in = 0, out = 0;
    mine->announce.in_heap = pg_shm_heap_offset(s->heap, op->in, bytes, &in) &&
                             pg_shm_heap_offset(s->heap, op->out, bytes, &out);
    mine->announce.in = in;
    mine->announce.out = out;
    publish(s, &mine->written, s->seq + 1);
    if (wait_all(s, WRITTEN, s->seq + 1, w, err))
        return -1;
    int zero_copy = 1;
    for (int q = 0; q < s->n; q++)
        zero_copy &= s->progress[q].announce.in_heap != 0;
    publish(s, &mine->reduced, s->seq + 1);
    publish(s, &mine->finished, s->seq + 1);
    s->seq++;
    return zero_copy;
}

/* Each member reduces its chunk straight out of every member's input and writes the result
 * into every member's output: no stage, no copy in or out. */
static int zero_copy_all_reduce(pg_shm_t *s, const op_t *op, const pg_shm_watch_t *w,
                                ddp_error_t *err)
{
    size_t in_off, out_off, len;
    chunk_of(s, op, s->me, &in_off, &out_off, &len);
    int stream = op->count * op->esize >= STREAM_BYTES;
    for (size_t at = 0; at < len; at += ZERO_COPY_PIECE) {
        size_t n = len - at < ZERO_COPY_PIECE ? len - at : ZERO_COPY_PIECE;
        unsigned char *dst = stream ? s->scratch : op->out + out_off + at;
        const unsigned char *acc = op->in + in_off + at;
        for (int q = 0; q < s->n; q++)
            if (q != s->me) {
                const announce_t *a = &s->progress[q].announce;
                op->reduce(dst, acc, pg_shm_heap_at(s->heap, q, a->in) + in_off + at,
                           n / op->esize);
                acc = dst;
            }
        if (op->divide)
            op->divide(dst, n / op->esize, s->n);
        for (int q = 0; q < s->n; q++) {
            if (q == s->me && !stream)
                continue;
            unsigned char *to =
                q == s->me ? op->out + out_off + at
                           : pg_shm_heap_at(s->heap, q, s->progress[q].announce.out) + out_off + at;
            if (stream)
                pg_stream_copy(to, dst, n);
            else
                memcpy(to, dst, n);
        }
    }
    progress_t *mine = &s->progress[s->me];
    publish(s, &mine->written, s->seq + 1);
    publish(s, &mine->reduced, s->seq + 1);
    publish(s, &mine->finished, s->seq + 1);
    if (wait_all(s, FINISHED, s->seq + 1, w, err))
        return -1;
    s->seq++;
    return 0;
}

static size_t blocks_for(const pg_shm_t *s, const op_t *op)
{
    size_t in_off, out_off, len;
    chunk_of(s, op, 0, &in_off, &out_off, &len); /* chunk 0 is never shorter than the others */
    return (len + s->piece - 1) / s->piece;
}

static int collective(pg_shm_t *s, const op_t *op, const pg_shm_watch_t *w, ddp_error_t *err)
{
    return run(s, op, blocks_for(s, op), w, err);
}

int pg_shm_all_reduce(pg_shm_t *s, const void *in, void *out, size_t count, size_t esize,
                      pg_reduce_fn reduce, pg_divide_fn divide, const pg_shm_watch_t *w,
                      ddp_error_t *err)
{
    size_t bytes = count * esize;
    op_t op = {.kind = ALL_REDUCE,
               .in = in,
               .out = out,
               .count = count,
               .esize = esize,
               .reduce = reduce,
               .divide = divide};
    if (bytes && bytes <= SMALL_BYTES && bytes <= s->block) {
        op.kind = SMALL_ALL_REDUCE;
        return run(s, &op, 1, w, err);
    }
    int zero_copy = bytes ? announce(s, &op, w, err) : 0;
    if (zero_copy < 0)
        return -1;
    return zero_copy ? zero_copy_all_reduce(s, &op, w, err) : collective(s, &op, w, err);
}

int pg_shm_reduce(pg_shm_t *s, const void *in, void *out, size_t count, size_t esize,
                  pg_reduce_fn reduce, int root, const pg_shm_watch_t *w, ddp_error_t *err)
{
    op_t op = {.kind = REDUCE,
               .in = in,
               .out = out,
               .count = count,
               .esize = esize,
               .reduce = reduce,
               .root = root};
    return collective(s, &op, w, err);
}

int pg_shm_reduce_scatter(pg_shm_t *s, const void *in, void *out, size_t count, size_t esize,
                          pg_reduce_fn reduce, const pg_shm_watch_t *w, ddp_error_t *err)
{
    op_t op = {.kind = REDUCE_SCATTER,
               .in = in,
               .out = out,
               .count = count,
               .esize = esize,
               .reduce = reduce};
    return collective(s, &op, w, err);
}

int pg_shm_broadcast(pg_shm_t *s, void *buf, size_t bytes, int root, const pg_shm_watch_t *w,
                     ddp_error_t *err)
{
    op_t op = {.kind = BROADCAST, .in = buf, .out = buf, .count = bytes, .esize = 1, .root = root};
    return collective(s, &op, w, err);
}

int pg_shm_all_gather(pg_shm_t *s, const void *in, void *out, size_t bytes, const pg_shm_watch_t *w,
                      ddp_error_t *err)
{
    memmove((unsigned char *)out + bytes * (size_t)s->me, in, bytes);
    op_t op = {.kind = ALL_GATHER, .in = in, .out = out, .count = bytes, .esize = 1};
    return collective(s, &op, w, err);
}

int pg_shm_gather(pg_shm_t *s, const void *in, void *out, size_t bytes, int root,
                  const pg_shm_watch_t *w, ddp_error_t *err)
{
    if (s->me == root)
        memmove((unsigned char *)out + bytes * (size_t)root, in, bytes);
    op_t op = {.kind = GATHER, .in = in, .out = out, .count = bytes, .esize = 1, .root = root};
    return collective(s, &op, w, err);
}

int pg_shm_scatter(pg_shm_t *s, const void *in, void *out, size_t bytes, int root,
                   const pg_shm_watch_t *w, ddp_error_t *err)
{
    if (s->me == root)
        memmove(out, (const unsigned char *)in + bytes * (size_t)root, bytes);
    op_t op = {.kind = SCATTER, .in = in, .out = out, .count = bytes, .esize = 1, .root = root};
    return collective(s, &op, w, err);
}
