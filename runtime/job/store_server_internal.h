/* store_server_internal: what the store's serving loop (store_server.c) and its relays
 * (store_relay.c) share: the server, its connections and keys, and the calls each makes into
 * the other. Not for the store's users: store_server.h is theirs. */
#ifndef DDP_STORE_SERVER_INTERNAL_H
#define DDP_STORE_SERVER_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/job/store_link.h"
#include "runtime/job/store_server.h"

/* A connection stops reading requests while this much reply data is unsent, so a client that
 * never reads cannot make the server buffer without bound. */
#define OUT_HIGH_WATER (4u << 20)
/* How often parked WAITs and unfinished handshakes are checked against their deadlines. */
#define TICK_MS 50
/* A relay stops reading its clients while this much is unsent to the core. */
#define UPLINK_HIGH_WATER (8u << 20)

typedef struct entry entry_t;

typedef enum { CONN_HANDSHAKE, CONN_READY, CONN_WAITING } conn_state_t;

typedef struct conn {
    int fd;
    conn_state_t state;
    char peer[64];
    int64_t accepted_at; /* ddp_now_ms */
    unsigned char nonce[STORE_NONCE_LEN];
    int64_t deadline; /* of the handshake, or of the parked WAIT */
    int64_t input_at; /* ddp_now_ms of the last bytes received */
    int partial;      /* holds part of a frame (counted in the server's npartial) */
    ddp_store_buf_t in, out;
    size_t out_sent;
    uint32_t events; /* what epoll currently watches */
    entry_t **waiting_on;
    size_t *waiting_pos; /* where this connection sits in each waiting_on entry's waiters */
    size_t nwaiting;
    unsigned char *close_key, *close_val; /* STORE_SET_ON_CLOSE's, or NULL */
    size_t close_key_len, close_val_len;
    size_t queued;       /* 1 + its index in the server's ready list, or 0 */
    struct relay *relay; /* the core's: the relay process holding it (NULL: held here) */
    uint64_t link_id;    /* its id on a link (in a relay: 0 until it has proven the token) */
    int link_ended;      /* the link's other end has ended it: nothing more to say there */
    /* In the server's list of connections in CONN_HANDSHAKE, oldest first. */
    struct conn *pending_prev, *pending_next;
} conn_t;

struct entry {
    char *key;
    size_t key_len;
    unsigned char *val;
    size_t val_len;
    int present;
    int64_t set_at_us; /* ddp_now_us of the last set */
    /* Removing a waiter is O(1) (a swap with the last), so waking or expiring thousands of
     * WAITs on one key stays linear. */
    struct waiter {
        conn_t *conn;
        size_t slot; /* the entry's index in conn->waiting_on */
    } * waiters;
    size_t nwaiters, waiters_cap;
};

/* A relay process as the core sees it: its link and the connections it holds, by their
 * descriptor in the relay (the low half of their id). */
typedef struct relay {
    store_link_t link;
    pid_t pid;
    uint32_t events; /* what epoll watches on the link */
    conn_t **conns;
    size_t conns_cap;
} relay_t;

struct ddp_store_server {
    int listen_fd, epoll_fd, stop_fd, port;
    int accepting; /* accepts on its listener (the core does not while it has relays) */
    relay_t *relays;
    size_t nrelays;
    int is_relay;        /* this server is a relay: it serves no request itself */
    store_link_t uplink; /* a relay's link to the core */
    uint32_t uplink_events;
    uint32_t generation; /* a relay's: the high half of the next connection id */
    unsigned char *token;
    size_t token_len;
    store_log_fn log;
    void *log_ctx;
    pthread_t thread;
    conn_t **conns; /* by fd */
    size_t conns_cap;
    size_t nparked; /* connections with a handshake or WAIT deadline */
    /* No handshake, WAIT or half-sent request runs out before this (ddp_now_ms): tens of
     * thousands of agents parked until the rendezvous deadline are not looked at every tick. */
    int64_t next_expiry;
    entry_t **table;
    size_t table_cap, table_used;
    conn_t **ready; /* connections whose buffered input must be processed */
    size_t nready, ready_cap;
    int accept_paused;
    int stopping;       /* server_free: closing connections sets nothing */
    size_t npending;    /* connections in CONN_HANDSHAKE */
    size_t pending_cap; /* pending_cap() */
    conn_t *pending_oldest, *pending_newest;
    size_t npartial; /* connections holding part of a frame */
    int64_t refusal_logged_at;
    unsigned long refusals_unsaid;
};
/* store_server.c */
void server_log(ddp_store_server_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void conn_close(ddp_store_server_t *s, conn_t *c);
/* Grows a table of connections (by descriptor, or by slot) to hold `index`: 0, or -1. */
int conns_reserve(conn_t ***conns, size_t *cap, size_t index);
/* Sends what it can of c's output (a relay's connection: hands it to the link). */
int conn_flush(ddp_store_server_t *s, conn_t *c);
/* Checks the client's proof of the token; answers with the server's. */
int conn_handshake(ddp_store_server_t *s, conn_t *c);
/* Processes the complete frames buffered for c, as long as c is ready for requests. */
int conn_process(ddp_store_server_t *s, conn_t *c);
/* The serving loop, until stopped (a relay: until its link ends). */
void *server_main(void *arg);

/* store_relay.c */
/* A relay's conn_process: once the token is proven, everything the client sends goes to the
 * core, which reads the frames. */
int relay_process(ddp_store_server_t *s, conn_t *c);
/* A link's events: 0, or -1 in a relay whose uplink has ended. */
int link_event(ddp_store_server_t *s, int fd, uint32_t ev);
/* Flushes every link; a relay whose link broke is lost. -1 in a relay whose uplink broke. */
int flush_links(ddp_store_server_t *s);
/* A relay that has ended (or whose link broke): its connections are gone with it. */
void relay_lost(ddp_store_server_t *s, relay_t *r);
/* Descriptors one process here may hold (SIZE_MAX: no limit). */
size_t descriptor_limit(void);
/* How many unproven connections a process serving `clients` clients may hold (0: a relay, or a
 * store that takes as many as the limit lets). */
size_t pending_cap(size_t clients);
/* How many relays it takes to hold `clients` connections. */
int relays_needed(size_t clients, size_t *n, ddp_error_t *err);
/* Forks n relays sharing s's listener, each linked to s. */
int start_relays(ddp_store_server_t *s, size_t n, ddp_error_t *err);

#endif
