/* reducer: data-parallel gradient averaging as PyTorch DDP does it, overlapped with backward.
 *
 * Buckets are byte ranges of the flat gradient buffer, cut from its end (where backward
 * finishes first) at the bucket cap (25 MiB by default), the last one to go (the start of the
 * buffer) cut at 1 MiB so little is left to send once backward ends. model_backward reports its
 * frontier through reducer_ready; every bucket wholly behind it is handed, in bucket order (the
 * same on every rank), to a communication thread that runs an averaging all_reduce on it while
 * backward goes on. reducer_finish hands over the rest and waits. Only that thread uses the
 * process group between reducer_start and reducer_finish. */
#ifndef DDP_TRAIN_REDUCER_H
#define DDP_TRAIN_REDUCER_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"
#include "runtime/train/model/device.h"
#include "runtime/pg/pg.h"

#define REDUCER_FIRST_BUCKET_BYTES (1u << 20)

typedef struct reducer reducer_t;

/* grads: the model's gradient buffer on `dev` (device memory under nccl). The communication
 * thread makes dev current first; reducer_ready syncs dev before handing over a bucket. */
reducer_t *reducer_create(pg_t *pg, float *grads, size_t count, size_t bucket_cap_bytes,
                          const device_ops_t *dev, ddp_error_t *err);
/* Frees; the thread is stopped. */
void reducer_destroy(reducer_t *r);

int reducer_bucket_count(const reducer_t *r);

/* Before a backward pass. */
void reducer_start(reducer_t *r);
/* A grads_ready_fn: gradients from offset to the end are final once dev's queued work is done.
 * With one rank it does nothing (there is nothing to average). */
void reducer_ready(void *r, size_t offset);
/* Sends what is left and waits for every bucket; the first failure, naming the bucket (into
 * err unless NULL). */
int reducer_finish(reducer_t *r, ddp_error_t *err);

#endif
