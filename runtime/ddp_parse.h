/* ddp_parse: numbers read from command lines and environment variables. The whole text must be
 * the number (no sign of trouble left over: "8x", "" and overflow are errors), within [lo, hi]. */
#ifndef DDP_PARSE_H
#define DDP_PARSE_H

/* 0 with *out set, or -1 (NULL text included), *out untouched. */
int ddp_parse_long(const char *text, long lo, long hi, long *out);
int ddp_parse_double(const char *text, double lo, double hi, double *out);

#endif
