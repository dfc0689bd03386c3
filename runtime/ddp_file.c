#include "ddp_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *ddp_read_file(const char *path, size_t *len, ddp_error_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        ddp_error_set(err, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&text, &size);
    if (!mem) {
        fclose(f);
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, n, mem);
    int read_failed = ferror(f);
    fclose(f);
    if (fclose(mem) != 0 || read_failed) {
        ddp_error_set(err, "%s: %s", path, read_failed ? "read error" : "out of memory");
        free(text);
        return NULL;
    }
    if (len)
        *len = size;
    return text;
}
