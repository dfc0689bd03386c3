/* ddp_parse: numbers and signal names read from command lines, environment variables and specs.
 * The whole text must be the value (no sign of trouble left over: "8x", "" and overflow are
 * errors), numbers within [lo, hi]. */
#ifndef DDP_PARSE_H
#define DDP_PARSE_H

/* 0 with *out set, or -1 (NULL text included), *out untouched. */
int ddp_parse_long(const char *text, long lo, long hi, long *out);
/* The same into an int, for [lo, hi] within int's range. */
int ddp_parse_int(const char *text, int lo, int hi, int *out);
int ddp_parse_double(const char *text, double lo, double hi, double *out);
/* A signal's name without "SIG" ("USR1" for SIGUSR1); NULL for one without a name here. Our own
 * table: glibc's sigabbrev_np exists in no other C library (a static musl build has none). */
const char *ddp_signal_name(int sig);
/* A signal as USR1, SIGUSR1 or its number: the number, or -1. */
int ddp_parse_signal(const char *text);
/* Whether `text` is a name safe to hand a command or a shell as a word: letters, digits and the
 * characters of `extra`, not empty, not starting with '-' or '.' (no option, no hidden path). */
int ddp_plain_name(const char *text, const char *extra);

#endif
