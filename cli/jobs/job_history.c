#include "cli/jobs/job_history.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_file.h"

/* The ranks a sample may hold: the largest world a record describes. */
#define HISTORY_MAX_RANKS 65536
/* The metrics a report draws at most, and the values of each. */
#define METRICS_MAX 16
#define METRIC_VALUES_MAX 100000

static void *grow(void *items, int *cap, int need, size_t size)
{
    if (need <= *cap)
        return items;
    int cap2 = *cap ? *cap * 2 : 64;
    while (cap2 < need)
        cap2 *= 2;
    void *more = realloc(items, (size_t)cap2 * size);
    if (more)
        *cap = cap2;
    return more;
}

/* A JSON list of whole numbers (null: -1) into a new array of its length. */
static long long *figures(const json_t *list, int *n)
{
    size_t len = json_array_size(list);
    if (!len || len > HISTORY_MAX_RANKS)
        return NULL;
    long long *v = malloc(len * sizeof *v);
    for (size_t i = 0; v && i < len; i++) {
        const json_t *x = json_array_get(list, i);
        v[i] = json_is_integer(x) && json_integer_value(x) >= 0 ? json_integer_value(x) : -1;
    }
    *n = (int)len;
    return v;
}

static void add_sample(job_history_t *h, const json_t *o, int link, int *cap)
{
    int nsteps = 0, nbusy = 0;
    long long *steps = figures(json_object_get(o, "steps"), &nsteps);
    long long *busy = figures(json_object_get(o, "busy_us"), &nbusy);
    history_sample_t *more = grow(h->samples, cap, h->nsamples + 1, sizeof *more);
    if (!steps || !busy || nsteps != nbusy || !more) {
        free(steps);
        free(busy);
        return;
    }
    h->samples = more;
    h->samples[h->nsamples++] = (history_sample_t){
        .t = json_number_value(json_object_get(o, "t")),
        .link = link,
        .attempt = (int)json_integer_value(json_object_get(o, "attempt")),
        .nranks = nsteps,
        .steps = steps,
        .busy_us = busy,
    };
    if (nsteps > h->max_ranks)
        h->max_ranks = nsteps;
}

static void add_event(job_history_t *h, const json_t *o, int link, int *cap)
{
    history_event_t *more = grow(h->events, cap, h->nevents + 1, sizeof *more);
    if (!more)
        return;
    h->events = more;
    history_event_t *e = &h->events[h->nevents++];
    const json_t *rank = json_object_get(o, "rank");
    *e = (history_event_t){.t = json_number_value(json_object_get(o, "t")),
                           .link = link,
                           .attempt = (int)json_integer_value(json_object_get(o, "attempt")),
                           .rank = json_is_integer(rank) ? (int)json_integer_value(rank) : -1};
    snprintf(e->kind, sizeof e->kind, "%s", json_string_value(json_object_get(o, "event")));
    const char *text = json_string_value(json_object_get(o, "text"));
    snprintf(e->text, sizeof e->text, "%s", text ? text : "");
}

/* Each whole line of the file at path, parsed, to each(o). */
static void each_line(const char *path, void (*each)(const json_t *o, void *ctx), void *ctx)
{
    ddp_error_t err;
    size_t len;
    char *text = ddp_read_file_max(path, JOB_HISTORY_MAX_BYTES, &len, &err);
    /* Only whole lines: the last one may be cut short by a writer that died. */
    for (char *line = text, *end; line && (end = memchr(line, '\n', len - (size_t)(line - text)));
         line = end + 1) {
        json_t *o = json_loadb(line, (size_t)(end - line), 0, NULL);
        if (json_is_object(o))
            each(o, ctx);
        json_decref(o);
    }
    free(text);
}

typedef struct {
    job_history_t *h;
    int link, sample_cap, event_cap;
} link_reading_t;

static void history_line(const json_t *o, void *ctx)
{
    link_reading_t *r = ctx;
    if (json_object_get(o, "steps"))
        add_sample(r->h, o, r->link, &r->sample_cap);
    else if (json_is_string(json_object_get(o, "event")))
        add_event(r->h, o, r->link, &r->event_cap);
}

void job_history_read_link(const char *path, int link, job_history_t *h)
{
    link_reading_t r = {h, link, h->nsamples, h->nevents};
    each_line(path, history_line, &r);
}

static int path_order(const void *x, const void *y)
{
    const char *a = *(char *const *)x, *b = *(char *const *)y;
    int la = atoi(strstr(a, "/link-") + 6), lb = atoi(strstr(b, "/link-") + 6);
    if (la != lb)
        return la < lb ? -1 : 1;
    const char *aa = strstr(a, "/attempt_"), *ab = strstr(b, "/attempt_");
    return aa && ab ? atoi(aa + 9) - atoi(ab + 9) : strcmp(a, b);
}

size_t job_metrics_files(const char *dir, glob_t *g)
{
    char pattern[8192];
    snprintf(pattern, sizeof pattern, "%s/link-*/logs/*/attempt_*/rank_0/metrics.jsonl", dir);
    if (glob(pattern, 0, NULL, g) != 0) {
        globfree(g);
        memset(g, 0, sizeof *g);
        return 0;
    }
    qsort(g->gl_pathv, g->gl_pathc, sizeof *g->gl_pathv, path_order);
    return g->gl_pathc;
}

typedef struct {
    job_history_t *h;
    int lines;
} metrics_reading_t;

static metric_series_t *series_named(job_history_t *h, const char *name)
{
    for (int i = 0; i < h->nmetrics; i++)
        if (!strcmp(h->metrics[i].name, name))
            return &h->metrics[i];
    if (h->nmetrics == METRICS_MAX)
        return NULL;
    metric_series_t *more = realloc(h->metrics, (size_t)(h->nmetrics + 1) * sizeof *more);
    if (!more)
        return NULL;
    h->metrics = more;
    metric_series_t *m = &h->metrics[h->nmetrics++];
    *m = (metric_series_t){0};
    snprintf(m->name, sizeof m->name, "%s", name);
    return m;
}

static void metrics_line(const json_t *o, void *ctx)
{
    metrics_reading_t *r = ctx;
    const char *xkey = json_is_number(json_object_get(o, "step"))    ? "step"
                       : json_is_number(json_object_get(o, "epoch")) ? "epoch"
                                                                     : NULL;
    double x = xkey ? json_number_value(json_object_get(o, xkey)) : r->lines;
    r->lines++;
    const json_t *total = json_object_get(o, METRICS_TOTAL_STEPS);
    if (json_is_integer(total) && json_integer_value(total) > 0)
        r->h->total_steps = json_integer_value(total);
    const char *key;
    json_t *value;
    json_object_foreach((json_t *)o, key, value)
    {
        if (!json_is_number(value) || (xkey && !strcmp(key, xkey)) ||
            !strcmp(key, METRICS_TOTAL_STEPS))
            continue;
        metric_series_t *m = series_named(r->h, key);
        if (!m || m->n == METRIC_VALUES_MAX)
            continue;
        snprintf(m->x_name, sizeof m->x_name, "%s", xkey ? xkey : "line");
        double *mx = realloc(m->x, (size_t)(m->n + 1) * sizeof *mx);
        if (mx)
            m->x = mx;
        double *my = mx ? realloc(m->y, (size_t)(m->n + 1) * sizeof *my) : NULL;
        if (!my)
            continue;
        m->y = my;
        m->x[m->n] = x;
        m->y[m->n++] = json_number_value(value);
    }
}

void job_history_read(const job_record_t *rec, int only_link, job_history_t *h)
{
    memset(h, 0, sizeof *h);
    h->total_steps = -1;
    char path[8192];
    for (int k = 0; k < rec->nlinks; k++) {
        snprintf(path, sizeof path, "%s/link-%d/history.jsonl", rec->dir, k);
        if (only_link < 0 || k == only_link)
            job_history_read_link(path, k, h);
    }
    glob_t g;
    metrics_reading_t r = {h, 0};
    size_t nfiles = job_metrics_files(rec->dir, &g);
    for (size_t i = 0; i < nfiles; i++)
        each_line(g.gl_pathv[i], metrics_line, &r);
    globfree(&g);
}

void job_history_free(job_history_t *h)
{
    for (int i = 0; i < h->nsamples; i++) {
        free(h->samples[i].steps);
        free(h->samples[i].busy_us);
    }
    free(h->samples);
    free(h->events);
    for (int i = 0; i < h->nmetrics; i++) {
        free(h->metrics[i].x);
        free(h->metrics[i].y);
    }
    free(h->metrics);
    memset(h, 0, sizeof *h);
}
