#include "cli/report/report_page.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/report/svg.h"

#define WIDTH 960
/* Every time axis's margins, so that the charts' times line up. */
#define LEFT 90
#define RIGHT 110
/* The heat strip's cells at most: rows of ranks, columns of samples. */
#define STRIP_ROWS 128
#define STRIP_COLUMNS 120
/* Ranks listed as the busiest, and the ratio to the median from which one is listed. */
#define BUSIEST 5
#define BUSIEST_FROM 1.2

/* The page's time span and the ranks it names. */
typedef struct {
    double t0, t1;
    char *marks; /* per rank: 0, or 's' slow, 't' stalled, 'f' failed */
    int nranks;
} page_t;

static void widen(page_t *p, double t)
{
    if (t <= 0)
        return;
    if (!p->t0 || t < p->t0)
        p->t0 = t;
    if (t > p->t1)
        p->t1 = t;
}

static void page_times(page_t *p, const job_view_t *v, const job_history_t *h)
{
    widen(p, (double)v->rec.submitted);
    for (int k = 0; k < v->rec.nlinks; k++) {
        widen(p, (double)v->rec.links[k].start_time);
        widen(p, (double)v->rec.links[k].end_time);
    }
    for (int i = 0; i < h->nsamples; i++)
        widen(p, h->samples[i].t);
    for (int i = 0; i < h->nevents; i++)
        widen(p, h->events[i].t);
    if (!job_state_final(v->state))
        widen(p, (double)time(NULL));
    if (p->t1 <= p->t0)
        p->t1 = p->t0 + 1;
}

/* The ranks the page names: slow or stalled in an event, or failed as a cause. */
static void page_marks(page_t *p, const job_view_t *v, const job_history_t *h)
{
    p->nranks = h->max_ranks;
    for (int i = 0; i < v->nfailed; i++)
        if (v->failed[i].rank + 1 > p->nranks)
            p->nranks = v->failed[i].rank + 1;
    p->marks = calloc((size_t)p->nranks + 1, 1);
    for (int i = 0; p->marks && i < h->nevents; i++) {
        const history_event_t *e = &h->events[i];
        if (e->rank >= 0 && e->rank < p->nranks && !strcmp(e->kind, "slow"))
            p->marks[e->rank] = 's';
        if (e->rank >= 0 && e->rank < p->nranks && !strcmp(e->kind, "stalled"))
            p->marks[e->rank] = 't';
    }
    for (int i = 0; p->marks && i < v->nfailed; i++)
        if (!v->failed[i].consequence && v->failed[i].rank >= 0)
            p->marks[v->failed[i].rank] = 'f';
}

static const char *mark_words(char mark)
{
    return mark == 's' ? "slow" : mark == 't' ? "stalled" : "failed";
}

/* How link k ended, in words ("" while it runs). */
static void link_end_words(const job_view_t *v, int k, char *out, size_t size)
{
    const job_link_t *l = &v->rec.links[k];
    if (!l->ended)
        snprintf(out, size, "%s", l->started ? "running" : "queued");
    else if (l->status == 0)
        snprintf(out, size, "completed");
    else if (l->status == 75)
        snprintf(out, size, k + 1 < v->rec.nlinks ? "checkpointed, requeued" : "checkpointed");
    else
        snprintf(out, size, "ended with status %d", l->status);
}

static void page_head(FILE *f, const job_view_t *v)
{
    const char *name = v->rec.name[0] ? v->rec.name : "?";
    html_begin(f, name);
    fputs("<h1>", f);
    html_text(f, name);
    fprintf(f, " <span class=\"state %s\" id=\"state\">", job_state_name(v->state));
    html_text(f, job_state_name(v->state));
    if (v->exit_status >= 0 && job_state_final(v->state))
        fprintf(f, ", exit %d", v->exit_status);
    fputs("</span></h1>\n<p class=\"muted\">", f);
    html_text(f, v->rec.scheduler);
    fprintf(f, " job %s · %d link(s) · %d node(s) × %d rank(s) · record ", job_view_id(v),
            v->rec.nlinks, v->rec.nodes, v->rec.procs_per_node);
    html_text(f, v->rec.dir);
    fputs("</p>\n", f);
}

static void summary(FILE *f, const job_view_t *v, const job_history_t *h)
{
    fputs("<h2>What happened</h2>\n<ul class=\"summary\" id=\"summary\">\n", f);
    for (int i = 0; i < v->nfailed; i++) {
        const failed_rank_t *x = &v->failed[i];
        fprintf(f, "<li class=\"failed-rank\" data-rank=\"%d\">rank %d (node %d, host ", x->rank,
                x->rank, x->node);
        html_text(f, x->host);
        fputs("): ", f);
        html_text(f, x->cause);
        fprintf(f, "%s</li>\n", x->consequence ? " (a consequence: a peer went first)" : "");
    }
    for (int i = 0; i < h->nevents; i++) {
        const history_event_t *e = &h->events[i];
        if (strcmp(e->kind, "slow") && strcmp(e->kind, "stalled") && strcmp(e->kind, "spare") &&
            strcmp(e->kind, "restart"))
            continue;
        fprintf(f, "<li>link %d, attempt %d: ", e->link + 1, e->attempt);
        html_text(f, e->text);
        fputs("</li>\n", f);
    }
    char words[64];
    for (int k = 0; k < v->rec.nlinks; k++) {
        link_end_words(v, k, words, sizeof words);
        fprintf(f, "<li>link %d (job ", k + 1);
        html_text(f, v->rec.links[k].id);
        fprintf(f, "): %s</li>\n", words);
    }
    fputs("</ul>\n", f);
}

static void chain_event(FILE *f, const svg_chart_t *c, const history_event_t *e, double y)
{
    static const struct {
        const char *kind, *shape, *colour;
    } marks[] = {
        {"walltime_signal", "M-6,-12L6,-12L0,-2Z", "#ef6c00"},
        {"restart", "M-5,-5L5,5M-5,5L5,-5", "#c62828"},
        {"spare", "M0,-7L6,0L0,7L-6,0Z", "#6a1b9a"},
        {"joined", "M0,-7L6,0L0,7L-6,0Z", "#6a1b9a"},
        {"slow", "M-4,0a4,4 0 1,0 8,0a4,4 0 1,0 -8,0", "#f9a825"},
        {"stalled", "M-4,0a4,4 0 1,0 8,0a4,4 0 1,0 -8,0", "#c62828"},
        {"checkpoint", "M-4,-4h8v8h-8Z", "#1565c0"},
        {"attempt_start", "M0,-11V11", "#37474f"},
    };
    for (size_t k = 0; k < sizeof marks / sizeof *marks; k++) {
        if (strcmp(e->kind, marks[k].kind))
            continue;
        fprintf(f,
                "<path class=\"event %s\" transform=\"translate(%.1f,%.1f)\" d=\"%s\" "
                "stroke=\"%s\" fill=\"%s\" stroke-width=\"2\"><title>",
                e->kind, svg_x(c, e->t), y, marks[k].shape, marks[k].colour, marks[k].colour);
        html_text(f, e->kind);
        fputs(": ", f);
        html_text(f, e->text);
        fputs("</title></path>\n", f);
    }
}

static void chain(FILE *f, const page_t *p, const job_view_t *v, const job_history_t *h)
{
    int n = v->rec.nlinks ? v->rec.nlinks : 1;
    svg_chart_t c = {f, p->t0, p->t1, 0, n, WIDTH, 40 + 34 * n, LEFT, RIGHT, 10, 30, 1, 1};
    fputs("<h2>The chain</h2>\n", f);
    svg_chart_begin(&c, "chain", "the chain of links over time", "time", NULL);
    char words[64];
    for (int k = 0; k < v->rec.nlinks; k++) {
        const job_link_t *l = &v->rec.links[k];
        double y = c.top + 8 + 34 * k,
               queued_from = k ? (double)v->rec.links[k - 1].end_time : (double)v->rec.submitted;
        double started = l->started ? (double)l->start_time : p->t1;
        double ended = l->ended ? (double)l->end_time : p->t1;
        link_end_words(v, k, words, sizeof words);
        fprintf(f, "<g class=\"link\" data-link=\"%d\"><text class=\"axis\" x=\"4\" y=\"%.1f\">",
                k + 1, y + 15);
        fprintf(f, "link %d: ", k + 1);
        html_text(f, l->id);
        fputs("</text>\n", f);
        if (queued_from > 0 && started > queued_from)
            fprintf(f,
                    "<rect class=\"queued\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"20\">"
                    "<title>queued</title></rect>\n",
                    svg_x(&c, queued_from), y, svg_x(&c, started) - svg_x(&c, queued_from));
        if (l->started)
            fprintf(f,
                    "<rect class=\"ran %s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"20\">"
                    "<title>%s</title></rect>\n",
                    !l->ended         ? "running"
                    : l->status == 75 ? "checkpointed"
                    : l->status != 0  ? "failed"
                                      : "completed",
                    svg_x(&c, started), y, fmax(2, svg_x(&c, ended) - svg_x(&c, started)), words);
        for (int i = 0; i < h->nevents; i++)
            if (h->events[i].link == k)
                chain_event(f, &c, &h->events[i], y + 10);
        fputs("</g>\n", f);
    }
    svg_chart_end(&c);
}

static void attempts(FILE *f, const job_history_t *h)
{
    fputs("<h2>Attempts</h2>\n<table id=\"attempts\"><tr><th>link</th><th>attempt</th>"
          "<th>started</th><th>world</th><th>ended</th><th>outcome</th></tr>\n",
          f);
    char when[64];
    for (int i = 0; i < h->nevents; i++) {
        const history_event_t *s = &h->events[i];
        if (strcmp(s->kind, "attempt_start"))
            continue;
        const history_event_t *end = NULL;
        for (int j = i + 1; j < h->nevents && !end; j++)
            if (h->events[j].link == s->link && h->events[j].attempt == s->attempt &&
                !strcmp(h->events[j].kind, "attempt_end"))
                end = &h->events[j];
        clock_words(s->t, 1, when, sizeof when);
        fprintf(f, "<tr class=\"attempt\"><td>%d</td><td>%d</td><td>%s</td><td>", s->link + 1,
                s->attempt, when);
        html_text(f, s->text);
        if (end)
            fprintf(f, "</td><td>after %.0f s</td><td>", end->t - s->t);
        else
            fputs("</td><td>-</td><td>", f);
        html_text(f, end ? end->text : "no end recorded (the job was stopped, or still runs)");
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

/* Whether sample i starts a new line: the first, or another link or attempt than the one before. */
static int new_run(const job_history_t *h, int i)
{
    return i == 0 || h->samples[i].link != h->samples[i - 1].link ||
           h->samples[i].attempt != h->samples[i - 1].attempt;
}

/* Rank r's steps as a path. */
static void rank_path(FILE *f, const svg_chart_t *c, const job_history_t *h, int r, const char *cls,
                      const char *colour)
{
    fprintf(f, "<path class=\"%s\" data-rank=\"%d\"%s%s%s d=\"", cls, r, colour ? " stroke=\"" : "",
            colour ? colour : "", colour ? "\"" : "");
    int drawing = 0;
    for (int i = 0; i < h->nsamples; i++) {
        const history_sample_t *s = &h->samples[i];
        long long step = r < s->nranks ? s->steps[r] : -1;
        if (step < 0 || new_run(h, i))
            drawing = 0;
        if (step < 0)
            continue;
        fprintf(f, "%c%.1f,%.1f", drawing ? 'L' : 'M', svg_x(c, s->t), svg_y(c, (double)step));
        drawing = 1;
    }
    fputs("\"/>\n", f);
}

static int long_order(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

/* The known figures of a sample sorted into tmp; how many. */
static int sorted_known(const long long *v, int n, long long *tmp)
{
    int k = 0;
    for (int r = 0; r < n; r++)
        if (v[r] >= 0)
            tmp[k++] = v[r];
    qsort(tmp, (size_t)k, sizeof *tmp, long_order);
    return k;
}

/* The spread of every rank's step: min to max, and the median. */
static void steps_band(FILE *f, const svg_chart_t *c, const job_history_t *h)
{
    long long *tmp = malloc(((size_t)h->max_ranks + 1) * sizeof *tmp);
    if (!tmp)
        return;
    fputs("<path class=\"band\" d=\"", f);
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < h->nsamples; k++) {
            int i = pass ? h->nsamples - 1 - k : k;
            int n = sorted_known(h->samples[i].steps, h->samples[i].nranks, tmp);
            if (n)
                fprintf(f, "%c%.1f,%.1f", !pass && !k ? 'M' : 'L', svg_x(c, h->samples[i].t),
                        svg_y(c, (double)tmp[pass ? n - 1 : 0]));
        }
    fputs("Z\"><title>every rank's step: lowest to highest</title></path>\n<path "
          "class=\"median\" d=\"",
          f);
    for (int i = 0, drawing = 0; i < h->nsamples; i++) {
        int n = sorted_known(h->samples[i].steps, h->samples[i].nranks, tmp);
        if (new_run(h, i))
            drawing = 0;
        if (!n)
            continue;
        fprintf(f, "%c%.1f,%.1f", drawing ? 'L' : 'M', svg_x(c, h->samples[i].t),
                svg_y(c, (double)tmp[(n - 1) / 2]));
        drawing = 1;
    }
    fputs("\"><title>the median rank's step</title></path>\n", f);
    free(tmp);
}

/* Where rank r's line ends, for its label. */
static int last_point(const job_history_t *h, int r, double *t, long long *step)
{
    for (int i = h->nsamples - 1; i >= 0; i--)
        if (r < h->samples[i].nranks && h->samples[i].steps[r] >= 0) {
            *t = h->samples[i].t;
            *step = h->samples[i].steps[r];
            return 1;
        }
    return 0;
}

static void steps_chart(FILE *f, const page_t *p, const job_history_t *h)
{
    long long top = 1;
    for (int i = 0; i < h->nsamples; i++)
        for (int r = 0; r < h->samples[i].nranks; r++)
            if (h->samples[i].steps[r] > top)
                top = h->samples[i].steps[r];
    svg_chart_t c = {f, p->t0, p->t1, 0, (double)top, WIDTH, 300, LEFT, RIGHT, 24, 30, 1, 0};
    fprintf(f, "<h2>Steps</h2>\n<p class=\"muted\">%s</p>\n",
            h->max_ranks <= REPORT_RANK_LINES
                ? "A line per rank; a rank named slow, stalled or failed in red."
                : "The band holds every rank's step, the line is the median rank's; a rank named "
                  "slow, stalled or failed has its own line, in red.");
    svg_chart_begin(&c, "steps", "every rank's step over time", "time", "step");
    if (h->max_ranks > REPORT_RANK_LINES)
        steps_band(f, &c, h);
    for (int r = 0; r < h->max_ranks; r++) {
        char colour[32];
        snprintf(colour, sizeof colour, "hsl(%d,55%%,45%%)", (r * 47) % 360);
        if (p->marks[r])
            rank_path(f, &c, h, r, "rank marked", NULL);
        else if (h->max_ranks <= REPORT_RANK_LINES)
            rank_path(f, &c, h, r, "rank", colour);
    }
    for (int r = 0; r < h->max_ranks; r++) {
        double t;
        long long step;
        if (p->marks[r] && last_point(h, r, &t, &step))
            fprintf(f, "<text class=\"label\" x=\"%.1f\" y=\"%.1f\">rank %d (%s)</text>\n",
                    svg_x(&c, t) + 4, svg_y(&c, (double)step) + 4, r, mark_words(p->marks[r]));
    }
    svg_chart_end(&c);
}

/* Each sample's median busy time per step (-1: none known). */
static long long *sample_medians(const job_history_t *h)
{
    long long *med = malloc(((size_t)h->nsamples + 1) * sizeof *med);
    long long *tmp = malloc(((size_t)h->max_ranks + 1) * sizeof *tmp);
    for (int i = 0; med && tmp && i < h->nsamples; i++) {
        int n = sorted_known(h->samples[i].busy_us, h->samples[i].nranks, tmp);
        med[i] = n && tmp[(n - 1) / 2] > 0 ? tmp[(n - 1) / 2] : -1;
    }
    free(tmp);
    return med;
}

/* The highest ratio to the median among ranks [r0, r1) over samples [i0, i1); -1 unknown. */
static double cell_ratio(const job_history_t *h, const long long *med, int r0, int r1, int i0,
                         int i1)
{
    double worst = -1;
    for (int i = i0; i < i1; i++)
        for (int r = r0; r < r1 && r < h->samples[i].nranks; r++)
            if (med[i] > 0 && h->samples[i].busy_us[r] >= 0)
                worst = fmax(worst, (double)h->samples[i].busy_us[r] / (double)med[i]);
    return worst;
}

static void busiest(FILE *f, const job_history_t *h, const long long *med)
{
    double *mean = calloc((size_t)h->max_ranks + 1, sizeof *mean);
    int *count = calloc((size_t)h->max_ranks + 1, sizeof *count);
    for (int i = 0; mean && count && i < h->nsamples; i++)
        for (int r = 0; r < h->samples[i].nranks; r++)
            if (med[i] > 0 && h->samples[i].busy_us[r] >= 0) {
                mean[r] += (double)h->samples[i].busy_us[r] / (double)med[i];
                count[r]++;
            }
    fputs("<ol id=\"busiest\">\n", f);
    for (int k = 0; mean && count && k < BUSIEST; k++) {
        int best = -1;
        for (int r = 0; r < h->max_ranks; r++)
            if (count[r] && (best < 0 || mean[r] / count[r] > mean[best] / count[best]))
                best = r;
        if (best < 0 || mean[best] / count[best] < BUSIEST_FROM)
            break;
        fprintf(f,
                "<li data-rank=\"%d\">rank %d: busy %.1fx the median rank per step, on "
                "average over %d samples</li>\n",
                best, best, mean[best] / count[best], count[best]);
        count[best] = 0;
    }
    fputs("</ol>\n", f);
    free(mean);
    free(count);
}

static void busy_strip(FILE *f, const page_t *p, const job_history_t *h)
{
    if (!h->nsamples || !h->max_ranks)
        return;
    int rows = h->max_ranks < STRIP_ROWS ? h->max_ranks : STRIP_ROWS;
    int per_row = (h->max_ranks + rows - 1) / rows;
    int cols = h->nsamples < STRIP_COLUMNS ? h->nsamples : STRIP_COLUMNS;
    int per_col = (h->nsamples + cols - 1) / cols;
    svg_chart_t c = {f,  p->t0, p->t1, 0, h->max_ranks, WIDTH, 60 + 2 * rows + 80, 60, 110,
                     24, 30,    1,     0};
    long long *med = sample_medians(h);
    if (!med)
        return;
    fprintf(f,
            "<h2>Busy time per step</h2>\n<p class=\"muted\">Each cell: the busiest of %d "
            "rank(s) over %d sample(s), against that sample's median rank (pale: as the "
            "median; dark red: 3x or more). The rank the others wait for is a dark row.</p>\n",
            per_row, per_col);
    svg_chart_begin(&c, "busy", "busy time per step, every rank over time", "time", "rank");
    char colour[8];
    for (int r0 = 0; r0 < h->max_ranks; r0 += per_row)
        for (int i0 = 0; i0 < h->nsamples; i0 += per_col) {
            int i1 = i0 + per_col < h->nsamples ? i0 + per_col : h->nsamples;
            double x0 = svg_x(&c, h->samples[i0].t),
                   x1 = i1 < h->nsamples ? svg_x(&c, h->samples[i1].t) : x0 + 4;
            double ratio = cell_ratio(h, med, r0, r0 + per_row, i0, i1);
            heat_colour(ratio, colour);
            fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
                    x0, svg_y(&c, r0 + per_row), fmax(1, x1 - x0),
                    svg_y(&c, r0) - svg_y(&c, r0 + per_row), colour);
        }
    svg_chart_end(&c);
    busiest(f, h, med);
    free(med);
}

/* The highest step of sample i (-1: none). */
static long long top_step(const history_sample_t *s)
{
    long long top = -1;
    for (int r = 0; r < s->nranks; r++)
        if (s->steps[r] > top)
            top = s->steps[r];
    return top;
}

static void throughput(FILE *f, const page_t *p, const job_history_t *h)
{
    double *rate = calloc((size_t)h->nsamples + 1, sizeof *rate), top = 0;
    for (int i = 1; rate && i < h->nsamples; i++) {
        const history_sample_t *a = &h->samples[i - 1], *b = &h->samples[i];
        long long sa = top_step(a), sb = top_step(b);
        rate[i] =
            !new_run(h, i) && sa >= 0 && sb >= sa && b->t > a->t ? (sb - sa) / (b->t - a->t) : -1;
        top = fmax(top, rate[i]);
    }
    if (!rate || top <= 0) {
        free(rate);
        return;
    }
    svg_chart_t c = {f, p->t0, p->t1, 0, top * 1.1, WIDTH, 200, LEFT, RIGHT, 24, 30, 1, 0};
    fputs("<h2>Throughput</h2>\n", f);
    svg_chart_begin(&c, "throughput", "steps per second over time", "time", "steps/s");
    fputs("<path class=\"line\" d=\"", f);
    for (int i = 1, drawing = 0; i < h->nsamples; i++) {
        if (rate[i] < 0) {
            drawing = 0;
            continue;
        }
        fprintf(f, "%c%.1f,%.1f", drawing ? 'L' : 'M', svg_x(&c, h->samples[i].t),
                svg_y(&c, rate[i]));
        drawing = 1;
    }
    fputs("\"/>\n", f);
    svg_chart_end(&c);
    free(rate);
}

static void metric_chart(FILE *f, const metric_series_t *m, int index)
{
    double x0 = m->x[0], x1 = m->x[0], y0 = m->y[0], y1 = m->y[0];
    for (int i = 1; i < m->n; i++) {
        x0 = fmin(x0, m->x[i]);
        x1 = fmax(x1, m->x[i]);
        y0 = fmin(y0, m->y[i]);
        y1 = fmax(y1, m->y[i]);
    }
    svg_chart_t c = {
        f, x0, x1 > x0 ? x1 : x0 + 1, y0, y1 > y0 ? y1 : y0 + 1, 460, 180, 60, 16, 24, 30, 0, 0};
    char id[32];
    snprintf(id, sizeof id, "metric-%d", index);
    fputs("<div class=\"metric\">", f);
    svg_chart_begin(&c, id, m->name, m->x_name, m->name);
    fputs("<path class=\"line\" d=\"", f);
    for (int i = 0; i < m->n; i++)
        fprintf(f, "%c%.1f,%.1f", i ? 'L' : 'M', svg_x(&c, m->x[i]), svg_y(&c, m->y[i]));
    fputs("\"/>\n", f);
    svg_chart_end(&c);
    fputs("</div>\n", f);
}

static void metrics(FILE *f, const job_history_t *h)
{
    if (!h->nmetrics)
        return;
    fputs("<h2>Metrics</h2>\n<p class=\"muted\">Rank 0's $DDPJOB_METRICS_FILE, over every link "
          "and attempt.</p>\n<div id=\"metrics\">\n",
          f);
    for (int i = 0; i < h->nmetrics; i++)
        if (h->metrics[i].n)
            metric_chart(f, &h->metrics[i], i);
    fputs("</div>\n", f);
}

static void events_table(FILE *f, const job_history_t *h)
{
    if (!h->nevents)
        return;
    fputs("<h2>Events</h2>\n<table id=\"events\"><tr><th>time</th><th>link</th><th>attempt</th>"
          "<th>event</th><th>rank</th><th>what the agent said</th></tr>\n",
          f);
    char when[64];
    for (int i = 0; i < h->nevents; i++) {
        const history_event_t *e = &h->events[i];
        clock_words(e->t, 1, when, sizeof when);
        fprintf(f, "<tr class=\"event-row %s\"><td>%s</td><td>%d</td><td>%d</td><td>", e->kind,
                when, e->link + 1, e->attempt);
        html_text(f, e->kind);
        fputs("</td><td>", f);
        if (e->rank >= 0)
            fprintf(f, "%d", e->rank);
        fputs("</td><td>", f);
        html_text(f, e->text);
        fputs("</td></tr>\n", f);
    }
    fputs("</table>\n", f);
}

void report_page_write(FILE *f, const job_view_t *v, const job_history_t *h)
{
    page_t p = {0};
    page_times(&p, v, h);
    page_marks(&p, v, h);
    page_head(f, v);
    summary(f, v, h);
    chain(f, &p, v, h);
    attempts(f, h);
    if (h->nsamples && p.marks) {
        steps_chart(f, &p, h);
        busy_strip(f, &p, h);
        throughput(f, &p, h);
    } else {
        fputs("<p class=\"muted\" id=\"no-steps\">No rank reported its steps "
              "($DDPJOB_PROGRESS_FILE): no steps, busy time or throughput to draw.</p>\n",
              f);
    }
    metrics(f, h);
    events_table(f, h);
    html_end(f);
    free(p.marks);
}
