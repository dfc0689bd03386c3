#include "cli/jobs/json_doc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether arrays and objects nest in v more than `levels` deep. */
static int nests_deeper(const json_t *v, int levels)
{
    if (!json_is_object(v) && !json_is_array(v))
        return 0;
    if (levels == 0)
        return 1;
    const char *key;
    json_t *child;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, key, child)
        {
            if (nests_deeper(child, levels - 1))
                return 1;
        }
    } else {
        json_array_foreach(v, i, child)
        {
            if (nests_deeper(child, levels - 1))
                return 1;
        }
    }
    return 0;
}

int json_doc_parse(json_doc_t *d, const char *text, size_t len)
{
    memset(d, 0, sizeof *d);
    if (len > JSON_DOC_MAX_BYTES)
        return -1;
    json_error_t error;
    /* jansson itself stops at 2048 levels, so this walk's recursion is bounded. */
    d->root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &error);
    if (d->root && nests_deeper(d->root, JSON_DOC_MAX_DEPTH)) {
        json_decref(d->root);
        d->root = NULL;
    }
    return d->root ? 0 : -1;
}

void json_doc_free(json_doc_t *d)
{
    json_decref(d->root);
    for (size_t i = 0; i < d->ntexts; i++)
        free(d->texts[i]);
    free(d->texts);
    memset(d, 0, sizeof *d);
}

const json_t *json_root(const json_doc_t *d)
{
    return d->root;
}

const json_t *json_child(const json_t *map, const char *key)
{
    return json_is_object(map) ? json_object_get(map, key) : NULL;
}

const char *json_text(json_doc_t *d, const json_t *map, const char *key)
{
    const json_t *v = json_child(map, key);
    if (json_is_string(v))
        return json_string_value(v);
    char number[64], *copy, **more;
    if (json_is_integer(v))
        snprintf(number, sizeof number, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(number, sizeof number, "%.17g", json_real_value(v));
    else
        return NULL;
    if (!(copy = strdup(number)) || !(more = realloc(d->texts, (d->ntexts + 1) * sizeof *more))) {
        free(copy);
        return NULL;
    }
    d->texts = more;
    d->texts[d->ntexts++] = copy;
    return copy;
}

int json_whole(const json_t *map, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    const json_t *v = json_child(map, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return -1;
    *out = json_integer_value(v);
    return 0;
}

int json_copy_text(const json_t *map, const char *key, char *out, size_t size)
{
    const json_t *v = json_child(map, key);
    out[0] = '\0';
    if (!json_is_string(v))
        return -1;
    snprintf(out, size, "%s", json_string_value(v));
    return 0;
}

const json_t *json_item(const json_t *list, size_t n)
{
    return json_is_array(list) ? json_array_get(list, n) : NULL;
}

size_t json_items(const json_t *list)
{
    return json_is_array(list) ? json_array_size(list) : 0;
}

json_t *json_shown_string(const char *text)
{
    if (!text)
        return json_null();
    json_t *s = json_string(text);
    if (s)
        return s;
    char *shown = strdup(text);
    if (!shown)
        return NULL;
    for (char *c = shown; *c; c++)
        if ((unsigned char)*c >= 0x80)
            *c = '?';
    s = json_string(shown);
    free(shown);
    return s;
}

char *json_dump_text(json_t *value)
{
    char *text =
             value ? json_dumps(value, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_DOC_REAL_DIGITS)
                   : NULL,
         *line = NULL;
    json_decref(value);
    if (text && asprintf(&line, "%s\n", text) < 0)
        line = NULL;
    free(text);
    return line;
}
