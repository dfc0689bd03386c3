/* guard: kills this agent's worker process groups when the agent dies, however it dies.
 *
 * PR_SET_PDEATHSIG reaches only a worker itself, not what the worker started (a data loader, a
 * `sleep &` in a script). So the agent forks a small guard first, and tells it over a pipe which
 * process groups are live. When the pipe reaches EOF (the agent exited, or was SIGKILLed), the
 * guard SIGKILLs every group it still knows and exits. It ignores the signals a terminal or a
 * scheduler sends to the whole group, so that it is still there to do its job. */
#ifndef AGENT_GUARD_H
#define AGENT_GUARD_H

#include <sys/types.h>

#include "runtime/base/ddp_error.h"

typedef struct {
    int fd; /* write end of the pipe; -1 when there is no guard */
    pid_t pid;
} guard_t;

int guard_start(guard_t *g, ddp_error_t *err);
/* Adds or removes a process group from the guard's list. */
void guard_watch(guard_t *g, pid_t pgid);
void guard_forget(guard_t *g, pid_t pgid);
/* Closes the pipe (the guard kills what it still knows, then exits) and reaps the guard. */
void guard_stop(guard_t *g);

#endif
