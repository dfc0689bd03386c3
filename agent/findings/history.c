#include "agent/findings/history.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_json.h"

/* A line in the file: kept to rewrite the file when the samples are thinned. */
typedef struct {
    char *text;
    size_t len;
    int sample; /* a sample (thinned), not an event (kept) */
} history_line_t;

struct history {
    char *path;
    int fd;
    int64_t interval_ms, last_ms;
    int nsamples, nevents;
    history_line_t *lines;
    int nlines, cap;
};

static double wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int open_append(history_t *h, int flags, ddp_error_t *err)
{
    h->fd = open(h->path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | flags, 0600);
    if (h->fd < 0)
        return ddp_error_set(err, "%s: %s", h->path, strerror(errno));
    return 0;
}

history_t *history_open(const char *path, int64_t interval_ms, ddp_error_t *err)
{
    history_t *h = calloc(1, sizeof *h);
    if (!h || !(h->path = strdup(path))) {
        free(h);
        ddp_error_set(err, "%s: out of memory", path);
        return NULL;
    }
    h->interval_ms = interval_ms > 0 ? interval_ms : 1000;
    if (open_append(h, O_CREAT | O_TRUNC, err)) {
        free(h->path);
        free(h);
        return NULL;
    }
    return h;
}

void history_close(history_t *h)
{
    if (!h)
        return;
    if (h->fd >= 0)
        close(h->fd);
    for (int i = 0; i < h->nlines; i++)
        free(h->lines[i].text);
    free(h->lines);
    free(h->path);
    free(h);
}

/* Every other sample dropped, the events kept; the file rewritten whole, then appended to. */
static int thin(history_t *h, ddp_error_t *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return ddp_error_set(err, "%s: out of memory", h->path);
    int kept = 0, nth = 0;
    for (int i = 0; i < h->nlines; i++) {
        history_line_t *l = &h->lines[i];
        if (l->sample && nth++ % 2) {
            free(l->text);
            h->nsamples--;
            continue;
        }
        fwrite(l->text, 1, l->len, f);
        h->lines[kept++] = *l;
    }
    h->nlines = kept;
    fclose(f);
    h->interval_ms *= 2;
    close(h->fd);
    h->fd = -1;
    int rc = text ? ddp_write_file_atomic(h->path, text, len, 0600, err)
                  : ddp_error_set(err, "%s: out of memory", h->path);
    free(text);
    return rc ? rc : open_append(h, 0, err);
}

/* Appends a finished line (the memstream's text, taken over). */
static int add_line(history_t *h, char *text, size_t len, int sample, ddp_error_t *err)
{
    if (h->nlines == h->cap) {
        int cap = h->cap ? h->cap * 2 : 64;
        history_line_t *more = realloc(h->lines, (size_t)cap * sizeof *more);
        if (!more) {
            free(text);
            return ddp_error_set(err, "%s: out of memory", h->path);
        }
        h->lines = more;
        h->cap = cap;
    }
    h->lines[h->nlines++] = (history_line_t){text, len, sample};
    if (h->fd < 0 || ddp_write_all(h->fd, text, len))
        return ddp_error_set(err, "%s: %s", h->path, strerror(errno));
    return 0;
}

/* One figure of a list: null when unknown (negative). */
static void put_figure(FILE *f, int index, long long value)
{
    if (index)
        fputc(',', f);
    if (value < 0)
        fputs("null", f);
    else
        fprintf(f, "%lld", value);
}

int history_sample(history_t *h, const progress_job_t *j, int attempt, int64_t now_ms, int force,
                   ddp_error_t *err)
{
    if (!h || !j->ranks || (!force && h->nsamples && now_ms - h->last_ms < h->interval_ms))
        return 0;
    if (h->nsamples >= HISTORY_ROWS && thin(h, err))
        return -1;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return ddp_error_set(err, "%s: out of memory", h->path);
    fprintf(f, "{\"t\": %.3f, \"attempt\": %d, \"steps\": [", wall_seconds(), attempt);
    for (int r = 0; r < j->world; r++)
        put_figure(f, r, j->ranks[r].fig.step);
    fputs("], \"busy_us\": [", f);
    for (int r = 0; r < j->world; r++)
        put_figure(f, r, j->ranks[r].fig.busy_us);
    fputs("]}\n", f);
    fclose(f);
    if (!text)
        return ddp_error_set(err, "%s: out of memory", h->path);
    h->nsamples++;
    h->last_ms = now_ms;
    return add_line(h, text, len, 1, err);
}

int history_event(history_t *h, const char *kind, int attempt, int rank, const char *text,
                  ddp_error_t *err)
{
    if (!h)
        return 0;
    if (h->nevents >= HISTORY_EVENTS)
        return 0;
    if (h->nevents + 1 == HISTORY_EVENTS) {
        kind = "history";
        rank = -1;
        text = "later events are left out";
    }
    char *line = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&line, &len);
    if (!f)
        return ddp_error_set(err, "%s: out of memory", h->path);
    fprintf(f, "{\"t\": %.3f, \"event\": ", wall_seconds());
    ddp_json_string(f, kind);
    fprintf(f, ", \"attempt\": %d, \"rank\": ", attempt);
    put_figure(f, 0, rank);
    fputs(", \"text\": ", f);
    ddp_json_string(f, text);
    fputs("}\n", f);
    fclose(f);
    if (!line)
        return ddp_error_set(err, "%s: out of memory", h->path);
    h->nevents++;
    return add_line(h, line, len, 0, err);
}
