#include "json_doc.h"

#include <string.h>

/* Whether brackets and braces outside strings nest deeper than JSON_DOC_MAX_DEPTH. */
static int too_deep(const char *text, size_t len)
{
    int depth = 0, in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = 0;
        } else if (c == '"') {
            in_string = 1;
        } else if ((c == '[' || c == '{') && ++depth > JSON_DOC_MAX_DEPTH) {
            return 1;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return 0;
}

int json_doc_parse(json_doc_t *d, const char *text, size_t len)
{
    memset(d, 0, sizeof *d);
    if (len > JSON_DOC_MAX_BYTES || too_deep(text, len))
        return -1;
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    d->loaded = yaml_parser_load(&parser, &d->doc) && yaml_document_get_root_node(&d->doc);
    if (!d->loaded)
        yaml_document_delete(&d->doc);
    yaml_parser_delete(&parser);
    return d->loaded ? 0 : -1;
}

void json_doc_free(json_doc_t *d)
{
    if (d->loaded)
        yaml_document_delete(&d->doc);
    d->loaded = 0;
}

yaml_node_t *json_root(json_doc_t *d)
{
    return d->loaded ? yaml_document_get_root_node(&d->doc) : NULL;
}

yaml_node_t *json_child(json_doc_t *d, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(&d->doc, p->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp((char *)k->data.scalar.value, key))
            return yaml_document_get_node(&d->doc, p->value);
    }
    return NULL;
}

size_t json_items(const yaml_node_t *list)
{
    return list && list->type == YAML_SEQUENCE_NODE
               ? (size_t)(list->data.sequence.items.top - list->data.sequence.items.start)
               : 0;
}

yaml_node_t *json_item(json_doc_t *d, yaml_node_t *list, size_t n)
{
    return n < json_items(list)
               ? yaml_document_get_node(&d->doc, list->data.sequence.items.start[n])
               : NULL;
}

const char *json_text(json_doc_t *d, yaml_node_t *map, const char *key)
{
    yaml_node_t *v = json_child(d, map, key);
    return v && v->type == YAML_SCALAR_NODE ? (const char *)v->data.scalar.value : NULL;
}
