/* ddp_error: the error text a failing function hands back to its caller.
 *
 * Functions that can fail return -1 or NULL and, when given a non-NULL ddp_error_t, write one
 * line saying what went wrong (no trailing newline). Only a program's main prints it. Where a
 * caller must tell failures apart, the failing function also sets an errno-style code, named in
 * its header; callers branch on the code, never on the text. */
#ifndef DDP_ERROR_H
#define DDP_ERROR_H

#include <stdarg.h>

typedef struct {
    char msg[1024];
    int code; /* an errno value, or 0: no particular cause */
} ddp_error_t;

/* Sets err->msg from a printf format, and code 0; NULL err is allowed. Always returns -1 so that
 * callers can write `return ddp_error_set(err, ...);`. */
int ddp_error_set(ddp_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with the errno-style `code` a caller may branch on. */
int ddp_error_code(ddp_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "PREFIX: " to the message already in err (for context added on the way up); the code
 * stays. */
int ddp_error_prefix(ddp_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
