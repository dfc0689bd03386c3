/* remote_command: one command run to its end on an open SSH session, its output kept (bounded),
 * all by the caller's deadline; for the short commands ddpjob asks of a host (a probe, a file
 * appended to) rather than a job's streams. */
#ifndef DDPJOB_REMOTE_COMMAND_H
#define DDPJOB_REMOTE_COMMAND_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "cli/ssh/ssh_session.h"

/* What a command printed: up to REMOTE_OUTPUT_MAX bytes of each stream, NUL-terminated. */
enum { REMOTE_OUTPUT_MAX = 65536 };
typedef struct {
    char out[REMOTE_OUTPUT_MAX + 1], err[REMOTE_OUTPUT_MAX + 1];
    size_t out_len, err_len;
    int status; /* the command's exit status (128+N: killed by signal N) */
} remote_result_t;

/* Runs `command` with `input` on its stdin (then closed). 0 once it has ended, whatever its
 * status; -1 with err set when the connection failed or the deadline passed first. */
int remote_command_run(ssh_session_t *s, const char *command, const char *input, size_t len,
                       int64_t deadline, remote_result_t *r, ddp_error_t *err);

#endif
