/* pipeline_record: what `ddpjob submit` of a pipeline (cli/spec/pipeline.h) leaves for the
 * batch shells of its stages and the commands after it (ddpjob(1), PIPELINES). The layout:
 *
 *   CWD/.ddpjob/pipelines/NAME.YYYYMMDD-HHMMSS.XXXXXX/
 *     pipeline.json  version, name, file (the pipeline file as given), cwd (where submit ran,
 *                    where each stage is submitted from), scheduler, site and bindir (submit's
 *                    --scheduler, --site and --bindir, "" none), state_home (submit's
 *                    XDG_STATE_HOME, "" none), submitted
 *     pipeline.yaml  the pipeline file as submitted
 *     NAME.yaml      each stage's spec as submitted: a stage starts from these copies, which
 *                    only the user can change, never from the files in a team's folder
 *     NAME.stage     what became of stage NAME, written once: "submitted\tJOBID\tRECORD" (its
 *                    job's or sweep's record), or "never\tWHY" (it can no longer run, or was
 *                    not to: "cancelled: stage train failed: rank 3 exited with code 1")
 *     cancelled      present once `ddpjob cancel` was asked: nothing more is submitted
 *     lock           held (flock) by whoever decides what the stages do next
 *
 * The index (job_record.h) has one line per pipeline, its record this folder. */
#ifndef DDPJOB_PIPELINE_RECORD_H
#define DDPJOB_PIPELINE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"

#define PIPELINE_RECORD_VERSION 1

typedef struct {
    char *dir;
    int version;
    char name[256], file[4096], cwd[4096], scheduler[16], site[4096], bindir[4096];
    char state_home[4096]; /* submit's XDG_STATE_HOME: its stages join the same index ("": ~) */
    int64_t submitted;
    int cancelled;
} pipeline_record_t;

typedef enum { STAGE_WAITING, STAGE_SUBMITTED, STAGE_NEVER } stage_fate_t;

typedef struct {
    stage_fate_t fate;
    char id[128];      /* submitted: its first job id */
    char record[4096]; /* ... its record's folder */
    char why[1024];    /* never: why */
} stage_record_t;

/* Makes the pipeline's folder under p->cwd with pipeline.json and pipeline.yaml (pipeline_text);
 * *dir malloc'd. Private. */
int pipeline_record_create(const pipeline_record_t *p, const char *pipeline_text, char **dir,
                           ddp_error_t *err);
/* Stage NAME's spec as submitted (NAME.yaml) into the record's folder; its path into out. */
int pipeline_record_add_spec(const char *dir, const char *stage, const char *text, char *out,
                             size_t size, ddp_error_t *err);
/* The path of a file of the record. */
void pipeline_record_path(const char *dir, const char *file, char *out, size_t size);
/* Reads the pipeline in dir; -1 when dir holds no pipeline.json or is not the user's own, closed
 * to others (err says which). */
int pipeline_record_read(const char *dir, pipeline_record_t *p, ddp_error_t *err);
void pipeline_record_free(pipeline_record_t *p);
/* Whether dir holds a pipeline (a pipeline.json). */
int pipeline_record_is(const char *dir);

/* The pipeline's lock, taken within wait_ms: its descriptor, to close for release; -1 with err. */
int pipeline_record_lock(const char *dir, int wait_ms, ddp_error_t *err);
/* What became of stage NAME (STAGE_WAITING: nothing yet, or a file that is not whole). */
void pipeline_stage_read(const char *dir, const char *stage, stage_record_t *s);
/* Writes it, once: -1 with err when it is there already. Under the lock. */
int pipeline_stage_write(const char *dir, const char *stage, const stage_record_t *s,
                         ddp_error_t *err);
/* Marks the pipeline cancelled. Under the lock. */
int pipeline_record_mark_cancelled(const char *dir, ddp_error_t *err);

#endif
