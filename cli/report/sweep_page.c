#include "cli/report/sweep_page.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/report/svg.h"

/* Trial k's series of the metric `name`, or NULL. */
static const metric_series_t *series_of(const job_history_t *h, const char *name)
{
    for (int i = 0; i < h->nmetrics; i++)
        if (!strcmp(h->metrics[i].name, name) && h->metrics[i].n)
            return &h->metrics[i];
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The chart's y range: every value's, unless a few lie far outside the rest (a trial that
 * diverged, its loss at 6e35 and every other curve flat at the bottom): then that of the values
 * within 3 interquartile ranges of the middle half, returning 1. */
static int y_range(const sweep_view_t *sv, const job_history_t *hs, const char *name, double *y0,
                   double *y1)
{
    size_t n = 0, at = 0;
    for (size_t k = 0; k < sv->rec.ntrials; k++) {
        const metric_series_t *m = series_of(&hs[k], name);
        n += m ? (size_t)m->n : 0;
    }
    double *v = malloc((n + 1) * sizeof *v);
    for (size_t k = 0; v && k < sv->rec.ntrials; k++) {
        const metric_series_t *m = series_of(&hs[k], name);
        for (int i = 0; m && i < m->n; i++)
            v[at++] = m->y[i];
    }
    if (!v || !n) {
        free(v);
        return *y0 = 0, *y1 = 1, 0;
    }
    qsort(v, n, sizeof *v, by_value);
    double q1 = v[n / 4], q3 = v[3 * n / 4], reach = 3 * (q3 - q1);
    *y0 = v[0], *y1 = v[n - 1];
    int clipped = reach > 0 && (*y0 < q1 - reach || *y1 > q3 + reach);
    if (clipped)
        *y0 = fmax(*y0, q1 - reach), *y1 = fmin(*y1, q3 + reach);
    free(v);
    return clipped;
}

/* Says on the chart which trials leave its y range, and how far they go. */
static void say_clipped(FILE *f, const svg_chart_t *c, const sweep_view_t *sv,
                        const job_history_t *hs, const char *name)
{
    fprintf(f, "<text class=\"label clipped\" x=\"%d\" y=\"%d\">outside this axis:", c->left + 6,
            c->top + 14);
    for (size_t k = 0; k < sv->rec.ntrials; k++) {
        const metric_series_t *m = series_of(&hs[k], name);
        double far = NAN;
        for (int i = 0; m && i < m->n; i++)
            if ((m->y[i] > c->y1 || m->y[i] < c->y0) && (isnan(far) || fabs(m->y[i]) > fabs(far)))
                far = m->y[i];
        if (!isnan(far))
            fprintf(f, " trial %zu (to %.3g)", k, far);
    }
    fputs(", drawn at the edge</text>\n", f);
}

static void trial_curves(FILE *f, const sweep_view_t *sv, const job_history_t *hs, const char *name,
                         int index)
{
    double x0 = INFINITY, x1 = -INFINITY, y0, y1;
    const char *x_name = "step";
    for (size_t k = 0; k < sv->rec.ntrials; k++) {
        const metric_series_t *m = series_of(&hs[k], name);
        for (int i = 0; m && i < m->n; i++) {
            x0 = fmin(x0, m->x[i]), x1 = fmax(x1, m->x[i]);
            x_name = m->x_name;
        }
    }
    int clipped = y_range(sv, hs, name, &y0, &y1);
    svg_chart_t c = {
        f, x0, x1 > x0 ? x1 : x0 + 1, y0, y1 > y0 ? y1 : y0 + 1, 700, 260, 70, 20, 24, 30, 0, 0};
    char id[32];
    snprintf(id, sizeof id, "metric-%d", index);
    fprintf(f, "<h2>");
    html_text(f, name);
    fputs("</h2>\n", f);
    svg_chart_begin(&c, id, name, x_name, name);
    if (clipped)
        say_clipped(f, &c, sv, hs, name);
    for (size_t k = 0; k < sv->rec.ntrials; k++) {
        const metric_series_t *m = series_of(&hs[k], name);
        if (!m)
            continue;
        fprintf(f,
                "<path class=\"trial\" data-trial=\"%zu\" fill=\"none\" stroke-width=\"1.5\" "
                "stroke=\"hsl(%zu,60%%,42%%)\" d=\"",
                k, (k * 67) % 360);
        for (int i = 0; i < m->n; i++)
            fprintf(f, "%c%.1f,%.1f", i ? 'L' : 'M', svg_x(&c, m->x[i]),
                    svg_y(&c, fmin(fmax(m->y[i], c.y0), c.y1)));
        fprintf(f, "\"><title>trial %zu ", k);
        html_text(f, sv->rec.params[k]);
        fputs("</title></path>\n", f);
    }
    svg_chart_end(&c);
}

/* The legend: each trial's colour and parameters. */
static void legend(FILE *f, const sweep_view_t *sv)
{
    fputs("<ul id=\"trials\">\n", f);
    for (size_t k = 0; k < sv->rec.ntrials; k++) {
        fprintf(f,
                "<li data-trial=\"%zu\"><span style=\"color:hsl(%zu,60%%,42%%)\">&#9632;</span> "
                "trial %zu ",
                k, (k * 67) % 360, k);
        html_text(f, sv->rec.params[k]);
        fprintf(f, ": %s</li>\n",
                sv->trials[k].rec.dir ? job_state_name(sv->trials[k].state) : "no record");
    }
    fputs("</ul>\n", f);
}

void sweep_page_write(FILE *f, const sweep_view_t *sv, const job_history_t *histories)
{
    html_begin(f, sv->rec.name);
    fputs("<h1>", f);
    html_text(f, sv->rec.name);
    fprintf(f, "</h1>\n<p class=\"muted\">a sweep of %zu trials</p>\n<pre id=\"table\">",
            sv->rec.ntrials);
    char *table = NULL;
    size_t len = 0;
    FILE *t = open_memstream(&table, &len);
    if (t) {
        sweep_order_t order = {NULL, 0};
        sweep_view_print(t, sv, &order);
        fclose(t);
        html_text(f, table);
    }
    free(table);
    fputs("</pre>\n", f);
    legend(f, sv);
    /* The metrics of the first trials that wrote any, in their order. */
    const char *names[SWEEP_PAGE_METRICS];
    int n = 0;
    for (size_t k = 0; k < sv->rec.ntrials; k++)
        for (int i = 0; i < histories[k].nmetrics && n < SWEEP_PAGE_METRICS; i++) {
            int seen = 0;
            for (int j = 0; j < n; j++)
                seen |= !strcmp(names[j], histories[k].metrics[i].name);
            if (!seen)
                names[n++] = histories[k].metrics[i].name;
        }
    for (int i = 0; i < n; i++)
        trial_curves(f, sv, histories, names[i], i);
    if (!n)
        fputs("<p class=\"muted\">No trial wrote metrics ($DDPJOB_METRICS_FILE).</p>\n", f);
    html_end(f);
}
