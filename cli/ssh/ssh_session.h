/* ssh_session: one SSH connection (libssh2) that runs one command on a host.
 *
 * Opening checks the host's key against known_hosts under both its alias and its HostName (an
 * unknown key is an error that names the host and the key's SHA256 fingerprint, unless new keys
 * may be accepted, which then are appended to the file under a lock; a key that differs under
 * either name, or of a type the host is not known with, is always an error) and logs in with the
 * user's ssh-agent or identity files. The command's stdin stays open for what the caller writes,
 * until ssh_session_eof; its output comes back through ssh_session_pump. Every blocking step ends
 * by the caller's deadline. */
#ifndef DDPJOB_SSH_SESSION_H
#define DDPJOB_SSH_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "cli/ssh/ssh_config.h"

typedef struct ssh_session ssh_session_t;

/* While a command runs: a keepalive every SSH_KEEPALIVE_S, and a connection whose data goes
 * unacknowledged for SSH_LOST_AFTER_MS is lost. */
enum { SSH_KEEPALIVE_S = 5, SSH_LOST_AFTER_MS = 15000 };

/* Once per process, before any thread opens a session. */
int ssh_session_init(ddp_error_t *err);

/* Logs in with `password` when given (setup-nodes, once, to install a key), else with keys. A
 * refused login (or no key to try) fails with code EACCES. */
ssh_session_t *ssh_session_open(const char *alias, const ssh_target_t *t, const char *known_hosts,
                                int accept_new_keys, const char *password, int64_t deadline,
                                ddp_error_t *err);
/* The same through the jump host `via` (open, logged in; closed with the session, or here on
 * failure): its direct-tcpip channel to t's host and port carries this session. */
ssh_session_t *ssh_session_open_via(ssh_session_t *via, const char *alias, const ssh_target_t *t,
                                    const char *known_hosts, int accept_new_keys, int64_t deadline,
                                    ddp_error_t *err);
/* Starts `command`, then writes `input` to its stdin. */
int ssh_session_exec(ssh_session_t *s, const char *command, const char *input, size_t len,
                     int64_t deadline, ddp_error_t *err);
/* The same on a pseudo-terminal there of rows x cols, of type term (its output all on stream 0). */
int ssh_session_exec_terminal(ssh_session_t *s, const char *command, const char *term, int rows,
                              int cols, int64_t deadline, ddp_error_t *err);
/* Writes to the command's stdin (a terminal's keys), within SSH_LOST_AFTER_MS. */
int ssh_session_write(ssh_session_t *s, const void *data, size_t len, ddp_error_t *err);
/* The terminal's new size. */
void ssh_session_window(ssh_session_t *s, int rows, int cols);
/* The connection's socket, to poll beside other descriptors before pumping. */
int ssh_session_socket(const ssh_session_t *s);
/* Output of the command: stream 0 stdout, 1 stderr. */
typedef void (*ssh_output_fn)(void *arg, int stream, const char *data, size_t len);
/* Waits up to timeout_ms for output and passes it on. Returns 1 once the command has ended and
 * all its output is passed on, 0 while it runs, -1 when the connection failed. */
int ssh_session_pump(ssh_session_t *s, int timeout_ms, ssh_output_fn fn, void *arg,
                     ddp_error_t *err);
/* Closes the command's stdin. */
void ssh_session_eof(ssh_session_t *s);
/* The command's exit status (128+N when killed by signal N), once pump returned 1. */
int ssh_session_exit_status(ssh_session_t *s);
void ssh_session_close(ssh_session_t *s);

/* The libssh2 session under s, blocking, its calls ending by `deadline`: for a module that speaks
 * another of SSH's protocols over the same login (SFTP). */
struct _LIBSSH2_SESSION *ssh_session_libssh2(ssh_session_t *s, int64_t deadline);
/* "alias (user@hostname:port)", for messages. */
const char *ssh_session_where(const ssh_session_t *s);

#endif
