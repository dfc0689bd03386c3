/* json_doc: JSON documents read through libyaml (a JSON text is YAML's flow style): the agents'
 * reports in a job's record. Lookups tolerate what is missing: each takes NULL and gives NULL
 * (or 0 items) back. */
#ifndef DDPJOB_JSON_DOC_H
#define DDPJOB_JSON_DOC_H

#include <stddef.h>
#include <yaml.h>

typedef struct {
    yaml_document_t doc;
    int loaded;
} json_doc_t;

/* What a document may be: a progress file of JOB_NODES_MAX ranks' figures is far less, and a
 * larger or deeper one (a runaway or hostile file) would cost libyaml many times its size in
 * memory, or its recursion. */
#define JSON_DOC_MAX_BYTES (8u << 20)
#define JSON_DOC_MAX_DEPTH 32

/* Parses text[0..len); 0, or -1 when it is not a whole document (a file cut short), is larger
 * than JSON_DOC_MAX_BYTES or nests deeper than JSON_DOC_MAX_DEPTH. */
int json_doc_parse(json_doc_t *d, const char *text, size_t len);
void json_doc_free(json_doc_t *d);
yaml_node_t *json_root(json_doc_t *d);

/* The value of key in the object (mapping) map. */
yaml_node_t *json_child(json_doc_t *d, yaml_node_t *map, const char *key);
/* The text of map's key's value when that is a scalar (a number's digits too). */
const char *json_text(json_doc_t *d, yaml_node_t *map, const char *key);
/* The n-th element of a list. */
yaml_node_t *json_item(json_doc_t *d, yaml_node_t *list, size_t n);
size_t json_items(const yaml_node_t *list);

#endif
