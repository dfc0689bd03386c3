/* train_options: `ddp-train train`'s command line, its defaults (the tutorials': lr 0.1,
 * momentum 0.9, weight decay 1e-5) and the one-line form a checkpoint records. Its option names
 * and checks are also what ddpjob validates a spec's train: block with, so a spec that passes
 * validation is one ddp-train accepts. */
#ifndef DDP_TRAIN_OPTIONS_H
#define DDP_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "runtime/train/model/model_config.h"

typedef enum { SCHEDULE_COSINE, SCHEDULE_STEP, SCHEDULE_CONSTANT } schedule_t;

typedef struct {
    model_config_t model;
    const char *data_dir; /* NULL: synthetic */
    size_t synthetic_train, synthetic_test;
    int epochs, batch_size;
    double lr, momentum, weight_decay, warmup_epochs, bucket_cap_mb;
    schedule_t schedule;
    uint64_t seed;
    const char *checkpoint_dir;
    int resume, shuffle, drop_last, augment, threads;
    int tf32;              /* GPU convolutions may use TF32 tensor cores */
    int bf16;              /* GPU feature maps in bfloat16 (mixed precision) */
    int cuda_graph;        /* one GPU's step is recorded once and replayed */
    const char *cpu_conv;  /* "onednn", "onednn-nchw", "im2col", or NULL: the build's best */
    int stop_after_epochs; /* 0: run every epoch */
    long max_steps;        /* 0: no limit */
    long min_step_ms;      /* each step lasts at least this long (a pace for rehearsals) */
} train_options_t;

/* `ddp-train train`'s usage, made from its option table. */
const char *train_usage(void);

/* How an option is written: with a value (--epochs 5), alone (--resume), or either way round
 * (--augment / --no-augment). */
typedef enum { TRAIN_OPT_VALUE, TRAIN_OPT_FLAG, TRAIN_OPT_SWITCH } train_opt_form_t;
/* How its value is taken: into a field of train_options_t of that type, within [lo, hi]; or
 * by a rule of its own (TRAIN_TAKE_OTHER). */
typedef enum {
    TRAIN_TAKE_FLAG,
    TRAIN_TAKE_INT,
    TRAIN_TAKE_LONG,
    TRAIN_TAKE_DOUBLE,
    TRAIN_TAKE_STR,
    TRAIN_TAKE_OTHER
} train_take_t;

typedef struct {
    const char *name; /* without the dashes */
    train_opt_form_t form;
    const char *value; /* its value's shape in the usage; NULL: none */
    train_take_t take;
    size_t field;
    double lo, hi;
    const char *want; /* what a bad value is told to be */
} train_option_name_t;

/* Every option of `ddp-train train`, the session's --backend and --timeout included;
 * NULL-terminated: the one table that drives parsing, the usage and ddpjob's train: check. */
extern const train_option_name_t train_option_names[];

/* Fills o from argv (argv[0] is the command's name); -1 with err naming the option and why.
 * --backend and --timeout, which the session takes out first, are checked when present. */
int train_options_parse(int argc, char **argv, train_options_t *o, ddp_error_t *err);

/* What must match for a checkpoint to resume this run: data, seed, batch size, shuffling. */
void train_options_describe(const train_options_t *o, char *buf, size_t size);

/* The learning rate at `step` of `total` (steps_per_epoch for the warm-up). */
double train_lr(const train_options_t *o, long step, long total, long steps_per_epoch);

#endif
