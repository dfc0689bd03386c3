#include "job_record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ddp_file.h"
#include "ddp_json.h"
#include "ddp_parse.h"

/* What a reader takes of one record file: far above any real one (a links file of thousands of
 * requeues is kilobytes), far below what would hurt. */
#define RECORD_FILE_MAX (1 << 20)

static int write_in(const char *dir, const char *name, const char *text, mode_t mode,
                    ddp_error_t *err)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return ddp_write_file_atomic(path, text, strlen(text), mode, err) < 0 ? -1 : 0;
}

/* .ddpjob or .ddpjob/jobs: made or checked as the user's own (ddp_private_dir), then opened to
 * the group's reading for a team's record (mode other than 0700). */
static int record_parent(const char *path, mode_t mode, ddp_error_t *err)
{
    if (ddp_private_dir(path, err))
        return -1;
    if (mode != 0700 && chmod(path, mode))
        return ddp_error_set(err, "%s: %s", path, strerror(errno));
    return 0;
}

static char *job_json(const job_record_t *r)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    fprintf(f, "{\n  \"version\": %d,\n  \"name\": ", JOB_RECORD_VERSION);
    ddp_json_string(f, r->name);
    fprintf(f, ",\n  \"scheduler\": ");
    ddp_json_string(f, r->scheduler);
    fprintf(f, ",\n  \"workdir\": ");
    ddp_json_string(f, r->workdir);
    fprintf(f, ",\n  \"spec\": ");
    ddp_json_string(f, r->spec);
    fprintf(f, ",\n  \"checkpoint_signal\": ");
    ddp_json_string(f, r->checkpoint_signal);
    fprintf(f,
            ",\n  \"submitted\": %lld,\n  \"nodes\": %d,\n  \"procs_per_node\": %d,\n"
            "  \"walltime_s\": %lld,\n  \"requeue\": %d\n}\n",
            (long long)r->submitted, r->nodes, r->procs_per_node, (long long)r->walltime_s,
            r->requeue);
    fclose(f);
    return text;
}

int job_record_create(const job_record_t *r, const char *spec_text, const char *script_text,
                      char **dir, ddp_error_t *err)
{
    char stamp[32], *parent = NULL, *path = NULL;
    struct tm tm;
    time_t now = (time_t)r->submitted;
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
    if (asprintf(&parent, "%s/.ddpjob/jobs", r->workdir) < 0 ||
        asprintf(&path, "%s/%s.%s.XXXXXX", parent, r->name, stamp) < 0) {
        free(parent);
        return ddp_error_set(err, "out of memory");
    }
    /* Private by default: the spec and the script carry the spec's env: values, API keys among
     * them (the job's other nodes run as the same user). A team's record is the group's to read,
     * and still no one else's to write. */
    mode_t mask = umask(0);
    umask(mask);
    mode_t dir_mode = r->group_readable ? 0750 & ~mask : 0700,
           file_mode = r->group_readable ? 0640 & ~mask : 0600;
    /* The workdir may be shared (a sticky /scratch, a team's folder): .ddpjob and .ddpjob/jobs
     * are this user's own and closed to others, or refused, so no one else can swap a record. */
    *strrchr(parent, '/') = 0;
    int rc = record_parent(parent, dir_mode, err);
    strcat(parent, "/jobs");
    if (rc == 0)
        rc = record_parent(parent, dir_mode, err);
    if (rc == 0 && !mkdtemp(path))
        rc = ddp_error_set(err, "cannot make a job record under %s: %s", parent, strerror(errno));
    free(parent);
    char *json = rc == 0 ? job_json(r) : NULL;
    if (rc == 0 &&
        (chmod(path, dir_mode) || !json || write_in(path, "job.json", json, file_mode, err) ||
         write_in(path, "spec.yaml", spec_text, file_mode, err) ||
         write_in(path, "script", script_text, dir_mode, err)))
        rc = err->msg[0] ? -1 : ddp_error_set(err, "cannot write the job record %s", path);
    free(json);
    if (rc) {
        free(path);
        return -1;
    }
    *dir = path;
    return 0;
}

void job_record_remove(const char *dir)
{
    static const char *const files[] = {"job.json", "spec.yaml", "script", "links"};
    char path[8192];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

static int append_line(const char *path, const char *line, ddp_error_t *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return ddp_error_set(err, "%s: %s", path, strerror(errno));
    /* One write of one line: lines from several writers never interleave. */
    ssize_t n = write(fd, line, strlen(line));
    int bad = n != (ssize_t)strlen(line);
    if (close(fd) || bad)
        return ddp_error_set(err, "%s: cannot append to it", path);
    return 0;
}

int job_record_add_link(const char *dir, int k, const char *id, ddp_error_t *err)
{
    char path[8192], line[256];
    snprintf(path, sizeof path, "%s/links", dir);
    snprintf(line, sizeof line, "%d %s\n", k, id);
    return append_line(path, line, err);
}

int job_record_mark_cancelled(const char *dir, ddp_error_t *err)
{
    char text[32];
    snprintf(text, sizeof text, "%lld\n", (long long)time(NULL));
    return write_in(dir, "cancelled", text, 0600, err);
}

/* ---- reading ---------------------------------------------------------------------------- */

/* The value of "key" on one of job.json's lines (its own format: one field per line), into
 * out; quoted strings unescaped for the escapes ddp_json_string writes. */
static int json_field(const char *text, const char *key, char *out, size_t size)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\n  \"%s\": ", key);
    const char *at = strstr(text, pattern);
    if (!at)
        return -1;
    at += strlen(pattern);
    size_t n = 0;
    if (*at != '"') {
        while (at[n] && at[n] != ',' && at[n] != '\n' && n + 1 < size)
            out[n] = at[n], n++;
        out[n] = 0;
        if (at[n] == ',' || at[n] == '\n')
            return 0;
        out[0] = 0; /* a line cut short is no value */
        return -1;
    }
    for (at++; *at && *at != '"' && n + 1 < size; at++) {
        char c = *at;
        if (c == '\\') {
            c = *++at;
            c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
            if (!c)
                break;
        }
        out[n++] = c;
    }
    out[n] = 0;
    if (*at == '"')
        return 0;
    out[0] = 0; /* cut short: no value */
    return -1;
}

/* A number field of job.json within [lo, hi] into *out; left as it is otherwise. */
static void json_long(const char *text, const char *key, long lo, long hi, int64_t *out)
{
    char value[64];
    long v;
    if (!json_field(text, key, value, sizeof value) && !ddp_parse_long(value, lo, hi, &v))
        *out = v;
}

static void read_job_json(const char *dir, job_record_t *r)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/job.json", dir);
    ddp_error_t err;
    char *text = ddp_read_file_max(path, RECORD_FILE_MAX, NULL, &err);
    if (!text)
        return;
    int64_t version = 0, nodes = 0, procs = 0, requeue = 0;
    json_long(text, "version", 0, 1000, &version);
    json_field(text, "name", r->name, sizeof r->name);
    json_field(text, "scheduler", r->scheduler, sizeof r->scheduler);
    json_field(text, "workdir", r->workdir, sizeof r->workdir);
    json_field(text, "spec", r->spec, sizeof r->spec);
    json_field(text, "checkpoint_signal", r->checkpoint_signal, sizeof r->checkpoint_signal);
    json_long(text, "submitted", 0, 1L << 40, &r->submitted);
    json_long(text, "nodes", 0, 1 << 20, &nodes);
    json_long(text, "procs_per_node", 0, 1 << 20, &procs);
    json_long(text, "walltime_s", 0, 1L << 40, &r->walltime_s);
    json_long(text, "requeue", 0, 1 << 20, &requeue);
    r->version = (int)version;
    r->nodes = (int)nodes;
    r->procs_per_node = (int)procs;
    r->requeue = (int)requeue;
    /* It reaches scancel --signal: a signal's name, or nothing. */
    if (r->checkpoint_signal[0] && ddp_parse_signal(r->checkpoint_signal) <= 0)
        r->checkpoint_signal[0] = 0;
    free(text);
}

static job_link_t *link_at(job_record_t *r, int k)
{
    if (k < 0 || k > 100000)
        return NULL;
    if (k >= r->nlinks) {
        job_link_t *more = realloc(r->links, (size_t)(k + 1) * sizeof *more);
        if (!more)
            return NULL;
        memset(more + r->nlinks, 0, (size_t)(k + 1 - r->nlinks) * sizeof *more);
        r->links = more;
        r->nlinks = k + 1;
    }
    return &r->links[k];
}

/* Only whole lines (ending in a newline) count: a line cut short by a dying writer is not one. */
static void read_links(const char *dir, job_record_t *r)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/links", dir);
    ddp_error_t err;
    char *text = ddp_read_file_max(path, RECORD_FILE_MAX, NULL, &err);
    for (char *line = text, *end; line && (end = strchr(line, '\n')); line = end + 1) {
        *end = 0;
        int k;
        char id[128];
        job_link_t *l;
        if (sscanf(line, "%d %127s", &k, id) == 2 && job_id_valid(id) && (l = link_at(r, k)))
            snprintf(l->id, sizeof l->id, "%s", id);
    }
    free(text);
}

static void read_link_files(const char *dir, job_record_t *r)
{
    for (int k = 0;; k++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/link-%d", dir, k);
        struct stat st;
        if (stat(path, &st) != 0) {
            if (k >= r->nlinks)
                break;
            continue;
        }
        job_link_t *l = link_at(r, k);
        if (!l)
            break;
        ddp_error_t err;
        snprintf(path, sizeof path, "%s/link-%d/started", dir, k);
        char *text = ddp_read_file_max(path, RECORD_FILE_MAX, NULL, &err), id[128], host[256];
        long long when;
        if (text && strchr(text, '\n') && sscanf(text, "%lld %127s %255s", &when, id, host) == 3 &&
            job_id_valid(id)) {
            l->started = 1;
            l->start_time = when;
            snprintf(l->host, sizeof l->host, "%s", host);
            if (!l->id[0])
                snprintf(l->id, sizeof l->id, "%s", id);
        }
        free(text);
        snprintf(path, sizeof path, "%s/link-%d/ended", dir, k);
        text = ddp_read_file_max(path, RECORD_FILE_MAX, NULL, &err);
        int status;
        if (text && strchr(text, '\n') && sscanf(text, "%d %lld", &status, &when) == 2) {
            l->ended = 1;
            l->status = status;
            l->end_time = when;
        }
        free(text);
    }
}

int job_id_valid(const char *id)
{
    /* Slurm: 123, 123_4 (an array task), 123+1 (a heterogeneous part); PBS: 123.server,
     * 123[].server, 123[4].server.domain. A digit first, so never an option. */
    if (!(*id >= '0' && *id <= '9') || strlen(id) >= sizeof((job_link_t *)0)->id)
        return 0;
    return id[strspn(id, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._-[]+")] ==
           0;
}

/* A record lives in a folder of the user's own that no one else can write, in a folder of the
 * same kind or a sticky one of root's or the user's (/tmp): otherwise another user could have put
 * there what the commands act on. */
static int check_record_dir(const char *dir, ddp_error_t *err)
{
    char parent[8192];
    snprintf(parent, sizeof parent, "%s", dir);
    char *slash = strrchr(parent, '/');
    while (slash && slash > parent && slash[1] == 0) {
        *slash = 0;
        slash = strrchr(parent, '/');
    }
    if (ddp_check_private_dir(dir, err))
        return -1;
    if (!slash)
        return 0;
    *(slash == parent ? slash + 1 : slash) = 0;
    struct stat st;
    if (lstat(parent, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & S_ISVTX) &&
        (st.st_uid == 0 || st.st_uid == geteuid()))
        return 0;
    return ddp_check_private_dir(parent, err);
}

int job_record_read(const char *dir, job_record_t *r, ddp_error_t *err)
{
    memset(r, 0, sizeof *r);
    if (check_record_dir(dir, err))
        return ddp_error_prefix(err, "not trusting the job record %s", dir);
    char path[8192];
    snprintf(path, sizeof path, "%s/job.json", dir);
    struct stat st;
    int has_json = stat(path, &st) == 0;
    snprintf(path, sizeof path, "%s/links", dir);
    if (!has_json && stat(path, &st) != 0)
        return ddp_error_set(err, "%s holds no job record (no job.json, no links)", dir);
    if (!(r->dir = strdup(dir)))
        return ddp_error_set(err, "out of memory");
    read_job_json(dir, r);
    read_links(dir, r);
    read_link_files(dir, r);
    snprintf(path, sizeof path, "%s/cancelled", dir);
    r->cancelled = stat(path, &st) == 0;
    return 0;
}

void job_record_free(job_record_t *r)
{
    free(r->dir);
    free(r->links);
    memset(r, 0, sizeof *r);
}

/* ---- the index -------------------------------------------------------------------------- */

char *job_index_path(void)
{
    const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char *path = NULL;
    if (state && *state == '/')
        return asprintf(&path, "%s/ddpjob/jobs", state) < 0 ? NULL : path;
    /* Never a shared place such as /tmp, where another user could write our index. */
    if (!home || *home != '/')
        return NULL;
    return asprintf(&path, "%s/.local/state/ddpjob/jobs", home) < 0 ? NULL : path;
}

int job_index_add(const job_record_t *r, const char *first_id, ddp_error_t *err)
{
    char *path = job_index_path(), *line = NULL;
    if (!path)
        return ddp_error_set(err, "no index of jobs: neither HOME nor XDG_STATE_HOME is an "
                                  "absolute path");
    char *slash = strrchr(path, '/');
    *slash = 0;
    int rc = ddp_make_dirs(path, 0700, err);
    *slash = '/';
    if (rc == 0 && asprintf(&line, "%lld\t%s\t%s\t%s\t%s\n", (long long)r->submitted, first_id,
                            r->scheduler, r->name, r->dir) < 0)
        rc = ddp_error_set(err, "out of memory");
    if (rc == 0)
        rc = append_line(path, line, err);
    free(line);
    free(path);
    return rc;
}

/* The index's whole lines, newest first, as (record folder) strings. */
char **job_index_records(void)
{
    char *path = job_index_path();
    ddp_error_t err;
    char *text = path ? ddp_read_file_max(path, 64 * RECORD_FILE_MAX, NULL, &err) : NULL;
    free(path);
    size_t n = 0, cap = 16;
    char **dirs = malloc(cap * sizeof *dirs);
    for (char *line = text, *end; dirs && line && (end = strchr(line, '\n')); line = end + 1) {
        *end = 0;
        char *dir = strrchr(line, '\t');
        struct stat st;
        if (!dir || stat(dir + 1, &st) != 0)
            continue;
        if (n + 2 > cap) {
            char **more = realloc(dirs, (cap *= 2) * sizeof *dirs);
            if (!more)
                break;
            dirs = more;
        }
        dirs[n++] = strdup(dir + 1);
    }
    free(text);
    if (!dirs)
        return NULL;
    dirs[n] = NULL;
    for (size_t i = 0; i < n / 2; i++) {
        char *t = dirs[i];
        dirs[i] = dirs[n - 1 - i];
        dirs[n - 1 - i] = t;
    }
    return dirs;
}

void job_index_free(char **dirs)
{
    for (size_t i = 0; dirs && dirs[i]; i++)
        free(dirs[i]);
    free(dirs);
}

int job_id_names(const char *asked, const char *id, size_t id_len)
{
    size_t len = strlen(asked);
    return len && len <= id_len && !strncmp(asked, id, len) && (len == id_len || id[len] == '.');
}

static int names_record(const char *job, const job_record_t *r)
{
    if (!strcmp(job, r->name))
        return 1;
    for (int k = 0; k < r->nlinks; k++)
        if (job_id_names(job, r->links[k].id, strlen(r->links[k].id)))
            return 1;
    return 0;
}

int job_record_find(const char *job, char **dir, ddp_error_t *err)
{
    char path[8192];
    struct stat st;
    snprintf(path, sizeof path, "%s/job.json", job);
    if (strchr(job, '/') && stat(path, &st) == 0) {
        if (check_record_dir(job, err))
            return ddp_error_prefix(err, "not trusting the job record %s", job);
        char *real = realpath(job, NULL);
        if (!(*dir = real ? real : strdup(job)))
            return ddp_error_set(err, "out of memory");
        return 0;
    }
    char **dirs = job_index_records();
    ddp_error_t refused = {0};
    for (size_t i = 0; dirs && dirs[i]; i++) {
        job_record_t r;
        if (job_record_read(dirs[i], &r, err)) {
            if (err->code == EPERM && !refused.msg[0])
                refused = *err;
            continue;
        }
        int match = names_record(job, &r);
        job_record_free(&r);
        if (match) {
            *dir = strdup(dirs[i]);
            job_index_free(dirs);
            return *dir ? 0 : ddp_error_set(err, "out of memory");
        }
    }
    job_index_free(dirs);
    char *index = job_index_path();
    ddp_error_set(err,
                  "no job \"%s\": not a job record's folder, and no job of that name or "
                  "scheduler id in the index %s%s%s",
                  job, index ? index : "(none: HOME is not set)",
                  refused.msg[0] ? "; passed over " : "", refused.msg);
    free(index);
    return -1;
}
