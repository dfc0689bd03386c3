#include "ddp_parse.h"

#include <errno.h>
#include <stdlib.h>

int ddp_parse_long(const char *text, long lo, long hi, long *out)
{
    if (!text)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end == text || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int ddp_parse_double(const char *text, double lo, double hi, double *out)
{
    if (!text)
        return -1;
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || end == text || *end || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}
