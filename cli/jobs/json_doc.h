/* json_doc: JSON read and written through jansson: a job's record (job.json), the agents' reports
 * in it (their --error-file and --progress-file), and the --json outputs. Lookups tolerate what
 * is missing or of another type: each takes NULL and gives NULL (or 0 items) back. */
#ifndef DDPJOB_JSON_DOC_H
#define DDPJOB_JSON_DOC_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    json_t *root;
    char **texts; /* numbers as text (json_text), freed with the document */
    size_t ntexts;
} json_doc_t;

/* What a document may be: a progress file of JOB_NODES_MAX ranks' figures is far less, and a
 * larger or deeper one is a runaway or hostile file. */
#define JSON_DOC_MAX_BYTES (8u << 20)
#define JSON_DOC_MAX_DEPTH 32

/* Parses text[0..len) (JSON, RFC 8259); 0, or -1 when it is not one whole document (a file cut
 * short), is larger than JSON_DOC_MAX_BYTES or nests deeper than JSON_DOC_MAX_DEPTH. */
int json_doc_parse(json_doc_t *d, const char *text, size_t len);
void json_doc_free(json_doc_t *d);
const json_t *json_root(const json_doc_t *d);

/* The value of key in the object map. */
const json_t *json_child(const json_t *map, const char *key);
/* The text of map's key's value: a string, or a number's digits (kept in d); NULL otherwise. */
const char *json_text(json_doc_t *d, const json_t *map, const char *key);
/* map's key as a whole number within [lo, hi] into *out; -1 (and *out untouched) otherwise. */
int json_whole(const json_t *map, const char *key, int64_t lo, int64_t hi, int64_t *out);
/* map's key as a string into out (cut at size); -1 (out empty) when it is no string. */
int json_copy_text(const json_t *map, const char *key, char *out, size_t size);
/* The n-th element of an array, and how many there are. */
const json_t *json_item(const json_t *list, size_t n);
size_t json_items(const json_t *list);

/* json_dumps' flag for numbers as people wrote them: 0.1, not 0.10000000000000001 (a double's
 * 17 digits). */
#define JSON_DOC_REAL_DIGITS JSON_REAL_PRECISION(15)

/* A JSON string of text for people to read: bytes that are not UTF-8 become '?'; NULL text is
 * null. */
json_t *json_shown_string(const char *text);
/* value as text, two-space indented, keys in the order set, a newline at the end (malloc'd;
 * NULL when out of memory); value is released either way. */
char *json_dump_text(json_t *value);

#endif
