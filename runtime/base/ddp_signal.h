/* ddp_signal: the signals a supervisor of child processes (the agent, ddpjob pbs-agents) takes
 * through a descriptor instead of handlers: children's ends, the stop signals and the checkpoint
 * signals. */
#ifndef DDP_SIGNAL_H
#define DDP_SIGNAL_H

#include "runtime/base/ddp_error.h"

/* Blocks SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1 and SIGUSR2 (before any thread starts, so
 * none takes them) and returns a nonblocking, close-on-exec signalfd for them; -1 with err set.
 * A child started afterwards inherits the mask: unblock them between fork and exec. */
int ddp_supervisor_signalfd(ddp_error_t *err);

#endif
