/* pg_shm: collectives among the ranks of one host through one shared memory segment, for the
 * tcp backend (which still owns the connections, the deadlines and the naming of dead peers).
 *
 * The segment is a memfd made by the host's first rank (its leader): it never has a name in any
 * file system, so nothing is left behind whatever kills the job, and only the processes the
 * leader hands it to can map it. The leader hands it over an abstract unix socket whose name
 * carries the group's secret nonce (only ranks that read it from the authenticated store can
 * find or answer it) to callers that prove the nonce, run as the same user and are members of
 * the host's group. "Same host" therefore means the same kernel and the same network namespace
 * (where an abstract socket reaches); pg_shm_host_key says it.
 *
 * An all_reduce over buffers that every member allocated here (pg_shm_alloc) is zero-copy: the
 * members first say where their buffers lie, then each reduces its own part straight out of
 * every member's buffer and writes the result into every member's. Otherwise, and for the other
 * collectives, every collective is cut into blocks; a block gives each member ("owner") one piece
 * of the buffer. Each rank copies the pieces others need into its stage, each owner reduces its
 * piece over all stages, and each rank copies out what it needs. Per-rank counters in the segment
 * say how far every rank got (written, reduced, finished; block numbers that keep counting across
 * collectives), so blocks pipeline through a few stage slots without locks. A waiting rank
 * spins briefly (yielding when ranks outnumber CPUs), then sleeps on a futex; while it waits it
 * calls the caller's check every millisecond, which ends the wait on a deadline or a dead peer. */
#ifndef DDP_PG_SHM_H
#define DDP_PG_SHM_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "runtime/pg/pg_reduce.h"

typedef struct pg_shm pg_shm_t;

/* Called while a collective waits on other ranks: `late` holds the global ranks that have not
 * finished the collective. Returns -1 with err set to end the wait (deadline, a peer gone); the
 * wait ends only if the late members are the same after the call. */
typedef int (*pg_shm_check_fn)(void *ctx, const int *late, int n_late, ddp_error_t *err);

typedef struct {
    pg_shm_check_fn check;
    void *ctx;
} pg_shm_watch_t;

/* What makes two ranks one host here (boot id and network namespace), as text for the store. */
int pg_shm_host_key(char *key, size_t size, ddp_error_t *err);

/* `members` are the host's global ranks, ascending; members[me] is this rank. `nonce` is the
 * group's secret (hex). Waits for every member until `deadline`. */
pg_shm_t *pg_shm_create(const int *members, int n, int me, const char *nonce, int64_t deadline,
                        ddp_error_t *err);
void pg_shm_destroy(pg_shm_t *s);

/* Buffers in this rank's heap (pg_shm_heap.h): an all_reduce whose buffers are all such on every
 * member runs without copies. alloc returns NULL when the heap is full; free returns 0 for a
 * pointer that is not the heap's. */
void *pg_shm_alloc(pg_shm_t *s, size_t bytes);
int pg_shm_free(pg_shm_t *s, void *p);

/* Collectives over the members, with roots as indices into members and counts as in pg.h; AVG
 * is the caller's (reduce with SUM, divide after), but all_reduce divides by the member count
 * where it reduces (piece by piece, while the piece is in cache) when given `divide`. in may
 * equal out for all_reduce and reduce. */
int pg_shm_all_reduce(pg_shm_t *s, const void *in, void *out, size_t count, size_t esize,
                      pg_reduce_fn reduce, pg_divide_fn divide, const pg_shm_watch_t *w,
                      ddp_error_t *err);
int pg_shm_reduce(pg_shm_t *s, const void *in, void *out, size_t count, size_t esize,
                  pg_reduce_fn reduce, int root, const pg_shm_watch_t *w, ddp_error_t *err);
int pg_shm_reduce_scatter(pg_shm_t *s, const void *in, void *out, size_t count, size_t esize,
                          pg_reduce_fn reduce, const pg_shm_watch_t *w, ddp_error_t *err);
int pg_shm_broadcast(pg_shm_t *s, void *buf, size_t bytes, int root, const pg_shm_watch_t *w,
                     ddp_error_t *err);
int pg_shm_all_gather(pg_shm_t *s, const void *in, void *out, size_t bytes, const pg_shm_watch_t *w,
                      ddp_error_t *err);
int pg_shm_gather(pg_shm_t *s, const void *in, void *out, size_t bytes, int root,
                  const pg_shm_watch_t *w, ddp_error_t *err);
int pg_shm_scatter(pg_shm_t *s, const void *in, void *out, size_t bytes, int root,
                   const pg_shm_watch_t *w, ddp_error_t *err);

#endif
