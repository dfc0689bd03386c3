#include "cli/report/svg.h"

#include <math.h>
#include <string.h>
#include <time.h>

#define TICKS 5

static const char style[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;padding:0 16px;max-width:1000px;"
    "color:#222}"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 6px}"
    ".state{padding:2px 8px;border-radius:4px;color:#fff;background:#555}"
    ".state.completed{background:#2e7d32}.state.failed,.state.out.of.memory,.state.node.failure"
    "{background:#c62828}.state.running{background:#1565c0}.state.pending,.state.requeued"
    "{background:#ef6c00}table{border-collapse:collapse;font-size:13px}"
    "td,th{border-bottom:1px solid #ddd;padding:3px 10px 3px 0;text-align:left;vertical-align:top}"
    "svg{display:block;margin:4px 0}.frame{fill:#fafafa;stroke:#bbb}"
    ".tick{font-size:10px;fill:#666}.axis{font-size:11px;fill:#444}"
    ".rank{fill:none;stroke-width:1.2}.marked{stroke:#c62828;stroke-width:2.5;fill:none}"
    ".label{font-size:11px;fill:#c62828}.band{fill:#90caf9;opacity:.5}.median{fill:none;"
    "stroke:#1565c0;stroke-width:1.5}.queued{fill:#cfd8dc}.ran{fill:#66bb6a}.ran.failed"
    "{fill:#e53935}.ran.checkpointed{fill:#ffa726}.ran.running{fill:#42a5f5}"
    ".metric{display:inline-block;margin-right:12px}.line{fill:none;stroke:#1565c0;"
    "stroke-width:1.5}.summary li{margin:2px 0}.muted{color:#777}";

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

void html_begin(FILE *f, const char *title)
{
    fputs(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>ddpjob report: ",
        f);
    html_text(f, title);
    fprintf(f, "</title>\n<style>%s</style></head><body>\n", style);
}

void html_end(FILE *f)
{
    fputs("<p class=\"muted\">Made by ddpjob report from the record.</p>\n</body></html>\n", f);
}
