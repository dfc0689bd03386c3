#include "cli/jobs/pipeline_record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/jobs/job_record.h"
#include "cli/jobs/json_doc.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"

/* A stage's line, and pipeline.json, are far below this. */
#define PIPELINE_FILE_MAX (1u << 20)

void pipeline_record_path(const char *dir, const char *file, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", dir, file);
}

static int write_in(const char *dir, const char *file, const char *text, ddp_error_t *err)
{
    char path[8192];
    pipeline_record_path(dir, file, path, sizeof path);
    return ddp_write_file_atomic(path, text, strlen(text), 0600, err) < 0 ? -1 : 0;
}

int pipeline_record_create(const pipeline_record_t *p, const char *pipeline_text, char **dir,
                           ddp_error_t *err)
{
    json_t *o = json_object();
    json_object_set_new(o, "version", json_integer(PIPELINE_RECORD_VERSION));
    json_object_set_new(o, "name", json_shown_string(p->name));
    json_object_set_new(o, "file", json_shown_string(p->file));
    json_object_set_new(o, "cwd", json_shown_string(p->cwd));
    json_object_set_new(o, "scheduler", json_string(p->scheduler));
    json_object_set_new(o, "site", json_shown_string(p->site));
    json_object_set_new(o, "bindir", json_shown_string(p->bindir));
    json_object_set_new(o, "state_home", json_shown_string(p->state_home));
    json_object_set_new(o, "submitted", json_integer(p->submitted));
    char *text = json_dump_text(o);
    if (!text)
        return ddp_error_set(err, "out of memory");
    if (record_folder_make(p->cwd, "pipelines", p->name, p->submitted, 0, dir, err)) {
        free(text);
        return -1;
    }
    int rc = write_in(*dir, "pipeline.json", text, err) ||
             write_in(*dir, "pipeline.yaml", pipeline_text, err);
    free(text);
    if (rc == 0)
        return 0;
    job_record_remove(*dir);
    free(*dir);
    *dir = NULL;
    return -1;
}

int pipeline_record_add_spec(const char *dir, const char *stage, const char *text, char *out,
                             size_t size, ddp_error_t *err)
{
    char file[300];
    snprintf(file, sizeof file, "%s.yaml", stage);
    pipeline_record_path(dir, file, out, size);
    return write_in(dir, file, text, err);
}

int pipeline_record_is(const char *dir)
{
    char path[8192];
    struct stat st;
    pipeline_record_path(dir, "pipeline.json", path, sizeof path);
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int pipeline_record_read(const char *dir, pipeline_record_t *p, ddp_error_t *err)
{
    memset(p, 0, sizeof *p);
    if (record_dir_check(dir, err))
        return ddp_error_prefix(err, "not trusting the pipeline record %s", dir);
    char path[8192];
    pipeline_record_path(dir, "pipeline.json", path, sizeof path);
    size_t len;
    char *text = ddp_read_file_max(path, PIPELINE_FILE_MAX, &len, err);
    json_doc_t doc;
    if (!text || json_doc_parse(&doc, text, len)) {
        free(text);
        return ddp_error_set(err, "%s holds no pipeline record (no whole pipeline.json)", dir);
    }
    free(text);
    const json_t *o = json_root(&doc);
    int64_t version = 0;
    json_whole(o, "version", 0, 1000, &version);
    p->version = (int)version;
    json_copy_text(o, "name", p->name, sizeof p->name);
    json_copy_text(o, "file", p->file, sizeof p->file);
    json_copy_text(o, "cwd", p->cwd, sizeof p->cwd);
    json_copy_text(o, "scheduler", p->scheduler, sizeof p->scheduler);
    json_copy_text(o, "site", p->site, sizeof p->site);
    json_copy_text(o, "bindir", p->bindir, sizeof p->bindir);
    json_copy_text(o, "state_home", p->state_home, sizeof p->state_home);
    json_whole(o, "submitted", 0, INT64_C(1) << 40, &p->submitted);
    json_doc_free(&doc);
    pipeline_record_path(dir, "cancelled", path, sizeof path);
    struct stat st;
    p->cancelled = lstat(path, &st) == 0;
    if (!(p->dir = strdup(dir)))
        return ddp_error_set(err, "out of memory");
    return 0;
}

void pipeline_record_free(pipeline_record_t *p)
{
    free(p->dir);
    memset(p, 0, sizeof *p);
}

int pipeline_record_lock(const char *dir, int wait_ms, ddp_error_t *err)
{
    char path[8192];
    pipeline_record_path(dir, "lock", path, sizeof path);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return ddp_error_set(err, "%s: %s", path, strerror(errno));
    int64_t deadline = ddp_deadline_in(wait_ms);
    while (flock(fd, LOCK_EX | LOCK_NB)) {
        if (errno != EWOULDBLOCK || ddp_ms_left(deadline) == 0) {
            ddp_error_set(err, "%s: %s", path,
                          errno == EWOULDBLOCK ? "held by another ddpjob all along"
                                               : strerror(errno));
            close(fd);
            return -1;
        }
        ddp_sleep_ms(50);
    }
    return fd;
}

void pipeline_stage_read(const char *dir, const char *stage, stage_record_t *s)
{
    memset(s, 0, sizeof *s);
    char file[300], path[8192];
    snprintf(file, sizeof file, "%s.stage", stage);
    pipeline_record_path(dir, file, path, sizeof path);
    ddp_error_t err;
    char *text = ddp_read_file_max(path, PIPELINE_FILE_MAX, NULL, &err);
    char *nl = text ? strchr(text, '\n') : NULL, *tab = text ? strchr(text, '\t') : NULL;
    if (!nl || !tab || tab > nl) {
        free(text);
        return;
    }
    *nl = *tab = '\0';
    char *rest = tab + 1, *tab2 = strchr(rest, '\t');
    if (!strcmp(text, "submitted") && tab2) {
        *tab2 = '\0';
        if (job_id_valid(rest) && tab2[1] == '/') {
            s->fate = STAGE_SUBMITTED;
            snprintf(s->id, sizeof s->id, "%s", rest);
            snprintf(s->record, sizeof s->record, "%s", tab2 + 1);
        }
    } else if (!strcmp(text, "never")) {
        s->fate = STAGE_NEVER;
        snprintf(s->why, sizeof s->why, "%s", rest);
    }
    free(text);
}

int pipeline_stage_write(const char *dir, const char *stage, const stage_record_t *s,
                         ddp_error_t *err)
{
    char file[300], path[8192], line[8192];
    snprintf(file, sizeof file, "%s.stage", stage);
    pipeline_record_path(dir, file, path, sizeof path);
    struct stat st;
    if (lstat(path, &st) == 0)
        return ddp_error_set(err, "%s: stage %s was decided already", path, stage);
    if (s->fate == STAGE_SUBMITTED)
        snprintf(line, sizeof line, "submitted\t%s\t%s\n", s->id, s->record);
    else
        snprintf(line, sizeof line, "never\t%s\n", s->why);
    for (char *c = line; c[1]; c++) /* one line, whatever a reason held */
        *c = *c == '\n' ? ' ' : *c;
    return write_in(dir, file, line, err);
}

int pipeline_record_mark_cancelled(const char *dir, ddp_error_t *err)
{
    char text[32];
    snprintf(text, sizeof text, "%lld\n", (long long)time(NULL));
    return write_in(dir, "cancelled", text, err);
}
