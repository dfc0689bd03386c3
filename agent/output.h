/* output: the agent's own stdout and stderr, which it never blocks on.
 *
 * Workers' lines, the agent's messages and the failure summary all go to fds 1 and 2. When
 * nobody reads them (a pipe into a stopped process, a terminal paused with Ctrl-S), a blocking
 * write would stall the agent for ever, and with it the teardown of the job. So fds 1 and 2
 * become non-blocking pipes of the agent's own (1 MiB each), and a thread per stream copies
 * them to the real stdout and stderr, blocking there if it must. A write the pipe cannot take
 * is dropped and counted; the agent says how much it dropped at its end. */
#ifndef AGENT_OUTPUT_H
#define AGENT_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "ddp_error.h"

/* Puts the pipes in place of fds 1 and 2; before anything is written. */
int output_start(ddp_error_t *err);
/* Writes len bytes to fd (1 or 2) if its pipe takes them now; else drops them (counted as the
 * lines they hold). Never blocks. */
void output_write(int fd, const char *p, size_t len);
/* Says on stderr how many lines were dropped, if any, then waits until both pipes have been
 * copied out, or until they have not moved for stall_ms (nobody is reading). */
void output_finish(int64_t stall_ms);

#endif
