/* ddp_signal: the signals a supervisor of child processes (the agent, ddpjob pbs-agents) takes
 * through a descriptor instead of acting in handlers: children's ends, the stop signals and the
 * checkpoint signals; and a wait for blocked signals with a deadline (ddpjob launch). Linux
 * gives a signalfd and sigtimedwait; elsewhere (ddp_portable.h) a pipe written by handlers and
 * sigpending with sigwait. */
#ifndef DDP_SIGNAL_H
#define DDP_SIGNAL_H

#include <signal.h>

#include "runtime/base/ddp_error.h"

/* Takes SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1 and SIGUSR2 (call it before any thread
 * starts, so none takes them) and returns a nonblocking, close-on-exec descriptor that is
 * readable while one is waiting; -1 with err set. On Linux they are blocked, and a child started
 * afterwards inherits the mask: unblock them between fork and exec. */
int ddp_supervisor_signals(ddp_error_t *err);

/* The next signal waiting on that descriptor: its number, or 0 when none is. */
int ddp_supervisor_signal_take(int fd);

/* Waits up to timeout_ms for a signal of `blocked` (blocked in every thread) and takes it: its
 * number, or 0 when none came. */
int ddp_signal_wait(const sigset_t *blocked, int timeout_ms);

#endif
