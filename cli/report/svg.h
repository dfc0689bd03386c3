/* svg: the drawing a report page is made of, written as inline SVG inside HTML: the page's
 * frame and style sheet, a chart's frame with its axes and ticks (time axes as clock times), the
 * mapping of data to pixels, HTML-escaped text, and the colour scale of the heat strips. Nothing
 * of it needs a script or the network. */
#ifndef DDPJOB_SVG_H
#define DDPJOB_SVG_H

#include <stdio.h>

typedef struct {
    FILE *f;
    double x0, x1, y0, y1; /* the data's ranges (x0 < x1, y0 < y1) */
    int width, height;     /* pixels, margins included */
    int left, right, top, bottom;
    int time_axis; /* x are seconds since the epoch: ticks as clock times */
    int no_y_ticks;
} svg_chart_t;

/* Opens the chart's <svg> (id, an aria label) with its frame, ticks and axis labels. */
void svg_chart_begin(svg_chart_t *c, const char *id, const char *label, const char *x_label,
                     const char *y_label);
void svg_chart_end(const svg_chart_t *c);
/* A data point's pixels. */
double svg_x(const svg_chart_t *c, double x);
double svg_y(const svg_chart_t *c, double y);

/* A report page's start (its title, the one style sheet of every page) and end. */
void html_begin(FILE *f, const char *title);
void html_end(FILE *f);
/* s with & < > " ' escaped, for HTML text and attributes. */
void html_text(FILE *f, const char *s);
/* A clock time (local) for seconds since the epoch: "14:20:05", or "Nov 27 14:20" when
 * `with_date`. */
void clock_words(double t, int with_date, char *out, size_t size);
/* The heat strips' colour for a ratio to the median (1: as the median; 3 and over: the darkest);
 * ratio < 0: unknown. Into out as "#rrggbb". */
void heat_colour(double ratio, char out[8]);

#endif
