/* node_relay: a terminal on a node of a held allocation, reached from the login node over one
 * TCP connection (no SSH to the node: PBS sites differ on allowing it). The node's side (the
 * server, started on the node by the allocation's holder) listens on a port the kernel picks,
 * says where in a file the client reads (both on the user's private record folder), takes the
 * one client that first sends the session's token, and runs the program on a new pseudo-terminal
 * (a real one: line editing, Ctrl-C to the program inside, the window's size); the client relays
 * its terminal, raw, and exits with the program's status.
 *
 * Frames, both ways: a type byte, a 4-byte big-endian length, the bytes. Client to server:
 * 'T' the token (first, once), 'W' the window (rows, columns: 2 bytes each), 'D' input, 'E' the
 * end of input. Server to client: 'D' output, 'X' the program's status (4 bytes).
 *
 * A port forwarded the same way: the client listens on this machine's loopback, and each
 * connection made to it is a connection of its own to the node's side ('T', then 'F'), which
 * connects it to the port on the node's loopback and passes the bytes as they are; one more
 * connection ('T', then 'C') is held open while the client forwards, and the node's side ends
 * with it. */
#ifndef DDPJOB_NODE_RELAY_H
#define DDPJOB_NODE_RELAY_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"

/* The token's length, in hex digits. */
#define RELAY_TOKEN_LEN 64

/* The node's side: listens, writes "HOST PORT\n" into endpoint (atomically), waits up to
 * accept_ms for the client with `token`, runs argv (in cwd) on a new pseudo-terminal and relays
 * until it ends, showing the client each new line of the file `notice` (may be NULL). Its
 * status (as a shell's: 128 + N for signal N), or -1 with err. */
int relay_serve(const char *endpoint, const char *token, const char *cwd, char *const *argv,
                const char *notice, int accept_ms, ddp_error_t *err);

/* The login node's side: connects to host:port with token and relays this terminal (raw while
 * standard input is one) until the program ends. Its status, or -1 with err. */
int relay_attach(const char *host, int port, const char *token, ddp_error_t *err);

/* The node's side of a forwarded port: as relay_serve, then connects each client's connection
 * to `port` on the node's loopback until the client's control connection closes. 0, or -1 with
 * err. */
int relay_serve_port(const char *endpoint, const char *token, int port, int accept_ms,
                     ddp_error_t *err);

/* The client's side: listens on this machine's loopback at local_port (in use: err's code
 * EADDRINUSE) and forwards each connection to host:port's node side, until a signal (SIGINT,
 * SIGTERM) or the node's side ends. `ready` (may be NULL) is called once it listens. 0 when
 * stopped by a signal, -1 with err. */
int relay_forward(const char *host, int port, const char *token, int local_port,
                  void (*ready)(void *), void *arg, ddp_error_t *err);

/* The client's control connection to a port's node side: while it is open, the node's side
 * forwards; a connection (fd), or -1 with err. */
int relay_control(const char *host, int port, const char *token, ddp_error_t *err);

/* What a forwarded connection sends first, before the bytes it passes (for a client that
 * reaches the node's side some other way, as through SSH from a laptop): into out, its length
 * (0 when size is too small). */
size_t relay_forward_opening(const char *token, unsigned char *out, size_t size);

/* A terminal made raw (as ssh makes it): every key reaches the program there, Ctrl-C too. */
struct termios;
void relay_make_raw(struct termios *t);

#endif
