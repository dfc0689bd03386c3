#include "cli/view/job_progress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The lowest step of ranks [r0, r1) of sample s; -1 when none of them reported. */
static long long lowest_step(const history_sample_t *s, int r0, int r1)
{
    long long low = -1;
    for (int r = r0; r < r1 && r < s->nranks; r++)
        if (s->steps[r] >= 0 && (low < 0 || s->steps[r] < low))
            low = s->steps[r];
    return low;
}

/* Steps per second from the last sample back over the window, within one attempt. */
static double rate(const job_history_t *h)
{
    const history_sample_t *last = &h->samples[h->nsamples - 1], *first = last;
    for (int i = h->nsamples - 2; i >= 0; i--) {
        const history_sample_t *s = &h->samples[i];
        if (s->link != last->link || s->attempt != last->attempt ||
            last->t - s->t > PROGRESS_RATE_WINDOW_S)
            break;
        if (lowest_step(s, 0, s->nranks) >= 0) /* before the first step, nothing to count from */
            first = s;
    }
    long long a = lowest_step(first, 0, first->nranks), b = lowest_step(last, 0, last->nranks);
    return last->t > first->t && a >= 0 && b > a ? (double)(b - a) / (last->t - first->t) : 0;
}

/* The slow rank still slow: the last "slow" event of a rank with no "recovered" after it. */
static void still_slow(const job_history_t *h, char *out, size_t size)
{
    out[0] = 0;
    for (int i = h->nevents - 1; i >= 0; i--) {
        const history_event_t *e = &h->events[i];
        if (!strcmp(e->kind, "slow")) {
            int recovered = 0;
            for (int j = i + 1; j < h->nevents; j++)
                recovered |=
                    !strcmp(h->events[j].kind, "recovered") && h->events[j].rank == e->rank;
            if (!recovered)
                snprintf(out, size, "%s", e->text);
            return;
        }
    }
}

static void walltime(const job_view_t *v, double now, job_progress_t *p)
{
    const job_link_t *l = v->link < v->rec.nlinks ? &v->rec.links[v->link] : NULL;
    p->requeues_left = v->rec.requeue > v->link ? v->rec.requeue - v->link : 0;
    if (!l || !l->started || l->ended || v->rec.walltime_s <= 0)
        return;
    p->walltime_left_s = fmax(0, (double)v->rec.walltime_s - (now - (double)l->start_time));
    if (p->eta_s >= 0)
        p->more_requeues =
            p->eta_s <= p->walltime_left_s
                ? 0
                : (int)ceil((p->eta_s - p->walltime_left_s) / (double)v->rec.walltime_s);
}

void job_progress_compute(const job_view_t *v, const job_history_t *h, double now,
                          job_progress_t *p)
{
    *p = (job_progress_t){.step = -1,
                          .total = h->total_steps,
                          .eta_s = -1,
                          .walltime_left_s = -1,
                          .more_requeues = -1};
    if (h->nsamples) {
        const history_sample_t *last = &h->samples[h->nsamples - 1];
        int per_node = v->rec.procs_per_node > 0 ? v->rec.procs_per_node : 1;
        p->step = lowest_step(last, 0, last->nranks);
        /* No rate, ETA or walltime for a job that has ended. */
        p->steps_per_s = job_state_final(v->state) ? 0 : rate(h);
        p->nnodes = (last->nranks + per_node - 1) / per_node;
        p->node_steps = calloc((size_t)p->nnodes + 1, sizeof *p->node_steps);
        for (int n = 0; p->node_steps && n < p->nnodes; n++)
            p->node_steps[n] = lowest_step(last, n * per_node, (n + 1) * per_node);
        if (p->total > 0 && p->step >= 0 && p->steps_per_s > 0)
            p->eta_s = (double)(p->total > p->step ? p->total - p->step : 0) / p->steps_per_s;
    }
    if (!job_state_final(v->state))
        walltime(v, now, p);
    still_slow(h, p->slow, sizeof p->slow);
}

void job_progress_free(job_progress_t *p)
{
    free(p->node_steps);
    p->node_steps = NULL;
}

void duration_words(double s, char *out, size_t size)
{
    if (s < 90)
        snprintf(out, size, "%.0f s", s);
    else if (s < 90 * 60)
        snprintf(out, size, "%.0f min", s / 60);
    else
        snprintf(out, size, "%.0f h %.0f min", floor(s / 3600), fmod(s, 3600) / 60);
}

/* 4000 as "4,000". */
static void count_words(long long n, char *out, size_t size)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%lld", n), k = 0;
    size_t o = 0;
    for (int i = 0; i < len && o + 2 < size; i++) {
        out[o++] = digits[i];
        k = len - 1 - i;
        if (k && k % 3 == 0 && digits[i] != '-')
            out[o++] = ',';
    }
    out[o] = 0;
}

void job_progress_line(const job_progress_t *p, char *out, size_t size)
{
    char step[32], total[32], eta[32], left[32];
    out[0] = 0;
    if (p->step < 0)
        return;
    count_words(p->step, step, sizeof step);
    count_words(p->total, total, sizeof total);
    int n = snprintf(out, size, p->total > 0 ? "%s of %s steps" : "%s steps", step, total);
    if (p->steps_per_s > 0 && n >= 0 && (size_t)n < size)
        n += snprintf(out + n, size - (size_t)n, "; %.2g steps/s", p->steps_per_s);
    if (p->eta_s >= 0 && n >= 0 && (size_t)n < size) {
        duration_words(p->eta_s, eta, sizeof eta);
        n += snprintf(out + n, size - (size_t)n, ": done in %s", eta);
    }
    if (p->walltime_left_s >= 0 && n >= 0 && (size_t)n < size) {
        duration_words(p->walltime_left_s, left, sizeof left);
        n += snprintf(out + n, size - (size_t)n, "; %s of walltime left", left);
    }
    if (p->more_requeues > 0 && n >= 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n, ": needs %d more requeue%s (%d left)", p->more_requeues,
                 p->more_requeues == 1 ? "" : "s", p->requeues_left);
}
