/* device_check: the CUDA device (runtime/train/model/device_cuda.cu) against the CPU's portable one
 * (device_cpu_im2col: NCHW tensors throughout, as the GPU's), layer by layer and through whole
 * training steps of an mlp and a resnet: every layer operation on shapes that take each indexing
 * path (stride 2, 1x1 shortcuts, odd and non-square sizes, a 5x5 kernel, backward adding into an
 * input gradient that already holds values and writing over it), a batch's staging, an SGD step
 * recorded and replayed, then forward, loss and backward of both models, gradients and
 * batch-norm statistics compared tensor by tensor.
 *
 * Built twice: against the real device, run by tests/gpu on a GPU, and against the same source
 * compiled for the host with tests/train/cuda-host (the kernels run on the CPU, cuBLAS is
 * CBLAS), which checks the kernels' indexing and the GEMM operand order everywhere. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/tap.h"
#include "runtime/train/model/model.h"
#include "runtime/train/data/rng.h"

/* Relative to the largest magnitude in the CPU's tensor: summation orders differ between the
 * devices (per-sample versus whole-batch GEMMs), a wrong index is off by the tensor's scale. */
#define TOLERANCE 1e-4

/* How closely a device matches the CPU: values (logits, loss, statistics) by `difference`, and
 * gradients by `gradient_difference`. */
typedef struct {
    double values;
    double (*gradient_difference)(const float *cpu, const float *device, size_t n);
    double gradients;
} precision_t;

static const device_ops_t *gpu;
static rng_t rng;

/* One tensor held by both devices. */
typedef struct {
    float *cpu, *gpu;
    size_t n;
} pair_t;

static pair_t pair_new(size_t n, double scale, double offset)
{
    pair_t p = {malloc((n ? n : 1) * sizeof(float)), gpu->alloc(n * sizeof(float)), n};
    if (!p.cpu || !p.gpu) {
        fprintf(stderr, "device_check: out of memory for %zu floats\n", n);
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p.cpu[i] = (float)(offset + scale * rng_normal(&rng));
    gpu->upload(p.gpu, p.cpu, n * sizeof(float));
    return p;
}

static pair_t pair_random(size_t n)
{
    return pair_new(n, 1.0, 0.0);
}
static pair_t pair_zero(size_t n)
{
    return pair_new(n, 0.0, 0.0);
}

static void pair_free(pair_t *p)
{
    free(p->cpu);
    gpu->free(p->gpu);
}

/* n floats of device memory in a malloc'd host copy. */
static float *downloaded(const float *device, size_t n)
{
    float *got = malloc((n ? n : 1) * sizeof *got);
    if (!got) {
        fprintf(stderr, "device_check: out of memory for %zu floats\n", n);
        exit(1);
    }
    gpu->download(got, device, n * sizeof *got);
    return got;
}

/* max |cpu - gpu| / max |cpu| over n floats, the second in device memory. */
static double difference(const float *cpu, const float *device, size_t n)
{
    float *got = downloaded(device, n);
    double scale = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(cpu[i]));
        worst = fmax(worst, isfinite(got[i]) ? fabs((double)cpu[i] - got[i]) : INFINITY);
    }
    free(got);
    return scale > 0 ? worst / scale : worst;
}

/* |cpu - gpu| / |cpu| (L2 norms) over n floats, the second in device memory. */
static double distance(const float *cpu, const float *device, size_t n)
{
    float *got = downloaded(device, n);
    double error = 0, norm = 0;
    for (size_t i = 0; i < n; i++) {
        double e = isfinite(got[i]) ? (double)cpu[i] - got[i] : INFINITY;
        error += e * e;
        norm += (double)cpu[i] * cpu[i];
    }
    free(got);
    return norm > 0 ? sqrt(error / norm) : sqrt(error);
}

static const precision_t float32 = {TOLERANCE, difference, TOLERANCE};
/* Mixed precision rounds every feature map and its gradient to bfloat16 (8 bits). The values
 * stay within 1%; a gradient, through batch norms that subtract most of it, moves by 10-30% of
 * its norm at initialisation (resnet depth 8, batch 16: 0.02 at the last block, up to 0.25 at the
 * first), each element differently, where a wrong index or a type read as the other moves it by
 * about sqrt(2) (an unrelated tensor) or more. */
static const precision_t mixed_bf16 = {2e-2, distance, 0.5};

static double pair_difference(const pair_t *p)
{
    return difference(p->cpu, p->gpu, p->n);
}

/* Frees each pair named: PAIRS_FREE(&a, &b, ...). */
static void pairs_free(pair_t *const *pairs)
{
    for (; *pairs; pairs++)
        pair_free(*pairs);
}
#define PAIRS_FREE(...) pairs_free((pair_t *const[]){__VA_ARGS__, NULL})

/* The device's queued work has finished without an error. */
static int device_ok(const char *what)
{
    ddp_error_t err;
    if (gpu->sync(&err) == 0)
        return 1;
    ok(0, "%s: the device reports no error", what);
    printf("#   %s\n", err.msg);
    return 0;
}

static void report(double worst, const char *what)
{
    if (device_ok(what))
        ok(worst <= TOLERANCE, "%s: the devices agree (worst relative difference %.2g)", what,
           worst);
}

static void check_conv(conv_shape_t s, int batch)
{
    s.ho = (s.h + 2 * s.pad - s.k) / s.stride + 1;
    s.wo = (s.w + 2 * s.pad - s.k) / s.stride + 1;
    size_t in_n = (size_t)batch * s.c * s.h * s.w, out_n = (size_t)batch * s.co * s.ho * s.wo;
    size_t weight_n = (size_t)s.co * s.c * s.k * s.k;
    pair_t in = pair_random(in_n), weight = pair_random(weight_n), out = pair_zero(out_n);
    pair_t dout = pair_random(out_n), din = pair_random(in_n), dweight = pair_random(weight_n);
    float *cpu_work = malloc(device_cpu_im2col.conv_workspace(&s, batch) * sizeof(float));
    float *gpu_work = gpu->alloc(gpu->conv_workspace(&s, batch) * sizeof(float));
    device_cpu_im2col.conv_forward(&s, batch, in.cpu, weight.cpu, out.cpu, cpu_work);
    gpu->conv_forward(&s, batch, in.gpu, weight.gpu, out.gpu, gpu_work);
    char what[120];
    /* Added into an input gradient that holds values, then written over it. */
    for (int written = 0; written <= 1; written++) {
        grad_mode_t mode = written ? GRAD_WRITE : GRAD_ADD;
        device_cpu_im2col.conv_backward(&s, batch, in.cpu, weight.cpu, dout.cpu, din.cpu, mode,
                                        dweight.cpu, cpu_work);
        gpu->conv_backward(&s, batch, in.gpu, weight.gpu, dout.gpu, din.gpu, mode, dweight.gpu,
                           gpu_work);
        snprintf(what, sizeof what,
                 "conv %dx%dx%d -> %d, %dx%d kernel, stride %d, pad %d, batch %d, input gradient "
                 "%s",
                 s.c, s.h, s.w, s.co, s.k, s.k, s.stride, s.pad, batch,
                 mode == GRAD_ADD ? "added" : "written");
        report(fmax(pair_difference(&out), fmax(pair_difference(&din), pair_difference(&dweight))),
               what);
    }
    pair_t first_dweight = pair_random(weight_n); /* the first layer: no input gradient */
    device_cpu_im2col.conv_backward(&s, batch, in.cpu, weight.cpu, dout.cpu, NULL, GRAD_WRITE,
                                    first_dweight.cpu, cpu_work);
    gpu->conv_backward(&s, batch, in.gpu, weight.gpu, dout.gpu, NULL, GRAD_WRITE, first_dweight.gpu,
                       gpu_work);
    snprintf(what, sizeof what, "conv %dx%dx%d -> %d backward without an input gradient", s.c, s.h,
             s.w, s.co);
    report(pair_difference(&first_dweight), what);
    PAIRS_FREE(&in, &weight, &out, &dout, &din, &dweight, &first_dweight);
    free(cpu_work);
    gpu->free(gpu_work);
}

static void check_linear(int batch, int in_dim, int out_dim)
{
    size_t in_n = (size_t)batch * in_dim, out_n = (size_t)batch * out_dim;
    pair_t in = pair_random(in_n), weight = pair_random((size_t)out_dim * in_dim);
    pair_t bias = pair_random(out_dim), out = pair_random(out_n), dout = pair_random(out_n);
    pair_t din = pair_random(in_n), dweight = pair_random(weight.n), dbias = pair_random(out_dim);
    device_cpu_im2col.linear_forward(batch, in_dim, out_dim, in.cpu, weight.cpu, bias.cpu, out.cpu);
    gpu->linear_forward(batch, in_dim, out_dim, in.gpu, weight.gpu, bias.gpu, out.gpu);
    device_cpu_im2col.linear_backward(batch, in_dim, out_dim, in.cpu, weight.cpu, dout.cpu, din.cpu,
                                      dweight.cpu, dbias.cpu);
    gpu->linear_backward(batch, in_dim, out_dim, in.gpu, weight.gpu, dout.gpu, din.gpu, dweight.gpu,
                         dbias.gpu);
    char what[80];
    snprintf(what, sizeof what, "linear %d -> %d, batch %d", in_dim, out_dim, batch);
    report(fmax(fmax(pair_difference(&out), pair_difference(&din)),
                fmax(pair_difference(&dweight), pair_difference(&dbias))),
           what);
    PAIRS_FREE(&in, &weight, &bias, &out, &dout, &din, &dweight, &dbias);
}

static void check_batch_norm(int batch, int c, int hw, int relu)
{
    size_t n = (size_t)batch * c * hw;
    const bn_shape_t shape = {batch, c, hw, relu};
    pair_t in = pair_new(n, 2.0, 0.5), gamma = pair_random(c), beta = pair_random(c);
    pair_t running = pair_new(2 * (size_t)c, 0.2, 1.0), saved = pair_zero(2 * (size_t)c);
    pair_t out = pair_zero(n), eval_out = pair_zero(n), dout = pair_random(n);
    pair_t din = pair_random(n), dgamma = pair_random(c), dbeta = pair_random(c);
    device_cpu_im2col.bn_forward(&shape, in.cpu, gamma.cpu, beta.cpu, running.cpu, 1, saved.cpu,
                                 out.cpu);
    gpu->bn_forward(&shape, in.gpu, gamma.gpu, beta.gpu, running.gpu, 1, saved.gpu, out.gpu);
    /* With the ReLU the input gradient is written, without it added (both modes, both kinds). */
    grad_mode_t mode = relu ? GRAD_WRITE : GRAD_ADD;
    device_cpu_im2col.bn_backward(&shape, in.cpu, gamma.cpu, saved.cpu, out.cpu, dout.cpu, din.cpu,
                                  mode, dgamma.cpu, dbeta.cpu);
    gpu->bn_backward(&shape, in.gpu, gamma.gpu, saved.gpu, out.gpu, dout.gpu, din.gpu, mode,
                     dgamma.gpu, dbeta.gpu);
    device_cpu_im2col.bn_forward(&shape, in.cpu, gamma.cpu, beta.cpu, running.cpu, 0, NULL,
                                 eval_out.cpu);
    gpu->bn_forward(&shape, in.gpu, gamma.gpu, beta.gpu, running.gpu, 0, NULL, eval_out.gpu);
    char what[120];
    snprintf(what, sizeof what,
             "batch norm%s of %d channels x %d, batch %d (training, running "
             "statistics, backward, evaluation)",
             relu ? " + ReLU" : "", c, hw, batch);
    double worst = fmax(fmax(pair_difference(&out), pair_difference(&running)),
                        fmax(pair_difference(&saved), pair_difference(&eval_out)));
    worst = fmax(worst, fmax(pair_difference(&din),
                             fmax(pair_difference(&dgamma), pair_difference(&dbeta))));
    report(worst, what);
    PAIRS_FREE(&in, &gamma, &beta, &running, &saved, &out, &eval_out, &dout, &din, &dgamma, &dbeta);
}

static void check_elementwise(size_t n)
{
    pair_t a = pair_random(n), b = pair_random(n), out = pair_zero(n), dout = pair_random(n);
    pair_t da = pair_random(n), db = pair_random(n);
    device_cpu_im2col.relu_forward(n, a.cpu, out.cpu);
    gpu->relu_forward(n, a.gpu, out.gpu);
    device_cpu_im2col.relu_backward(n, out.cpu, dout.cpu, da.cpu);
    gpu->relu_backward(n, out.gpu, dout.gpu, da.gpu);
    char what[80];
    snprintf(what, sizeof what, "relu forward and backward of %zu", n);
    report(fmax(pair_difference(&out), pair_difference(&da)), what);
    for (int relu = 0; relu <= 1; relu++) {
        device_cpu_im2col.add_forward(n, relu, a.cpu, b.cpu, out.cpu);
        gpu->add_forward(n, relu, a.gpu, b.gpu, out.gpu);
        /* Both gradients added, then one written and one added. */
        grad_mode_t da_mode = relu ? GRAD_WRITE : GRAD_ADD;
        device_cpu_im2col.add_backward(n, relu, out.cpu, dout.cpu, da.cpu, da_mode, db.cpu,
                                       GRAD_ADD);
        gpu->add_backward(n, relu, out.gpu, dout.gpu, da.gpu, da_mode, db.gpu, GRAD_ADD);
        snprintf(what, sizeof what, "residual add%s forward and backward of %zu",
                 relu ? " + ReLU" : "", n);
        report(fmax(pair_difference(&out), fmax(pair_difference(&da), pair_difference(&db))), what);
    }
    pair_t v = pair_random(n), lr = pair_new(1, 0.0, 0.1);
    device_cpu_im2col.sgd(a.cpu, b.cpu, v.cpu, n, lr.cpu, 0.9f, 1e-5f);
    gpu->sgd(a.gpu, b.gpu, v.gpu, n, lr.gpu, 0.9f, 1e-5f);
    snprintf(what, sizeof what, "SGD with momentum and weight decay on %zu", n);
    report(fmax(pair_difference(&a), pair_difference(&v)), what);
    PAIRS_FREE(&a, &b, &out, &dout, &da, &db, &v, &lr);
}

/* A batch's bytes through a staging slot: host_alloc'd memory, copied when the slot is done. */
static void check_staging(size_t bytes)
{
    unsigned char *host = gpu->host_alloc(bytes), *device = gpu->alloc(bytes);
    unsigned char *back = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        host[i] = (unsigned char)(i * 7 + 3);
    ddp_error_t err;
    for (int slot = 0; slot < 2; slot++) {
        gpu->stage(device, host, bytes, slot);
        int waited = gpu->stage_wait(slot, &err) == 0;
        ok(waited, "staging slot %d of %zu bytes is done without an error (%s)", slot, bytes,
           waited ? "yes" : err.msg);
        host[slot] ^= 0xff; /* the slot may be written once it is done */
    }
    gpu->download(back, device, bytes);
    host[1] ^= 0xff; /* the last copy was made before this byte changed */
    ok(!memcmp(back, host, bytes), "the device holds the bytes staged");
    gpu->host_free(host);
    gpu->free(device);
    free(back);
}

/* A recording replays with what its memory holds at each replay: SGD recorded once, replayed
 * twice with the rate changed in between. A device that cannot record says why. */
static void check_recording(size_t n)
{
    pair_t p = pair_random(n), g = pair_random(n), v = pair_random(n), lr = pair_new(1, 0.0, 0.1);
    ddp_error_t err;
    void *recording = NULL;
    if (gpu->record_begin(&err)) {
        ok(err.msg[0] != 0, "a device that cannot record work says why (%s)", err.msg);
    } else {
        gpu->sgd(p.gpu, g.gpu, v.gpu, n, lr.gpu, 0.9f, 1e-5f);
        recording = gpu->record_end(&err);
        ok(recording != NULL, "SGD recorded (%s)", recording ? "yes" : err.msg);
    }
    for (int i = 0; recording && i < 2; i++) {
        lr.cpu[0] = i ? 0.05f : 0.1f;
        gpu->upload(lr.gpu, lr.cpu, sizeof(float));
        gpu->replay(recording);
        device_cpu_im2col.sgd(p.cpu, g.cpu, v.cpu, n, lr.cpu, 0.9f, 1e-5f);
    }
    if (recording) {
        report(fmax(pair_difference(&p), pair_difference(&v)),
               "SGD recorded once and replayed twice, the rate changed in between");
        gpu->recording_free(recording);
    }
    PAIRS_FREE(&p, &g, &v, &lr);
}

/* labels in device memory, as the loss reads them. */
static unsigned char *device_labels(const unsigned char *labels, int batch)
{
    unsigned char *p = gpu->alloc((size_t)batch);
    gpu->upload(p, labels, (size_t)batch);
    return p;
}

/* A device's loss tally, read back: {summed loss, right answers}. */
static void read_tally(const device_ops_t *dev, const double *tally, double out[2])
{
    dev->download(out, tally, 2 * sizeof(double));
}

static void check_pool_and_loss(int batch, int c, int hw, int classes)
{
    size_t n = (size_t)batch * c * hw;
    pair_t in = pair_random(n), out = pair_zero((size_t)batch * c);
    pair_t dout = pair_random((size_t)batch * c), din = pair_random(n);
    device_cpu_im2col.avgpool_forward(batch, c, hw, in.cpu, out.cpu);
    gpu->avgpool_forward(batch, c, hw, in.gpu, out.gpu);
    device_cpu_im2col.avgpool_backward(batch, c, hw, dout.cpu, din.cpu);
    gpu->avgpool_backward(batch, c, hw, dout.gpu, din.gpu);
    char what[80];
    snprintf(what, sizeof what, "average pooling of %d channels x %d, batch %d", c, hw, batch);
    report(fmax(pair_difference(&out), pair_difference(&din)), what);

    pair_t logits = pair_new((size_t)batch * classes, 3.0, 0.0);
    pair_t dlogits = pair_zero(logits.n);
    unsigned char *labels = malloc(batch);
    for (int i = 0; i < batch; i++)
        labels[i] = (unsigned char)rng_below(&rng, classes);
    unsigned char *gpu_labels = device_labels(labels, batch);
    /* Twice into tallies that hold values: each call adds. */
    double cpu_tally[2] = {1, 2}, gpu_sums[2], *gpu_tally = gpu->alloc(sizeof cpu_tally);
    gpu->upload(gpu_tally, cpu_tally, sizeof cpu_tally);
    for (int i = 0; i < 2; i++) {
        device_cpu_im2col.softmax_xent(batch, classes, logits.cpu, labels, dlogits.cpu, cpu_tally);
        gpu->softmax_xent(batch, classes, logits.gpu, gpu_labels, dlogits.gpu, gpu_tally);
    }
    snprintf(what, sizeof what, "softmax cross-entropy, batch %d, %d classes", batch, classes);
    if (device_ok(what)) {
        read_tally(gpu, gpu_tally, gpu_sums);
        ok(cpu_tally[1] == gpu_sums[1] &&
               fabs(cpu_tally[0] - gpu_sums[0]) <= TOLERANCE * fabs(cpu_tally[0]),
           "%s: loss %.6f and %.0f right added on both (device: %.6f, %.0f)", what, cpu_tally[0],
           cpu_tally[1], gpu_sums[0], gpu_sums[1]);
        report(pair_difference(&dlogits), what);
    }
    free(labels);
    gpu->free(gpu_labels);
    gpu->free(gpu_tally);
    PAIRS_FREE(&in, &out, &dout, &din, &logits, &dlogits);
}

/* The worst tensor of a flat buffer, named. */
static double tensors_difference(model_t *cpu, model_t *dev, int buffers,
                                 double (*compare)(const float *, const float *, size_t),
                                 char *name, size_t size)
{
    const float *cpu_data = buffers ? model_buffers(cpu) : model_grads(cpu);
    const float *dev_data = buffers ? model_buffers(dev) : model_grads(dev);
    double worst = 0;
    for (int i = 0; i < model_tensor_count(cpu); i++) {
        const tensor_info_t *t = model_tensor(cpu, i);
        if (t->is_buffer != buffers)
            continue;
        double d = compare(cpu_data + t->offset, dev_data + t->offset, t->count);
        if (d >= worst) {
            worst = d;
            snprintf(name, size, "%s", t->name);
        }
    }
    return worst;
}

static void check_model(const model_config_t *cfg, int batch, const precision_t *p)
{
    char what[96], worst_name[48] = "", model_text[64];
    model_config_describe(cfg, model_text, sizeof model_text);
    snprintf(what, sizeof what, "%s on %s", model_text, gpu->name);
    ddp_error_t err;
    model_t *cpu = model_create(cfg, &device_cpu, batch, NULL, &err);
    model_t *dev = cpu ? model_create(cfg, gpu, batch, NULL, &err) : NULL;
    ok(cpu && dev, "%s builds on both devices (%s)", what, cpu && dev ? "yes" : err.msg);
    if (!cpu || !dev)
        return;
    model_init(cpu, 11, model_params(cpu), model_buffers(cpu));
    gpu->upload(model_params(dev), model_params(cpu), model_param_count(cpu) * sizeof(float));
    gpu->upload(model_buffers(dev), model_buffers(cpu), model_buffer_count(cpu) * sizeof(float));
    pair_t input = pair_random((size_t)batch * IMAGE_SIZE);
    unsigned char *labels = malloc(batch);
    for (int i = 0; i < batch; i++)
        labels[i] = (unsigned char)rng_below(&rng, CLASSES);

    unsigned char *dev_labels = device_labels(labels, batch);
    double cpu_tally[2] = {0, 0}, dev_tally_sums[2], *dev_tally = gpu->alloc(sizeof cpu_tally);

    const float *cpu_logits = model_forward(cpu, input.cpu, batch, 1);
    const float *dev_logits = model_forward(dev, input.gpu, batch, 1);
    model_loss(cpu, labels, batch, cpu_tally);
    model_loss(dev, dev_labels, batch, dev_tally);
    model_backward(cpu, input.cpu, batch, NULL, NULL);
    model_backward(dev, input.gpu, batch, NULL, NULL);
    int backward_ok = device_cpu.sync(&err) == 0;
    ok(backward_ok, "%s: backward on the CPU (%s)", what, backward_ok ? "yes" : err.msg);
    if (backward_ok && device_ok(what)) {
        read_tally(gpu, dev_tally, dev_tally_sums);
        double cpu_loss = cpu_tally[0], dev_loss = dev_tally_sums[0];
        double logits = difference(cpu_logits, dev_logits, (size_t)batch * CLASSES);
        ok(logits <= p->values && fabs(cpu_loss - dev_loss) <= p->values * fabs(cpu_loss),
           "%s: training forward gives the same logits (%.2g) and loss (%.6f, device %.6f)", what,
           logits, cpu_loss, dev_loss);
        double grads =
            tensors_difference(cpu, dev, 0, p->gradient_difference, worst_name, sizeof worst_name);
        ok(grads <= p->gradients, "%s: every gradient agrees (worst %s, %.2g)", what, worst_name,
           grads);
        if (model_buffer_count(cpu)) {
            double stats =
                tensors_difference(cpu, dev, 1, difference, worst_name, sizeof worst_name);
            ok(stats <= p->values, "%s: every running statistic agrees (worst %s, %.2g)", what,
               worst_name, stats);
        }
        cpu_logits = model_forward(cpu, input.cpu, batch, 0);
        dev_logits = model_forward(dev, input.gpu, batch, 0);
        if (device_ok(what)) {
            logits = difference(cpu_logits, dev_logits, (size_t)batch * CLASSES);
            ok(logits <= p->values, "%s: evaluation forward gives the same logits (%.2g)", what,
               logits);
        }
    }
    free(labels);
    gpu->free(dev_labels);
    gpu->free(dev_tally);
    pair_free(&input);
    model_destroy(cpu);
    model_destroy(dev);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* a kernel that faults leaves the results before it */
    ddp_error_t err;
    if (!(gpu = device_cuda_open(0, GPU_MATH_FLOAT32, &err))) {
        printf("1..0 # SKIP %s\n", err.msg);
        return 0;
    }
    rng = rng_keyed(5, 77, 0, 0);
    conv_shape_t convs[] = {
        {.c = 3, .h = 32, .w = 32, .co = 16, .k = 3, .stride = 1, .pad = 1}, /* the stem */
        {.c = 16, .h = 8, .w = 8, .co = 32, .k = 3, .stride = 2, .pad = 1},  /* entering a stage */
        {.c = 16, .h = 8, .w = 8, .co = 32, .k = 1, .stride = 2, .pad = 0},  /* its shortcut */
        {.c = 5, .h = 7, .w = 6, .co = 4, .k = 3, .stride = 2, .pad = 1},
        {.c = 2, .h = 5, .w = 5, .co = 3, .k = 5, .stride = 1, .pad = 2},
    };
    for (size_t i = 0; i < sizeof convs / sizeof *convs; i++)
        check_conv(convs[i], i == 0 ? 2 : 3);
    check_linear(5, 37, 10);
    for (int relu = 0; relu <= 1; relu++) {
        check_batch_norm(3, 5, 100, relu);
        check_batch_norm(4, 3, 1, relu);
        check_batch_norm(4, 3, 2500, relu);  /* channels summed in several slices */
        check_batch_norm(2, 2, 80000, relu); /* in the most slices there are */
    }
    check_elementwise(1000);
    check_staging(3 * 1024 + 5);
    check_recording(1000);
    check_pool_and_loss(2, 7, 49, 10); /* smaller than the models' batch: the loss rows grow */
    model_config_t mlp = {.name = "mlp", .widths = {64, 32}, .width_count = 2};
    model_config_t resnet = {.name = "resnet", .depth = 8, .width = 1};
    check_model(&mlp, 3, &float32);
    check_model(&resnet, 3, &float32);
    if (!(gpu = device_cuda_open(0, GPU_MATH_BF16, &err))) {
        ok(0, "the device opens for mixed precision (%s)", err.msg);
        return done_testing();
    }
    check_model(&resnet, 16, &mixed_bf16);
    return done_testing();
}
