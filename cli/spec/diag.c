#include "cli/spec/diag.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

diag_t *diag_create(const char *file)
{
    diag_t *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->file = strdup(file);
    if (!d->file) {
        free(d);
        return NULL;
    }
    return d;
}

void diag_destroy(diag_t *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->count; i++)
        free(d->lines[i]);
    free(d->lines);
    free(d->file);
    free(d);
}

/* Adds head followed by the formatted message. */
static void add_line(diag_t *d, const char *head, const char *fmt, va_list ap)
{
    char msg[1024], *text = NULL;
    vsnprintf(msg, sizeof msg, fmt, ap);
    char **lines = realloc(d->lines, (d->count + 1) * sizeof *lines);
    if (lines)
        d->lines = lines;
    /* Out of memory: the line is lost. */
    if (!lines || asprintf(&text, "%s%s", head, msg) < 0)
        return;
    d->lines[d->count++] = text;
}

void diag_add(diag_t *d, unsigned long line, unsigned long col, const char *field, const char *fmt,
              ...)
{
    char head[4400];
    snprintf(head, sizeof head, "%s:%lu:%lu: %s%s", d->file, line, col, field ? field : "",
             field ? ": " : "");
    va_list ap;
    va_start(ap, fmt);
    add_line(d, head, fmt, ap);
    va_end(ap);
}

void diag_add_flag(diag_t *d, const char *flag, const char *fmt, ...)
{
    char head[4400];
    snprintf(head, sizeof head, "%s: %s ", d->file, flag);
    va_list ap;
    va_start(ap, fmt);
    add_line(d, head, fmt, ap);
    va_end(ap);
}

/* The length of a line's "FILE:LINE:COL: " (0: none such). */
static size_t place_length(const diag_t *d, const char *line)
{
    size_t n = strlen(d->file);
    if (strncmp(line, d->file, n) || line[n] != ':')
        return 0;
    n += 1 + strspn(line + n + 1, "0123456789");
    if (line[n] != ':')
        return 0;
    n += 1 + strspn(line + n + 1, "0123456789");
    return line[n] == ':' ? n + 1 : 0;
}

void diag_take_new_places(diag_t *d, diag_t *more)
{
    size_t had = d->count;
    for (size_t i = 0; i < more->count; i++) {
        char *line = more->lines[i];
        size_t n = place_length(more, line), said = 0;
        for (size_t k = 0; n && !said && k < had; k++)
            said = !strncmp(d->lines[k], line, n);
        char **lines = said ? NULL : realloc(d->lines, (d->count + 1) * sizeof *lines);
        if (lines) {
            d->lines = lines;
            d->lines[d->count++] = line;
        } else {
            free(line);
        }
        more->lines[i] = NULL;
    }
    more->count = 0;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64)
        return (size_t)-1;
    size_t prev[65], cur[65];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (lb + 1) * sizeof *prev);
    }
    return prev[lb];
}

const char *diag_suggest(const char *word, const char *const *candidates)
{
    const char *best = NULL;
    size_t best_dist = (size_t)-1;
    for (size_t i = 0; candidates[i]; i++) {
        size_t dist = edit_distance(word, candidates[i]);
        if (dist < best_dist) {
            best_dist = dist;
            best = candidates[i];
        }
    }
    /* Allow about one typo per four letters, at least one and at most three. */
    size_t limit = strlen(word) / 4;
    limit = limit < 1 ? 1 : limit > 3 ? 3 : limit;
    return best_dist <= limit ? best : NULL;
}
