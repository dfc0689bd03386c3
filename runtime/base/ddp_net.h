/* ddp_net: TCP sockets with deadlines.
 *
 * Every blocking step (connect, a full read, a full write) takes an absolute deadline on the
 * ddp_clock and fails with a message naming the peer and the cause instead of waiting forever.
 * Reads and writes loop over short transfers. Sockets are created close-on-exec so that workers
 * never inherit an agent's connections. */
#ifndef DDP_NET_H
#define DDP_NET_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"

/* Listens on `host` (NULL or "" for every address) and `port` (0: the kernel picks one).
 * *bound_port (if not NULL) gets the port. Returns the listening fd, or -1. A port already in
 * use is reported as such, with code EADDRINUSE. */
int ddp_net_listen(const char *host, int port, int backlog, int *bound_port, ddp_error_t *err);

/* Connects to host:port before `deadline`. Returns a blocking fd, or -1 with err's code
 * connect's errno (ETIMEDOUT when the deadline passed; 0 when the name does not resolve). */
int ddp_net_connect(const char *host, int port, int64_t deadline, ddp_error_t *err);
/* Whether a failed ddp_net_connect may pass, so a later try makes sense: the peer answered but
 * nobody listens, or its host cannot be reached yet, as when it is still booting or its link comes
 * up. */
int ddp_net_connect_transient(const ddp_error_t *err);

/* Writes all `len` bytes before `deadline`. */
int ddp_net_write_full(int fd, const void *buf, size_t len, int64_t deadline, ddp_error_t *err);

/* Reads exactly `len` bytes before `deadline`. The peer closing first is an error that says so. */
int ddp_net_read_full(int fd, void *buf, size_t len, int64_t deadline, ddp_error_t *err);

int ddp_net_set_nonblocking(int fd);

/* A port that is free on every address right now, for a service that binds it a moment later
 * (the workers' MASTER_PORT). */
int ddp_net_free_port(ddp_error_t *err);

/* Whether host names an address of this machine (one a socket can be bound to). */
int ddp_net_is_local(const char *host);

/* Raises the process's soft limit on open descriptors to its hard limit: a store holds one per
 * agent (and stranger), an agent two pipes per worker. */
void ddp_net_raise_descriptor_limit(void);

/* This host's name (gethostname), for logs and records. */
void ddp_net_hostname(char *buf, size_t size);

#endif
