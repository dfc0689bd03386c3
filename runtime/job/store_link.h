/* store_link: the stream between the rendezvous store's core and one of its relay processes.
 *
 * One process may hold only as many connections as its descriptor limit allows (the hard
 * RLIMIT_NOFILE, which only CAP_SYS_RESOURCE raises), and a job's store keeps one per agent. A
 * store expecting more clients than that forks relays (store_server.c): each accepts from the
 * store's listening socket, proves the job token, and passes each connection's bytes both ways
 * over its link, tagged with the connection's id, so that the core serves them as its own.
 *
 * A message is a kind byte, an 8-byte id, a 4-byte length and that many bytes (big-endian). */
#ifndef DDP_STORE_LINK_H
#define DDP_STORE_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/job/store_proto.h"

typedef enum {
    LINK_OPEN = 1, /* relay to core: a connection proved the token; bytes: its peer */
    LINK_DATA,     /* either way: the connection's bytes */
    LINK_CLOSED,   /* relay to core: the connection has ended */
    LINK_CLOSE,    /* core to relay: end the connection */
    LINK_LOG,      /* relay to core: a line for the store's log */
} store_link_kind_t;

/* Longest message body: whole frames and the bytes of one read. */
#define LINK_MAX_BODY (2 * (STORE_MAX_FRAME + 4))

typedef struct {
    int fd;
    ddp_store_buf_t in, out;
    size_t in_used, out_sent;
} store_link_t;

typedef struct {
    store_link_kind_t kind;
    uint64_t id;
    const unsigned char *data; /* inside the link's input: valid until the next read */
    size_t len;
} store_link_msg_t;

/* Queues a message; the caller flushes. */
int store_link_put(store_link_t *l, store_link_kind_t kind, uint64_t id, const void *data,
                   size_t len);
/* Queues bytes of one connection as LINK_DATA messages (none for len 0). */
int store_link_put_data(store_link_t *l, uint64_t id, const void *data, size_t len);
/* Sends what the socket takes now: 0, or -1 when the link is broken. */
int store_link_flush(store_link_t *l);
size_t store_link_unsent(const store_link_t *l);
/* Reads what has arrived: 0, or -1 at its end or on an error. */
int store_link_read(store_link_t *l);
/* The next whole message: 1, 0 when none has arrived whole, -1 for a malformed one. */
int store_link_next(store_link_t *l, store_link_msg_t *m);
void store_link_free(store_link_t *l);

#endif
