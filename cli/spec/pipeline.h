/* pipeline: a file of stages (`stages:`) that run as jobs one after another, each a spec (with
 * overrides of its own) started once the stages it waits for (`after:`) have ended as it asks,
 * and taking values from them when it starts: {STAGE.best.params.NAME}, {STAGE.best.checkpoint}
 * (a sweep's best trial), {STAGE.record}, {STAGE.checkpoint} (a job's), in its spec's text or
 * its set: values.
 *
 *   name: tune
 *   stages:
 *     sweep: {spec: sweep.yaml}
 *     train: {spec: train.yaml, set: {walltime: "02:00:00"}, after: {ok: [sweep]}}
 *     eval:  {spec: eval.yaml, after: {ok: [train]}}
 *
 * Read and checked whole before anything is submitted, every problem as FILE:LINE:COL as a
 * spec's: an unknown field, a stage without a spec or with one that is not there, after: naming
 * no stage or the stage itself, a cycle, a value from a stage the stage does not wait for (after:,
 * directly or through another), a value of a kind there is none of. */
#ifndef DDPJOB_PIPELINE_H
#define DDPJOB_PIPELINE_H

#include <stddef.h>
#include <yaml.h>

#include "cli/spec/diag.h"
#include "cli/spec/spec.h"

#define PIPELINE_STAGES_MAX 32

/* How a stage waits for another: its end completed (a sweep: every trial), any end, failed or
 * cancelled, or (a sweep) at least one trial completed, so that it has a best. */
typedef enum {
    STAGE_AFTER_OK,
    STAGE_AFTER_ANY,
    STAGE_AFTER_NOTOK,
    STAGE_AFTER_BEST,
    STAGE_AFTER_KINDS
} stage_after_t;

/* after:'s words for them: ok, any, notok, best. */
extern const char *const pipeline_after_words[STAGE_AFTER_KINDS];

typedef struct {
    char *name;
    char *spec;  /* its spec file, the path as given (relative: to the pipeline's folder) */
    char *path;  /* ... that path from here (or its copy's), malloc'd */
    char **sets; /* set: as PATH=VALUE, each */
    unsigned long (*set_at)[2]; /* where each set: value is (line, column) */
    size_t nsets;
    int after[STAGE_AFTER_KINDS][PIPELINE_STAGES_MAX]; /* the stages waited for, by index */
    size_t nafter[STAGE_AFTER_KINDS];
    diag_t *spec_diag; /* problems found in its spec file's text (the values it asks for) */
    int asks_values;   /* its spec or set: asks values of other stages */
    unsigned long line, col;
} pipeline_stage_t;

typedef struct {
    char *path, *name;
    char *specs_dir; /* the stages' specs are copies there (pipeline_read_copies); NULL: not */
    pipeline_stage_t stages[PIPELINE_STAGES_MAX];
    size_t nstages;
    size_t order[PIPELINE_STAGES_MAX]; /* the stages, each after those it waits for */
} pipeline_t;

/* Whether the YAML file at path is a pipeline (its root mapping has stages:); 0 when it is not,
 * or cannot be read (then its reader says why). */
int pipeline_file_is(const char *path);

/* Reads and checks the pipeline at path into p; problems into diag (the pipeline file's) and
 * each stage's spec_diag. Returns the number of problems. pipeline_free frees p either way. */
size_t pipeline_read(const char *path, pipeline_t *p, diag_t *diag);

/* Reads the pipeline as pipeline_read does, each stage's spec from specs_dir/STAGE.yaml (the
 * copies a submitted pipeline's record keeps) instead of its path. */
size_t pipeline_read_copies(const char *path, const char *specs_dir, pipeline_t *p, diag_t *diag);

/* Puts each value (STAGE.KIND=TEXT) in for its {STAGE.KIND} in every scalar of doc (a stage's
 * spec, as its job starts), before its fields are read, so that each takes it typed; a
 * {STAGE.KIND} no value is given for is a problem. Returns the number of problems. */
size_t pipeline_put_values(yaml_document_t *doc, const strv_t *values, diag_t *diag);

/* text with each {STAGE.KIND} replaced by its value from values (STAGE.KIND=TEXT), malloc'd;
 * NULL when one has none (its STAGE.KIND into missing). */
char *pipeline_with_values(const char *text, const strv_t *values, char *missing, size_t size);

/* When c starts a {STAGE.KIND} placeholder: the length of STAGE.KIND (at c + 1); else 0. A
 * caller scanning text steps over "{{", a literal brace. */
size_t pipeline_value_at(const char *c);

/* Whether stage `from` waits for stage `on`, directly or through others. */
int pipeline_waits_for(const pipeline_t *p, size_t from, size_t on);

void pipeline_free(pipeline_t *p);

#endif
