/* store_client: a blocking client of the rendezvous store (see store_proto.h for the wire).
 *
 * Every call finishes before a deadline: the connect deadline given to ddp_store_client_connect,
 * the client's per-request timeout, or a WAIT's own timeout plus that. Errors name the store's
 * address. Values handed back are malloc'd, NUL-terminated copies the caller frees. A client is
 * used by one thread at a time. */
#ifndef DDP_STORE_CLIENT_H
#define DDP_STORE_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"

typedef struct ddp_store_client ddp_store_client_t;

/* What may be told of a connect's wait: cancelled (optional) is asked between tries and ends
 * the wait; waiting (optional) hears every STORE_CONNECT_NOTE_MS while the store has not
 * answered, with what the last try met. */
#define STORE_CONNECT_NOTE_MS 10000
typedef struct {
    int (*cancelled)(void *ctx);
    void (*waiting)(void *ctx, const char *line);
    void *ctx;
} ddp_store_connect_hooks_t;

/* Connects and proves the token. While nobody listens yet (the server's agent starting later
 * than this one), the host cannot be reached yet, or the store does not finish the handshake
 * (busy, stalled, or it dropped the connection), tries again with a short, growing backoff
 * until `deadline`; hooks may be NULL. Error codes: ECONNREFUSED (nobody listened),
 * ETIMEDOUT (no answer in time), ECONNRESET (the store dropped the handshake), EACCES (the
 * store does not know the token), EPROTO (another service holds the port), ECANCELED
 * (hooks->cancelled said so). */
ddp_store_client_t *ddp_store_client_connect(const char *host, int port, const void *token,
                                             size_t token_len, int64_t deadline,
                                             const ddp_store_connect_hooks_t *hooks,
                                             ddp_error_t *err);
void ddp_store_client_close(ddp_store_client_t *c);

/* How long one ordinary request may take (default 30 s). */
void ddp_store_client_set_timeout(ddp_store_client_t *c, int64_t ms);
int ddp_store_client_fd(const ddp_store_client_t *c);

int ddp_store_ping(ddp_store_client_t *c, ddp_error_t *err);
int ddp_store_set(ddp_store_client_t *c, const char *key, const void *val, size_t len,
                  ddp_error_t *err);
/* When this client's connection closes (closed, or the process ended or died), the store sets
 * key to val: how the others learn at once that a process is gone. A later call replaces it. */
int ddp_store_set_on_close(ddp_store_client_t *c, const char *key, const void *val, size_t len,
                           ddp_error_t *err);
/* 1 and *val when the key exists, 0 when it does not, -1 on error. */
int ddp_store_get(ddp_store_client_t *c, const char *key, char **val, size_t *len,
                  ddp_error_t *err);
/* Adds delta to the integer stored at key (absent counts as 0); *result gets the new value. */
int ddp_store_add(ddp_store_client_t *c, const char *key, int64_t delta, int64_t *result,
                  ddp_error_t *err);
/* Sets key to `desired` if its value is `expected` (expected NULL: if it is absent). Returns 1
 * when it swapped, 0 when not, -1 on error; *current (if not NULL) gets the value after the
 * call, or NULL when the key is absent. */
int ddp_store_cas(ddp_store_client_t *c, const char *key, const void *expected, size_t expected_len,
                  const void *desired, size_t desired_len, char **current, ddp_error_t *err);
/* CASes and ADDs written at once and answered in order: one round trip for all. Each op's
 * result lands in it (swapped and current as ddp_store_cas's, which the caller frees; sum as
 * ddp_store_add's result). Every request is made whatever the earlier ones' results. */
typedef struct {
    enum { STORE_BATCH_CAS, STORE_BATCH_ADD } op;
    const char *key;
    const void *expected, *desired; /* CAS */
    size_t expected_len, desired_len;
    int64_t delta; /* ADD */
    int swapped;
    char *current;
    int64_t sum;
} ddp_store_batch_op_t;
int ddp_store_batch(ddp_store_client_t *c, ddp_store_batch_op_t *ops, size_t n, ddp_error_t *err);
/* Waits up to timeout_ms for any of `keys` to exist: 1 with *which and *val, 0 on timeout. */
int ddp_store_wait(ddp_store_client_t *c, const char *const *keys, size_t nkeys, int64_t timeout_ms,
                   int *which, char **val, ddp_error_t *err);
/* The two halves of ddp_store_wait, for callers that poll ddp_store_client_fd in their own loop.
 * A caller may give up on a WAIT it sent: the next request reads its reply first, so that
 * request waits for the WAIT to be answered or to time out. */
int ddp_store_wait_send(ddp_store_client_t *c, const char *const *keys, size_t nkeys,
                        int64_t timeout_ms, ddp_error_t *err);
int ddp_store_wait_recv(ddp_store_client_t *c, int *which, char **val, ddp_error_t *err);
/* Pipelined GETs and SETs (requests sent in batches before their replies are read), for node 0
 * reading and writing one key per node. vals[i] is NULL where keys[i] is absent. */
int ddp_store_get_many(ddp_store_client_t *c, const char *const *keys, size_t n, char **vals,
                       ddp_error_t *err);
/* The same with each value's age (µs since it was set, by the store's clock; 0 where absent). */
int ddp_store_get_many_aged(ddp_store_client_t *c, const char *const *keys, size_t n, char **vals,
                            int64_t *ages_us, ddp_error_t *err);
int ddp_store_set_many(ddp_store_client_t *c, const char *const *keys, const char *const *vals,
                       size_t n, ddp_error_t *err);
int ddp_store_delete(ddp_store_client_t *c, const char *key, int *existed, ddp_error_t *err);

#endif
