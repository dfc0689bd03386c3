/* train_options: `ddp-train train`'s command line, its defaults (the tutorials': lr 0.1,
 * momentum 0.9, weight decay 1e-5) and the one-line form a checkpoint records. */
#ifndef DDP_TRAIN_OPTIONS_H
#define DDP_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

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
    int tf32; /* GPU convolutions may use TF32 tensor cores */
    int stop_after_epochs; /* 0: run every epoch */
    long max_steps;        /* 0: no limit */
} train_options_t;

extern const char train_usage[];

/* Fills o from argv (after the session's options were taken out); -1 after printing why. */
int train_options_parse(int argc, char **argv, train_options_t *o);

/* What must match for a checkpoint to resume this run: data, seed, batch size, shuffling. */
void train_options_describe(const train_options_t *o, char *buf, size_t size);

/* The learning rate at `step` of `total` (steps_per_epoch for the warm-up). */
double train_lr(const train_options_t *o, long step, long total, long steps_per_epoch);

#endif
