#include "cli/report/svg.h"

#include <math.h>
#include <string.h>
#include <time.h>

#define TICKS 5

double svg_x(const svg_chart_t *c, double x)
{
    double span = c->x1 > c->x0 ? c->x1 - c->x0 : 1;
    return c->left + (x - c->x0) / span * (c->width - c->left - c->right);
}

double svg_y(const svg_chart_t *c, double y)
{
    double span = c->y1 > c->y0 ? c->y1 - c->y0 : 1;
    return c->height - c->bottom - (y - c->y0) / span * (c->height - c->top - c->bottom);
}

void html_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

void clock_words(double t, int with_date, char *out, size_t size)
{
    time_t when = (time_t)t;
    struct tm tm;
    localtime_r(&when, &tm);
    strftime(out, size, with_date ? "%b %d %H:%M" : "%H:%M:%S", &tm);
}

/* A value as a tick's label: few digits. */
static void tick_words(double v, char *out, size_t size)
{
    double a = fabs(v);
    if (a >= 1e6)
        snprintf(out, size, "%.3gM", v / 1e6);
    else if (a >= 1e4)
        snprintf(out, size, "%.3gk", v / 1e3);
    else if (a >= 10)
        snprintf(out, size, "%.0f", v);
    else
        snprintf(out, size, "%.4g", v);
}

void svg_chart_begin(svg_chart_t *c, const char *id, const char *label, const char *x_label,
                     const char *y_label)
{
    FILE *f = c->f;
    fprintf(f, "<svg id=\"%s\" role=\"img\" aria-label=\"", id);
    html_text(f, label);
    fprintf(f, "\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\">\n", c->width, c->height,
            c->width, c->height);
    int x_left = c->left, x_right = c->width - c->right, y_top = c->top,
        y_bottom = c->height - c->bottom;
    fprintf(f, "<rect class=\"frame\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>\n", x_left,
            y_top, x_right - x_left, y_bottom - y_top);
    int with_date = c->time_axis && c->x1 - c->x0 > 86400;
    char words[64];
    for (int k = 0; k <= TICKS; k++) {
        double x = c->x0 + (c->x1 - c->x0) * k / TICKS, y = c->y0 + (c->y1 - c->y0) * k / TICKS;
        if (c->time_axis)
            clock_words(x, with_date, words, sizeof words);
        else
            tick_words(x, words, sizeof words);
        fprintf(f, "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                svg_x(c, x), y_bottom + 14, words);
        if (c->no_y_ticks)
            continue;
        tick_words(y, words, sizeof words);
        fprintf(f, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                x_left - 4, svg_y(c, y) + 4, words);
    }
    if (x_label) {
        fprintf(f, "<text class=\"axis\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
                (x_left + x_right) / 2, c->height - 2);
        html_text(f, x_label);
        fputs("</text>\n", f);
    }
    if (y_label) {
        fprintf(f, "<text class=\"axis\" x=\"%d\" y=\"%d\">", 2, y_top - 6);
        html_text(f, y_label);
        fputs("</text>\n", f);
    }
}

void svg_chart_end(const svg_chart_t *c)
{
    fputs("</svg>\n", c->f);
}

void heat_colour(double ratio, char out[8])
{
    if (ratio < 0) {
        strcpy(out, "#dddddd");
        return;
    }
    double s = ratio <= 1 ? 0 : ratio >= 3 ? 1 : (ratio - 1) / 2;
    /* From a pale yellow at the median to a dark red at 3x. */
    int r = (int)(255 + (179 - 255) * s), g = (int)(247 + (0 - 247) * s),
        b = (int)(188 + (0 - 188) * s);
    snprintf(out, 8, "#%02x%02x%02x", r, g, b);
}
