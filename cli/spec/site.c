#include "cli/spec/site.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "cli/spec/datafile.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"
#include "runtime/job/container_spec.h"
#include "cli/spec/units.h"
#include "cli/spec/yaml_pair.h"

typedef struct {
    yaml_document_t *doc;
    const char *path;
    ddp_error_t *err;
    int failed;
} reader_t;

/* Records the first problem only: a profile is the site's, and one clear line is enough. */
static void bad(reader_t *r, const yaml_node_t *n, const char *key, const char *what)
{
    if (r->failed++)
        return;
    ddp_error_set(r->err, "site profile %s:%lu:%lu: %s: %s", r->path,
                  (unsigned long)n->start_mark.line + 1, (unsigned long)n->start_mark.column + 1,
                  key, what);
}

static const char *scalar_of(reader_t *r, const yaml_node_t *n, const char *key)
{
    if (n->type != YAML_SCALAR_NODE) {
        bad(r, n, key, "expected a value");
        return "";
    }
    return (const char *)n->data.scalar.value;
}

static void read_long(reader_t *r, const yaml_node_t *n, const char *key, long *out)
{
    if (ddp_parse_long(scalar_of(r, n, key), 1, 1000000000, out) < 0)
        bad(r, n, key, "expected a whole number of at least 1");
}

static void read_size(reader_t *r, const yaml_node_t *n, const char *key, uint64_t *out)
{
    if (units_parse_size(scalar_of(r, n, key), out) < 0)
        bad(r, n, key, "expected a size such as 382GB");
}

static void read_bool(reader_t *r, const yaml_node_t *n, const char *key, bool *out)
{
    const char *v = scalar_of(r, n, key);
    if (!strcmp(v, "true") || !strcmp(v, "false"))
        *out = !strcmp(v, "true");
    else
        bad(r, n, key, "expected true or false");
}

static void read_string(reader_t *r, const yaml_node_t *n, const char *key, char **out)
{
    const char *v = scalar_of(r, n, key);
    if (!*v)
        bad(r, n, key, "must not be empty");
    free(*out);
    *out = strdup(v);
}

/* A list of words (recognise:'s entries). */
static void read_words(reader_t *r, yaml_node_t *n, const char *key, strv_t *out)
{
    if (n->type != YAML_SEQUENCE_NODE) {
        bad(r, n, key, "expected a list such as [a, b]");
        return;
    }
    for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
        const char *word = scalar_of(r, yaml_document_get_node(r->doc, *i), key);
        char **more = realloc(out->items, (out->count + 1) * sizeof *more);
        if (!more || !(more[out->count] = strdup(word))) {
            if (more)
                out->items = more;
            bad(r, n, key, "out of memory");
            return;
        }
        out->items = more;
        out->count++;
    }
}

static void read_recognise(reader_t *r, yaml_node_t *n, site_t *site)
{
    if (n->type != YAML_MAPPING_NODE) {
        bad(r, n, "recognise",
            "expected a mapping (pbs_server:, sge_qmaster:, queues:, pbs_fields:, paths:)");
        return;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(r->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(r->doc, p->value);
        const char *key = scalar_of(r, k, "recognise");
        /* A server is the one this host submits to, PBS's or Grid Engine's qmaster. */
        strv_t *list = !strcmp(key, "pbs_server") || !strcmp(key, "sge_qmaster")
                           ? &site->recognise_servers
                       : !strcmp(key, "queues")     ? &site->recognise_queues
                       : !strcmp(key, "pbs_fields") ? &site->recognise_pbs_fields
                       : !strcmp(key, "paths")      ? &site->recognise_paths
                                                    : NULL;
        if (list)
            read_words(r, v, key, list);
        else
            bad(r, k, key,
                "unknown field of recognise: (pbs_server, sge_qmaster, queues, pbs_fields, paths)");
    }
}

static int by_cores(const void *a, const void *b)
{
    const site_walltime_t *x = a, *y = b;
    return (x->max_cores > y->max_cores) - (x->max_cores < y->max_cores);
}

static void read_walltimes(reader_t *r, yaml_node_t *n, site_queue_t *q)
{
    if (n->type != YAML_MAPPING_NODE) {
        bad(r, n, "walltime_by_cores", "expected a mapping MAX_CORES: \"HH:MM:SS\"");
        return;
    }
    size_t count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    q->walltimes = calloc(count ? count : 1, sizeof *q->walltimes);
    if (!q->walltimes) {
        bad(r, n, "walltime_by_cores", "out of memory");
        return;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        site_walltime_t *w = &q->walltimes[q->walltime_count++];
        read_long(r, yaml_document_get_node(r->doc, p->key), "walltime_by_cores", &w->max_cores);
        yaml_node_t *v = yaml_document_get_node(r->doc, p->value);
        if (units_parse_walltime(scalar_of(r, v, "walltime_by_cores"), &w->walltime_s) < 0)
            bad(r, v, "walltime_by_cores", "expected a walltime such as \"48:00:00\"");
    }
    qsort(q->walltimes, q->walltime_count, sizeof *q->walltimes, by_cores);
}

static void read_queue(reader_t *r, yaml_node_t *n, site_queue_t *q)
{
    if (n->type != YAML_MAPPING_NODE) {
        bad(r, n, q->name, "expected a mapping of the queue's fields");
        return;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(r->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(r->doc, p->value);
        const char *key = scalar_of(r, k, "queue field");
        if (!strcmp(key, "cores_per_node"))
            read_long(r, v, key, &q->cores_per_node);
        else if (!strcmp(key, "gpus_per_node"))
            read_long(r, v, key, &q->gpus_per_node);
        else if (!strcmp(key, "cpus_per_gpu"))
            read_long(r, v, key, &q->cpus_per_gpu);
        else if (!strcmp(key, "mem_per_node"))
            read_size(r, v, key, &q->mem_per_node);
        else if (!strcmp(key, "mem_per_cpu"))
            read_size(r, v, key, &q->mem_per_cpu);
        else if (!strcmp(key, "jobfs_per_node"))
            read_size(r, v, key, &q->jobfs_per_node);
        else if (!strcmp(key, "whole_nodes"))
            read_bool(r, v, key, &q->whole_nodes);
        else if (!strcmp(key, "charge_rate")) {
            if (ddp_parse_double(scalar_of(r, v, key), 0, 1e9, &q->charge_rate) < 0)
                bad(r, v, key, "expected a number of at least 0");
        } else if (!strcmp(key, "walltime_by_cores"))
            read_walltimes(r, v, q);
        else
            bad(r, k, key, "unknown queue field");
    }
    if (!q->cores_per_node)
        bad(r, n, q->name, "cores_per_node is required");
}

/* arrays: false, true, or {max: N}. */
static void read_container_runtime(reader_t *r, const yaml_node_t *n, const char *key, site_t *site)
{
    read_string(r, n, key, &site->container_runtime);
    if (!site->container_runtime ||
        container_runtime_parse(site->container_runtime) != CONTAINER_NONE)
        return;
    char what[300];
    snprintf(what, sizeof what, "expected %s", container_runtime_choices(0));
    bad(r, n, key, what);
}

static void read_arrays(reader_t *r, yaml_node_t *n, site_t *site)
{
    if (n->type == YAML_SCALAR_NODE) {
        bool allowed = false;
        read_bool(r, n, "arrays", &allowed);
        site->array_max = allowed ? -1 : 0;
        return;
    }
    yaml_node_pair_t *max = n->type == YAML_MAPPING_NODE ? yaml_pair_of(r->doc, n, "max") : NULL;
    if (!max || n->data.mapping.pairs.top - n->data.mapping.pairs.start != 1) {
        bad(r, n, "arrays", "expected false, true or {max: N}");
        return;
    }
    read_long(r, yaml_document_get_node(r->doc, max->value), "arrays.max", &site->array_max);
}

/* pack: {nodes: N}: a sweep the site takes no array of is packed into allocations of N nodes. */
static void read_pack(reader_t *r, yaml_node_t *n, site_t *site)
{
    yaml_node_pair_t *nodes =
        n->type == YAML_MAPPING_NODE ? yaml_pair_of(r->doc, n, "nodes") : NULL;
    if (!nodes || n->data.mapping.pairs.top - n->data.mapping.pairs.start != 1) {
        bad(r, n, "pack", "expected {nodes: N}");
        return;
    }
    read_long(r, yaml_document_get_node(r->doc, nodes->value), "pack.nodes", &site->pack_nodes);
    if (!r->failed && site->pack_nodes < 1)
        bad(r, n, "pack.nodes", "expected 1 node or more");
}

static void read_queues(reader_t *r, yaml_node_t *n, site_t *site)
{
    if (n->type != YAML_MAPPING_NODE) {
        bad(r, n, "queues", "expected a mapping NAME: {fields}");
        return;
    }
    size_t count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    site->queues = calloc(count ? count : 1, sizeof *site->queues);
    if (!site->queues) {
        bad(r, n, "queues", "out of memory");
        return;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        site_queue_t *q = &site->queues[site->queue_count++];
        q->name = strdup(scalar_of(r, yaml_document_get_node(r->doc, p->key), "queues"));
        read_queue(r, yaml_document_get_node(r->doc, p->value), q);
    }
}

static void read_site(reader_t *r, yaml_node_t *root, site_t *site)
{
    if (!root || root->type != YAML_MAPPING_NODE) {
        if (root) {
            bad(r, root, "profile", "expected a mapping of fields (name:, queues:, ...)");
        } else {
            ddp_error_set(r->err, "site profile %s is empty", r->path);
            r->failed++;
        }
        return;
    }
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(r->doc, p->key);
        yaml_node_t *v = yaml_document_get_node(r->doc, p->value);
        const char *key = scalar_of(r, k, "field");
        if (!strcmp(key, "name"))
            read_string(r, v, key, &site->name);
        else if (!strcmp(key, "pbs_resources")) {
            const char *d = scalar_of(r, v, key);
            if (!strcmp(d, "select") || !strcmp(d, "gadi"))
                site->pbs_resources =
                    !strcmp(d, "gadi") ? PBS_RESOURCES_GADI : PBS_RESOURCES_SELECT;
            else
                bad(r, v, key, "expected select or gadi");
        } else if (!strcmp(key, "sge_pe"))
            read_string(r, v, key, &site->sge_pe);
        else if (!strcmp(key, "sge_memory"))
            read_string(r, v, key, &site->sge_memory);
        else if (!strcmp(key, "infiniband"))
            read_bool(r, v, key, &site->infiniband);
        else if (!strcmp(key, "nci_storage"))
            read_bool(r, v, key, &site->nci_storage);
        else if (!strcmp(key, "charge_unit"))
            read_string(r, v, key, &site->charge_unit);
        else if (!strcmp(key, "default_queue"))
            read_string(r, v, key, &site->default_queue);
        else if (!strcmp(key, "default_mem"))
            read_size(r, v, key, &site->default_mem);
        else if (!strcmp(key, "container_runtime"))
            read_container_runtime(r, v, key, site);
        else if (!strcmp(key, "arrays"))
            read_arrays(r, v, site);
        else if (!strcmp(key, "pack"))
            read_pack(r, v, site);
        else if (!strcmp(key, "queues"))
            read_queues(r, v, site);
        else if (!strcmp(key, "recognise"))
            read_recognise(r, v, site);
        else
            bad(r, k, key, "unknown field");
    }
    if (!r->failed && site->queue_count == 0)
        bad(r, root, "queues", "the profile names no queue");
    if (!r->failed && site->default_queue && !site_find_queue(site, site->default_queue))
        bad(r, root, "default_queue", "names no queue of the profile");
}

/* The user's own profiles' folder, or NULL. */
static char *user_dir_path(void)
{
    char *dir = NULL;
    const char *config = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    int made = config && *config ? asprintf(&dir, "%s/ddpjob/sites", config)
               : home && *home   ? asprintf(&dir, "%s/.config/ddpjob/sites", home)
                                 : 0;
    return made > 0 ? dir : NULL;
}

size_t site_dirs(char *dirs[4])
{
    const char *env = getenv("DDPJOB_SITE_DIR");
    dirs[0] = env && *env ? strdup(env) : NULL;
    dirs[1] = user_dir_path();
    ddp_error_t err;
    if (datafile_trees("sites", "share", dirs + 2, &err))
        dirs[2] = dirs[3] = NULL;
    return 4;
}

/* NAME.yaml in the user's and the installed profile directories, or a path as given. */
static char *find_profile(const char *name_or_path, ddp_error_t *err)
{
    if (strchr(name_or_path, '/')) {
        char *path = strdup(name_or_path);
        if (!path)
            ddp_error_set(err, "out of memory");
        return path;
    }
    char *file = NULL, *user_dir = user_dir_path();
    const char *dirs[] = {getenv("DDPJOB_SITE_DIR"), user_dir};
    char *path = NULL;
    if (asprintf(&file, "%s.yaml", name_or_path) < 0)
        ddp_error_set(err, "out of memory");
    else
        path = datafile_find("site profile", dirs, 2, 1, "sites", "share", file, err);
    free(file);
    free(user_dir);
    return path;
}

site_t *site_load(const char *name_or_path, ddp_error_t *err)
{
    char *path = find_profile(name_or_path, err);
    if (!path)
        return NULL;
    size_t len = 0;
    char *text = ddp_read_file(path, &len, err);
    site_t *site = text ? calloc(1, sizeof *site) : NULL;
    if (site)
        site->array_max = -1;
    if (!site) {
        if (text)
            ddp_error_set(err, "out of memory");
        else
            ddp_error_prefix(err, "site profile");
        free(text);
        free(path);
        return NULL;
    }
    site->path = path;
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    reader_t r = {&doc, path, err, 0};
    if (!yaml_parser_load(&parser, &doc)) {
        ddp_error_set(err, "site profile %s:%lu:%lu: YAML syntax error: %s", path,
                      (unsigned long)parser.problem_mark.line + 1,
                      (unsigned long)parser.problem_mark.column + 1,
                      parser.problem ? parser.problem : "unknown problem");
        r.failed = 1;
    } else {
        read_site(&r, yaml_document_get_root_node(&doc), site);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    free(text);
    if (!r.failed && !site->name)
        site->name = strdup(name_or_path);
    if (r.failed) {
        site_destroy(site);
        return NULL;
    }
    return site;
}

void site_destroy(site_t *site)
{
    if (!site)
        return;
    for (size_t i = 0; i < site->queue_count; i++) {
        free(site->queues[i].name);
        free(site->queues[i].walltimes);
    }
    free(site->queues);
    free(site->name);
    free(site->path);
    free(site->charge_unit);
    free(site->default_queue);
    free(site->sge_pe);
    free(site->sge_memory);
    free(site->container_runtime);
    strv_t *lists[] = {&site->recognise_servers, &site->recognise_queues,
                       &site->recognise_pbs_fields, &site->recognise_paths};
    for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++) {
        for (size_t i = 0; i < lists[l]->count; i++)
            free(lists[l]->items[i]);
        free(lists[l]->items);
    }
    free(site);
}

const site_queue_t *site_find_queue(const site_t *site, const char *name)
{
    for (size_t i = 0; i < site->queue_count; i++)
        if (!strcmp(site->queues[i].name, name))
            return &site->queues[i];
    return NULL;
}
