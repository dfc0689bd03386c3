#include "cli/spec/pipeline.h"

#include <ctype.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "cli/spec/yaml_pair.h"
#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_file.h"

#define AT(n) (unsigned long)(n)->start_mark.line + 1, (unsigned long)(n)->start_mark.column + 1

const char *const pipeline_after_words[STAGE_AFTER_KINDS] = {"ok", "any", "notok", "best"};

/* The value kinds a placeholder may ask of a stage, after its name ("params." takes a name). */
static const char *const value_kinds[] = {"best.params.", "best.checkpoint", "record", "checkpoint",
                                          NULL};

static const char *text_of(const yaml_node_t *n)
{
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The file's YAML document: 0, or -1 with the problem in diag. */
static int load_document(const char *path, yaml_document_t *doc, diag_t *diag)
{
    size_t len;
    ddp_error_t err;
    unsigned char *text = (unsigned char *)ddp_read_file(path, &len, &err);
    if (!text) {
        diag_add(diag, 1, 1, NULL, "%s", err.msg);
        return -1;
    }
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, text, len);
    int ok = yaml_parser_load(&parser, doc);
    if (!ok)
        diag_add(diag, (unsigned long)parser.problem_mark.line + 1,
                 (unsigned long)parser.problem_mark.column + 1, NULL, "YAML syntax error: %s",
                 parser.problem ? parser.problem : "unknown problem");
    yaml_parser_delete(&parser);
    free(text);
    return ok ? 0 : -1;
}

int pipeline_file_is(const char *path)
{
    yaml_document_t doc;
    diag_t *quiet = diag_create(path);
    int is = 0;
    if (quiet && load_document(path, &doc, quiet) == 0) {
        yaml_node_t *root = yaml_document_get_root_node(&doc);
        is = root && root->type == YAML_MAPPING_NODE && yaml_pair_of(&doc, root, "stages");
        yaml_document_delete(&doc);
    }
    diag_destroy(quiet);
    return is;
}

static int stage_named(const pipeline_t *p, const char *name)
{
    for (size_t i = 0; i < p->nstages; i++)
        if (!strcmp(p->stages[i].name, name))
            return (int)i;
    return -1;
}

static int name_is_stage_word(const char *name)
{
    return name[0] && (isalpha((unsigned char)name[0]) || name[0] == '_') &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") ==
               strlen(name);
}

/* after: {ok: [a, b], any: c}: the names, checked once every stage is known (resolve_after). */
static void read_after(yaml_document_t *doc, yaml_node_t *n, pipeline_stage_t *s,
                       char *names[STAGE_AFTER_KINDS][PIPELINE_STAGES_MAX],
                       yaml_node_t *where[STAGE_AFTER_KINDS][PIPELINE_STAGES_MAX], diag_t *diag)
{
    if (n->type != YAML_MAPPING_NODE) {
        diag_add(diag, AT(n), "after",
                 "expected {ok: [STAGE...], any: [...], notok: [...], best: [...]}");
        return;
    }
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = yaml_document_get_node(doc, pr->key),
                    *v = yaml_document_get_node(doc, pr->value);
        int kind = -1;
        for (int i = 0; i < STAGE_AFTER_KINDS && text_of(k); i++)
            kind = !strcmp(text_of(k), pipeline_after_words[i]) ? i : kind;
        if (kind < 0) {
            diag_add(diag, AT(k), "after", "%s: expected ok, any, notok or best",
                     text_of(k) ? text_of(k) : "a key");
            continue;
        }
        yaml_node_item_t one = pr->value, *it = &one, *end = &one + 1;
        if (v->type == YAML_SEQUENCE_NODE) {
            it = v->data.sequence.items.start;
            end = v->data.sequence.items.top;
        }
        for (; it < end; it++) {
            yaml_node_t *item = yaml_document_get_node(doc, *it);
            if (!text_of(item) || s->nafter[kind] == PIPELINE_STAGES_MAX) {
                diag_add(diag, AT(item), "after", "expected a stage's name");
                continue;
            }
            where[kind][s->nafter[kind]] = item;
            names[kind][s->nafter[kind]++] = (char *)text_of(item);
        }
    }
}

static void read_sets(yaml_document_t *doc, yaml_node_t *n, pipeline_stage_t *s, diag_t *diag)
{
    if (n->type != YAML_MAPPING_NODE) {
        diag_add(diag, AT(n), "set", "expected {PATH: VALUE, ...} (as --set PATH=VALUE)");
        return;
    }
    size_t count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    s->sets = ddp_xcalloc(count + 1, sizeof *s->sets);
    s->set_at = ddp_xcalloc(count + 1, sizeof *s->set_at);
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *k = text_of(yaml_document_get_node(doc, pr->key)),
                   *v = text_of(yaml_document_get_node(doc, pr->value));
        if (!k || !v) {
            diag_add(diag, AT(yaml_document_get_node(doc, pr->key)), "set",
                     "expected PATH: VALUE, each a scalar");
            continue;
        }
        yaml_node_t *vn = yaml_document_get_node(doc, pr->value);
        if (asprintf(&s->sets[s->nsets], "%s=%s", k, v) >= 0) {
            s->set_at[s->nsets][0] = vn->start_mark.line + 1;
            s->set_at[s->nsets++][1] = vn->start_mark.column + 1;
        }
    }
}

/* A stage's mapping: spec:, set:, after: (its names into after_names for resolve_after). */
static void read_stage(yaml_document_t *doc, yaml_node_t *k, yaml_node_t *v, pipeline_t *p,
                       char *names[STAGE_AFTER_KINDS][PIPELINE_STAGES_MAX],
                       yaml_node_t *where[STAGE_AFTER_KINDS][PIPELINE_STAGES_MAX], diag_t *diag)
{
    pipeline_stage_t *s = &p->stages[p->nstages++];
    s->name = ddp_xstrdup(text_of(k));
    s->line = k->start_mark.line + 1;
    s->col = k->start_mark.column + 1;
    if (v->type != YAML_MAPPING_NODE) {
        diag_add(diag, AT(v), s->name, "expected {spec: FILE, set: {...}, after: {...}}");
        return;
    }
    for (yaml_node_pair_t *pr = v->data.mapping.pairs.start; pr < v->data.mapping.pairs.top; pr++) {
        yaml_node_t *fk = yaml_document_get_node(doc, pr->key),
                    *fv = yaml_document_get_node(doc, pr->value);
        const char *field = text_of(fk) ? text_of(fk) : "";
        if (!strcmp(field, "spec") && text_of(fv) && !s->spec)
            s->spec = ddp_xstrdup(text_of(fv));
        else if (!strcmp(field, "set"))
            read_sets(doc, fv, s, diag);
        else if (!strcmp(field, "after"))
            read_after(doc, fv, s, names, where, diag);
        else
            diag_add(diag, AT(fk), s->name, "%s: %s", field,
                     strcmp(field, "spec") ? "unknown field (spec, set, after)"
                                           : "expected one file's path");
    }
    if (!s->spec)
        diag_add(diag, AT(k), s->name, "no spec: (the stage's job spec file)");
}

static void resolve_after(pipeline_t *p, size_t i,
                          char *names[STAGE_AFTER_KINDS][PIPELINE_STAGES_MAX],
                          yaml_node_t *where[STAGE_AFTER_KINDS][PIPELINE_STAGES_MAX], diag_t *diag)
{
    pipeline_stage_t *s = &p->stages[i];
    const char *all[PIPELINE_STAGES_MAX + 1];
    for (size_t k = 0; k < p->nstages; k++)
        all[k] = p->stages[k].name;
    all[p->nstages] = NULL;
    for (int kind = 0; kind < STAGE_AFTER_KINDS; kind++)
        for (size_t a = 0; a < s->nafter[kind]; a++) {
            int at = stage_named(p, names[kind][a]);
            const char *near = at < 0 ? diag_suggest(names[kind][a], all) : NULL;
            if (at < 0)
                diag_add(diag, AT(where[kind][a]), "after", "no stage \"%s\"%s%s%s", names[kind][a],
                         near ? " (did you mean " : "", near ? near : "", near ? "?)" : "");
            else if ((size_t)at == i)
                diag_add(diag, AT(where[kind][a]), "after", "%s cannot wait for itself", s->name);
            s->after[kind][a] = at;
        }
}

int pipeline_waits_for(const pipeline_t *p, size_t from, size_t on)
{
    /* A stage is marked seen as it is pushed (from first), so todo holds each stage once at
     * most and never overflows. */
    int seen[PIPELINE_STAGES_MAX] = {0};
    size_t todo[PIPELINE_STAGES_MAX], n = 0;
    seen[from] = 1;
    todo[n++] = from;
    while (n) {
        const pipeline_stage_t *s = &p->stages[todo[--n]];
        for (int kind = 0; kind < STAGE_AFTER_KINDS; kind++)
            for (size_t a = 0; a < s->nafter[kind]; a++) {
                int at = s->after[kind][a];
                if (at >= 0 && (size_t)at == on)
                    return 1;
                if (at < 0 || seen[at])
                    continue;
                seen[at] = 1;
                todo[n++] = (size_t)at;
            }
    }
    return 0;
}

/* "a -> b -> a": the shortest way from stage i back to itself through after:. */
static void cycle_text(const pipeline_t *p, size_t i, char *out, size_t size)
{
    int from[PIPELINE_STAGES_MAX];
    size_t queue[PIPELINE_STAGES_MAX], head = 0, tail = 0;
    for (size_t k = 0; k < PIPELINE_STAGES_MAX; k++)
        from[k] = -1;
    queue[tail++] = i;
    int back = -1; /* the stage whose after: names i */
    while (head < tail && back < 0) {
        size_t at = queue[head++];
        for (int kind = 0; kind < STAGE_AFTER_KINDS; kind++)
            for (size_t a = 0; a < p->stages[at].nafter[kind]; a++) {
                int next = p->stages[at].after[kind][a];
                if (next < 0 || back >= 0)
                    continue;
                if ((size_t)next == i)
                    back = (int)at;
                else if (from[next] < 0 && (size_t)next != i) {
                    from[next] = (int)at;
                    queue[tail++] = (size_t)next;
                }
            }
    }
    size_t path[PIPELINE_STAGES_MAX], n = 0;
    for (int k = back; k >= 0 && (size_t)k != i && n < PIPELINE_STAGES_MAX; k = from[k])
        path[n++] = (size_t)k;
    size_t len = (size_t)snprintf(out, size, "%s", p->stages[i].name);
    while (n && len < size)
        len += (size_t)snprintf(out + len, size - len, " -> %s", p->stages[path[--n]].name);
    if (len < size)
        snprintf(out + len, size - len, " -> %s", p->stages[i].name);
}

/* order: each stage after those it waits for; a stage on a cycle is said, naming the cycle. */
static void order_stages(pipeline_t *p, diag_t *diag)
{
    int placed[PIPELINE_STAGES_MAX] = {0};
    size_t n = 0;
    for (int progress = 1; progress && n < p->nstages;) {
        progress = 0;
        for (size_t i = 0; i < p->nstages; i++) {
            int ready = !placed[i];
            for (int kind = 0; ready && kind < STAGE_AFTER_KINDS; kind++)
                for (size_t a = 0; ready && a < p->stages[i].nafter[kind]; a++) {
                    int at = p->stages[i].after[kind][a];
                    ready = at < 0 || (size_t)at == i || placed[at];
                }
            if (ready) {
                placed[i] = 1;
                p->order[n++] = i;
                progress = 1;
            }
        }
    }
    for (size_t i = 0; i < p->nstages; i++)
        if (!placed[i] && pipeline_waits_for(p, i, i)) {
            char cycle[1024];
            cycle_text(p, i, cycle, sizeof cycle);
            diag_add(diag, p->stages[i].line, p->stages[i].col, p->stages[i].name,
                     "a cycle: %s (each waits for the next through after:)", cycle);
        }
}

/* The problem with placeholder {STAGE.KIND} (its text, len bytes) asked by stage i, "" none. */
static void value_problem(const pipeline_t *p, size_t i, const char *text, size_t len, char *why,
                          size_t size)
{
    const char *dot = memchr(text, '.', len);
    char stage[128];
    snprintf(stage, sizeof stage, "%.*s", (int)(dot - text), text);
    const char *kind = dot + 1;
    size_t kind_len = len - (size_t)(kind - text);
    int at = stage_named(p, stage), known = 0;
    for (const char *const *k = value_kinds; *k && !known; k++) {
        size_t kl = strlen(*k);
        known = (*k)[kl - 1] == '.' ? kind_len > kl && !strncmp(kind, *k, kl)
                                    : kind_len == kl && !strncmp(kind, *k, kl);
    }
    why[0] = '\0';
    if (at < 0)
        snprintf(why, size, "no stage \"%s\"", stage);
    else if (!pipeline_waits_for(p, i, (size_t)at))
        snprintf(why, size,
                 "%s does not wait for %s (after:), so its values are not known when it "
                 "starts",
                 p->stages[i].name, stage);
    else if (!known)
        snprintf(why, size,
                 "%.*s: a stage has best.params.NAME, best.checkpoint, record and "
                 "checkpoint",
                 (int)kind_len, kind);
}

size_t pipeline_value_at(const char *c)
{
    size_t n = 0;
    if (c[0] == '{' && (isalpha((unsigned char)c[1]) || c[1] == '_'))
        n = strspn(c + 1, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-");
    return n && c[1 + n] == '}' && memchr(c + 1, '.', n) ? n : 0;
}

/* Each {STAGE.KIND} in text (line and column counted from line0/col0 where it begins) checked
 * for stage i into d. */
static void check_values(pipeline_t *p, size_t i, const char *text, unsigned long line0,
                         unsigned long col0, const char *field, diag_t *d)
{
    unsigned long line = line0, col = col0;
    for (const char *c = text; *c; c++) {
        if (c[0] == '{' && c[1] == '{') {
            c++;
            col += 2;
            continue;
        }
        size_t n = pipeline_value_at(c);
        if (n) {
            char why[512];
            p->stages[i].asks_values = 1;
            value_problem(p, i, c + 1, n, why, sizeof why);
            if (why[0])
                diag_add(d, line, col, field, "{%.*s}: %s", (int)n, c + 1, why);
        }
        if (*c == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
}

/* The stage's spec file: there, and the values it asks for. */
static void check_spec(pipeline_t *p, size_t i, diag_t *diag)
{
    pipeline_stage_t *s = &p->stages[i];
    char *copy = ddp_xstrdup(p->path), *dir = dirname(copy);
    char from[8192];
    if (p->specs_dir)
        snprintf(from, sizeof from, "%s/%s.yaml", p->specs_dir, s->name);
    else if (s->spec[0] == '/' || !strcmp(dir, "."))
        snprintf(from, sizeof from, "%s", s->spec);
    else
        snprintf(from, sizeof from, "%s/%s", dir, s->spec);
    s->path = ddp_xstrdup(from);
    free(copy);
    s->spec_diag = diag_create(s->path);
    size_t len;
    ddp_error_t err;
    char *text = ddp_read_file(s->path, &len, &err);
    if (!text) {
        diag_add(diag, s->line, s->col, s->name, "spec: %s", err.msg);
        return;
    }
    check_values(p, i, text, 1, 1, s->name, s->spec_diag);
    free(text);
    for (size_t k = 0; k < s->nsets; k++)
        check_values(p, i, strchr(s->sets[k], '=') + 1, s->set_at[k][0], s->set_at[k][1], "set",
                     diag);
}

/* The stages: mapping, each stage read; then after: resolved, the order found, specs checked. */
static void read_stages(yaml_document_t *doc, yaml_node_t *n, pipeline_t *p, diag_t *diag)
{
    static char *names[PIPELINE_STAGES_MAX][STAGE_AFTER_KINDS][PIPELINE_STAGES_MAX];
    static yaml_node_t *where[PIPELINE_STAGES_MAX][STAGE_AFTER_KINDS][PIPELINE_STAGES_MAX];
    if (n->type != YAML_MAPPING_NODE || n->data.mapping.pairs.start == n->data.mapping.pairs.top) {
        diag_add(diag, AT(n), "stages",
                 "expected {NAME: {spec: FILE, ...}, ...}, one stage or more");
        return;
    }
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = yaml_document_get_node(doc, pr->key);
        if (!text_of(k) || !name_is_stage_word(text_of(k)) || stage_named(p, text_of(k)) >= 0 ||
            p->nstages == PIPELINE_STAGES_MAX) {
            diag_add(diag, AT(k), "stages", "%s: %s", text_of(k) ? text_of(k) : "a key",
                     p->nstages == PIPELINE_STAGES_MAX ? "more stages than a pipeline takes"
                     : text_of(k) && stage_named(p, text_of(k)) >= 0
                         ? "a second stage of that name"
                         : "a stage's name is a letter, then letters, digits, '_' or '-'");
            continue;
        }
        read_stage(doc, k, yaml_document_get_node(doc, pr->value), p, names[p->nstages],
                   where[p->nstages], diag);
    }
    for (size_t i = 0; i < p->nstages; i++)
        resolve_after(p, i, names[i], where[i], diag);
    order_stages(p, diag);
    for (size_t i = 0; i < p->nstages; i++)
        if (p->stages[i].spec)
            check_spec(p, i, diag);
}

size_t pipeline_read(const char *path, pipeline_t *p, diag_t *diag)
{
    return pipeline_read_copies(path, NULL, p, diag);
}

size_t pipeline_read_copies(const char *path, const char *specs_dir, pipeline_t *p, diag_t *diag)
{
    *p = (pipeline_t){.path = ddp_xstrdup(path),
                      .specs_dir = specs_dir ? ddp_xstrdup(specs_dir) : NULL};
    yaml_document_t doc;
    if (load_document(path, &doc, diag))
        return diag->count;
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    for (yaml_node_pair_t *pr =
             root && root->type == YAML_MAPPING_NODE ? root->data.mapping.pairs.start : NULL;
         pr && pr < root->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = yaml_document_get_node(&doc, pr->key),
                    *v = yaml_document_get_node(&doc, pr->value);
        const char *field = text_of(k) ? text_of(k) : "";
        if (!strcmp(field, "name") && text_of(v))
            p->name = ddp_xstrdup(text_of(v));
        else if (!strcmp(field, "stages"))
            read_stages(&doc, v, p, diag);
        else
            diag_add(diag, AT(k), field, "unknown field of a pipeline (name, stages)");
    }
    if (!p->name) {
        char *copy = ddp_xstrdup(path), *base = basename(copy), *dot = strrchr(base, '.');
        if (dot && dot != base)
            *dot = '\0';
        p->name = ddp_xstrdup(base);
        free(copy);
    }
    yaml_document_delete(&doc);
    size_t problems = diag->count;
    for (size_t i = 0; i < p->nstages; i++)
        problems += p->stages[i].spec_diag ? p->stages[i].spec_diag->count : 0;
    return problems;
}

void pipeline_free(pipeline_t *p)
{
    for (size_t i = 0; i < p->nstages; i++) {
        pipeline_stage_t *s = &p->stages[i];
        for (size_t k = 0; k < s->nsets; k++)
            free(s->sets[k]);
        free(s->sets);
        free(s->set_at);
        free(s->name);
        free(s->spec);
        free(s->path);
        diag_destroy(s->spec_diag);
    }
    free(p->path);
    free(p->name);
    free(p->specs_dir);
    *p = (pipeline_t){0};
}

char *pipeline_with_values(const char *text, const strv_t *values, char *missing, size_t size)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    int bad = 0;
    for (const char *c = text; f && *c && !bad; c++) {
        if (c[0] == '{' && c[1] == '{') {
            fputs("{{", f);
            c++;
            continue;
        }
        size_t id = pipeline_value_at(c);
        if (!id) {
            fputc(*c, f);
            continue;
        }
        const char *value = NULL;
        for (size_t i = 0; i < values->count && !value; i++)
            if (!strncmp(values->items[i], c + 1, id) && values->items[i][id] == '=')
                value = values->items[i] + id + 1;
        if (value)
            fputs(value, f);
        else
            bad = snprintf(missing, size, "%.*s", (int)id, c + 1) >= 0;
        c += id + 1;
    }
    if (f)
        fclose(f);
    if (bad || !out) {
        free(out);
        return NULL;
    }
    return out;
}

size_t pipeline_put_values(yaml_document_t *doc, const strv_t *values, diag_t *diag)
{
    size_t problems = 0, count = (size_t)(doc->nodes.top - doc->nodes.start);
    /* Keys stay as written: only what a field says takes a value. */
    char *is_key = ddp_xcalloc(count + 1, 1);
    for (yaml_node_t *m = doc->nodes.start; m < doc->nodes.top; m++)
        for (yaml_node_pair_t *pr = m->type == YAML_MAPPING_NODE ? m->data.mapping.pairs.start
                                                                 : NULL;
             pr && pr < m->data.mapping.pairs.top; pr++)
            is_key[pr->key - 1] = 1; /* node ids count from 1 */
    for (yaml_node_t *n = doc->nodes.start; n < doc->nodes.top; n++) {
        if (n->type != YAML_SCALAR_NODE || is_key[n - doc->nodes.start])
            continue;
        char missing[256];
        char *text = pipeline_with_values(text_of(n), values, missing, sizeof missing);
        if (!text) {
            diag_add(diag, AT(n), NULL, "{%s}: no value for it when the stage started", missing);
            problems++;
            continue;
        }
        free(n->data.scalar.value);
        n->data.scalar.value = (yaml_char_t *)text;
        n->data.scalar.length = strlen(text);
    }
    free(is_key);
    return problems;
}
