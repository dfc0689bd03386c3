/* spawn: run a helper program (qsub, sbatch, nvidia-smi) and collect what it says, with a deadline.
 *
 * The child's stdout and stderr are read concurrently so that neither pipe can fill and stall
 * it; when the deadline passes the child is killed and the call fails. */
#ifndef DDP_SPAWN_H
#define DDP_SPAWN_H

#include "runtime/base/ddp_error.h"

typedef struct {
    char *out;  /* everything the child wrote to stdout (NUL-terminated, malloc'd) */
    char *err;  /* and to stderr */
    int status; /* exit code, or 128 + signal number */
} ddp_spawn_result_t;

/* Runs argv (looked up on PATH) in directory cwd (NULL: ours). Returns 0 when the child ran to
 * completion (whatever its status), -1 when it could not be started or timed out; a program not
 * found on PATH is reported as such, with code ENOENT (else exec's errno). Free the result with
 * ddp_spawn_result_free. */
int ddp_spawn_capture(char *const argv[], const char *cwd, int timeout_ms, ddp_spawn_result_t *res,
                      ddp_error_t *err);

void ddp_spawn_result_free(ddp_spawn_result_t *res);

#endif
