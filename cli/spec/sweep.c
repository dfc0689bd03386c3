#include "cli/spec/sweep.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/spec/units.h"
#include "cli/spec/yaml_pair.h"
#include "runtime/base/ddp_alloc.h"

/* The most trials one sweep may have. */
#define SWEEP_TRIALS_MAX 100000

/* The spec's fields whose values take placeholders. */
static const char *const substituted_fields[] = {"name",    "command", "env", "train",
                                                 "log_dir", "workdir", NULL};

static const char *text_of(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

#define AT(n) (unsigned long)(n)->start_mark.line + 1, (unsigned long)(n)->start_mark.column + 1

static size_t name_index(sweep_t *sw, const char *name)
{
    for (size_t i = 0; i < sw->nnames; i++)
        if (!strcmp(sw->names[i], name))
            return i;
    sw->names = ddp_xrealloc(sw->names, (sw->nnames + 1) * sizeof *sw->names);
    sw->names[sw->nnames] = ddp_xstrdup(name);
    for (size_t t = 0; t < sw->ntrials; t++) {
        sw->values[t] = ddp_xrealloc(sw->values[t], (sw->nnames + 1) * sizeof **sw->values);
        sw->values[t][sw->nnames] = NULL;
    }
    return sw->nnames++;
}

static void add_trial(sweep_t *sw)
{
    sw->values = ddp_xrealloc(sw->values, (sw->ntrials + 1) * sizeof *sw->values);
    sw->values[sw->ntrials++] = ddp_xcalloc(sw->nnames ? sw->nnames : 1, sizeof **sw->values);
}

/* A parameter's value: one scalar. */
static int scalar_value(yaml_node_t *v, const char *where, diag_t *diag)
{
    if (v->type == YAML_SCALAR_NODE && *text_of(v))
        return 0;
    diag_add(diag, AT(v), where, "expected one value (a number or a word)");
    return 1;
}

/* grid: NAME: [values] each; the product, the first name varying slowest. */
static size_t read_grid(yaml_document_t *doc, yaml_node_t *grid, sweep_t *sw, diag_t *diag)
{
    size_t problems = 0, product = 1;
    if (grid->type != YAML_MAPPING_NODE) {
        diag_add(diag, AT(grid), "sweep.grid", "expected NAME: [VALUE, ...] for each parameter");
        return 1;
    }
    yaml_node_pair_t *pairs = grid->data.mapping.pairs.start;
    size_t n = (size_t)(grid->data.mapping.pairs.top - pairs);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *k = yaml_document_get_node(doc, pairs[i].key),
                    *v = yaml_document_get_node(doc, pairs[i].value);
        size_t len = v->type == YAML_SEQUENCE_NODE
                         ? (size_t)(v->data.sequence.items.top - v->data.sequence.items.start)
                         : 0;
        if (len == 0) {
            diag_add(diag, AT(v), "sweep.grid", "%s: expected a list of one value or more",
                     k->type == YAML_SCALAR_NODE ? text_of(k) : "?");
            problems++;
        }
        for (size_t j = 0; j < len; j++)
            problems += scalar_value(yaml_document_get_node(doc, v->data.sequence.items.start[j]),
                                     "sweep.grid", diag);
        product = product * (len ? len : 1);
        if (product > SWEEP_TRIALS_MAX)
            break;
    }
    if (problems || n == 0)
        return problems;
    if (product > SWEEP_TRIALS_MAX) {
        diag_add(diag, AT(grid), "sweep.grid", "more than %d trials", SWEEP_TRIALS_MAX);
        return 1;
    }
    size_t *index = ddp_xcalloc(n, sizeof *index), first = sw->ntrials;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *k = yaml_document_get_node(doc, pairs[i].key);
        index[i] = name_index(sw, text_of(k));
        for (size_t j = 0; j < i; j++)
            if (index[j] == index[i]) {
                diag_add(diag, AT(k), "sweep.grid", "%s: given twice", text_of(k));
                free(index);
                return 1;
            }
    }
    for (size_t t = 0; t < product; t++) {
        add_trial(sw);
        for (size_t i = n, rest = t; i-- > 0;) {
            yaml_node_t *v = yaml_document_get_node(doc, pairs[i].value);
            size_t len = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
            yaml_node_t *item =
                yaml_document_get_node(doc, v->data.sequence.items.start[rest % len]);
            sw->values[first + t][index[i]] = ddp_xstrdup(text_of(item));
            rest /= len;
        }
    }
    free(index);
    return 0;
}

/* trials: [{NAME: VALUE, ...}, ...], after the grid's. */
static size_t read_trials(yaml_document_t *doc, yaml_node_t *list, sweep_t *sw, diag_t *diag)
{
    size_t problems = 0;
    if (list->type != YAML_SEQUENCE_NODE) {
        diag_add(diag, AT(list), "sweep.trials", "expected a list of {NAME: VALUE, ...}");
        return 1;
    }
    for (yaml_node_item_t *it = list->data.sequence.items.start; it < list->data.sequence.items.top;
         it++) {
        yaml_node_t *m = yaml_document_get_node(doc, *it);
        if (m->type != YAML_MAPPING_NODE ||
            m->data.mapping.pairs.top == m->data.mapping.pairs.start) {
            diag_add(diag, AT(m), "sweep.trials", "expected {NAME: VALUE, ...}");
            problems++;
            continue;
        }
        add_trial(sw);
        for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key),
                        *v = yaml_document_get_node(doc, p->value);
            if (k->type != YAML_SCALAR_NODE || scalar_value(v, "sweep.trials", diag)) {
                problems++;
                continue;
            }
            size_t i = name_index(sw, text_of(k));
            if (sw->values[sw->ntrials - 1][i]) {
                diag_add(diag, AT(k), "sweep.trials", "%s: given twice", text_of(k));
                problems++;
                continue;
            }
            sw->values[sw->ntrials - 1][i] = ddp_xstrdup(text_of(v));
        }
    }
    return problems;
}

/* Trial t as one line of name=value pairs, for finding duplicates. */
static char *trial_key(const sweep_t *sw, size_t t)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    for (size_t i = 0; f && i < sw->nnames; i++)
        fprintf(f, "%s=%s\x1f", sw->names[i], sw->values[t][i] ? sw->values[t][i] : "\x1e");
    if (f)
        fclose(f);
    return text ? text : ddp_xstrdup("");
}

static size_t check_duplicates(const sweep_t *sw, diag_t *diag)
{
    size_t problems = 0;
    char **keys = ddp_xcalloc(sw->ntrials ? sw->ntrials : 1, sizeof *keys);
    for (size_t t = 0; t < sw->ntrials; t++)
        keys[t] = trial_key(sw, t);
    /* Pairwise: a sweep's trials are few; the first five duplicates are said. */
    for (size_t a = 0; a < sw->ntrials && problems < 5; a++)
        for (size_t b = a + 1; b < sw->ntrials && problems < 5; b++)
            if (!strcmp(keys[a], keys[b])) {
                diag_add(diag, sw->line, sw->col, "sweep", "trials %zu and %zu are the same", a, b);
                problems++;
            }
    for (size_t t = 0; t < sw->ntrials; t++)
        free(keys[t]);
    free(keys);
    return problems;
}

/* A whole number of n, low or more, into *out; 1 with the problem said when it is none. */
static size_t read_count(const yaml_node_t *n, const char *field, long low, const char *what,
                         long *out, diag_t *diag)
{
    char *end = NULL;
    *out = n->type == YAML_SCALAR_NODE ? strtol(text_of(n), &end, 10) : 0;
    if (end && !*end && *out >= low && *out <= SWEEP_PACK_MAX)
        return 0;
    diag_add(diag, AT(n), field, "expected a whole number of %s, %ld to %d", what, low,
             SWEEP_PACK_MAX);
    return 1;
}

/* pack: {nodes: N, allocations: K, walltime: T}: the trials run inside K held allocations of N
 * nodes each, held T a link. */
static size_t read_pack(yaml_document_t *doc, yaml_node_t *n, sweep_t *sw, diag_t *diag)
{
    int map = n->type == YAML_MAPPING_NODE;
    yaml_node_pair_t *nodes = map ? yaml_pair_of(doc, n, "nodes") : NULL,
                     *allocations = map ? yaml_pair_of(doc, n, "allocations") : NULL,
                     *walltime = map ? yaml_pair_of(doc, n, "walltime") : NULL;
    if (!nodes || n->data.mapping.pairs.top - n->data.mapping.pairs.start !=
                      1 + (allocations != NULL) + (walltime != NULL)) {
        diag_add(diag, AT(n), "sweep.pack",
                 "expected {nodes: N}, with allocations: K and walltime: HH:MM:SS where wanted");
        return 1;
    }
    sw->pack_allocations = 1;
    size_t problems = read_count(yaml_document_get_node(doc, nodes->value), "sweep.pack.nodes", 1,
                                 "nodes an allocation holds", &sw->pack_nodes, diag);
    if (allocations)
        problems +=
            read_count(yaml_document_get_node(doc, allocations->value), "sweep.pack.allocations", 1,
                       "allocations held at once", &sw->pack_allocations, diag);
    yaml_node_t *w = walltime ? yaml_document_get_node(doc, walltime->value) : NULL;
    if (w && (w->type != YAML_SCALAR_NODE ||
              units_parse_walltime(text_of(w), &sw->pack_walltime_s) < 0 || !sw->pack_walltime_s)) {
        diag_add(diag, AT(w), "sweep.pack.walltime",
                 "expected how long an allocation holds its nodes a link: [[HH:]MM:]SS or "
                 "D-HH:MM:SS, more than 0");
        problems++;
    }
    return problems;
}

/* objective: {metric: NAME, goal: min|max}: what the best trial is judged by (a metric its
 * rank 0 writes), instead of test_acc or loss. */
static size_t read_objective(yaml_document_t *doc, yaml_node_t *n, sweep_t *sw, diag_t *diag)
{
    yaml_node_pair_t *metric = n->type == YAML_MAPPING_NODE ? yaml_pair_of(doc, n, "metric") : NULL,
                     *goal = n->type == YAML_MAPPING_NODE ? yaml_pair_of(doc, n, "goal") : NULL;
    yaml_node_t *m = metric ? yaml_document_get_node(doc, metric->value) : NULL,
                *g = goal ? yaml_document_get_node(doc, goal->value) : NULL;
    const char *name = m && m->type == YAML_SCALAR_NODE ? text_of(m) : "",
               *want = g && g->type == YAML_SCALAR_NODE ? text_of(g) : "";
    if (n->type != YAML_MAPPING_NODE || n->data.mapping.pairs.top - n->data.mapping.pairs.start !=
                                            (metric != NULL) + (goal != NULL)) {
        diag_add(diag, AT(n), "sweep.objective", "expected {metric: NAME, goal: min or max}");
        return 1;
    }
    if (!*name || strlen(name) >= sizeof sw->objective ||
        name[strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")]) {
        yaml_node_t *at = m ? m : n;
        diag_add(diag, AT(at), "sweep.objective.metric",
                 "expected the name of a metric the trials write (letters, digits, _.-)");
        return 1;
    }
    if (strcmp(want, "min") && strcmp(want, "max")) {
        yaml_node_t *at = g ? g : n;
        diag_add(diag, AT(at), "sweep.objective.goal",
                 "expected min or max (whether the best trial's %s is the lowest or the highest)",
                 name);
        return 1;
    }
    snprintf(sw->objective, sizeof sw->objective, "%s", name);
    sw->maximize = !strcmp(want, "max");
    return 0;
}

size_t sweep_read(yaml_document_t *doc, sweep_t *sw, diag_t *diag)
{
    *sw = (sweep_t){0};
    yaml_node_t *root = yaml_document_get_root_node(doc);
    yaml_node_pair_t *p =
        root && root->type == YAML_MAPPING_NODE ? yaml_pair_of(doc, root, "sweep") : NULL;
    if (!p)
        return 0;
    yaml_node_t *block = yaml_document_get_node(doc, p->value);
    sw->line = (unsigned long)block->start_mark.line + 1;
    sw->col = (unsigned long)block->start_mark.column + 1;
    if (block->type != YAML_MAPPING_NODE) {
        diag_add(diag, AT(block), "sweep",
                 "expected a block: grid, trials, parallel, objective, pack");
        return 1;
    }
    size_t problems = 0;
    yaml_node_pair_t *grid = yaml_pair_of(doc, block, "grid"),
                     *trials = yaml_pair_of(doc, block, "trials"),
                     *parallel = yaml_pair_of(doc, block, "parallel"),
                     *objective = yaml_pair_of(doc, block, "objective"),
                     *pack = yaml_pair_of(doc, block, "pack");
    for (yaml_node_pair_t *q = block->data.mapping.pairs.start; q < block->data.mapping.pairs.top;
         q++)
        if (q != grid && q != trials && q != parallel && q != objective && q != pack) {
            diag_add(diag, AT(yaml_document_get_node(doc, q->key)), "sweep",
                     "unknown field (grid, trials, parallel, objective, pack)");
            problems++;
        }
    if (objective)
        problems += read_objective(doc, yaml_document_get_node(doc, objective->value), sw, diag);
    if (pack)
        problems += read_pack(doc, yaml_document_get_node(doc, pack->value), sw, diag);
    if (grid)
        problems += read_grid(doc, yaml_document_get_node(doc, grid->value), sw, diag);
    if (trials)
        problems += read_trials(doc, yaml_document_get_node(doc, trials->value), sw, diag);
    if (parallel) {
        yaml_node_t *v = yaml_document_get_node(doc, parallel->value);
        char *end = NULL;
        sw->parallel = v->type == YAML_SCALAR_NODE ? strtol(text_of(v), &end, 10) : 0;
        if (!end || *end || sw->parallel < 1) {
            diag_add(diag, AT(v), "sweep.parallel", "expected a whole number of trials, 1 or more");
            problems++;
        }
    }
    if (!problems && sw->ntrials == 0) {
        diag_add(diag, sw->line, sw->col, "sweep", "no trial: give grid:, trials: or both");
        problems++;
    }
    return problems ? problems : check_duplicates(sw, diag);
}

/* text with trial t's values for its placeholders, malloc'd; NULL with a problem said. */
static char *substituted(const char *text, const sweep_t *sw, size_t t, int *used,
                         const yaml_node_t *n, const char *field, diag_t *diag)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    int bad = 0;
    for (const char *c = text; f && *c; c++) {
        size_t id = 0;
        if ((c[0] == '{' && c[1] == '{') || (c[0] == '}' && c[1] == '}')) {
            fputc(*c++, f);
            continue;
        }
        if (c[0] == '{' && (c == text || c[-1] != '$') &&
            (isalpha((unsigned char)c[1]) || c[1] == '_'))
            while (isalnum((unsigned char)c[1 + id]) || c[1 + id] == '_')
                id++;
        if (!id || c[1 + id] != '}') {
            fputc(*c, f);
            continue;
        }
        size_t i = 0;
        while (i < sw->nnames && (strlen(sw->names[i]) != id || strncmp(sw->names[i], c + 1, id)))
            i++;
        if (i == sw->nnames || !sw->values[t][i]) {
            if (i == sw->nnames)
                diag_add(diag, AT(n), field, "{%.*s}: the sweep has no parameter of that name",
                         (int)id, c + 1);
            else
                diag_add(diag, AT(n), field, "{%.*s}: trial %zu gives it no value", (int)id, c + 1,
                         t);
            bad = 1;
        } else {
            fputs(sw->values[t][i], f);
            used[i] = 1;
        }
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

static size_t substitute_node(yaml_document_t *doc, int id, const sweep_t *sw, size_t t, int *used,
                              const char *field, diag_t *diag)
{
    yaml_node_t *n = yaml_document_get_node(doc, id);
    size_t problems = 0;
    if (n->type == YAML_SCALAR_NODE) {
        char *text = substituted(text_of(n), sw, t, used, n, field, diag);
        if (!text)
            return 1;
        free(n->data.scalar.value);
        n->data.scalar.value = (yaml_char_t *)text;
        n->data.scalar.length = strlen(text);
    } else if (n->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
             it++)
            problems += substitute_node(doc, *it, sw, t, used, field, diag);
    } else if (n->type == YAML_MAPPING_NODE) {
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++)
            problems += substitute_node(doc, p->value, sw, t, used, field, diag);
    }
    return problems;
}

size_t sweep_substitute(yaml_document_t *doc, const sweep_t *sw, size_t trial, int *used,
                        diag_t *diag)
{
    yaml_node_t *root = yaml_document_get_root_node(doc);
    size_t problems = 0;
    for (const char *const *field = substituted_fields; *field; field++) {
        yaml_node_pair_t *p = yaml_pair_of(doc, root, *field);
        if (p)
            problems += substitute_node(doc, p->value, sw, trial, used, *field, diag);
    }
    /* A packed sweep's trials are jobs of their own in the held nodes: each its own size. */
    yaml_node_pair_t *nodes = sw->pack_nodes ? yaml_pair_of(doc, root, "nodes") : NULL;
    yaml_node_t *n = nodes ? yaml_document_get_node(doc, nodes->value) : NULL;
    if (n && n->type == YAML_SCALAR_NODE) {
        /* "{n}" is a quoted scalar only for YAML's sake: its value is a number, as written. */
        problems += substitute_node(doc, nodes->value, sw, trial, used, "nodes", diag);
        n->data.scalar.style = YAML_PLAIN_SCALAR_STYLE;
    }
    return problems;
}

/* The first scalar under node id holding `placeholder`, or NULL. */
static yaml_node_t *holding(yaml_document_t *doc, int id, const char *placeholder)
{
    yaml_node_t *n = yaml_document_get_node(doc, id), *found = NULL;
    if (n && n->type == YAML_SCALAR_NODE)
        return strstr(text_of(n), placeholder) ? n : NULL;
    if (n && n->type == YAML_SEQUENCE_NODE)
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             !found && it < n->data.sequence.items.top; it++)
            found = holding(doc, *it, placeholder);
    if (n && n->type == YAML_MAPPING_NODE)
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
             !found && p < n->data.mapping.pairs.top; p++)
            found = holding(doc, p->value, placeholder);
    return found;
}

size_t sweep_misplaced(yaml_document_t *doc, const char *name, diag_t *diag)
{
    yaml_node_t *root = yaml_document_get_root_node(doc);
    char placeholder[300];
    snprintf(placeholder, sizeof placeholder, "{%s}", name);
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        yaml_node_t *key = yaml_document_get_node(doc, p->key), *at;
        const char *const *f = substituted_fields;
        while (*f && key && key->type == YAML_SCALAR_NODE && strcmp(*f, text_of(key)))
            f++;
        if (!key || key->type != YAML_SCALAR_NODE || *f || !strcmp(text_of(key), "sweep") ||
            !(at = holding(doc, p->value, placeholder)))
            continue;
        diag_add(diag, AT(at), text_of(key),
                 "%s: a sweep's values go only into name, command, env, train, log_dir and "
                 "workdir (and a packed sweep's into nodes); %s is the same for every trial "
                 "(the trials share one array job's request): submit a spec per value, or --set "
                 "%s=VALUE",
                 placeholder, text_of(key), text_of(key));
        return 1;
    }
    return 0;
}

/* Whether text is a JSON number as written (so that it stays one in the parameters' JSON). */
static int json_number(const char *text)
{
    const char *c = text + (*text == '-');
    if (!isdigit((unsigned char)*c) || (c[0] == '0' && isdigit((unsigned char)c[1])))
        return 0;
    while (isdigit((unsigned char)*c))
        c++;
    if (*c == '.' && isdigit((unsigned char)c[1]))
        for (c++; isdigit((unsigned char)*c);)
            c++;
    if (*c == 'e' || *c == 'E') {
        c += 1 + (c[1] == '+' || c[1] == '-');
        if (!isdigit((unsigned char)*c))
            return 0;
        while (isdigit((unsigned char)*c))
            c++;
    }
    return *c == '\0';
}

static void json_text(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

char *sweep_params_json(const sweep_t *sw, size_t trial)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return ddp_xstrdup("{}");
    fputc('{', f);
    for (size_t i = 0, n = 0; i < sw->nnames; i++) {
        const char *v = sw->values[trial][i];
        if (!v)
            continue;
        fputs(n++ ? ", " : "", f);
        json_text(f, sw->names[i]);
        fputs(": ", f);
        if (json_number(v) || !strcmp(v, "true") || !strcmp(v, "false"))
            fputs(v, f);
        else
            json_text(f, v);
    }
    fputc('}', f);
    fclose(f);
    return text;
}

void sweep_free(sweep_t *sw)
{
    for (size_t t = 0; t < sw->ntrials; t++) {
        for (size_t i = 0; i < sw->nnames; i++)
            free(sw->values[t][i]);
        free(sw->values[t]);
    }
    for (size_t i = 0; i < sw->nnames; i++)
        free(sw->names[i]);
    free(sw->names);
    free(sw->values);
    *sw = (sweep_t){0};
}
