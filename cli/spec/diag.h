/* diag: the list of problems found in one spec file, reported all at once.
 *
 * Each entry is one line `FILE:LINE:COL: FIELD: MESSAGE`, the form compilers use, so editors can
 * jump to it. Validation collects every problem before anything is printed; the command that
 * owns the list prints it and exits non-zero. */
#ifndef DDPJOB_DIAG_H
#define DDPJOB_DIAG_H

#include <stddef.h>

typedef struct {
    char *file;
    char **lines;
    size_t count;
} diag_t;

/* Creates an empty list for problems in `file`. */
diag_t *diag_create(const char *file);
void diag_destroy(diag_t *d);

/* Adds `FILE:LINE:COL: FIELD: MESSAGE`. line and col are 1-based; field may be NULL. */
void diag_add(diag_t *d, unsigned long line, unsigned long col, const char *field, const char *fmt,
              ...) __attribute__((format(printf, 5, 6)));

/* Adds `FILE: FLAG MESSAGE`: a problem with a value given on the command line (--set). */
void diag_add_flag(diag_t *d, const char *flag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Moves into d the lines of `more` (a list for the same file) at a place (line and column) none of
 * d's is at: a place already said is not said twice; `more` is emptied. */
void diag_take_new_places(diag_t *d, diag_t *more);

/* The closest of `candidates` (NULL-terminated) to `word` by edit distance, or NULL when none
 * is close enough to be a plausible misspelling. */
const char *diag_suggest(const char *word, const char *const *candidates);

#endif
