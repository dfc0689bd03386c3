#include "cli/spec/site_detect.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*matcher_t)(const site_t *site, const void *what, char *why, size_t size);

static int listed(const strv_t *list, const char *word)
{
    for (size_t i = 0; word && i < list->count; i++)
        if (!strcmp(list->items[i], word))
            return 1;
    return 0;
}

/* Appends ", what" (or "what" first) to why. */
static void add(char *why, size_t size, const char *what, const char *value)
{
    size_t n = strlen(why);
    snprintf(why + n, size - n, "%s%s%s", n ? ", " : "", what, value);
}

static void check_path(const site_t *site, const char *text, char *why, size_t size)
{
    for (size_t i = 0; text && i < site->recognise_paths.count; i++) {
        const char *at = strstr(text, site->recognise_paths.items[i]);
        if (at && !strstr(why, site->recognise_paths.items[i])) {
            char path[128];
            snprintf(path, sizeof path, "%.*s", (int)strcspn(at, " \t\n\"'"), at);
            add(why, size, "path ", path);
        }
    }
}

static int spec_matches(const site_t *site, const void *what, char *why, size_t size)
{
    const job_spec_t *spec = what;
    why[0] = '\0';
    if (listed(&site->recognise_queues, spec->queue))
        add(why, size, "queue ", spec->queue);
    if (spec->pbs.jobfs_bytes && listed(&site->recognise_pbs_fields, "jobfs"))
        add(why, size, "pbs.jobfs", "");
    if (spec->pbs.storage.count && listed(&site->recognise_pbs_fields, "storage"))
        add(why, size, "pbs.storage", "");
    const char *paths[] = {spec->workdir, spec->log_dir, spec->error_file, spec->setup};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
        check_path(site, paths[i], why, size);
    for (size_t i = 0; i < spec->env_count; i++)
        check_path(site, spec->env[i].value, why, size);
    for (size_t i = 0; i < spec->command.count; i++)
        check_path(site, spec->command.items[i], why, size);
    return why[0] != '\0';
}

static int server_matches(const site_t *site, const void *what, char *why, size_t size)
{
    return listed(&site->recognise_servers, what);
}

/* Whether `name` was taken already (a user's profile hides an installed one of that name). */
static int seen_before(char ***seen, size_t *nseen, const char *name)
{
    for (size_t i = 0; i < *nseen; i++)
        if (!strcmp((*seen)[i], name))
            return 1;
    char **more = realloc(*seen, (*nseen + 1) * sizeof *more);
    if (more && (more[*nseen] = strdup(name))) {
        *seen = more;
        (*nseen)++;
    } else if (more) {
        *seen = more;
    }
    return 0;
}

/* The first profile `match` accepts, over every profile folder. */
static site_t *detect(matcher_t match, const void *what, char *why, size_t size)
{
    char *dirs[4], **seen = NULL;
    size_t ndirs = site_dirs(dirs), nseen = 0;
    site_t *found = NULL;
    for (size_t d = 0; d < ndirs && !found; d++) {
        DIR *dir = dirs[d] ? opendir(dirs[d]) : NULL;
        for (struct dirent *e; dir && !found && (e = readdir(dir));) {
            size_t len = strlen(e->d_name);
            if (len < 6 || strcmp(e->d_name + len - 5, ".yaml") ||
                seen_before(&seen, &nseen, e->d_name))
                continue;
            char *path = NULL;
            ddp_error_t err;
            site_t *site =
                asprintf(&path, "%s/%s", dirs[d], e->d_name) < 0 ? NULL : site_load(path, &err);
            if (site && match(site, what, why, size))
                found = site;
            else
                site_destroy(site);
            free(path);
        }
        if (dir)
            closedir(dir);
    }
    for (size_t d = 0; d < ndirs; d++)
        free(dirs[d]);
    for (size_t i = 0; i < nseen; i++)
        free(seen[i]);
    free(seen);
    return found;
}

site_t *site_detect_spec(const job_spec_t *spec, char *why, size_t size)
{
    return detect(spec_matches, spec, why, size);
}

site_t *site_detect_server(const char *server)
{
    char why[8];
    return detect(server_matches, server, why, sizeof why);
}
