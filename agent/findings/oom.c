#include "agent/findings/oom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/base/ddp_file.h"

/* cgroup v1 writes an unlimited group's limit as a number near 2^63. */
#define V1_UNLIMITED (1LL << 62)

long long oom_counter(const char *text, const char *key)
{
    size_t n = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (!strncmp(p, key, n) && p[n] == ' ')
            return strtoll(p + n + 1, NULL, 10);
    return -1;
}

/* Whether the comma-separated list [list, end) holds word. */
static int has_word(const char *list, const char *end, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; p < end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        if ((size_t)(stop - p) == n && !strncmp(p, word, n))
            return 1;
        p = stop + 1;
    }
    return 0;
}

/* The path of the process in the v1 memory hierarchy (version 1) or the v2 one (version 2). */
static int group_path(const char *cgroup, int version, char *path, size_t size)
{
    for (const char *line = cgroup; line && *line;) {
        const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
        const char *c1 = memchr(line, ':', (size_t)(end - line));
        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
        if (c2 && (version == 1 ? has_word(c1 + 1, c2, "memory")
                                : c2 == c1 + 1 && !strncmp(line, "0:", 2))) {
            snprintf(path, size, "%.*s", (int)(end - c2 - 1), c2 + 1);
            return 0;
        }
        line = nl ? nl + 1 : NULL;
    }
    return -1;
}

/* The mount of that hierarchy: its root within the hierarchy and its mount point. */
static int hierarchy_mount(const char *mountinfo, int version, char *root, char *point, size_t size)
{
    for (const char *line = mountinfo; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[8192], r[OOM_DIR_MAX], p[OOM_DIR_MAX], type[64], opts[1024];
        snprintf(buf, sizeof buf, "%.*s", (int)len, line);
        line = nl ? nl + 1 : NULL;
        const char *dash = strstr(buf, " - ");
        if (!dash || sscanf(buf, "%*s %*s %*s %4095s %4095s", r, p) != 2 ||
            sscanf(dash + 3, "%63s %*s %1023s", type, opts) != 2)
            continue;
        int match = version == 1
                        ? !strcmp(type, "cgroup") && has_word(opts, opts + strlen(opts), "memory")
                        : !strcmp(type, "cgroup2");
        if (match) {
            snprintf(root, size, "%s", r);
            snprintf(point, size, "%s", p);
            return 0;
        }
    }
    return -1;
}

int oom_group_dir(const char *cgroup, const char *mountinfo, char *dir, char *root, size_t size,
                  int *version)
{
    for (int v = 1; v <= 2; v++) {
        char path[OOM_DIR_MAX], mroot[OOM_DIR_MAX];
        if (group_path(cgroup, v, path, sizeof path) ||
            hierarchy_mount(mountinfo, v, mroot, root, size))
            continue;
        /* A mount of part of the hierarchy (a container's) shows what lies under its root. */
        size_t n = strlen(mroot);
        const char *rest = strcmp(mroot, "/") && !strncmp(path, mroot, n) ? path + n : path;
        snprintf(dir, size, "%s%s", root, strcmp(rest, "/") ? rest : "");
        *version = v;
        return 0;
    }
    return -1;
}

static char *read_text(const char *dir, const char *name)
{
    char path[OOM_DIR_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    ddp_error_t err;
    return ddp_read_file(path, NULL, &err);
}

/* The group's count of OOM kills; -1 when it cannot be read. */
static long long group_kills(const oom_watch_t *w)
{
    char *text = read_text(w->dir, w->version == 1 ? "memory.oom_control" : "memory.events");
    long long kills = text ? oom_counter(text, "oom_kill") : -1;
    free(text);
    return kills;
}

static long long machine_kills(void)
{
    ddp_error_t err;
    char *text = ddp_read_file("/proc/vmstat", NULL, &err);
    long long kills = text ? oom_counter(text, "oom_kill") : -1;
    free(text);
    return kills;
}

void oom_watch_start(oom_watch_t *w)
{
    memset(w, 0, sizeof *w);
    ddp_error_t err;
    char *cgroup = ddp_read_file("/proc/self/cgroup", NULL, &err);
    char *mountinfo = cgroup ? ddp_read_file("/proc/self/mountinfo", NULL, &err) : NULL;
    if (!mountinfo || oom_group_dir(cgroup, mountinfo, w->dir, w->root, sizeof w->dir, &w->version))
        w->dir[0] = '\0';
    free(cgroup);
    free(mountinfo);
    w->kills = w->dir[0] ? group_kills(w) : -1;
    w->by_group = w->kills >= 0;
    if (!w->by_group)
        w->kills = machine_kills();
}

/* A byte count from a file of the group (v2's "max" and v1's near-2^63 are no limit); -1. */
static long long group_bytes(const char *dir, const char *name)
{
    char *text = read_text(dir, name);
    long long v = text && strncmp(text, "max", 3) ? strtoll(text, NULL, 10) : -1;
    free(text);
    return v >= V1_UNLIMITED ? -1 : v;
}

/* The lowest limit of the group and the groups above it, up to the hierarchy's root. */
static long long lowest_limit(const oom_watch_t *w)
{
    const char *file = w->version == 1 ? "memory.limit_in_bytes" : "memory.max";
    char dir[OOM_DIR_MAX];
    snprintf(dir, sizeof dir, "%s", w->dir);
    long long lowest = -1;
    size_t root_len = strlen(w->root);
    for (;;) {
        long long v = group_bytes(dir, file);
        if (v >= 0 && (lowest < 0 || v < lowest))
            lowest = v;
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= root_len || !slash || (size_t)(slash - dir) < root_len)
            return lowest;
        *slash = '\0';
    }
}

int oom_explain(oom_watch_t *w, oom_kill_t *k)
{
    if (w->kills < 0)
        return 0;
    long long now = w->by_group ? group_kills(w) : machine_kills();
    if (now <= w->kills)
        return 0;
    w->kills++;
    memset(k, 0, sizeof *k);
    k->by_group = w->by_group;
    k->limit = k->peak = -1;
    if (w->by_group) {
        snprintf(k->group, sizeof k->group, "%s", w->dir + strlen(w->root));
        if (!k->group[0])
            snprintf(k->group, sizeof k->group, "/");
        k->limit = lowest_limit(w);
        k->peak =
            group_bytes(w->dir, w->version == 1 ? "memory.max_usage_in_bytes" : "memory.peak");
    }
    return 1;
}

static void human_bytes(long long b, char *buf, size_t size)
{
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (v == (double)(long long)v)
        snprintf(buf, size, "%lld %s", (long long)v, units[u]);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
}

void oom_describe(const oom_kill_t *k, char *buf, size_t size)
{
    char limit[32], peak[32];
    human_bytes(k->limit, limit, sizeof limit);
    human_bytes(k->peak, peak, sizeof peak);
    if (!k->by_group)
        snprintf(buf, size, "killed by the out-of-memory killer: the node ran out of memory");
    else if (k->limit < 0)
        snprintf(buf, size,
                 "killed by the out-of-memory killer: the node ran out of memory (memory "
                 "cgroup %s, no limit)",
                 k->group);
    else if (k->peak < 0)
        snprintf(buf, size,
                 "killed by the out-of-memory killer: its memory cgroup's limit %s was reached "
                 "(%s)",
                 limit, k->group);
    else
        snprintf(buf, size,
                 "killed by the out-of-memory killer: its memory cgroup's limit %s was reached "
                 "(%s, peak %s)",
                 limit, k->group, peak);
}
