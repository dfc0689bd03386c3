/* model_config: which network ddp-train builds (model.h builds it): what its options set and a
 * checkpoint records, with nothing of the devices that run it, so that ddpjob can check a spec's
 * train: block without them. */
#ifndef DDP_TRAIN_MODEL_CONFIG_H
#define DDP_TRAIN_MODEL_CONFIG_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"

#define MODEL_MAX_WIDTHS 8

typedef struct {
    char name[16];                /* "mlp" or "resnet" */
    int widths[MODEL_MAX_WIDTHS]; /* mlp hidden layers */
    int width_count;
    int depth; /* resnet: 6n+2 */
    int width; /* resnet channel multiplier */
} model_config_t;

/* Checks the configuration; err names what is wrong. */
int model_config_check(const model_config_t *cfg, ddp_error_t *err);
/* "mlp widths=256,128" / "resnet depth=20 width=1": what a checkpoint records and compares. */
void model_config_describe(const model_config_t *cfg, char *buf, size_t size);

#endif
