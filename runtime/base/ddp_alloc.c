#include "runtime/base/ddp_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *checked(void *p)
{
    if (!p) {
        fputs("out of memory\n", stderr);
        exit(1);
    }
    return p;
}

void *ddp_xcalloc(size_t count, size_t size)
{
    return checked(calloc(count ? count : 1, size ? size : 1));
}

void *ddp_xrealloc(void *p, size_t size)
{
    return checked(realloc(p, size ? size : 1));
}

char *ddp_xstrdup(const char *s)
{
    return checked(strdup(s));
}

char *ddp_xstrndup(const char *s, size_t n)
{
    return checked(strndup(s, n));
}
