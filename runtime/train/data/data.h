/* data: the image sets ddp-train trains on, CIFAR-10's binary format or synthetic, and the
 * batches made from them.
 *
 * A set is uint8 CHW images and labels in memory. CIFAR-10 files are records of 1 label byte
 * and 3072 pixel bytes (1024 red, 1024 green, 1024 blue, rows top to bottom); training is
 * data_batch_1.bin ... data_batch_5.bin (those present, from 1 up), testing test_batch.bin.
 * Synthetic sets come from the seed alone: the same on every rank and at every world size, with
 * a class-specific smooth pattern under noise, so that learning shows as accuracy. */
#ifndef DDP_TRAIN_DATA_H
#define DDP_TRAIN_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "runtime/train/model/model.h"

#define CIFAR_RECORD (1 + IMAGE_SIZE)
#define CIFAR_TRAIN_FILES 5

typedef struct {
    size_t count;
    unsigned char *labels;
    unsigned char *images; /* count * IMAGE_SIZE */
} dataset_t;

/* Reads DIR's training and test files; errors name the file and the byte offset. */
int data_load_cifar(const char *dir, dataset_t *train, dataset_t *test, ddp_error_t *err);

int data_synthetic(uint64_t seed, size_t train_count, size_t test_count, dataset_t *train,
                   dataset_t *test, ddp_error_t *err);
/* Writes a set as CIFAR-10 files in dir: data_batch_1.bin (train) and test_batch.bin. */
int data_write_cifar(const char *dir, const dataset_t *train, const dataset_t *test,
                     ddp_error_t *err);

void data_free(dataset_t *set);

/* Normalised floats for samples idx[0..n) (CIFAR-10's per-channel mean and std). With augment,
 * a random crop from the image padded by 4 and a horizontal flip half the time, drawn from a
 * stream keyed by (seed, epoch, sample), so a sample looks the same wherever it is drawn. */
void data_batch(const dataset_t *set, const size_t *idx, int n, int augment, uint64_t seed,
                uint64_t epoch, float *images, unsigned char *labels);

#endif
