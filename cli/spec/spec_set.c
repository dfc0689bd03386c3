#include "cli/spec/spec_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/spec/yaml_pair.h"
#include "runtime/base/ddp_alloc.h"

static void note_made(spec_set_nodes_t *made, int id, size_t which)
{
    made->ids = ddp_xrealloc(made->ids, (made->count + 1) * sizeof *made->ids);
    made->which = ddp_xrealloc(made->which, (made->count + 1) * sizeof *made->which);
    made->ids[made->count] = id;
    made->which[made->count++] = which;
}

/* Copies node `from` of src (the value's own document) into doc; its new id, 0 when out of
 * memory. Every node made is noted as the set's. */
static int copy_node(yaml_document_t *doc, yaml_document_t *src, yaml_node_t *from,
                     spec_set_nodes_t *made, size_t which)
{
    int id = 0;
    switch (from->type) {
    case YAML_SCALAR_NODE:
        id = yaml_document_add_scalar(doc, NULL, from->data.scalar.value,
                                      (int)from->data.scalar.length, from->data.scalar.style);
        break;
    case YAML_SEQUENCE_NODE:
        id = yaml_document_add_sequence(doc, NULL, YAML_FLOW_SEQUENCE_STYLE);
        for (yaml_node_item_t *it = from->data.sequence.items.start;
             id && it < from->data.sequence.items.top; it++) {
            int item = copy_node(doc, src, yaml_document_get_node(src, *it), made, which);
            if (!item || !yaml_document_append_sequence_item(doc, id, item))
                return 0;
        }
        break;
    case YAML_MAPPING_NODE:
        id = yaml_document_add_mapping(doc, NULL, YAML_FLOW_MAPPING_STYLE);
        for (yaml_node_pair_t *p = from->data.mapping.pairs.start;
             id && p < from->data.mapping.pairs.top; p++) {
            int k = copy_node(doc, src, yaml_document_get_node(src, p->key), made, which),
                v = copy_node(doc, src, yaml_document_get_node(src, p->value), made, which);
            if (!k || !v || !yaml_document_append_mapping_pair(doc, id, k, v))
                return 0;
        }
        break;
    default:
        break;
    }
    if (id)
        note_made(made, id, which);
    return id;
}

/* Sets PATH (dotted, its words in path) to node `value` under the root; a problem's words into
 * why. */
static int set_path(yaml_document_t *doc, char *path, int value, spec_set_nodes_t *made,
                    size_t which, char *why, size_t why_size)
{
    int map = 1; /* the root's id */
    for (char *word = path, *dot; word; word = dot) {
        if ((dot = strchr(word, '.')))
            *dot++ = '\0';
        if (!*word) {
            snprintf(why, why_size, "an empty name in the path");
            return -1;
        }
        yaml_node_pair_t *p = yaml_pair_of(doc, yaml_document_get_node(doc, map), word);
        if (!dot) {
            if (p) {
                p->value = value;
                return 0;
            }
            int key = yaml_document_add_scalar(doc, NULL, (yaml_char_t *)word, -1,
                                               YAML_PLAIN_SCALAR_STYLE);
            note_made(made, key, which);
            return key && yaml_document_append_mapping_pair(doc, map, key, value) ? 0 : -1;
        }
        if (!p) {
            int key = yaml_document_add_scalar(doc, NULL, (yaml_char_t *)word, -1,
                                               YAML_PLAIN_SCALAR_STYLE),
                block = yaml_document_add_mapping(doc, NULL, YAML_BLOCK_MAPPING_STYLE);
            note_made(made, key, which);
            note_made(made, block, which);
            if (!key || !block || !yaml_document_append_mapping_pair(doc, map, key, block))
                return -1;
            map = block;
        } else if (yaml_document_get_node(doc, p->value)->type != YAML_MAPPING_NODE) {
            snprintf(why, why_size, "%s is not a block of fields in the spec", word);
            return -1;
        } else {
            map = p->value;
        }
    }
    return 0;
}

/* VALUE as YAML, copied into doc; its id, or 0 with why. An empty VALUE is an empty string. */
static int read_value(yaml_document_t *doc, const char *text, spec_set_nodes_t *made, size_t which,
                      char *why, size_t why_size)
{
    if (!*text) {
        int id = yaml_document_add_scalar(doc, NULL, (yaml_char_t *)"", 0,
                                          YAML_DOUBLE_QUOTED_SCALAR_STYLE);
        note_made(made, id, which);
        return id;
    }
    yaml_parser_t parser;
    yaml_document_t value;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
    int id = 0;
    if (!yaml_parser_load(&parser, &value)) {
        snprintf(why, why_size, "not a YAML value: %s", parser.problem ? parser.problem : "?");
    } else {
        yaml_node_t *root = yaml_document_get_root_node(&value);
        if (root)
            id = copy_node(doc, &value, root, made, which);
        yaml_document_delete(&value);
    }
    yaml_parser_delete(&parser);
    return id;
}

size_t spec_set_apply(yaml_document_t *doc, const strv_t *sets, spec_set_nodes_t *made,
                      diag_t *diag)
{
    size_t problems = 0;
    for (size_t i = 0; sets && i < sets->count; i++) {
        const char *set = sets->items[i], *eq = strchr(set, '=');
        char why[256] = "out of memory";
        char *path = eq ? ddp_xstrndup(set, (size_t)(eq - set)) : NULL;
        int value = eq && *path ? read_value(doc, eq + 1, made, i, why, sizeof why) : 0;
        if (!eq || !*path)
            snprintf(why, sizeof why, "expected PATH=VALUE (nodes=4, train.lr=0.05, env.SEED=3)");
        if (!value || set_path(doc, path, value, made, i, why, sizeof why)) {
            diag_add_flag(diag, "--set", "%s: %s", set, why);
            problems++;
        }
        free(path);
    }
    return problems;
}

const char *spec_set_flag(const spec_set_nodes_t *made, const strv_t *sets, int id)
{
    for (size_t i = 0; made && i < made->count; i++)
        if (made->ids[i] == id)
            return sets->items[made->which[i]];
    return NULL;
}

void spec_set_nodes_free(spec_set_nodes_t *made)
{
    free(made->ids);
    free(made->which);
    *made = (spec_set_nodes_t){0};
}
