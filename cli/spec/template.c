#include "cli/spec/template.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *name;
    char *str;          /* NULL for a list */
    tmpl_ctx_t **items; /* list items */
    size_t nitems;
} tvar_t;

struct tmpl_ctx {
    tvar_t *vars;
    size_t nvars;
    const tmpl_ctx_t *parent;
};

tmpl_ctx_t *tmpl_ctx_create(void)
{
    return calloc(1, sizeof(tmpl_ctx_t));
}

void tmpl_ctx_destroy(tmpl_ctx_t *ctx)
{
    if (!ctx)
        return;
    for (size_t i = 0; i < ctx->nvars; i++) {
        free(ctx->vars[i].name);
        free(ctx->vars[i].str);
        for (size_t j = 0; j < ctx->vars[i].nitems; j++)
            tmpl_ctx_destroy(ctx->vars[i].items[j]);
        free(ctx->vars[i].items);
    }
    free(ctx->vars);
    free(ctx);
}

static tvar_t *find_own(const tmpl_ctx_t *ctx, const char *name, size_t len)
{
    for (size_t i = 0; i < ctx->nvars; i++)
        if (strlen(ctx->vars[i].name) == len && !memcmp(ctx->vars[i].name, name, len))
            return &ctx->vars[i];
    return NULL;
}

static const tvar_t *lookup(const tmpl_ctx_t *ctx, const char *name, size_t len)
{
    for (; ctx; ctx = ctx->parent) {
        const tvar_t *v = find_own(ctx, name, len);
        if (v)
            return v;
    }
    return NULL;
}

static tvar_t *get_or_add(tmpl_ctx_t *ctx, const char *name)
{
    tvar_t *v = find_own(ctx, name, strlen(name));
    if (v)
        return v;
    tvar_t *vars = realloc(ctx->vars, (ctx->nvars + 1) * sizeof *vars);
    if (!vars)
        return NULL;
    ctx->vars = vars;
    v = &ctx->vars[ctx->nvars];
    memset(v, 0, sizeof *v);
    if (!(v->name = strdup(name)))
        return NULL;
    ctx->nvars++;
    return v;
}

int tmpl_set(tmpl_ctx_t *ctx, const char *name, const char *value)
{
    tvar_t *v = get_or_add(ctx, name);
    char *copy = strdup(value);
    if (!v || !copy) {
        free(copy);
        return -1;
    }
    free(v->str);
    v->str = copy;
    return 0;
}

int tmpl_setf(tmpl_ctx_t *ctx, const char *name, const char *fmt, ...)
{
    char *value;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&value, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    int rc = tmpl_set(ctx, name, value);
    free(value);
    return rc;
}

int tmpl_set_bool(tmpl_ctx_t *ctx, const char *name, bool value)
{
    return tmpl_set(ctx, name, value ? "1" : "");
}

int tmpl_declare_list(tmpl_ctx_t *ctx, const char *name)
{
    return get_or_add(ctx, name) ? 0 : -1;
}

tmpl_ctx_t *tmpl_add_item(tmpl_ctx_t *ctx, const char *name)
{
    tvar_t *v = get_or_add(ctx, name);
    if (!v)
        return NULL;
    tmpl_ctx_t **items = realloc(v->items, (v->nitems + 1) * sizeof *items);
    if (!items)
        return NULL;
    v->items = items;
    tmpl_ctx_t *item = tmpl_ctx_create();
    if (!item)
        return NULL;
    item->parent = ctx;
    v->items[v->nitems++] = item;
    return item;
}

typedef enum {
    TOK_TEXT,
    TOK_VAR,
    TOK_SECTION,
    TOK_INVERTED,
    TOK_CLOSE,
    TOK_COMMENT,
    TOK_PARTIAL
} tok_type_t;

/* A partial that includes itself, directly or not, stops here. */
enum { PARTIAL_DEPTH_MAX = 8 };

typedef struct {
    tok_type_t type;
    const char *text; /* TEXT: the text; tags: the name */
    size_t len;
    unsigned line;
    size_t match;       /* SECTION/INVERTED: index of the closing token */
    const char *indent; /* PARTIAL on a line of its own: that line's indentation */
    size_t indent_len;
} token_t;

typedef struct {
    token_t *toks;
    size_t n, cap;
    const char *origin;
    const tmpl_partials_t *partials;
    unsigned depth; /* partials around this text */
} tokens_t;

static int push_tok(tokens_t *t, token_t tok)
{
    if (t->n == t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 64;
        token_t *nt = realloc(t->toks, ncap * sizeof *nt);
        if (!nt)
            return -1;
        t->toks = nt;
        t->cap = ncap;
    }
    t->toks[t->n++] = tok;
    return 0;
}

static unsigned count_lines(const char *from, const char *to)
{
    unsigned n = 0;
    for (; from < to; from++)
        n += *from == '\n';
    return n;
}

static bool blank_between(const char *a, const char *b)
{
    for (; a < b; a++)
        if (*a != ' ' && *a != '\t')
            return false;
    return true;
}

/* Splits the template into tokens, removing standalone tag lines, and pairs sections. */
static int tokenize(const char *text, tokens_t *t, ddp_error_t *err)
{
    const char *p = text;
    unsigned line = 1;
    size_t stack[64];
    size_t depth = 0;
    while (*p) {
        const char *open = strstr(p, "{{");
        const char *text_end = open ? open : p + strlen(p);
        if (!open) {
            if (push_tok(t, (token_t){TOK_TEXT, p, (size_t)(text_end - p), line, 0, NULL, 0}) < 0)
                return ddp_error_set(err, "out of memory");
            break;
        }
        const char *close = strstr(open + 2, "}}");
        unsigned tag_line = line + count_lines(p, open);
        /* Only comments may span lines, so a stray "{{" is caught on its own line. */
        if (!close || (open[2] != '!' && memchr(open, '\n', (size_t)(close - open))))
            return ddp_error_set(err, "%s:%u: \"{{\" without \"}}\"", t->origin, tag_line);
        tok_type_t type = TOK_VAR;
        const char *name = open + 2;
        switch (*name) {
        case '#':
            type = TOK_SECTION;
            name++;
            break;
        case '^':
            type = TOK_INVERTED;
            name++;
            break;
        case '/':
            type = TOK_CLOSE;
            name++;
            break;
        case '!':
            type = TOK_COMMENT;
            name++;
            break;
        case '>':
            type = TOK_PARTIAL;
            name++;
            break;
        }
        while (*name == ' ')
            name++;
        const char *name_end = close;
        while (name_end > name && name_end[-1] == ' ')
            name_end--;
        if (type != TOK_COMMENT && name_end == name)
            return ddp_error_set(err, "%s:%u: empty tag", t->origin, tag_line);

        const char *after = close + 2;
        const char *indent = NULL;
        size_t indent_len = 0;
        if (type != TOK_VAR) {
            /* Standalone: only blanks around the tag on its line. Then the whole line goes. */
            const char *line_start = open;
            while (line_start > text && line_start[-1] != '\n')
                line_start--;
            const char *line_end = after + strcspn(after, "\n");
            if (line_start >= p && blank_between(line_start, open) &&
                blank_between(after, line_end)) {
                text_end = line_start;
                after = *line_end ? line_end + 1 : line_end;
                indent = line_start;
                indent_len = (size_t)(open - line_start);
            }
        }
        if (text_end > p &&
            push_tok(t, (token_t){TOK_TEXT, p, (size_t)(text_end - p), line, 0, NULL, 0}) < 0)
            return ddp_error_set(err, "out of memory");
        token_t tok = {type, name, (size_t)(name_end - name), tag_line, 0, indent, indent_len};
        if (type == TOK_SECTION || type == TOK_INVERTED) {
            if (depth == sizeof stack / sizeof stack[0])
                return ddp_error_set(err, "%s:%u: sections nested too deeply", t->origin, tag_line);
            stack[depth++] = t->n;
        } else if (type == TOK_CLOSE) {
            if (depth == 0)
                return ddp_error_set(err, "%s:%u: {{/%.*s}} closes no section", t->origin, tag_line,
                                     (int)tok.len, tok.text);
            token_t *opener = &t->toks[stack[--depth]];
            if (opener->len != tok.len || memcmp(opener->text, tok.text, tok.len))
                return ddp_error_set(err, "%s:%u: {{/%.*s}} closes {{#%.*s}} from line %u",
                                     t->origin, tag_line, (int)tok.len, tok.text, (int)opener->len,
                                     opener->text, opener->line);
            opener->match = t->n;
        }
        if (push_tok(t, tok) < 0)
            return ddp_error_set(err, "out of memory");
        line += count_lines(p, after);
        p = after;
    }
    if (depth > 0) {
        token_t *opener = &t->toks[stack[depth - 1]];
        return ddp_error_set(err, "%s:%u: {{#%.*s}} is never closed", t->origin, opener->line,
                             (int)opener->len, opener->text);
    }
    return 0;
}

/* text with `indent` before each of its non-empty lines (malloc'd). */
static char *indent_lines(const char *text, const char *indent, size_t indent_len)
{
    size_t lines = 1;
    for (const char *c = text; *c; c++)
        lines += *c == '\n';
    char *out = malloc(strlen(text) + lines * indent_len + 1);
    if (!out)
        return NULL;
    char *o = out;
    for (const char *c = text; *c;) {
        size_t len = strcspn(c, "\n");
        if (len) {
            memcpy(o, indent, indent_len);
            o += indent_len;
        }
        memcpy(o, c, len + (c[len] == '\n'));
        o += len + (c[len] == '\n');
        c += len + (c[len] == '\n');
    }
    *o = '\0';
    return out;
}

static int render_range(const tokens_t *t, size_t from, size_t to, const tmpl_ctx_t *ctx, FILE *out,
                        ddp_error_t *err);

/* {{> name}}: the partial's text, indented as its tag's line, rendered with the same values. */
static int render_partial(const tokens_t *t, const token_t *tok, const tmpl_ctx_t *ctx, FILE *out,
                          ddp_error_t *err)
{
    if (!t->partials)
        return ddp_error_set(err, "%s:%u: {{> %.*s}}: no partials here", t->origin, tok->line,
                             (int)tok->len, tok->text);
    if (t->depth == PARTIAL_DEPTH_MAX)
        return ddp_error_set(err, "%s:%u: {{> %.*s}}: partials nested more than %d deep", t->origin,
                             tok->line, (int)tok->len, tok->text, PARTIAL_DEPTH_MAX);
    char *name = strndup(tok->text, tok->len), *origin = NULL, *text = NULL, *indented = NULL;
    tokens_t pt = {NULL, 0, 0, NULL, t->partials, t->depth + 1};
    int rc = -1;
    if (!name) {
        ddp_error_set(err, "out of memory");
        goto out;
    }
    if (!(text = t->partials->load(t->partials->arg, name, &origin, err))) {
        ddp_error_prefix(err, "%s:%u", t->origin, tok->line);
        goto out;
    }
    if (!(indented = indent_lines(text, tok->indent, tok->indent_len))) {
        ddp_error_set(err, "out of memory");
        goto out;
    }
    pt.origin = origin;
    if (tokenize(indented, &pt, err) == 0)
        rc = render_range(&pt, 0, pt.n, ctx, out, err);
out:
    free(pt.toks);
    free(indented);
    free(text);
    free(origin);
    free(name);
    return rc;
}

static bool truthy(const tvar_t *v)
{
    return v->str ? v->str[0] != '\0' : v->nitems > 0;
}

/* Renders toks[from, to). With out == NULL only checks names (used for sections not taken, so a
 * misspelt name fails even when its section is empty in this render). */
static int render_range(const tokens_t *t, size_t from, size_t to, const tmpl_ctx_t *ctx, FILE *out,
                        ddp_error_t *err)
{
    for (size_t i = from; i < to; i++) {
        const token_t *tok = &t->toks[i];
        if (tok->type == TOK_TEXT) {
            if (out)
                fwrite(tok->text, 1, tok->len, out);
            continue;
        }
        if (tok->type == TOK_COMMENT || tok->type == TOK_CLOSE)
            continue;
        if (tok->type == TOK_PARTIAL) {
            if (render_partial(t, tok, ctx, out, err) < 0)
                return -1;
            continue;
        }
        const tvar_t *v = lookup(ctx, tok->text, tok->len);
        if (!v)
            return ddp_error_set(err, "%s:%u: unknown variable \"%.*s\"", t->origin, tok->line,
                                 (int)tok->len, tok->text);
        if (tok->type == TOK_VAR) {
            if (!v->str)
                return ddp_error_set(err, "%s:%u: \"%.*s\" is a list; use {{#%.*s}}", t->origin,
                                     tok->line, (int)tok->len, tok->text, (int)tok->len, tok->text);
            if (out)
                fputs(v->str, out);
            continue;
        }
        size_t body = i + 1, end = tok->match;
        bool take = (tok->type == TOK_SECTION) == truthy(v);
        if (v->str || tok->type == TOK_INVERTED) {
            if (render_range(t, body, end, ctx, take ? out : NULL, err) < 0)
                return -1;
        } else if (v->nitems == 0) {
            /* An empty list gives no item to resolve the body's names against. */
        } else {
            for (size_t k = 0; k < v->nitems; k++)
                if (render_range(t, body, end, v->items[k], out, err) < 0)
                    return -1;
        }
        i = end;
    }
    return 0;
}

int tmpl_render(const char *text, const char *origin, const tmpl_ctx_t *ctx,
                const tmpl_partials_t *partials, FILE *out, ddp_error_t *err)
{
    tokens_t t = {NULL, 0, 0, origin, partials, 0};
    int rc = tokenize(text, &t, err);
    if (rc == 0)
        rc = render_range(&t, 0, t.n, ctx, out, err);
    free(t.toks);
    return rc;
}
