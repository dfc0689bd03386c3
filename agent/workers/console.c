#include "agent/workers/console.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_parse.h"
#include "runtime/job/job_contract.h"

/* Calls each(lr, streams, ctx) for every "LR:STREAMS" item of spec, or once with lr -1 for a
 * bare STREAMS; returns -1 at the first malformed item. */
static int each_streams_item(const char *spec, int (*each)(int lr, int streams, void *ctx),
                             void *ctx)
{
    char copy[1024], *saved;
    if (strlen(spec) >= sizeof copy || !*spec)
        return -1;
    snprintf(copy, sizeof copy, "%s", spec);
    if (!strchr(copy, ':')) {
        int streams;
        return ddp_parse_int(copy, 0, 3, &streams) ? -1 : each(-1, streams, ctx);
    }
    for (char *item = strtok_r(copy, ",", &saved); item; item = strtok_r(NULL, ",", &saved)) {
        char *colon = strchr(item, ':');
        int lr, streams;
        if (!colon)
            return -1;
        *colon = '\0';
        if (ddp_parse_int(item, 0, JOB_PROCS_PER_NODE_MAX - 1, &lr) ||
            ddp_parse_int(colon + 1, 0, 3, &streams) || each(lr, streams, ctx))
            return -1;
    }
    return 0;
}

static int accept_item(int lr, int streams, void *ctx)
{
    return 0;
}

int console_check_streams(const char *spec, const char *what_option, ddp_error_t *err)
{
    if (each_streams_item(spec, accept_item, NULL))
        return ddp_error_set(err,
                             "%s %s: expected 0-3 (0 none, 1 stdout, 2 stderr, 3 both) or "
                             "LOCAL_RANK:0-3 items separated by commas",
                             what_option, spec);
    return 0;
}

typedef struct {
    int lr, streams;
} lookup_t;

static int find_item(int lr, int streams, void *ctx)
{
    lookup_t *l = ctx;
    if (lr < 0 || lr == l->lr)
        l->streams = streams;
    return 0;
}

int console_streams_for(const char *spec, int lr)
{
    lookup_t l = {lr, 0};
    if (spec)
        each_streams_item(spec, find_item, &l);
    return l.streams;
}

/* Whether local rank lr is among spec's (lr -1: none is); -1 for a malformed spec. */
static int filter_lists(const char *spec, int lr)
{
    char copy[1024], *saved;
    int item_lr, found = 0, items = 0;
    if (strlen(spec) >= sizeof copy)
        return -1;
    snprintf(copy, sizeof copy, "%s", spec);
    for (char *item = strtok_r(copy, ",", &saved); item; item = strtok_r(NULL, ",", &saved)) {
        if (ddp_parse_int(item, 0, JOB_PROCS_PER_NODE_MAX - 1, &item_lr))
            return -1;
        found |= item_lr == lr;
        items++;
    }
    return items ? found : -1;
}

int console_check_filter(const char *spec, ddp_error_t *err)
{
    if (filter_lists(spec, -1) < 0)
        return ddp_error_set(err,
                             "--local-ranks-filter %s: expected local ranks separated by "
                             "commas (0,1)",
                             spec);
    return 0;
}

int console_filter_passes(const char *spec, int lr)
{
    return !spec || filter_lists(spec, lr) > 0;
}

void console_prefix(const char *template, int rank, int local_rank, char *buf, size_t size)
{
    const char *t = template ? template : CONSOLE_PREFIX_DEFAULT;
    static const char *const names[] = {"rank", "local_rank", "role_name"};
    size_t n = 0;
    buf[0] = '\0';
    while (*t && n + 1 < size) {
        size_t k = sizeof names / sizeof *names;
        size_t used = 0;
        /* ${name} or $name (string.Template's two forms); the longest name first, so that $rank
         * does not take local_rank's place. */
        for (size_t i = k; *t == '$' && i-- > 0 && !used;) {
            size_t len = strlen(names[i]);
            int braced = t[1] == '{';
            if (!strncmp(t + 1 + braced, names[i], len) &&
                (!braced || t[1 + braced + len] == '}')) {
                used = 1 + (size_t)braced + len + (size_t)braced;
                n += (size_t)(i == 0   ? snprintf(buf + n, size - n, "%d", rank)
                              : i == 1 ? snprintf(buf + n, size - n, "%d", local_rank)
                                       : snprintf(buf + n, size - n, "default"));
            }
        }
        if (!used) {
            buf[n++] = *t;
            buf[n] = '\0';
            used = 1;
        }
        t += used;
    }
    if (n >= size)
        buf[size - 1] = '\0';
}
