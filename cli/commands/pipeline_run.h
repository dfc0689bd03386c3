/* pipeline_run: a submitted pipeline (cli/jobs/pipeline_record.h) as it runs. Each stage is
 * submitted once the stages it waits for have ended as it asks, its values then read from their
 * records; a stage that can no longer run is never submitted and says why, and so do the stages
 * waiting for it. Whoever looks moves it on: each stage's batch shell as it ends (`ddpjob
 * pipeline-next`), and status and wait of the pipeline, one at a time under the record's lock. */
#ifndef DDPJOB_PIPELINE_RUN_H
#define DDPJOB_PIPELINE_RUN_H

#include <stddef.h>
#include <stdio.h>

#include "cli/jobs/job_state.h"
#include "cli/jobs/pipeline_record.h"
#include "cli/spec/pipeline.h"

typedef struct {
    stage_record_t rec; /* what became of it */
    int is_sweep;
    int ended;         /* submitted and ended for good, or never to run */
    job_state_t state; /* submitted: its job's (a sweep's: completed when every trial did) */
    size_t trials, completed;
    char said[1024]; /* its state in words, with the cause */
} stage_look_t;

typedef struct {
    pipeline_record_t rec;
    pipeline_t p; /* the pipeline file as submitted */
    stage_look_t stages[PIPELINE_STAGES_MAX];
    int ended;         /* every stage ended or will never run */
    job_state_t state; /* running; completed (no stage failed or was cancelled); else failed or
                          cancelled (the pipeline was) */
} pipeline_look_t;

/* The pipeline in dir as it is now. -1 with err when its record cannot be read. */
int pipeline_look_load(const char *dir, pipeline_look_t *v, ddp_error_t *err);
void pipeline_look_free(pipeline_look_t *v);

/* Moves the pipeline in dir on (under its lock): each waiting stage submitted, or marked never
 * with why, as the stages before it allow; each decision said on stderr. Then *v (when not
 * NULL) gets the pipeline as it is after. -1 with err when its record cannot be read or locked. */
int pipeline_advance(const char *dir, pipeline_look_t *v, ddp_error_t *err);

/* status: the stages' table, or one JSON object (ddpjob(1), PIPELINES). */
void pipeline_look_print(FILE *f, const pipeline_look_t *v);
void pipeline_look_json(FILE *f, const pipeline_look_t *v);
/* list's line. */
void pipeline_look_line(FILE *f, const pipeline_look_t *v);

#endif
