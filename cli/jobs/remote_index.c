#include "cli/jobs/remote_index.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jobs/job_record.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"

/* A few lines a job: anything near this is no index of ours. */
enum { REMOTE_INDEX_MAX = 16 << 20 };
#define INDEX_NAME "remote-jobs"

static char *index_path(void)
{
    return job_state_path(INDEX_NAME);
}

static int is_folder(const char *s)
{
    if (!*s || (*s != '/' && strncmp(s, "~/", 2)) || strstr(s, "/../") || strstr(s, "/.."))
        return 0;
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return 0;
    return 1;
}

int remote_job_valid(const remote_job_t *j)
{
    return ddp_plain_name(j->cluster, "._-") && (!j->id[0] || ddp_plain_name(j->id, "._-[]")) &&
           ddp_plain_name(j->name, "._-") && is_folder(j->remote_dir) && is_folder(j->local_dir) &&
           j->local_dir[0] == '/';
}

int remote_index_add(const remote_job_t *j, ddp_error_t *err)
{
    if (!remote_job_valid(j))
        return ddp_error_set(err, "job %s on %s: not a job the index can hold", j->name,
                             j->cluster);
    char *line = NULL;
    if (asprintf(&line, "%lld\t%s\t%s\t%s\t%s\t%s\n", (long long)j->submitted, j->cluster, j->id,
                 j->name, j->remote_dir, j->local_dir) < 0)
        return ddp_error_set(err, "out of memory");
    int rc = job_state_append(INDEX_NAME, line, err);
    free(line);
    return rc;
}

/* One line's fields into *j; 0 when it has the six and each its shape. */
static int parse_line(char *line, remote_job_t *j)
{
    char *f[6];
    for (int i = 0; i < 6; i++) {
        f[i] = line;
        line = i < 5 ? strchr(line, '\t') : NULL;
        if (i < 5 && !line)
            return -1;
        if (line)
            *line++ = '\0';
    }
    struct {
        char *to;
        size_t size;
    } out[5] = {{j->cluster, sizeof j->cluster},
                {j->id, sizeof j->id},
                {j->name, sizeof j->name},
                {j->remote_dir, sizeof j->remote_dir},
                {j->local_dir, sizeof j->local_dir}};
    for (int i = 0; i < 5; i++)
        if (snprintf(out[i].to, out[i].size, "%s", f[i + 1]) >= (int)out[i].size)
            return -1;
    char *end;
    j->submitted = strtoll(f[0], &end, 10);
    return *end || !remote_job_valid(j) ? -1 : 0;
}

/* The index's text (malloc'd), NULL when there is none. */
static char *read_index(void)
{
    char *path = index_path();
    ddp_error_t err;
    char *text = path ? ddp_read_file_max(path, REMOTE_INDEX_MAX, NULL, &err) : NULL;
    free(path);
    return text;
}

int remote_index_find(const char *job, remote_job_t *j)
{
    char *text = read_index();
    int found = 0;
    remote_job_t line_job;
    for (char *line = text, *end; line && (end = strchr(line, '\n')); line = end + 1) {
        *end = '\0';
        if (parse_line(line, &line_job) == 0 &&
            (!strcmp(job, line_job.name) ||
             (line_job.id[0] && job_id_names(job, line_job.id, strlen(line_job.id))))) {
            *j = line_job;
            found = 1;
        }
    }
    free(text);
    return found;
}

size_t remote_index_clusters(int64_t since, char (*names)[64], size_t max)
{
    char *text = read_index();
    size_t n = 0;
    remote_job_t j;
    /* Oldest first in the file: a cluster seen again moves to the front. */
    for (char *line = text, *end; line && (end = strchr(line, '\n')); line = end + 1) {
        *end = '\0';
        if (parse_line(line, &j) || j.submitted < since)
            continue;
        size_t at = 0;
        while (at < n && strcmp(names[at], j.cluster))
            at++;
        if (at == n && n < max)
            n++;
        else if (at == n)
            at = n - 1;
        memmove(names + 1, names, at * sizeof *names);
        snprintf(names[0], sizeof names[0], "%s", j.cluster);
    }
    free(text);
    return n;
}
