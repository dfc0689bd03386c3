#include "cli/laptop/cluster_profiles.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"
#include "cli/ssh/ssh_config.h"

/* A clusters file is a few lines per cluster: anything near this is not one. */
enum { PROFILES_FILE_MAX = 1 << 20, PROFILES_MAX = 256 };

void cluster_profiles_path(char *out, size_t size)
{
    const char *config = getenv("XDG_CONFIG_HOME");
    if (config && config[0] == '/')
        snprintf(out, size, "%s/ddpjob/clusters.yaml", config);
    else
        ssh_expand_home("~/.config/ddpjob/clusters.yaml", out, size);
}

static int is_name(const char *s)
{
    return ddp_plain_name(s, "._-");
}

static int is_path(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 0;
    return 1;
}

int cluster_profile_valid(const cluster_profile_t *c, ddp_error_t *err)
{
    if (!is_name(c->name))
        return ddp_error_set(err, "cluster \"%s\": a name is letters, digits, '.', '_' and '-'",
                             c->name);
    if (!is_name(c->host))
        return ddp_error_set(err, "cluster %s: host: \"%s\" is no host name", c->name, c->host);
    if (c->user[0] && !is_name(c->user))
        return ddp_error_set(err, "cluster %s: user: \"%s\" is no user name", c->name, c->user);
    if (c->port < 0 || c->port > 65535)
        return ddp_error_set(err, "cluster %s: port: %d is no port", c->name, c->port);
    if (c->identity[0] && !is_path(c->identity))
        return ddp_error_set(err, "cluster %s: identity: not a path", c->name);
    ssh_jump_t jump;
    if (c->proxy_jump[0] && ssh_jump_parse(c->proxy_jump, &jump, err))
        return ddp_error_prefix(err, "cluster %s: proxy_jump", c->name);
    if (!is_path(c->remote_dir) || (c->remote_dir[0] != '/' && strncmp(c->remote_dir, "~/", 2)))
        return ddp_error_set(err,
                             "cluster %s: remote_dir: \"%s\" must be an absolute path or start "
                             "with ~/ (the folder on the cluster the jobs' files go to)",
                             c->name, c->remote_dir);
    if (c->site[0] && !is_name(c->site))
        return ddp_error_set(err, "cluster %s: site: \"%s\" is no site profile's name", c->name,
                             c->site);
    if (c->remote_share[0] && strcmp(c->remote_share, "private") &&
        strcmp(c->remote_share, "group"))
        return ddp_error_set(err, "cluster %s: remote_share: \"%s\" is private or group", c->name,
                             c->remote_share);
    return 0;
}

int cluster_profile_shared(const cluster_profile_t *c)
{
    return !strcmp(c->remote_share, "group");
}

typedef struct {
    yaml_document_t *doc;
    const char *path;
    ddp_error_t *err;
} reader_t;

static int copy_scalar(reader_t *r, const cluster_profile_t *c, const yaml_node_t *v,
                       const char *key, char *out, size_t size)
{
    if (v->type != YAML_SCALAR_NODE || v->data.scalar.length >= size)
        return ddp_error_set(r->err, "%s:%zu: cluster %s: %s: %s", r->path, v->start_mark.line + 1,
                             c->name, key,
                             v->type != YAML_SCALAR_NODE ? "a single value" : "too long");
    memcpy(out, v->data.scalar.value, v->data.scalar.length);
    out[v->data.scalar.length] = '\0';
    return 0;
}

static int read_field(reader_t *r, cluster_profile_t *c, const char *key, const yaml_node_t *v)
{
    char port[16];
    if (!strcmp(key, "host"))
        return copy_scalar(r, c, v, key, c->host, sizeof c->host);
    if (!strcmp(key, "user"))
        return copy_scalar(r, c, v, key, c->user, sizeof c->user);
    if (!strcmp(key, "identity"))
        return copy_scalar(r, c, v, key, c->identity, sizeof c->identity);
    if (!strcmp(key, "remote_dir"))
        return copy_scalar(r, c, v, key, c->remote_dir, sizeof c->remote_dir);
    if (!strcmp(key, "site"))
        return copy_scalar(r, c, v, key, c->site, sizeof c->site);
    if (!strcmp(key, "remote_share"))
        return copy_scalar(r, c, v, key, c->remote_share, sizeof c->remote_share);
    if (!strcmp(key, "port")) {
        long p;
        if (copy_scalar(r, c, v, key, port, sizeof port))
            return -1;
        if (ddp_parse_long(port, 1, 65535, &p))
            return ddp_error_set(r->err, "%s:%zu: cluster %s: port: \"%s\" is no port", r->path,
                                 v->start_mark.line + 1, c->name, port);
        c->port = (int)p;
        return 0;
    }
    if (!strcmp(key, "proxy_jump"))
        return copy_scalar(r, c, v, key, c->proxy_jump, sizeof c->proxy_jump);
    return ddp_error_set(r->err,
                         "%s:%zu: cluster %s: unknown field \"%s\" (host, user, port, identity, "
                         "proxy_jump, remote_dir, remote_share, site)",
                         r->path, v->start_mark.line + 1, c->name, key);
}

static int read_profile(reader_t *r, const yaml_node_t *k, const yaml_node_t *v,
                        cluster_profile_t *c)
{
    memset(c, 0, sizeof *c);
    if (k->type != YAML_SCALAR_NODE || k->data.scalar.length >= sizeof c->name ||
        v->type != YAML_MAPPING_NODE)
        return ddp_error_set(r->err, "%s:%zu: a cluster is NAME: followed by its fields", r->path,
                             k->start_mark.line + 1);
    memcpy(c->name, k->data.scalar.value, k->data.scalar.length);
    for (yaml_node_pair_t *p = v->data.mapping.pairs.start; p < v->data.mapping.pairs.top; p++) {
        yaml_node_t *fk = yaml_document_get_node(r->doc, p->key);
        yaml_node_t *fv = yaml_document_get_node(r->doc, p->value);
        if (fk->type != YAML_SCALAR_NODE)
            return ddp_error_set(r->err, "%s:%zu: cluster %s: a field's name is a word", r->path,
                                 fk->start_mark.line + 1, c->name);
        if (read_field(r, c, (const char *)fk->data.scalar.value, fv))
            return -1;
    }
    ddp_error_t why;
    if (!c->host[0] || !c->remote_dir[0])
        return ddp_error_set(r->err, "%s:%zu: cluster %s: host: and remote_dir: are needed",
                             r->path, k->start_mark.line + 1, c->name);
    if (cluster_profile_valid(c, &why))
        return ddp_error_set(r->err, "%s:%zu: %s", r->path, k->start_mark.line + 1, why.msg);
    return 0;
}

static int read_document(reader_t *r, cluster_profiles_t *p)
{
    yaml_node_t *root = yaml_document_get_root_node(r->doc);
    if (!root)
        return 0;
    if (root->type != YAML_MAPPING_NODE)
        return ddp_error_set(r->err, "%s: a mapping of cluster names to their fields", r->path);
    size_t n = (size_t)(root->data.mapping.pairs.top - root->data.mapping.pairs.start);
    if (n > PROFILES_MAX)
        return ddp_error_set(r->err, "%s: more than %d clusters", r->path, PROFILES_MAX);
    if (n && !(p->items = calloc(n, sizeof *p->items)))
        return ddp_error_set(r->err, "out of memory");
    for (yaml_node_pair_t *pair = root->data.mapping.pairs.start;
         pair < root->data.mapping.pairs.top; pair++) {
        cluster_profile_t c;
        if (read_profile(r, yaml_document_get_node(r->doc, pair->key),
                         yaml_document_get_node(r->doc, pair->value), &c))
            return -1;
        if (cluster_profiles_find(p, c.name))
            return ddp_error_set(r->err, "%s: cluster %s is named twice", r->path, c.name);
        p->items[p->count++] = c;
    }
    return 0;
}

int cluster_profiles_read(const char *path, cluster_profiles_t *p, ddp_error_t *err)
{
    memset(p, 0, sizeof *p);
    /* It decides where the user's code and jobs go: only the user may have written it. */
    char *text = ddp_read_own_file(path, S_IWGRP | S_IWOTH, PROFILES_FILE_MAX, NULL, err);
    if (!text)
        return err->code == ENOENT ? 0 : -1;
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
    int rc;
    if (!yaml_parser_load(&parser, &doc)) {
        rc = ddp_error_set(err, "%s:%zu: %s", path, parser.problem_mark.line + 1,
                           parser.problem ? parser.problem : "not YAML");
    } else {
        reader_t r = {.doc = &doc, .path = path, .err = err};
        rc = read_document(&r, p);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    free(text);
    if (rc)
        cluster_profiles_free(p);
    return rc;
}

cluster_profile_t *cluster_profiles_find(const cluster_profiles_t *p, const char *name)
{
    for (size_t i = 0; i < p->count; i++)
        if (!strcmp(p->items[i].name, name))
            return &p->items[i];
    return NULL;
}

int cluster_profiles_put(cluster_profiles_t *p, const cluster_profile_t *c, ddp_error_t *err)
{
    if (cluster_profile_valid(c, err))
        return -1;
    cluster_profile_t *there = cluster_profiles_find(p, c->name);
    if (there) {
        *there = *c;
        return 0;
    }
    if (p->count >= PROFILES_MAX)
        return ddp_error_set(err, "more than %d clusters", PROFILES_MAX);
    cluster_profile_t *grown = realloc(p->items, (p->count + 1) * sizeof *grown);
    if (!grown)
        return ddp_error_set(err, "out of memory");
    p->items = grown;
    p->items[p->count++] = *c;
    return 0;
}

/* A value as a YAML double-quoted scalar (paths may hold ':' or '#'). */
static void put_quoted(FILE *f, const char *key, const char *value)
{
    if (!value[0])
        return;
    fprintf(f, "  %s: \"", key);
    for (const char *s = value; *s; s++)
        fprintf(f, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
    fputs("\"\n", f);
}

int cluster_profiles_write(const char *path, const cluster_profiles_t *p, ddp_error_t *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return ddp_error_set(err, "out of memory");
    fputs("# ddpjob's clusters (ddpjob cluster add|list|check; ddpjob(1) CLUSTERS)\n", f);
    for (size_t i = 0; i < p->count; i++) {
        const cluster_profile_t *c = &p->items[i];
        fprintf(f, "%s:\n", c->name);
        put_quoted(f, "host", c->host);
        put_quoted(f, "user", c->user);
        if (c->port)
            fprintf(f, "  port: %d\n", c->port);
        put_quoted(f, "identity", c->identity);
        put_quoted(f, "proxy_jump", c->proxy_jump);
        put_quoted(f, "remote_dir", c->remote_dir);
        put_quoted(f, "remote_share", c->remote_share);
        put_quoted(f, "site", c->site);
    }
    if (fclose(f) != 0) {
        free(text);
        return ddp_error_set(err, "out of memory");
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    int rc = slash ? ddp_make_dirs(dir, 0700, err) : 0;
    if (!rc)
        rc = ddp_write_file_atomic(path, text, len, 0600, err);
    free(text);
    return rc;
}

void cluster_profiles_free(cluster_profiles_t *p)
{
    free(p->items);
    memset(p, 0, sizeof *p);
}
