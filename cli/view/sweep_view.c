#include "cli/view/sweep_view.h"

#include <glob.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jobs/job_history.h"
#include "cli/jobs/json_doc.h"
#include "runtime/base/ddp_portable.h"

/* What status reads of a metrics file: its end, where the last values are. */
#define METRICS_TAIL_BYTES 65536
/* The metric columns the table shows at most (all are in --json). */
#define METRIC_COLUMNS 6

/* Each key of each whole JSON line of the file's tail into last (later lines win). */
static void merge_metrics(const char *path, json_t *last)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char line[4096];
    if (fseek(f, 0, SEEK_END) == 0 && ftell(f) > METRICS_TAIL_BYTES) {
        fseek(f, -METRICS_TAIL_BYTES, SEEK_END);
        if (!fgets(line, sizeof line, f)) /* the line cut by the seek */
            line[0] = 0;
    } else {
        rewind(f);
    }
    while (fgets(line, sizeof line, f)) {
        json_t *o = strchr(line, '\n') ? json_loads(line, 0, NULL) : NULL;
        if (json_is_object(o)) {
            const char *key;
            json_t *value;
            json_object_foreach(o, key, value)
            {
                if (json_is_number(value) && strcmp(key, METRICS_TOTAL_STEPS))
                    json_object_set(last, key, value);
            }
        }
        json_decref(o);
    }
    fclose(f);
}

/* Rank 0's metrics over the trial's links and attempts, in order: each one's last value. */
static char *trial_metrics(const char *record)
{
    glob_t g;
    if (!job_metrics_files(record, &g))
        return NULL;
    json_t *last = json_object();
    for (size_t i = 0; last && i < g.gl_pathc; i++)
        merge_metrics(g.gl_pathv[i], last);
    globfree(&g);
    char *text = last && json_object_size(last)
                     ? json_dumps(last, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_DOC_REAL_DIGITS)
                     : NULL;
    json_decref(last);
    return text;
}

int sweep_view_load(const char *dir, sweep_view_t *v, ddp_error_t *err)
{
    memset(v, 0, sizeof *v);
    if (sweep_record_read(dir, &v->rec, err))
        return -1;
    size_t n = v->rec.ntrials;
    char **dirs = calloc(n + 1, sizeof *dirs);
    v->trials = calloc(n + 1, sizeof *v->trials);
    v->metrics = calloc(n + 1, sizeof *v->metrics);
    for (size_t k = 0; dirs && k < n; k++) {
        char path[8192];
        sweep_trial_dir(dir, k, path, sizeof path);
        dirs[k] = strdup(path);
    }
    int rc = 0;
    if (!dirs || !v->trials || !v->metrics)
        rc = ddp_error_set(err, "out of memory");
    else if (job_views_load(dirs, n, v->trials, err))
        rc = ddp_error_prefix(err, "(the trials' records answer for them)");
    for (size_t k = 0; dirs && v->metrics && k < n; k++) {
        if (dirs[k])
            v->metrics[k] = trial_metrics(dirs[k]);
        free(dirs[k]);
    }
    free(dirs);
    if (!v->trials || !v->metrics) {
        sweep_view_free(v);
        return -1;
    }
    return rc;
}

void sweep_view_free(sweep_view_t *v)
{
    if (v->trials)
        job_views_free(v->trials, v->rec.ntrials);
    for (size_t k = 0; v->metrics && k < v->rec.ntrials; k++)
        free(v->metrics[k]);
    free(v->metrics);
    free(v->trials);
    sweep_record_free(&v->rec);
    memset(v, 0, sizeof *v);
}

/* Trial k's value of metric, NAN when it wrote none. */
static double metric_of(const sweep_view_t *v, size_t k, const char *metric)
{
    json_t *o = v->metrics[k] ? json_loads(v->metrics[k], 0, NULL) : NULL;
    json_t *value = json_object_get(o, metric);
    double x = json_is_number(value) ? json_number_value(value) : NAN;
    json_decref(o);
    return x;
}

typedef struct {
    const double *values; /* by trial */
    int desc;
} sorting_t;

static int by_metric(const void *x, const void *y, void *context)
{
    const sorting_t *s = context;
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    double va = s->values[a], vb = s->values[b];
    if (isnan(va) != isnan(vb))
        return isnan(va) ? 1 : -1; /* trials without it last */
    if (!isnan(va) && va != vb)
        return (va < vb) != s->desc ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* The trials' indexes in the order asked; the metric it went by (NULL: by index) in *used. */
static size_t *ordered(const sweep_view_t *v, const sweep_order_t *order, const char **used,
                       int *desc)
{
    size_t n = v->rec.ntrials, *idx = calloc(n + 1, sizeof *idx);
    double *values = calloc(n + 1, sizeof *values);
    for (size_t k = 0; idx && k < n; k++)
        idx[k] = k;
    *used = order->metric;
    *desc = order->desc;
    if (!*used && v->rec.objective[0]) /* the spec's own */
        *used = v->rec.objective, *desc = v->rec.maximize;
    if (!*used) { /* the best by what such sweeps are usually judged on */
        for (size_t k = 0; k < n && !*used; k++)
            if (!isnan(metric_of(v, k, "test_acc")))
                *used = "test_acc", *desc = 1;
        for (size_t k = 0; k < n && !*used; k++)
            if (!isnan(metric_of(v, k, "loss")))
                *used = "loss", *desc = 0;
    }
    if (idx && values && order->metric) {
        for (size_t k = 0; k < n; k++)
            values[k] = metric_of(v, k, order->metric);
        sorting_t sorting = {values, order->desc};
        ddp_sort_r(idx, n, sizeof *idx, by_metric, &sorting);
    }
    free(values);
    return idx;
}

/* The best completed trial by `metric`; -1 when none completed with it. */
static long best_trial(const sweep_view_t *v, const char *metric, int desc)
{
    long best = -1;
    double best_value = 0;
    for (size_t k = 0; metric && k < v->rec.ntrials; k++) {
        double x = metric_of(v, k, metric);
        if (v->trials[k].state != JOB_COMPLETED || isnan(x))
            continue;
        if (best < 0 || (desc ? x > best_value : x < best_value))
            best = (long)k, best_value = x;
    }
    return best;
}

long sweep_view_best(const sweep_view_t *v)
{
    const char *used;
    int desc;
    sweep_order_t by_index = {NULL, 0};
    free(ordered(v, &by_index, &used, &desc));
    return best_trial(v, used, desc);
}

/* "lr=0.1 seed=1". */
static void params_text(const char *json, char *out, size_t size)
{
    json_t *o = json_loads(json, 0, NULL);
    const char *key;
    json_t *value;
    size_t len = 0;
    out[0] = 0;
    json_object_foreach(o, key, value)
    {
        char *v = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT | JSON_DOC_REAL_DIGITS);
        const char *shown = json_is_string(value) ? json_string_value(value) : v;
        int wrote =
            snprintf(out + len, size - len, "%s%s=%s", len ? " " : "", key, shown ? shown : "?");
        free(v);
        if (wrote < 0 || (size_t)wrote >= size - len)
            break;
        len += (size_t)wrote;
    }
    json_decref(o);
}

/* The metric names the trials wrote, in the order first seen (at most max). */
static size_t metric_names(const sweep_view_t *v, const char **names, size_t max, json_t **keep)
{
    size_t n = 0;
    *keep = json_array();
    for (size_t k = 0; k < v->rec.ntrials; k++) {
        json_t *o = v->metrics[k] ? json_loads(v->metrics[k], 0, NULL) : NULL;
        const char *key;
        json_t *value;
        json_object_foreach(o, key, value)
        {
            size_t i = 0;
            while (i < n && strcmp(names[i], key))
                i++;
            if (i == n && n < max) {
                json_array_append_new(*keep, json_string(key));
                names[n++] = json_string_value(json_array_get(*keep, json_array_size(*keep) - 1));
            }
        }
        json_decref(o);
    }
    return n;
}

static void counts_text(const sweep_view_t *v, char *out, size_t size)
{
    size_t len = 0;
    out[0] = 0;
    for (int s = JOB_UNKNOWN; s <= JOB_NODE_FAILURE; s++) {
        size_t count = 0;
        for (size_t k = 0; k < v->rec.ntrials; k++)
            count += v->trials[k].state == (job_state_t)s;
        int wrote = count ? snprintf(out + len, size - len, "%s%zu %s", len ? ", " : "", count,
                                     job_state_name((job_state_t)s))
                          : 0;
        if (wrote < 0 || (size_t)wrote >= size - len)
            break;
        len += (size_t)wrote;
    }
}

static void how_words(const sweep_record_t *r, char *out, size_t size)
{
    if (r->pack_nodes)
        snprintf(out, size, "packed into %ld allocation%s of %ld node%s", r->pack_allocations,
                 r->pack_allocations == 1 ? "" : "s", r->pack_nodes, r->pack_nodes == 1 ? "" : "s");
    else
        snprintf(out, size, "%s",
                 !strcmp(r->how, "array")   ? "one array job"
                 : !strcmp(r->how, "lanes") ? "lanes"
                                            : "one job");
}

void sweep_view_line(FILE *f, const sweep_view_t *v)
{
    char counts[512], how[128];
    counts_text(v, counts, sizeof counts);
    how_words(&v->rec, how, sizeof how);
    fprintf(f, "%s (%s sweep of %zu trials, %s, at most %ld at once): %s\n  record %s\n",
            v->rec.name, v->rec.scheduler, v->rec.ntrials, how, v->rec.parallel, counts,
            v->rec.dir);
}

void sweep_view_print(FILE *f, const sweep_view_t *v, const sweep_order_t *order)
{
    const char *names[METRIC_COLUMNS], *used;
    int desc;
    json_t *keep;
    size_t nnames = metric_names(v, names, METRIC_COLUMNS, &keep);
    size_t *idx = ordered(v, order, &used, &desc);
    sweep_view_line(f, v);
    fprintf(f, "%-5s  %-24s  %-40s  %-4s  %-10s", "trial", "params", "state", "link", "elapsed");
    for (size_t i = 0; i < nnames; i++)
        fprintf(f, "  %10s", names[i]);
    fputc('\n', f);
    for (size_t r = 0; idx && r < v->rec.ntrials; r++) {
        size_t k = idx[r];
        const job_view_t *t = &v->trials[k];
        char params[256], state[640];
        params_text(v->rec.params[k], params, sizeof params);
        job_view_state_text(t, state, sizeof state);
        fprintf(f, "%-5zu  %-24s  %-40s  %-4d  %-10s", k, params, state, t->link + 1,
                t->elapsed[0] ? t->elapsed : "-");
        for (size_t i = 0; i < nnames; i++) {
            double x = metric_of(v, k, names[i]);
            if (isnan(x))
                fprintf(f, "  %10s", "-");
            else
                fprintf(f, "  %10.4g", x);
        }
        fputc('\n', f);
    }
    long best = best_trial(v, used, desc);
    if (best >= 0) {
        char params[256];
        params_text(v->rec.params[best], params, sizeof params);
        fprintf(f, "best: trial %ld (%s): %s %.6g (%s)\n", best, params, used,
                metric_of(v, (size_t)best, used), desc ? "highest" : "lowest");
    }
    json_decref(keep);
    free(idx);
}

void sweep_view_json(FILE *f, const sweep_view_t *v, const sweep_order_t *order)
{
    const char *used;
    int desc;
    size_t *idx = ordered(v, order, &used, &desc);
    json_t *o = json_object(), *trials = json_array();
    json_object_set_new(o, "version", json_integer(SWEEP_RECORD_VERSION));
    json_object_set_new(o, "sweep", json_shown_string(v->rec.name));
    json_object_set_new(o, "scheduler", json_shown_string(v->rec.scheduler));
    json_object_set_new(o, "how", json_shown_string(v->rec.how));
    json_object_set_new(o, "parallel", json_integer(v->rec.parallel));
    json_object_set_new(o, "record", json_shown_string(v->rec.dir));
    for (size_t r = 0; idx && r < v->rec.ntrials; r++) {
        size_t k = idx[r];
        const job_view_t *t = &v->trials[k];
        json_t *row = json_object(), *params = json_loads(v->rec.params[k], 0, NULL),
               *metrics = v->metrics[k] ? json_loads(v->metrics[k], 0, NULL) : NULL;
        char state[640];
        job_view_state_text(t, state, sizeof state);
        json_object_set_new(row, "trial", json_integer((json_int_t)k));
        json_object_set_new(row, "params", params ? params : json_object());
        json_object_set_new(row, "state", json_string(job_state_name(t->state)));
        json_object_set_new(row, "summary", json_shown_string(state));
        json_object_set_new(row, "job_id", json_shown_string(job_view_id(t)));
        json_object_set_new(row, "link", json_integer(t->link + 1));
        json_object_set_new(row, "source", json_shown_string(t->source));
        json_object_set_new(row, "exit_status",
                            t->exit_status >= 0 ? json_integer(t->exit_status) : json_null());
        json_object_set_new(row, "elapsed", json_shown_string(t->elapsed[0] ? t->elapsed : NULL));
        json_object_set_new(row, "metrics", metrics ? metrics : json_object());
        json_object_set_new(row, "record", json_shown_string(t->rec.dir));
        json_array_append_new(trials, row);
    }
    json_object_set_new(o, "trials", trials);
    long best = best_trial(v, used, desc);
    json_object_set_new(o, "best", best >= 0 ? json_integer(best) : json_null());
    json_object_set_new(o, "best_by", json_shown_string(best >= 0 ? used : NULL));
    char *text = json_dump_text(o);
    if (text)
        fputs(text, f);
    free(text);
    free(idx);
}

int sweep_view_ended(const sweep_view_t *v)
{
    for (size_t k = 0; k < v->rec.ntrials; k++)
        if (!job_state_final(v->trials[k].state))
            return 0;
    return 1;
}

size_t sweep_view_unsuccessful(const sweep_view_t *v)
{
    size_t n = 0;
    for (size_t k = 0; k < v->rec.ntrials; k++)
        n += job_state_final(v->trials[k].state) && v->trials[k].state != JOB_COMPLETED;
    return n;
}
