/* yaml_pair: a field of a YAML mapping by its name, for the modules that read or change the
 * spec's document (spec, spec_set, sweep). */
#ifndef DDPJOB_YAML_PAIR_H
#define DDPJOB_YAML_PAIR_H

#include <yaml.h>

/* The pair of mapping node `map` whose key is the scalar `key`, or NULL. */
yaml_node_pair_t *yaml_pair_of(yaml_document_t *doc, yaml_node_t *map, const char *key);

#endif
