#include "runtime/train/data/data.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/ddp_file.h"
#include "runtime/train/data/rng.h"

static int grow(dataset_t *set, size_t more, ddp_error_t *err)
{
    unsigned char *labels = realloc(set->labels, set->count + more + 1);
    if (labels)
        set->labels = labels;
    unsigned char *images =
        labels ? realloc(set->images, (set->count + more) * IMAGE_SIZE + 1) : NULL;
    if (!images)
        return ddp_error_set(err, "out of memory for %zu images", set->count + more);
    set->images = images;
    return 0;
}

/* Reads one CIFAR-10 file, appending to set. */
static int read_cifar_file(const char *path, dataset_t *set, ddp_error_t *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ddp_error_set(err, "%s: %s", path, strerror(errno));
    struct stat st;
    int rc = -1;
    if (fstat(fileno(f), &st) < 0) {
        ddp_error_set(err, "%s: %s", path, strerror(errno));
        goto out;
    }
    size_t size = (size_t)st.st_size, records = size / CIFAR_RECORD;
    if (size == 0) {
        ddp_error_set(err, "%s: empty file (a CIFAR-10 file holds records of %d bytes)", path,
                      CIFAR_RECORD);
        goto out;
    }
    if (size % CIFAR_RECORD) {
        ddp_error_set(err,
                      "%s: truncated: %zu bytes is not a whole number of %d-byte records "
                      "(the record at offset %zu has only %zu bytes)",
                      path, size, CIFAR_RECORD, records * CIFAR_RECORD, size % CIFAR_RECORD);
        goto out;
    }
    if (grow(set, records, err))
        goto out;
    unsigned char record[CIFAR_RECORD];
    for (size_t i = 0; i < records; i++) {
        if (fread(record, 1, sizeof record, f) != sizeof record) {
            ddp_error_set(err, "%s: read error at offset %zu", path, i * CIFAR_RECORD);
            goto out;
        }
        if (record[0] >= CLASSES) {
            ddp_error_set(err,
                          "%s: record %zu at offset %zu has label %d; CIFAR-10 labels are 0 to 9",
                          path, i, i * CIFAR_RECORD, record[0]);
            goto out;
        }
        set->labels[set->count] = record[0];
        memcpy(set->images + set->count * IMAGE_SIZE, record + 1, IMAGE_SIZE);
        set->count++;
    }
    rc = 0;
out:
    fclose(f);
    return rc;
}

int data_load_cifar(const char *dir, dataset_t *train, dataset_t *test, ddp_error_t *err)
{
    char path[4096];
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    for (int i = 1; i <= CIFAR_TRAIN_FILES; i++) {
        snprintf(path, sizeof path, "%s/data_batch_%d.bin", dir, i);
        if (i > 1 && access(path, F_OK) != 0)
            break;
        if (read_cifar_file(path, train, err))
            goto error;
    }
    snprintf(path, sizeof path, "%s/test_batch.bin", dir);
    if (read_cifar_file(path, test, err))
        goto error;
    return 0;
error:
    data_free(train);
    data_free(test);
    return -1;
}

/* A class's pattern: a few random low-frequency waves per channel, so that neighbouring pixels
 * agree (convolutions find it) and every pixel carries a little of it (an MLP finds it), under
 * noise several times stronger than the pattern at any one pixel. */
#define SYNTH_WAVES 4
#define SYNTH_NOISE 64.0

static void make_patterns(uint64_t seed, float patterns[CLASSES][IMAGE_SIZE])
{
    for (int k = 0; k < CLASSES; k++)
        for (int c = 0; c < IMAGE_C; c++) {
            rng_t r = rng_keyed(seed, RNG_SYNTHETIC, (uint64_t)k, (uint64_t)c);
            double fy[SYNTH_WAVES], fx[SYNTH_WAVES], phase[SYNTH_WAVES], amp[SYNTH_WAVES];
            for (int j = 0; j < SYNTH_WAVES; j++) {
                fy[j] = rng_uniform(&r) * 0.6;
                fx[j] = rng_uniform(&r) * 0.6;
                phase[j] = rng_uniform(&r) * 6.2832;
                amp[j] = 3 + rng_uniform(&r) * 4;
            }
            for (int y = 0; y < IMAGE_H; y++)
                for (int x = 0; x < IMAGE_W; x++) {
                    double v = 128;
                    for (int j = 0; j < SYNTH_WAVES; j++)
                        v += amp[j] * sin(fy[j] * y + fx[j] * x + phase[j]);
                    patterns[k][(c * IMAGE_H + y) * IMAGE_W + x] = (float)v;
                }
        }
}

/* Roughly normal noise, cheaply: the sum of four 16-bit uniforms (Irwin-Hall), scaled to
 * standard deviation SYNTH_NOISE. */
static float noise(rng_t *r)
{
    uint64_t bits = rng_next(r);
    double sum = 0;
    for (int i = 0; i < 4; i++, bits >>= 16)
        sum += (double)(bits & 0xffff) / 65536.0;
    return (float)((sum - 2.0) * SYNTH_NOISE * 1.7320508);
}

static int synthesize(uint64_t seed, uint64_t which, size_t count,
                      float patterns[CLASSES][IMAGE_SIZE], dataset_t *set, ddp_error_t *err)
{
    memset(set, 0, sizeof *set);
    if (grow(set, count, err))
        return -1;
    for (size_t i = 0; i < count; i++) {
        rng_t r = rng_keyed(seed, RNG_SYNTHETIC, 1000 + which, i);
        int label = (int)rng_below(&r, CLASSES);
        set->labels[i] = (unsigned char)label;
        unsigned char *img = set->images + i * IMAGE_SIZE;
        for (int p = 0; p < IMAGE_SIZE; p++) {
            float v = patterns[label][p] + noise(&r);
            img[p] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    }
    set->count = count;
    return 0;
}

int data_synthetic(uint64_t seed, size_t train_count, size_t test_count, dataset_t *train,
                   dataset_t *test, ddp_error_t *err)
{
    float(*patterns)[IMAGE_SIZE] = malloc(CLASSES * sizeof *patterns);
    if (!patterns)
        return ddp_error_set(err, "out of memory");
    make_patterns(seed, patterns);
    int rc = synthesize(seed, 0, train_count, patterns, train, err);
    if (rc == 0 && (rc = synthesize(seed, 1, test_count, patterns, test, err)))
        data_free(train);
    free(patterns);
    return rc;
}

static int write_set(const char *path, const dataset_t *set, ddp_error_t *err)
{
    size_t size = set->count * CIFAR_RECORD;
    unsigned char *bytes = malloc(size + 1);
    if (!bytes)
        return ddp_error_set(err, "out of memory");
    for (size_t i = 0; i < set->count; i++) {
        bytes[i * CIFAR_RECORD] = set->labels[i];
        memcpy(bytes + i * CIFAR_RECORD + 1, set->images + i * IMAGE_SIZE, IMAGE_SIZE);
    }
    int rc = ddp_write_file_atomic(path, bytes, size, 0644, err);
    free(bytes);
    return rc;
}

int data_write_cifar(const char *dir, const dataset_t *train, const dataset_t *test,
                     ddp_error_t *err)
{
    char path[4096];
    if (ddp_make_dirs(dir, 0777, err))
        return -1;
    snprintf(path, sizeof path, "%s/data_batch_1.bin", dir);
    if (write_set(path, train, err))
        return -1;
    snprintf(path, sizeof path, "%s/test_batch.bin", dir);
    return write_set(path, test, err);
}

void data_free(dataset_t *set)
{
    free(set->labels);
    free(set->images);
    memset(set, 0, sizeof *set);
}

static const float channel_mean[IMAGE_C] = {0.4914f, 0.4822f, 0.4465f};
static const float channel_std[IMAGE_C] = {0.2470f, 0.2435f, 0.2616f};

/* One output row from input row `in` (NULL: the row lies in the padding), shifted by dx and
 * mirrored when flip. The pixels that come from the image are a straight run: a loop the
 * compiler vectorises, not a bounds test per pixel. */
static void batch_row(const unsigned char *in, int dx, int flip, float scale, float shift,
                      float *out)
{
    /* Output x reads input x + dx, or (flipped) IMAGE_W - 1 - x + dx: inside for x in [lo, hi). */
    int lo = flip ? dx : -dx, hi = flip ? IMAGE_W + dx : IMAGE_W - dx;
    lo = in && lo > 0 ? lo : 0;
    hi = !in ? 0 : hi < IMAGE_W ? hi : IMAGE_W;
    for (int x = 0; x < lo; x++)
        out[x] = -shift; /* the padding is black, normalised */
    if (flip) {
        for (int x = lo; x < hi; x++)
            out[x] = in[IMAGE_W - 1 - x + dx] * scale - shift;
    } else {
#pragma omp simd
        for (int x = lo; x < hi; x++)
            out[x] = in[x + dx] * scale - shift;
    }
    for (int x = hi > lo ? hi : lo; x < IMAGE_W; x++)
        out[x] = -shift;
}

void data_batch(const dataset_t *set, const size_t *idx, int n, int augment, uint64_t seed,
                uint64_t epoch, float *images, unsigned char *labels)
{
    for (int b = 0; b < n; b++) {
        const unsigned char *img = set->images + idx[b] * IMAGE_SIZE;
        float *out = images + (size_t)b * IMAGE_SIZE;
        labels[b] = set->labels[idx[b]];
        int dy = 0, dx = 0, flip = 0;
        if (augment) {
            rng_t r = rng_keyed(seed, RNG_AUGMENT, epoch, idx[b]);
            dy = (int)rng_below(&r, 9) - 4;
            dx = (int)rng_below(&r, 9) - 4;
            flip = (int)rng_below(&r, 2);
        }
        for (int c = 0; c < IMAGE_C; c++) {
            float scale = 1.0f / (255.0f * channel_std[c]),
                  shift = channel_mean[c] / channel_std[c];
            for (int y = 0; y < IMAGE_H; y++) {
                int sy = y + dy;
                const unsigned char *row =
                    sy >= 0 && sy < IMAGE_H ? img + (c * IMAGE_H + sy) * IMAGE_W : NULL;
                batch_row(row, dx, flip, scale, shift, out + (c * IMAGE_H + y) * IMAGE_W);
            }
        }
    }
}
