/* spec_set: `--set PATH=VALUE` overrides (validate, render, submit, run), applied to the spec's
 * YAML document before its fields are read, so that a value is typed and checked exactly as if
 * the file held it: VALUE is read as YAML (`--set nodes=4`, `--set modules=[a, b]`), PATH names
 * a field through its blocks (`train.lr`, `env.SEED`, `container.image`), made where the file
 * lacks them. A problem with an overridden value names the flag, not a line of the file. */
#ifndef DDPJOB_SPEC_SET_H
#define DDPJOB_SPEC_SET_H

#include <stddef.h>
#include <yaml.h>

#include "cli/spec/diag.h"
#include "cli/spec/spec.h"

/* The nodes the overrides made: node ids of the document, each with the --set that made it. */
typedef struct {
    int *ids;
    size_t *which; /* index into the sets */
    size_t count;
} spec_set_nodes_t;

/* Applies sets (each PATH=VALUE) to doc, whose root is a mapping; problems with a set itself (no
 * '=', a path through a value that is no block, VALUE not YAML) go into diag as
 * "FILE: --set PATH=VALUE: ...". Returns the number of problems. */
size_t spec_set_apply(yaml_document_t *doc, const strv_t *sets, spec_set_nodes_t *made,
                      diag_t *diag);
/* The --set that made node id, or NULL when the file holds it. */
const char *spec_set_flag(const spec_set_nodes_t *made, const strv_t *sets, int id);
void spec_set_nodes_free(spec_set_nodes_t *made);

#endif
