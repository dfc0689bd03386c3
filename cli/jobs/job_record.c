#include "cli/jobs/job_record.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/jobs/json_doc.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"

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

/* A team's folder's mode for a record's: `mode`, keeping the setgid bit that a team's workdir
 * hands down (so the team's group owns what is made under it; chmod would drop it). */
static int chmod_keeping_group(const char *path, mode_t mode, ddp_error_t *err)
{
    struct stat st;
    if (lstat(path, &st) || chmod(path, mode | (st.st_mode & S_ISGID)))
        return ddp_error_set(err, "%s: %s", path, strerror(errno));
    return 0;
}

/* .ddpjob or .ddpjob/jobs: made or checked as the user's own (ddp_private_dir), then opened to
 * the group's reading for a team's record (mode other than 0700). */
static int record_parent(const char *path, mode_t mode, ddp_error_t *err)
{
    if (ddp_private_dir(path, err))
        return -1;
    return mode != 0700 ? chmod_keeping_group(path, mode, err) : 0;
}

/* job.json's text; NULL with err set when a field is not UTF-8 text (JSON holds nothing else). */
static char *job_json(const job_record_t *r, ddp_error_t *err)
{
    const char *names[] = {"name", "scheduler",         "workdir",
                           "spec", "checkpoint_signal", "checkpoint_dir"};
    const char *values[] = {r->name, r->scheduler,         r->workdir,
                            r->spec, r->checkpoint_signal, r->checkpoint_dir};
    json_t *o = json_object();
    if (!o || json_object_set_new(o, "version", json_integer(JOB_RECORD_VERSION)))
        return json_decref(o), ddp_error_set(err, "out of memory"), NULL;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        json_t *text = json_string(values[i]); /* NULL: not UTF-8 */
        if (!text) {
            json_decref(o);
            ddp_error_set(
                err, "the job's %s (%s) is not UTF-8 text, which its record (JSON) cannot hold",
                names[i], values[i]);
            return NULL;
        }
        json_object_set_new(o, names[i], text);
    }
    json_object_set_new(o, "submitted", json_integer(r->submitted));
    json_object_set_new(o, "nodes", json_integer(r->nodes));
    json_object_set_new(o, "procs_per_node", json_integer(r->procs_per_node));
    json_object_set_new(o, "walltime_s", json_integer(r->walltime_s));
    json_object_set_new(o, "requeue", json_integer(r->requeue));
    if (r->held) {
        json_object_set_new(o, "held", json_true());
        json_object_set_new(o, "idle_s", json_integer(r->idle_s));
    }
    if (r->held_in[0])
        json_object_set_new(o, "held_in", json_string(r->held_in));
    char *text = json_dump_text(o);
    if (!text)
        ddp_error_set(err, "out of memory");
    return text;
}

/* The modes of a record's folders and files: private, or the group's to read (a team's). */
static void record_modes(int group_readable, mode_t *dir_mode, mode_t *file_mode)
{
    mode_t mask = umask(0);
    umask(mask);
    *dir_mode = group_readable ? 0750 & ~mask : 0700;
    *file_mode = group_readable ? 0640 & ~mask : 0600;
}

int record_folder_make(const char *workdir, const char *kind, const char *name, int64_t submitted,
                       int group_readable, char **dir, ddp_error_t *err)
{
    char stamp[32], *parent = NULL, *path = NULL;
    struct tm tm;
    time_t now = (time_t)submitted;
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", localtime_r(&now, &tm));
    if (asprintf(&parent, "%s/.ddpjob/%s", workdir, kind) < 0 ||
        asprintf(&path, "%s/%s.%s.XXXXXX", parent, name, stamp) < 0) {
        free(parent);
        return ddp_error_set(err, "out of memory");
    }
    mode_t dir_mode, file_mode;
    record_modes(group_readable, &dir_mode, &file_mode);
    /* The workdir may be shared (a sticky /scratch, a team's folder): .ddpjob and .ddpjob/KIND
     * are this user's own and closed to others, or refused, so no one else can swap a record. */
    *strrchr(parent, '/') = 0;
    int rc = record_parent(parent, dir_mode, err);
    strcat(parent, "/");
    strcat(parent, kind);
    if (rc == 0)
        rc = record_parent(parent, dir_mode, err);
    if (rc == 0 && !mkdtemp(path))
        rc = ddp_error_set(err, "cannot make a record under %s: %s", parent, strerror(errno));
    if (rc == 0)
        rc = chmod_keeping_group(path, dir_mode, err);
    free(parent);
    if (rc) {
        free(path);
        return -1;
    }
    *dir = path;
    return 0;
}

/* job.json, the spec and the script into the record's folder `dir`. */
static int fill_record(const char *dir, const job_record_t *r, const char *spec_text,
                       const char *script_text, ddp_error_t *err)
{
    mode_t dir_mode, file_mode;
    record_modes(r->group_readable, &dir_mode, &file_mode);
    char *json = job_json(r, err);
    if (!json)
        return -1;
    /* The spec stays the user's alone in a team's record: it holds the webhook's URL. */
    int rc = write_in(dir, "job.json", json, file_mode, err) ||
             write_in(dir, "spec.yaml", spec_text, 0600, err) ||
             write_in(dir, "script", script_text, dir_mode, err);
    free(json);
    return rc ? -1 : 0;
}

int job_record_create(const job_record_t *r, const char *spec_text, const char *script_text,
                      char **dir, ddp_error_t *err)
{
    /* Private by default: the spec and the script carry the spec's env: values, API keys among
     * them (the job's other nodes run as the same user). A team's record is the group's to read,
     * and still no one else's to write. */
    if (record_folder_make(r->workdir, "jobs", r->name, r->submitted, r->group_readable, dir, err))
        return -1;
    if (fill_record(*dir, r, spec_text, script_text, err) == 0)
        return 0;
    job_record_remove(*dir);
    free(*dir);
    *dir = NULL;
    return -1;
}

int job_record_create_at(const char *dir, const job_record_t *r, const char *spec_text,
                         const char *script_text, ddp_error_t *err)
{
    mode_t dir_mode, file_mode;
    record_modes(r->group_readable, &dir_mode, &file_mode);
    if (mkdir(dir, dir_mode))
        return ddp_error_set(err, "cannot make the record %s: %s", dir, strerror(errno));
    if (chmod_keeping_group(dir, dir_mode, err))
        return -1;
    if (fill_record(dir, r, spec_text, script_text, err) == 0)
        return 0;
    job_record_remove(dir);
    return -1;
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

int job_record_add_link(const char *dir, int k, const char *id, ddp_error_t *err)
{
    char path[8192], line[256];
    snprintf(path, sizeof path, "%s/links", dir);
    snprintf(line, sizeof line, "%d %s\n", k, id);
    return ddp_append_line(path, line, err);
}

int job_record_mark_cancelled(const char *dir, ddp_error_t *err)
{
    char text[32];
    snprintf(text, sizeof text, "%lld\n", (long long)time(NULL));
    return write_in(dir, "cancelled", text, 0600, err);
}

/* A word of the scheduler's (or of ours) as one field of a record's line: its letters, digits
 * and _+.-= kept, anything else (blanks: "CANCELLED by 1000") as '_'; "-" for none. */
static void record_word(char *out, size_t size, const char *word)
{
    size_t n = 0;
    for (; word && word[n] && n + 1 < size; n++)
        out[n] = isalnum((unsigned char)word[n]) || strchr("_+.-=", word[n]) ? word[n] : '_';
    out[n] = '\0';
    if (!n)
        snprintf(out, size, "-");
}

int job_record_keep_final(const char *dir, int k, job_state_t state, int exit_status,
                          const char *source, const char *word, ddp_error_t *err)
{
    char path[8192], name[64], src[16], own[64], line[256];
    record_word(name, sizeof name, job_state_name(state));
    record_word(src, sizeof src, source);
    record_word(own, sizeof own, word);
    snprintf(line, sizeof line, "%s %d %s %s\n", name, exit_status, src, own);
    snprintf(path, sizeof path, "%s/link-%d/final", dir, k);
    struct stat st;
    if (lstat(path, &st) == 0)
        return 0;
    return ddp_write_file_atomic(path, line, strlen(line), 0600, err) < 0 ? -1 : 0;
}

int job_record_holder_took(const char *dir, int k, const char *lost_host, int again,
                           ddp_error_t *err)
{
    char path[8192], line[320];
    int n = lost_host ? snprintf(line, sizeof line, "lost %s%s\n", lost_host, again ? " again" : "")
                      : snprintf(line, sizeof line, "%s\n", again ? "again" : "ended");
    if (n < 0 || (size_t)n >= sizeof line)
        return ddp_error_set(err, "the lost host's name is too long");
    snprintf(path, sizeof path, "%s/link-%d/holder", dir, k);
    return ddp_write_file_atomic(path, line, (size_t)n, 0600, err) < 0 ? -1 : 0;
}

/* ---- reading ---------------------------------------------------------------------------- */

/* job.json cut short (its writer died mid-line): the fields on its whole lines, each of which
 * ends in ",\n" (a JSON string holds no raw newline), closed. */
static int parse_whole_lines(json_doc_t *doc, const char *text, size_t len)
{
    size_t end = len;
    while (end >= 2 && !(text[end - 1] == '\n' && text[end - 2] == ','))
        end--;
    char *whole = end >= 2 ? malloc(end) : NULL;
    if (!whole)
        return -1;
    memcpy(whole, text, end - 2);
    whole[end - 2] = '}';
    int rc = json_doc_parse(doc, whole, end - 1);
    free(whole);
    return rc;
}

static void read_job_json(const char *dir, job_record_t *r)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/job.json", dir);
    ddp_error_t err;
    size_t len;
    char *text = ddp_read_file_max(path, RECORD_FILE_MAX, &len, &err);
    json_doc_t doc;
    if (!text || (json_doc_parse(&doc, text, len) && parse_whole_lines(&doc, text, len))) {
        free(text);
        return;
    }
    free(text);
    const json_t *o = json_root(&doc);
    int64_t version = 0, nodes = 0, procs = 0, requeue = 0;
    json_whole(o, "version", 0, 1000, &version);
    json_copy_text(o, "name", r->name, sizeof r->name);
    json_copy_text(o, "scheduler", r->scheduler, sizeof r->scheduler);
    json_copy_text(o, "workdir", r->workdir, sizeof r->workdir);
    json_copy_text(o, "spec", r->spec, sizeof r->spec);
    json_copy_text(o, "checkpoint_signal", r->checkpoint_signal, sizeof r->checkpoint_signal);
    json_copy_text(o, "checkpoint_dir", r->checkpoint_dir, sizeof r->checkpoint_dir);
    json_whole(o, "submitted", 0, INT64_C(1) << 40, &r->submitted);
    json_whole(o, "nodes", 0, 1 << 20, &nodes);
    json_whole(o, "procs_per_node", 0, 1 << 20, &procs);
    json_whole(o, "walltime_s", 0, INT64_C(1) << 40, &r->walltime_s);
    json_whole(o, "requeue", 0, 1 << 20, &requeue);
    r->held = json_is_true(json_object_get(o, "held"));
    json_whole(o, "idle_s", 0, INT64_C(1) << 40, &r->idle_s);
    json_copy_text(o, "held_in", r->held_in, sizeof r->held_in);
    json_doc_free(&doc);
    r->version = (int)version;
    r->nodes = (int)nodes;
    r->procs_per_node = (int)procs;
    r->requeue = (int)requeue;
    /* It reaches scancel --signal: a signal's name, or nothing. */
    if (r->checkpoint_signal[0] && ddp_parse_signal(r->checkpoint_signal) <= 0)
        r->checkpoint_signal[0] = 0;
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

/* A scheduler's command as a kept final names it (sched_job_t's source): a lower-case word. */
static int source_word(const char *source)
{
    return source[0] && strspn(source, "abcdefghijklmnopqrstuvwxyz") == strlen(source) &&
           strcmp(source, "record");
}

/* link-K/final, taken only whole and valid: a state ddpjob names, an exit status, a command. */
static void read_kept_final(const char *dir, int k, job_link_t *l)
{
    char path[8192], name[64], source[16], word[64];
    snprintf(path, sizeof path, "%s/link-%d/final", dir, k);
    ddp_error_t err;
    char *text = ddp_read_file_max(path, RECORD_FILE_MAX, NULL, &err);
    int exit_status;
    if (text && strchr(text, '\n') &&
        sscanf(text, "%63s %d %15s %63s", name, &exit_status, source, word) == 4) {
        for (char *c = name; *c; c++)
            if (*c == '_')
                *c = ' ';
        job_state_t state = job_state_from_name(name);
        if (job_state_final(state) && source_word(source)) {
            l->kept = 1;
            l->kept_state = state;
            l->kept_exit = exit_status;
            snprintf(l->kept_source, sizeof l->kept_source, "%s", source);
            record_word(l->kept_word, sizeof l->kept_word, word);
            if (!strcmp(l->kept_word, "-"))
                l->kept_word[0] = '\0';
        }
    }
    free(text);
}

/* link-K/holder, taken only whole: "ended", "again", "lost HOST" or "lost HOST again". */
static void read_holder_word(const char *dir, int k, job_link_t *l)
{
    char path[8192], word[16], host[256], again[16] = "";
    snprintf(path, sizeof path, "%s/link-%d/holder", dir, k);
    ddp_error_t err;
    char *text = ddp_read_file_max(path, RECORD_FILE_MAX, NULL, &err);
    int n = text && strchr(text, '\n') ? sscanf(text, "%15s %255s %15s", word, host, again) : 0;
    if (n >= 1 && (!strcmp(word, "ended") || !strcmp(word, "again"))) {
        l->holder_took = 1;
        l->asked_again = !strcmp(word, "again");
    } else if (n >= 2 && !strcmp(word, "lost")) {
        l->holder_took = 1;
        record_word(l->lost_host, sizeof l->lost_host, host);
        l->asked_again = n == 3 && !strcmp(again, "again");
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
        char by[72] = "";
        if (text && strchr(text, '\n') && sscanf(text, "%d %lld %71s", &status, &when, by) >= 2) {
            l->ended = 1;
            l->status = status;
            l->end_time = when;
            record_word(l->ended_by, sizeof l->ended_by, by);
            if (!strcmp(l->ended_by, "-"))
                l->ended_by[0] = '\0';
        }
        free(text);
        read_kept_final(dir, k, l);
        read_holder_word(dir, k, l);
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
int record_dir_check(const char *dir, ddp_error_t *err)
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
    if (record_dir_check(dir, err))
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

char *job_state_path(const char *name)
{
    const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char *path = NULL;
    if (state && *state == '/')
        return asprintf(&path, "%s/ddpjob/%s", state, name) < 0 ? NULL : path;
    /* Never a shared place such as /tmp, where another user could write our index. */
    if (!home || *home != '/')
        return NULL;
    return asprintf(&path, "%s/.local/state/ddpjob/%s", home, name) < 0 ? NULL : path;
}

char *job_index_path(void)
{
    return job_state_path("jobs");
}

int job_state_append(const char *name, const char *line, ddp_error_t *err)
{
    char *path = job_index_path();
    if (!path)
        return ddp_error_set(err, "no index of jobs: neither HOME nor XDG_STATE_HOME is an "
                                  "absolute path");
    char *slash = strrchr(path, '/');
    *slash = 0;
    char file[8192];
    snprintf(file, sizeof file, "%s/%s", path, name);
    int rc = ddp_make_dirs(path, 0700, err) || ddp_append_line(file, line, err) ? -1 : 0;
    free(path);
    return rc;
}

int job_index_add(const job_record_t *r, const char *first_id, ddp_error_t *err)
{
    char *line = NULL;
    if (asprintf(&line, "%lld\t%s\t%s\t%s\t%s\n", (long long)r->submitted, first_id, r->scheduler,
                 r->name, r->dir) < 0)
        return ddp_error_set(err, "out of memory");
    int rc = job_state_append("jobs", line, err);
    free(line);
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

/* A sweep (sweep_record.h) is named by its name, as its trial 0 is, by its array job's id (the
 * id before a task's _K or [K]), or by any id of trial 0's links. */
static int names_sweep(const char *job, const char *dir)
{
    char trial0[8192];
    snprintf(trial0, sizeof trial0, "%s/trial-0", dir);
    job_record_t r;
    ddp_error_t err;
    if (job_record_read(trial0, &r, &err))
        return 0;
    int match = names_record(job, &r);
    size_t len = strlen(job);
    for (int k = 0; !match && k < r.nlinks; k++) {
        const char *id = r.links[k].id;
        match = len && !strncmp(id, job, len) &&
                (!strcmp(id + len, "_0") || !strncmp(id + len, "[0]", 3) ||
                 (job[len - 1] == ']' && len >= 2 && job[len - 2] == '['));
    }
    job_record_free(&r);
    return match;
}

/* A record named by its folder, NAME.YYYYMMDD-HHMMSS.XXXXXX (record_folder_make): a pipeline's. */
static int names_folder(const char *job, const char *dir)
{
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    size_t len = strlen(base), tail = strlen(".YYYYMMDD-HHMMSS.XXXXXX");
    return len > tail && len - tail == strlen(job) && !strncmp(base, job, len - tail);
}

static int holds(const char *dir, const char *file)
{
    char path[8192];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return stat(path, &st) == 0;
}

int job_record_find(const char *job, char **dir, ddp_error_t *err)
{
    if (strchr(job, '/') &&
        (holds(job, "job.json") || holds(job, "sweep.json") || holds(job, "pipeline.json"))) {
        if (record_dir_check(job, err))
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
        int match = 0;
        err->code = 0;
        if (holds(dirs[i], "sweep.json")) {
            match = record_dir_check(dirs[i], err) == 0 && names_sweep(job, dirs[i]);
        } else if (holds(dirs[i], "pipeline.json")) {
            match = record_dir_check(dirs[i], err) == 0 && names_folder(job, dirs[i]);
        } else if (job_record_read(dirs[i], &r, err) == 0) {
            match = names_record(job, &r);
            job_record_free(&r);
        }
        if (!match && err->code == EPERM && !refused.msg[0])
            refused = *err;
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
