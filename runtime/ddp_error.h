/* ddp_error: the error text a failing function hands back to its caller.
 *
 * Functions that can fail return -1 or NULL and, when given a non-NULL ddp_error_t, write one
 * line saying what went wrong (no trailing newline). Only a program's main prints it. */
#ifndef DDP_ERROR_H
#define DDP_ERROR_H

#include <stdarg.h>

typedef struct {
    char msg[1024];
} ddp_error_t;

/* Sets err->msg from a printf format; NULL err is allowed. Always returns -1 so that callers can
 * write `return ddp_error_set(err, ...);`. */
int ddp_error_set(ddp_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepends "PREFIX: " to the message already in err (for context added on the way up). */
int ddp_error_prefix(ddp_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
