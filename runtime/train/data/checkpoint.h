/* checkpoint: a training run's state in one self-describing file, written atomically.
 *
 *   DDPTRAIN-CHECKPOINT 1
 *   model resnet depth=20 width=1
 *   config epochs=4 batch-size=32 ...        the options the run was made with
 *   position epoch=1 batch=17 step=142       where training resumes (epoch 0-based)
 *   world 2
 *   tensor NAME param|momentum|buffer COUNT DIM...   one line per tensor
 *   end
 *   float32 little-endian data of every tensor, in the order listed
 *   8 bytes: FNV-1a 64 of everything before, little-endian
 *
 * Tensor names are PyTorch state_dict names, so a reference script can load one. */
#ifndef DDP_TRAIN_CHECKPOINT_H
#define DDP_TRAIN_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "runtime/train/model/model.h"

typedef enum { CKPT_PARAM, CKPT_MOMENTUM, CKPT_BUFFER } ckpt_kind_t;

typedef struct {
    char name[48];
    ckpt_kind_t kind;
    size_t count;
    int dims[4], ndim;
    float *data; /* in the checkpoint's values */
} ckpt_tensor_t;

typedef struct {
    char model[128];
    char config[1024];
    int epoch;
    long batch, step;
    int world;
    ckpt_tensor_t *tensors;
    int tensor_count;
    float *values; /* every tensor's data */
} checkpoint_t;

/* The model's state as host arrays (see trainer's state_t): params and momentum (NULL writes
 * none) of model_param_count floats, buffers of model_buffer_count. */
typedef struct {
    float *params, *momentum, *buffers;
} ckpt_state_t;

int checkpoint_write(const char *path, const checkpoint_t *meta, const model_t *m,
                     const ckpt_state_t *state, ddp_error_t *err);
/* Reads and verifies (format, checksum, sizes); err names the file and what is wrong. */
int checkpoint_read(const char *path, checkpoint_t *c, ddp_error_t *err);
void checkpoint_free(checkpoint_t *c);

/* Copies the checkpoint's tensors into the host arrays of state (momentum may be NULL); every
 * tensor of the model must be there with its size. */
int checkpoint_restore(const checkpoint_t *c, const char *path, const model_t *m,
                       const ckpt_state_t *state, ddp_error_t *err);

/* The tensor of that name and kind; NULL when the checkpoint has none. */
const ckpt_tensor_t *checkpoint_find(const checkpoint_t *c, const char *name, ckpt_kind_t kind);

const char *checkpoint_kind_name(ckpt_kind_t kind);
uint64_t checkpoint_fnv1a(const void *data, size_t len, uint64_t hash);
#define CKPT_FNV_INIT 0xcbf29ce484222325ull

#endif
