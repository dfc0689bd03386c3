/* ssh_forward: a port on this machine's loopback carried through an open SSH session (as ssh -L
 * does), for `ddpjob dev DEV --port P --on CLUSTER`: each connection made to it gets a
 * direct-tcpip channel to host:port as the SSH server reaches that address, opening with the
 * bytes the caller gives (a relay's token and purpose, node_relay.h), then its bytes passed both
 * ways, each side's end passed on as a half close. All in this thread, beside the session's
 * command, whose output is passed on and whose end ends the forwarding. */
#ifndef DDPJOB_SSH_FORWARD_H
#define DDPJOB_SSH_FORWARD_H

#include <signal.h>
#include <stddef.h>

#include "runtime/base/ddp_error.h"
#include "cli/ssh/ssh_session.h"

typedef struct {
    const char *host; /* where the SSH server connects each connection */
    int port;
    const unsigned char *opening; /* sent first on each */
    size_t opening_len;
} ssh_forward_t;

/* Accepts on the listening socket lfd and forwards each connection until *stop is set (by a
 * signal handler) or the session's command ends (its output passed to fn). 0, or -1 with err
 * when the connection was lost, or (code EPERM) the server would not open a channel there. */
int ssh_forward_run(ssh_session_t *s, int lfd, const ssh_forward_t *fw, volatile sig_atomic_t *stop,
                    ssh_output_fn fn, void *arg, ddp_error_t *err);

#endif
