#include "cli/sched/sched_query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jobs/job_record.h"

sched_job_t *sched_query_find(sched_job_t *jobs, size_t n, const char *id, size_t id_len)
{
    for (size_t i = 0; i < n; i++)
        if (!jobs[i].found && job_id_names(jobs[i].id, id, id_len))
            return &jobs[i];
    return NULL;
}

/* The '|'-separated fields of one line into f (at most max); how many. */
static int split_bars(char *line, char **f, int max)
{
    int n = 0;
    for (char *p = line; n < max; p++) {
        f[n++] = p;
        p = strchr(p, '|');
        if (!p)
            break;
        *p = 0;
    }
    return n;
}

char **sched_bar_lines(const char *text, int nfields, size_t *count, char **buf)
{
    char *save = NULL, **lines = NULL;
    *count = 0;
    *buf = strdup(text ? text : "");
    for (char *line = *buf ? strtok_r(*buf, "\n", &save) : NULL; line;
         line = strtok_r(NULL, "\n", &save)) {
        char **more = realloc(lines, (*count + 1) * (size_t)nfields * sizeof *lines);
        if (!more)
            break;
        lines = more;
        if (split_bars(line, lines + *count * (size_t)nfields, nfields) == nfields)
            (*count)++;
    }
    return lines;
}

void sched_copy(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

char *sched_missing_ids(const sched_job_t *jobs, size_t n)
{
    char *list = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&list, &len);
    int any = 0;
    for (size_t i = 0; f && i < n; i++)
        if (!jobs[i].found && jobs[i].id[0])
            fprintf(f, "%s%s", any++ ? "," : "", jobs[i].id);
    if (f)
        fclose(f);
    if (!any) {
        free(list);
        return NULL;
    }
    return list;
}
