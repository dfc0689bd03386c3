#include "cli/jobs/dev_record.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"

/* Any of the holder's files is one line; more is no file of ours. */
#define DEV_FILE_MAX 8192
/* Runs of one allocation at most: the numbers reserved are tried in turn up to it. */
#define DEV_RUNS_MAX 100000

static char *read_line(const char *dev, const char *name)
{
    char path[8192];
    ddp_error_t err;
    if (snprintf(path, sizeof path, "%s/%s", dev, name) >= (int)sizeof path)
        return NULL;
    return ddp_read_own_file(path, S_IWGRP | S_IWOTH, DEV_FILE_MAX, NULL, &err);
}

char *dev_record_find(const char *name, job_record_t *r, ddp_error_t *err)
{
    char *dir = NULL;
    if (job_record_find(name, &dir, err))
        return NULL;
    if (job_record_read(dir, r, err)) {
        free(dir);
        return NULL;
    }
    if (!r->held) {
        ddp_error_set(err, "%s (%s) is a batch job, not an allocation `ddpjob dev` holds", name,
                      dir);
        job_record_free(r);
        free(dir);
        return NULL;
    }
    return dir;
}

void dev_state_read(const char *dev, dev_state_t *s)
{
    memset(s, 0, sizeof *s);
    char *text = read_line(dev, "ready");
    long long at;
    int used = 0;
    if (text && sscanf(text, "%lld %n", &at, &used) == 1 && used) {
        s->ready = 1;
        s->ready_at = at;
        snprintf(s->hosts, sizeof s->hosts, "%s", text + used);
        s->hosts[strcspn(s->hosts, "\n")] = 0;
        for (char *h = s->hosts; *h;) {
            h += strspn(h, " ");
            s->nhosts += *h != 0;
            h += strcspn(h, " ");
        }
    }
    free(text);
    text = read_line(dev, "holder");
    int run;
    if (text && sscanf(text, "run %d %lld", &run, &at) == 2 && run > 0) {
        s->run = run;
        s->since = at;
    } else if (text && sscanf(text, "idle %lld", &at) == 1) {
        s->since = at;
    }
    free(text);
    text = read_line(dev, "released");
    char why[32];
    if (text && sscanf(text, "%lld %31s", &at, why) == 2) {
        s->released = 1;
        s->released_at = at;
        snprintf(s->why, sizeof s->why, "%s", why);
    }
    free(text);
}

int dev_reserve(const char *dev, const char *kind, int *k, ddp_error_t *err)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dev, kind);
    if (mkdir(path, 0700) && errno != EEXIST)
        return ddp_error_set(err, "%s: %s", path, strerror(errno));
    if (ddp_check_private_dir(path, err))
        return -1;
    for (int i = 1; i <= DEV_RUNS_MAX; i++) {
        snprintf(path, sizeof path, "%s/%s/%d", dev, kind, i);
        if (mkdir(path, 0700) == 0) {
            *k = i;
            return 0;
        }
        if (errno != EEXIST)
            return ddp_error_set(err, "%s: %s", path, strerror(errno));
    }
    return ddp_error_set(err, "%s: %d %s already", dev, DEV_RUNS_MAX, kind);
}

int dev_run_request(const char *dev, int k, const char *run_record, ddp_error_t *err)
{
    char path[8192], line[4200];
    snprintf(path, sizeof path, "%s/requests", dev);
    if (mkdir(path, 0700) && errno != EEXIST)
        return ddp_error_set(err, "%s: %s", path, strerror(errno));
    if (ddp_check_private_dir(path, err))
        return -1;
    snprintf(path, sizeof path, "%s/requests/%d", dev, k);
    int n = snprintf(line, sizeof line, "%s\n", run_record);
    return ddp_write_file_atomic(path, line, (size_t)n, 0600, err);
}

int dev_run_withdraw(const char *dev, int k)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/requests/%d", dev, k);
    return unlink(path) == 0;
}

char *dev_run_failed(const char *dev, int k)
{
    char name[64];
    snprintf(name, sizeof name, "runs/%d/failed", k);
    char *why = read_line(dev, name);
    if (why)
        why[strcspn(why, "\n")] = 0;
    return why;
}

/* The lowest number in dev/kind whose entry `matches` (NULL: any entry); 0 when none. */
static int lowest_entry(const char *dev, const char *kind, int (*matches)(const char *, int))
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dev, kind);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int lowest = 0;
    for (struct dirent *e; (e = readdir(d));) {
        int n;
        if (!ddp_parse_int(e->d_name, 1, DEV_RUNS_MAX, &n) && (!lowest || n < lowest) &&
            (!matches || matches(dev, n)))
            lowest = n;
    }
    closedir(d);
    return lowest;
}

int dev_request_peek(const char *dev, int *k, char *run_record, size_t size)
{
    char path[64];
    int lowest = lowest_entry(dev, "requests", NULL);
    if (!lowest)
        return 0;
    snprintf(path, sizeof path, "requests/%d", lowest);
    char *text = read_line(dev, path);
    *k = lowest;
    snprintf(run_record, size, "%s", text ? text : "");
    run_record[strcspn(run_record, "\n")] = 0;
    free(text);
    return 1;
}

int dev_requests_waiting(const char *dev)
{
    return lowest_entry(dev, "requests", NULL) != 0;
}

int dev_ready_write(const char *dev, char *const *hosts, int nhosts, ddp_error_t *err)
{
    char line[4200], path[8192];
    int n = snprintf(line, sizeof line, "%lld", (long long)time(NULL));
    for (int i = 0; i < nhosts && n < (int)sizeof line; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, " %s", hosts[i]);
    if (n >= (int)sizeof line - 1)
        return ddp_error_set(err, "the held nodes' names are longer than %zu bytes", sizeof line);
    line[n++] = '\n';
    snprintf(path, sizeof path, "%s/released", dev);
    if (unlink(path) && errno != ENOENT)
        return ddp_error_set(err, "%s: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/ready", dev);
    return ddp_write_file_atomic(path, line, (size_t)n, 0600, err);
}

int dev_holder_write(const char *dev, int run, int64_t since, ddp_error_t *err)
{
    char line[64], path[8192];
    int n = run ? snprintf(line, sizeof line, "run %d %lld\n", run, (long long)since)
                : snprintf(line, sizeof line, "idle %lld\n", (long long)since);
    snprintf(path, sizeof path, "%s/holder", dev);
    return ddp_write_file_atomic(path, line, (size_t)n, 0600, err);
}

int dev_released_write(const char *dev, const char *why, ddp_error_t *err)
{
    char line[64], path[8192];
    int n = snprintf(line, sizeof line, "%lld %s\n", (long long)time(NULL), why);
    snprintf(path, sizeof path, "%s/released", dev);
    return ddp_write_file_atomic(path, line, (size_t)n, 0600, err);
}

int dev_notice_write(const char *dev, const char *text, ddp_error_t *err)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/notice", dev);
    return ddp_write_file_atomic(path, text, strlen(text), 0600, err);
}

static void write_failed(const char *dev, const char *kind, int k, const char *why)
{
    char line[1024], path[8192];
    int n = snprintf(line, sizeof line, "%s\n", why);
    snprintf(path, sizeof path, "%s/%s/%d/failed", dev, kind, k);
    ddp_error_t err;
    ddp_write_file_atomic(path, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1),
                          0600, &err);
}

void dev_run_fail(const char *dev, int k, const char *why)
{
    write_failed(dev, "runs", k, why);
}

int dev_run_ended_write(const char *dev, int k, int status, ddp_error_t *err)
{
    char line[32], path[8192];
    int n = snprintf(line, sizeof line, "%d\n", status);
    snprintf(path, sizeof path, "%s/runs/%d/ended", dev, k);
    return ddp_write_file_atomic(path, line, (size_t)n, 0600, err) < 0 ? -1 : 0;
}

/* Whether run n could not start, or ended for good with a status other than 0. */
static int run_unsuccessful(const char *dev, int n)
{
    char name[64];
    snprintf(name, sizeof name, "runs/%d/failed", n);
    char *text = read_line(dev, name);
    int unsuccessful = text != NULL;
    free(text);
    snprintf(name, sizeof name, "runs/%d/ended", n);
    text = read_line(dev, name);
    unsuccessful |= text && strcmp(text, "0\n");
    free(text);
    return unsuccessful;
}

int dev_runs_unsuccessful(const char *dev)
{
    return lowest_entry(dev, "runs", run_unsuccessful) != 0;
}

void dev_shell_fail(const char *dev, int k, const char *why)
{
    write_failed(dev, "shells", k, why);
}

/* Whether shell n is asked (its request whole) and not yet taken. */
static int shell_waits(const char *dev, int n)
{
    char path[8192];
    struct stat st;
    snprintf(path, sizeof path, "%s/shells/%d/asked", dev, n);
    if (stat(path, &st) != 0)
        return 0;
    snprintf(path, sizeof path, "%s/shells/%d/taken", dev, n);
    return stat(path, &st) != 0;
}

int dev_shell_next(const char *dev, int *k, int *node)
{
    char path[8192];
    int lowest = lowest_entry(dev, "shells", shell_waits);
    if (!lowest)
        return 0;
    char name[64];
    snprintf(name, sizeof name, "shells/%d/node", lowest);
    char *text = read_line(dev, name);
    char *word = text ? strtok(text, "\n") : NULL;
    int ok = word && !ddp_parse_int(word, 0, 1 << 20, node);
    free(text);
    snprintf(path, sizeof path, "%s/shells/%d/taken", dev, lowest);
    ddp_error_t err;
    ddp_write_file_atomic(path, "", 0, 0600, &err);
    *k = lowest;
    if (!ok)
        dev_shell_fail(dev, lowest, "no node index in its request");
    return ok;
}
