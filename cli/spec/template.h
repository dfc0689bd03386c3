/* template: a small {{tag}} renderer for job-script templates kept as data files.
 *
 * Syntax: {{name}} inserts a value as it is (the caller has already quoted it for its use);
 * {{#name}}...{{/name}} renders its body once for a non-empty value, or once per item of a list;
 * {{^name}}...{{/name}} renders when the value is empty or the list has no items;
 * {{! text}} is a comment; {{> name}} renders the partial template `name` (loaded by the
 * caller's partials) in place, with the current values; on a line of its own, every line of the
 * partial gets that line's indentation. A line holding only a section, comment or partial tag
 * vanishes entirely, so templates can be laid out readably. A name that the context does not
 * define, or a section that is not closed, is an error naming the template line. Names resolve in
 * the innermost list item first, then outwards. */
#ifndef DDPJOB_TEMPLATE_H
#define DDPJOB_TEMPLATE_H

#include <stdbool.h>
#include <stdio.h>

#include "runtime/base/ddp_error.h"

typedef struct tmpl_ctx tmpl_ctx_t;

tmpl_ctx_t *tmpl_ctx_create(void);
/* Frees the context, its values and its list items. Accepts NULL. */
void tmpl_ctx_destroy(tmpl_ctx_t *ctx);

/* Sets a string value (copied). Returns 0, or -1 when out of memory. */
int tmpl_set(tmpl_ctx_t *ctx, const char *name, const char *value);
int tmpl_setf(tmpl_ctx_t *ctx, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A flag for {{#name}} / {{^name}}: "1" or "". */
int tmpl_set_bool(tmpl_ctx_t *ctx, const char *name, bool value);
/* Declares `name` as a list (possibly left empty). */
int tmpl_declare_list(tmpl_ctx_t *ctx, const char *name);
/* Appends an item to list `name` (declaring it if needed) and returns the item's context,
 * owned by ctx; NULL when out of memory. */
tmpl_ctx_t *tmpl_add_item(tmpl_ctx_t *ctx, const char *name);

/* Where {{> name}} finds its text: load returns the partial's text (malloc'd) and sets *origin
 * (malloc'd, e.g. its file name, for errors), or returns NULL with err set. */
typedef struct {
    char *(*load)(void *arg, const char *name, char **origin, ddp_error_t *err);
    void *arg;
} tmpl_partials_t;

/* Renders `text` to out. `origin` (e.g. the template's file name) prefixes errors. partials may
 * be NULL: then a partial tag is an error. */
int tmpl_render(const char *text, const char *origin, const tmpl_ctx_t *ctx,
                const tmpl_partials_t *partials, FILE *out, ddp_error_t *err);

#endif
