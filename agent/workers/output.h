/* output: the agent's own stdout and stderr: nothing lost while someone reads them, and never a
 * reason for the agent to block.
 *
 * Workers' lines, the agent's messages and the failure summary all go to fds 1 and 2, which
 * become non-blocking pipes of the agent's own (1 MiB each); a thread per stream copies them to
 * the real stdout and stderr, blocking there if it must. What a full pipe cannot take waits, in
 * order, in the stream's queue, and while a stream has a queue the agent reads no worker pipe
 * that feeds it (output_backlogged): the workers block in their writes, as under a terminal,
 * while the agent's heartbeats, signals and teardown carry on. Only once the real output has
 * taken no byte for the stall deadline does the stream drop what is written to it, counting the
 * lines of each source, until the reader moves again; the agent then says how many lines of
 * which ranks were dropped and how long the reader had stalled (and at its end, if it still is).
 * A pipe into a stopped process, a terminal paused with Ctrl-S or a FIFO nobody reads thus costs
 * the job one stall deadline of blocked writes, never a hang. */
#ifndef AGENT_OUTPUT_H
#define AGENT_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"

/* What wrote a piece of output: a worker's global rank, or OUTPUT_AGENT. */
#define OUTPUT_AGENT (-1)
/* The stall deadline when none is given (--output-stall-timeout, spec output_stall_timeout:). */
#define OUTPUT_STALL_DEFAULT_MS 10000

/* Puts the pipes in place of fds 1 and 2; before anything is written. */
int output_start(int64_t stall_ms, ddp_error_t *err);
/* Writes len bytes from source to fd (1 or 2), in order after what the stream already holds;
 * queues what its pipe cannot take now, or, while the reader is stalled, drops it (counted).
 * Never blocks. */
void output_write(int fd, int source, const char *p, size_t len);
/* Whether fd's stream holds a queue: its writers should wait (until fd polls POLLOUT). */
int output_backlogged(int fd);
/* Moves queued bytes into the pipes, notices a stall (and the end of one); call when a pipe
 * polls writable and at least every few hundred ms. */
void output_service(void);
/* Says what was dropped, if anything, then waits until both streams are copied out, or until
 * the real output has taken nothing for the stall deadline (at most 2 s once it had stalled). */
void output_finish(void);
/* One line "ddpjob-agent: ..." on stderr, written whole. */
void agent_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
