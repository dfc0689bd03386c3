/* store_server: the rendezvous store a job's node-0 agent serves (wire: store_proto.h).
 *
 * One thread runs an epoll loop over every connection, so thousands of agents can wait at once
 * without a thread each. Keys map to byte values; a WAIT parks its connection on the keys it
 * names and is answered when one of them is set or when its timeout passes. Every connection
 * must prove the job token within STORE_HANDSHAKE_MS; one that fails, sends a malformed or
 * oversized frame, or stalls (in the handshake, or for STORE_FRAME_IDLE_MS in the middle of a
 * request) is closed and logged, and the server carries on. Connections that have not proven
 * the token are capped by the descriptor limit, at half of what the clients and
 * STORE_SPARE_DESCRIPTORS leave (past it the oldest are dropped, whatever they sent), and starting
 * a server raises the process's descriptor limit to its hard limit.
 *
 * A server told to expect more clients than that limit allows forks relay processes
 * (store_link.h) that accept the connections, prove the token and pass the bytes to this thread,
 * which serves them as its own; they end with the server, and with the thread that started it.
 *
 * Log lines (refused peers, malformed frames) go to the caller's callback, from the server's
 * thread; refusals at most about once a second, with a count of the rest. */
#ifndef DDP_STORE_SERVER_H
#define DDP_STORE_SERVER_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"

/* Long enough for a client on a loaded node (its answer is one HMAC), short enough that a
 * stranger's connection holds a descriptor only briefly. */
#define STORE_HANDSHAKE_MS 2000
/* A connection that sent part of a request and then nothing for this long is closed. */
#define STORE_FRAME_IDLE_MS 5000

/* Descriptors a process serving a store keeps for everything but the store's connections. */
#define STORE_SPARE_DESCRIPTORS 64
/* At most this many relay processes: past it, the server refuses to start. */
#define STORE_MAX_RELAYS 64

typedef void (*store_log_fn)(void *ctx, const char *line);
typedef struct ddp_store_server ddp_store_server_t;

/* Listens on host:port (host NULL: every address; port 0: any free port) and starts serving,
 * ready for `clients` connections at once (0: as many as the descriptor limit lets it). */
ddp_store_server_t *ddp_store_server_start(const char *host, int port, const void *token,
                                           size_t token_len, size_t clients, store_log_fn log,
                                           void *log_ctx, ddp_error_t *err);
int ddp_store_server_port(const ddp_store_server_t *s);
/* Stops the thread, closes every connection and frees the server; accepts NULL. */
void ddp_store_server_stop(ddp_store_server_t *s);

#endif
