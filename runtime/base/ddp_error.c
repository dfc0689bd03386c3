#include "runtime/base/ddp_error.h"

#include <stdio.h>
#include <string.h>

static void set_message(ddp_error_t *err, int code, const char *fmt, va_list ap)
{
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    err->code = code;
}

int ddp_error_set(ddp_error_t *err, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        set_message(err, 0, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int ddp_error_code(ddp_error_t *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        set_message(err, code, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int ddp_error_prefix(ddp_error_t *err, const char *fmt, ...)
{
    if (err) {
        char joined[2 * sizeof err->msg + 2];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(joined, sizeof err->msg, fmt, ap);
        va_end(ap);
        size_t len = n < 0 ? 0 : (size_t)n < sizeof err->msg ? (size_t)n : sizeof err->msg - 1;
        memcpy(joined + len, ": ", 2);
        memcpy(joined + len + 2, err->msg, sizeof err->msg);
        joined[sizeof joined - 1] = '\0';
        memcpy(err->msg, joined, sizeof err->msg - 1);
        err->msg[sizeof err->msg - 1] = '\0';
    }
    return -1;
}
