/* Every layer's backward against finite differences: for each parameter tensor of a small MLP
 * and a small ResNet (so linear, conv with stride 1 and 2, 1x1 shortcut conv, batch norm in
 * training mode, ReLU, residual add, average pooling and softmax cross-entropy all lie on the
 * path), a few entries' analytic gradients are compared with central differences of the loss;
 * the ResNet on every CPU convolution path and layout. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/tap.h"
#include "runtime/train/model/conv_dnnl.h"
#include "runtime/train/model/model.h"
#include "runtime/train/data/rng.h"

#define BATCH 3
#define ENTRIES 4
#define EPS 3e-4f /* small enough that few ReLUs flip, big enough for float noise */

/* The CPU devices' memory is the host's: the labels and the tally are plain arrays. */
static double mean_loss(model_t *m, const float *input, const unsigned char *labels)
{
    double tally[2] = {0, 0};
    model_forward(m, input, BATCH, 1);
    model_loss(m, labels, BATCH, tally);
    return tally[0] / BATCH;
}

static void check_model(const model_config_t *cfg, const device_ops_t *dev)
{
    ddp_error_t err;
    model_t *m = model_create(cfg, dev, BATCH, NULL, &err);
    ok(m != NULL, "%s on %s builds (%s)", cfg->name, dev->name, m ? "ok" : err.msg);
    if (!m)
        return;
    model_init(m, 7, model_params(m), model_buffers(m));
    static float input[BATCH * IMAGE_SIZE];
    unsigned char labels[BATCH] = {1, 4, 9};
    rng_t r = rng_keyed(3, 99, 0, 0);
    for (size_t i = 0; i < BATCH * IMAGE_SIZE; i++)
        input[i] = (float)rng_normal(&r);
    mean_loss(m, input, labels);
    model_backward(m, input, BATCH, NULL, NULL);
    int backward_rc = dev->sync(&err);
    ok(backward_rc == 0, "%s on %s: backward runs (%s)", cfg->name, dev->name,
       backward_rc == 0 ? "ok" : err.msg);
    if (backward_rc) {
        model_destroy(m);
        return;
    }
    float *params = model_params(m);
    float *grads = malloc(model_param_count(m) * sizeof *grads);
    memcpy(grads, model_grads(m), model_param_count(m) * sizeof *grads);
    for (int ti = 0; ti < model_tensor_count(m); ti++) {
        const tensor_info_t *t = model_tensor(m, ti);
        if (t->is_buffer)
            continue;
        double worst = 0;
        int bad = 0;
        char detail[160] = "";
        for (int e = 0; e < ENTRIES; e++) {
            size_t k = t->offset + (size_t)rng_below(&r, t->count);
            float saved = params[k];
            params[k] = saved + EPS;
            double up = mean_loss(m, input, labels);
            params[k] = saved - EPS;
            double down = mean_loss(m, input, labels);
            params[k] = saved;
            double numeric = (up - down) / (2 * EPS), analytic = grads[k];
            double error = fabs(numeric - analytic), scale = fmax(fabs(numeric), fabs(analytic));
            double rel = scale > 0 ? error / scale : 0;
            if (rel > worst && scale > 1e-4)
                worst = rel;
            if (error > 0.05 * scale + 3e-4) {
                bad++;
                snprintf(detail, sizeof detail, "[%zu]: analytic %.6g, numeric %.6g", k - t->offset,
                         analytic, numeric);
            }
        }
        ok(bad == 0,
           "%s on %s, %s: gradient matches finite differences at %d entries (worst "
           "relative %.2g)",
           cfg->name, dev->name, t->name, ENTRIES, worst);
        if (bad)
            printf("#   %s\n", detail);
    }
    free(grads);
    model_destroy(m);
}

int main(void)
{
    model_config_t mlp = {.name = "mlp", .widths = {32, 16}, .width_count = 2};
    model_config_t resnet = {.name = "resnet", .depth = 8, .width = 1};
    check_model(&mlp, &device_cpu);
    /* Every convolution path: oneDNN's (where the build has it) on its blocked layout and on
     * NCHW, and im2col's. */
    printf("# device_cpu's convolutions: %s, activations blocked by %d channels\n", conv_dnnl_kind,
           conv_dnnl_block());
    check_model(&resnet, &device_cpu);
    if (conv_dnnl_block())
        check_model(&resnet, &device_cpu_nchw);
    check_model(&resnet, &device_cpu_im2col);
    return done_testing();
}
