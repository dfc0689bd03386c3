#include "runtime/job/hostlist.h"

#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_portable.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ddp_hostlist_t *hostlist_new(void)
{
    return calloc(1, sizeof(ddp_hostlist_t));
}

void ddp_hostlist_destroy(ddp_hostlist_t *hl)
{
    if (!hl)
        return;
    for (size_t i = 0; i < hl->count; i++)
        free(hl->hosts[i]);
    free(hl->hosts);
    free(hl->first_line);
    free(hl);
}

long ddp_hostlist_find(const ddp_hostlist_t *hl, const char *host)
{
    size_t hlen = strcspn(host, ".");
    for (size_t i = 0; i < hl->count; i++) {
        const char *h = hl->hosts[i];
        if (strcmp(h, host) == 0)
            return (long)i;
        size_t len = strcspn(h, ".");
        /* Short name against FQDN: only one side may carry the domain. */
        if (len == hlen && strncmp(h, host, len) == 0 && (h[len] == '\0' || host[hlen] == '\0'))
            return (long)i;
    }
    return -1;
}

/* Appends a host; duplicates are removed once the list is complete (hostlist_dedupe). */
static int hostlist_append(ddp_hostlist_t *hl, const char *host, size_t len, size_t line,
                           size_t *cap, ddp_error_t *err)
{
    if (hl->count >= HOSTLIST_MAX_HOSTS)
        return ddp_error_set(err, "more than %d hosts", HOSTLIST_MAX_HOSTS);
    if (hl->count == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        char **hosts = realloc(hl->hosts, ncap * sizeof *hosts);
        if (!hosts)
            return ddp_error_set(err, "out of memory");
        hl->hosts = hosts;
        size_t *lines = realloc(hl->first_line, ncap * sizeof *lines);
        if (!lines)
            return ddp_error_set(err, "out of memory");
        hl->first_line = lines;
        *cap = ncap;
    }
    char *copy = strndup(host, len);
    if (!copy)
        return ddp_error_set(err, "out of memory");
    hl->hosts[hl->count] = copy;
    hl->first_line[hl->count] = line;
    hl->count++;
    return 0;
}

static int cmp_host_index(const void *a, const void *b, void *arg)
{
    char **hosts = arg;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    int c = strcmp(hosts[x], hosts[y]);
    return c ? c : (x > y) - (x < y);
}

/* Keeps the first occurrence of each host, in original order. Sorting indices keeps this
 * O(n log n), so a node file of a 10 000-node job with 48 lines per node stays fast. */
static int hostlist_dedupe(ddp_hostlist_t *hl, ddp_error_t *err)
{
    if (hl->count < 2)
        return 0;
    size_t *order = malloc(hl->count * sizeof *order);
    bool *dup = calloc(hl->count, sizeof *dup);
    if (!order || !dup) {
        free(order);
        free(dup);
        return ddp_error_set(err, "out of memory");
    }
    for (size_t i = 0; i < hl->count; i++)
        order[i] = i;
    ddp_sort_r(order, hl->count, sizeof *order, cmp_host_index, hl->hosts);
    for (size_t i = 1; i < hl->count; i++)
        if (strcmp(hl->hosts[order[i]], hl->hosts[order[i - 1]]) == 0)
            dup[order[i]] = true;
    size_t kept = 0;
    for (size_t i = 0; i < hl->count; i++) {
        if (dup[i]) {
            free(hl->hosts[i]);
            continue;
        }
        hl->hosts[kept] = hl->hosts[i];
        hl->first_line[kept] = hl->first_line[i];
        kept++;
    }
    hl->count = kept;
    free(order);
    free(dup);
    return 0;
}

/* One numeric range inside brackets, with the zero padding of its low end. */
typedef struct {
    unsigned long lo, hi;
    int width;
} range_t;

/* A parsed item of an expression: literal text and bracket groups, alternating. */
typedef struct {
    const char *text;
    size_t len;
    range_t *ranges; /* NULL for a literal */
    size_t nranges;
} part_t;

static int parse_number(const char *s, size_t len, unsigned long *out)
{
    if (len == 0 || len > 18)
        return -1;
    unsigned long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        v = v * 10 + (unsigned long)(s[i] - '0');
    }
    *out = v;
    return 0;
}

/* Parses the inside of one bracket group, e.g. "01-04,07". */
static int parse_ranges(const char *s, size_t len, part_t *part, const char *expr, ddp_error_t *err)
{
    size_t cap = 0;
    size_t i = 0;
    while (i <= len) {
        size_t j = i;
        while (j < len && s[j] != ',')
            j++;
        const char *tok = s + i;
        size_t toklen = j - i;
        const char *dash = memchr(tok, '-', toklen);
        range_t r;
        size_t lolen = dash ? (size_t)(dash - tok) : toklen;
        if (parse_number(tok, lolen, &r.lo) < 0 ||
            (dash && parse_number(dash + 1, toklen - lolen - 1, &r.hi) < 0))
            return ddp_error_set(err, "hostlist \"%s\": bad range \"%.*s\" (expected N or N-M)",
                                 expr, (int)toklen, tok);
        if (!dash)
            r.hi = r.lo;
        if (r.hi < r.lo)
            return ddp_error_set(err, "hostlist \"%s\": range \"%.*s\" runs backwards", expr,
                                 (int)toklen, tok);
        r.width = (lolen > 1 && tok[0] == '0') ? (int)lolen : 0;
        if (part->nranges == cap) {
            cap = cap ? cap * 2 : 4;
            range_t *nr = realloc(part->ranges, cap * sizeof *nr);
            if (!nr)
                return ddp_error_set(err, "out of memory");
            part->ranges = nr;
        }
        part->ranges[part->nranges++] = r;
        i = j + 1;
    }
    return 0;
}

static void free_parts(part_t *parts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(parts[i].ranges);
    free(parts);
}

/* Expands parts[k..] onto the host name built so far in buf, adding complete names to hl. */
static int expand_parts(const part_t *parts, size_t nparts, size_t k, char *buf, size_t used,
                        size_t bufsize, ddp_hostlist_t *hl, size_t *cap, ddp_error_t *err)
{
    if (k == nparts)
        return hostlist_append(hl, buf, used, hl->count, cap, err);
    const part_t *p = &parts[k];
    if (!p->ranges) {
        if (used + p->len >= bufsize)
            return ddp_error_set(err, "host name too long");
        memcpy(buf + used, p->text, p->len);
        return expand_parts(parts, nparts, k + 1, buf, used + p->len, bufsize, hl, cap, err);
    }
    for (size_t r = 0; r < p->nranges; r++) {
        for (unsigned long v = p->ranges[r].lo; v <= p->ranges[r].hi; v++) {
            int n = snprintf(buf + used, bufsize - used, "%0*lu", p->ranges[r].width, v);
            if (n < 0 || (size_t)n >= bufsize - used)
                return ddp_error_set(err, "host name too long");
            if (expand_parts(parts, nparts, k + 1, buf, used + (size_t)n, bufsize, hl, cap, err) <
                0)
                return -1;
        }
    }
    return 0;
}

/* Splits one comma-free item ("a[1-2]-b[01-02]") into parts and expands it. */
static int expand_item(const char *item, size_t len, const char *expr, ddp_hostlist_t *hl,
                       size_t *cap, ddp_error_t *err)
{
    part_t *parts = NULL;
    size_t nparts = 0;
    int rc = -1;
    size_t i = 0;
    if (len == 0) {
        ddp_error_set(err, "hostlist \"%s\": empty host name", expr);
        goto out;
    }
    while (i < len) {
        part_t part = {0};
        part_t *np = realloc(parts, (nparts + 1) * sizeof *np);
        if (!np) {
            ddp_error_set(err, "out of memory");
            goto out;
        }
        parts = np;
        if (item[i] == '[') {
            const char *close = memchr(item + i, ']', len - i);
            if (!close) {
                ddp_error_set(err, "hostlist \"%s\": \"[\" without \"]\"", expr);
                goto out;
            }
            size_t inner = (size_t)(close - (item + i + 1));
            if (memchr(item + i + 1, '[', inner)) {
                ddp_error_set(err, "hostlist \"%s\": nested \"[\"", expr);
                goto out;
            }
            parts[nparts++] = part;
            if (parse_ranges(item + i + 1, inner, &parts[nparts - 1], expr, err) < 0)
                goto out;
            i += inner + 2;
        } else {
            size_t j = i;
            while (j < len && item[j] != '[') {
                if (item[j] == ']') {
                    ddp_error_set(err, "hostlist \"%s\": \"]\" without \"[\"", expr);
                    goto out;
                }
                if (isspace((unsigned char)item[j]) || iscntrl((unsigned char)item[j])) {
                    ddp_error_set(err, "hostlist \"%s\": blank or control character", expr);
                    goto out;
                }
                j++;
            }
            part.text = item + i;
            part.len = j - i;
            parts[nparts++] = part;
            i = j;
        }
    }
    unsigned long long total = 1;
    for (size_t k = 0; k < nparts; k++) {
        unsigned long long n = 0;
        for (size_t r = 0; r < parts[k].nranges; r++)
            n += parts[k].ranges[r].hi - parts[k].ranges[r].lo + 1;
        if (parts[k].ranges)
            total *= n;
        if (total + hl->count > HOSTLIST_MAX_HOSTS) {
            ddp_error_set(err, "hostlist \"%s\": more than %d hosts", expr, HOSTLIST_MAX_HOSTS);
            goto out;
        }
    }
    char buf[1024];
    rc = expand_parts(parts, nparts, 0, buf, 0, sizeof buf, hl, cap, err);
out:
    free_parts(parts, nparts);
    return rc;
}

ddp_hostlist_t *ddp_hostlist_expand(const char *expr, ddp_error_t *err)
{
    ddp_hostlist_t *hl = hostlist_new();
    size_t cap = 0;
    if (!hl) {
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    size_t len = strlen(expr);
    if (len == 0) {
        ddp_error_set(err, "hostlist is empty");
        goto error;
    }
    size_t start = 0;
    int depth = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && expr[i] == '[')
            depth++;
        else if (i < len && expr[i] == ']')
            depth--;
        if (i == len || (expr[i] == ',' && depth == 0)) {
            if (expand_item(expr + start, i - start, expr, hl, &cap, err) < 0)
                goto error;
            start = i + 1;
        }
    }
    if (hostlist_dedupe(hl, err) < 0)
        goto error;
    for (size_t i = 0; i < hl->count; i++)
        hl->first_line[i] = i;
    return hl;
error:
    ddp_hostlist_destroy(hl);
    return NULL;
}

ddp_hostlist_t *ddp_hostlist_from_nodefile_text(const char *text, const char *origin,
                                                ddp_error_t *err)
{
    ddp_hostlist_t *hl = hostlist_new();
    size_t cap = 0;
    size_t line_index = 0;
    size_t lineno = 0;
    if (!hl) {
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    for (const char *p = text; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        const char *s = p;
        const char *e = p + len;
        lineno++;
        while (s < e && isspace((unsigned char)*s))
            s++;
        while (e > s && isspace((unsigned char)e[-1]))
            e--;
        if (e > s) {
            for (const char *c = s; c < e; c++) {
                if (isspace((unsigned char)*c) || iscntrl((unsigned char)*c)) {
                    ddp_error_set(err, "%s:%zu: expected one host name per line, got \"%.*s\"",
                                  origin, lineno, (int)(e - s), s);
                    goto error;
                }
            }
            if (hostlist_append(hl, s, (size_t)(e - s), line_index, &cap, err) < 0)
                goto error;
            line_index++;
        }
        p = eol ? eol + 1 : p + len;
    }
    if (hl->count == 0) {
        ddp_error_set(err, "%s: no host names in node file", origin);
        goto error;
    }
    if (hostlist_dedupe(hl, err) < 0)
        goto error;
    return hl;
error:
    ddp_hostlist_destroy(hl);
    return NULL;
}

ddp_hostlist_t *ddp_hostlist_from_nodefile(const char *path, ddp_error_t *err)
{
    size_t size;
    char *text = ddp_read_file(path, &size, err);
    if (!text)
        return NULL;
    ddp_hostlist_t *hl = NULL;
    if (memchr(text, '\0', size))
        ddp_error_set(err, "%s: not a text file (NUL byte)", path);
    else
        hl = ddp_hostlist_from_nodefile_text(text, path, err);
    free(text);
    return hl;
}

/* Host name split as prefix + trailing decimal number (e.g. "gpu" + 7 with padding 2). */
typedef struct {
    size_t prefix_len;
    unsigned long number;
    int width; /* zero padding, 0 when none */
    bool has_number;
} host_key_t;

static host_key_t host_key(const char *h)
{
    host_key_t k = {0};
    size_t len = strlen(h);
    size_t d = len;
    while (d > 0 && isdigit((unsigned char)h[d - 1]))
        d--;
    k.prefix_len = d;
    if (d < len && len - d <= 18) {
        k.has_number = true;
        parse_number(h + d, len - d, &k.number);
        k.width = (len - d > 1 && h[d] == '0') ? (int)(len - d) : 0;
    } else {
        k.prefix_len = len;
    }
    return k;
}

/* A numbered host for grouping: hosts of one group share prefix and padding. */
typedef struct {
    const char *name;
    host_key_t key;
    size_t index; /* in the list */
} numbered_t;

static int cmp_numbered(const void *pa, const void *pb)
{
    const numbered_t *a = pa, *b = pb;
    size_t common = a->key.prefix_len < b->key.prefix_len ? a->key.prefix_len : b->key.prefix_len;
    int c = memcmp(a->name, b->name, common);
    if (c)
        return c;
    if (a->key.prefix_len != b->key.prefix_len)
        return a->key.prefix_len < b->key.prefix_len ? -1 : 1;
    if (a->key.width != b->key.width)
        return a->key.width < b->key.width ? -1 : 1;
    return (a->key.number > b->key.number) - (a->key.number < b->key.number);
}

static bool same_group(const numbered_t *a, const numbered_t *b)
{
    return a->key.prefix_len == b->key.prefix_len && a->key.width == b->key.width &&
           memcmp(a->name, b->name, a->key.prefix_len) == 0;
}

/* One group as prefix[ranges] (or prefixN when it has one host). */
static void write_group(FILE *f, const numbered_t *g, size_t n)
{
    int width = g[0].key.width;
    fwrite(g[0].name, 1, g[0].key.prefix_len, f);
    if (n == 1) {
        fprintf(f, "%0*lu", width, g[0].key.number);
        return;
    }
    fputc('[', f);
    for (size_t a = 0; a < n;) {
        size_t b = a;
        while (b + 1 < n && g[b + 1].key.number == g[b].key.number + 1)
            b++;
        if (a > 0)
            fputc(',', f);
        fprintf(f, "%0*lu", width, g[a].key.number);
        if (b > a)
            fprintf(f, "-%0*lu", width, g[b].key.number);
        a = b + 1;
    }
    fputc(']', f);
}

/* Sorting the numbered hosts by (prefix, padding, number) makes each group one run, in
 * O(n log n); the groups are then written where their first host stood in the list. */
char *ddp_hostlist_compress(const ddp_hostlist_t *hl)
{
    char *out = NULL;
    size_t outlen = 0, n = 0;
    FILE *f = open_memstream(&out, &outlen);
    size_t slots = hl->count ? hl->count : 1;
    numbered_t *numbered = malloc(slots * sizeof *numbered);
    /* For a list position: the run that starts its group there, +1; 0 for none. */
    size_t *group_at = calloc(slots, sizeof *group_at);
    bool *plain = calloc(slots, sizeof *plain);
    if (!f || !numbered || !group_at || !plain) {
        if (f)
            fclose(f);
        free(out);
        free(numbered);
        free(group_at);
        free(plain);
        return NULL;
    }
    for (size_t i = 0; i < hl->count; i++) {
        host_key_t k = host_key(hl->hosts[i]);
        if (k.has_number)
            numbered[n++] = (numbered_t){hl->hosts[i], k, i};
        else
            plain[i] = true;
    }
    qsort(numbered, n, sizeof *numbered, cmp_numbered);
    for (size_t a = 0, b; a < n; a = b) {
        size_t first = numbered[a].index;
        for (b = a + 1; b < n && same_group(&numbered[a], &numbered[b]); b++)
            if (numbered[b].index < first)
                first = numbered[b].index;
        group_at[first] = a + 1;
    }
    bool any = false;
    for (size_t i = 0; i < hl->count; i++) {
        if (!plain[i] && !group_at[i])
            continue;
        if (any)
            fputc(',', f);
        any = true;
        if (plain[i]) {
            fputs(hl->hosts[i], f);
            continue;
        }
        size_t a = group_at[i] - 1, b = a + 1;
        while (b < n && same_group(&numbered[a], &numbered[b]))
            b++;
        write_group(f, numbered + a, b - a);
    }
    fclose(f);
    free(numbered);
    free(group_at);
    free(plain);
    return out;
}
