/* Batch norm + ReLU on the CPU, forward and backward, for ResNet-20's three shapes: ours as two
 * layers and fused on NCHW tensors (what --cpu-conv onednn-nchw and im2col run), ours fused on
 * the blocked layout (layers_blocked.c: what ddp-train runs by default), and oneDNN's batch-norm
 * primitive with its ReLU fused (fuse_norm_relu) in the same blocked layout, with and without the
 * reorders to and from NCHW tensors.
 *   batchnorm BATCH   -> one line per shape, milliseconds per forward + backward, and ratios
 * Single thread (one rank per core), median of REPS runs of 20 after a warm-up. */
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/train/model/conv_dnnl.h"
#include "runtime/train/model/layers_blocked.h"

#define RUNS 20
#define REPS 5

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    bn_shape_t shape;
    size_t n;
    float *x, *y, *dy, *dx, *gamma, *beta, *running, *saved, *dgamma, *dbeta, *relu_out, *relu_dx;
} tensors_t;

typedef void (*step_fn)(tensors_t *t, void *ctx);

/* Milliseconds per call of `step`, median of REPS timings of RUNS calls each. */
static double time_step(step_fn step, tensors_t *t, void *ctx)
{
    double runs[REPS];
    step(t, ctx);
    for (int r = 0; r < REPS; r++) {
        double start = now();
        for (int i = 0; i < RUNS; i++)
            step(t, ctx);
        runs[r] = (now() - start) * 1e3 / RUNS;
    }
    qsort(runs, REPS, sizeof *runs, by_value);
    return runs[REPS / 2];
}

static void ours_separate(tensors_t *t, void *ctx)
{
    bn_shape_t plain = t->shape;
    plain.relu = 0;
    bn_forward(&plain, t->x, t->gamma, t->beta, t->running, 1, t->saved, t->y);
    relu_forward(t->n, t->y, t->relu_out);
    memset(t->relu_dx, 0,
           t->n * sizeof(float)); /* a ReLU adds: the model zeroes its input gradient */
    relu_backward(t->n, t->relu_out, t->dy, t->relu_dx);
    bn_backward(&plain, t->x, t->gamma, t->saved, t->y, t->relu_dx, t->dx, GRAD_WRITE, t->dgamma,
                t->dbeta);
}

static void ours_fused(tensors_t *t, void *ctx)
{
    bn_forward(&t->shape, t->x, t->gamma, t->beta, t->running, 1, t->saved, t->y);
    bn_backward(&t->shape, t->x, t->gamma, t->saved, t->y, t->dy, t->dx, GRAD_WRITE, t->dgamma,
                t->dbeta);
}

/* Same tensors, read as blocked ones: the numbers differ, the work does not. */
static void ours_blocked(tensors_t *t, void *ctx)
{
    int block = *(const int *)ctx;
    bn_forward_blocked(&t->shape, block, t->x, t->gamma, t->beta, t->running, 1, t->saved, t->y);
    bn_backward_blocked(&t->shape, block, t->x, t->gamma, t->saved, t->y, t->dy, t->dx, GRAD_WRITE,
                        t->dgamma, t->dbeta);
}

/* oneDNN's primitives for one shape, the blocked tensors they work on, and the reorders. */
typedef struct {
    dnnl_stream_t stream;
    dnnl_primitive_t forward, backward, to_blocked, to_plain;
    dnnl_memory_t x, y, dy, dx, plain_x, plain_y, plain_dy, plain_dx;
    dnnl_memory_t mean, variance, workspace, gamma, beta, dgamma, dbeta;
    int reorders;
} onednn_t;

static void execute(onednn_t *o, dnnl_primitive_t p, int n, const dnnl_exec_arg_t *args)
{
    dnnl_primitive_execute(p, o->stream, n, args);
}

static void reorder(onednn_t *o, dnnl_primitive_t p, dnnl_memory_t from, dnnl_memory_t to)
{
    execute(o, p, 2, (dnnl_exec_arg_t[]){{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

static void onednn_step(tensors_t *t, void *ctx)
{
    onednn_t *o = ctx;
    if (o->reorders)
        reorder(o, o->to_blocked, o->plain_x, o->x);
    execute(o, o->forward, 7,
            (dnnl_exec_arg_t[]){{DNNL_ARG_SRC, o->x},
                                {DNNL_ARG_DST, o->y},
                                {DNNL_ARG_MEAN, o->mean},
                                {DNNL_ARG_VARIANCE, o->variance},
                                {DNNL_ARG_SCALE, o->gamma},
                                {DNNL_ARG_SHIFT, o->beta},
                                {DNNL_ARG_WORKSPACE, o->workspace}});
    if (o->reorders) {
        reorder(o, o->to_plain, o->y, o->plain_y);
        reorder(o, o->to_blocked, o->plain_dy, o->dy);
    }
    execute(o, o->backward, 10,
            (dnnl_exec_arg_t[]){{DNNL_ARG_SRC, o->x},
                                {DNNL_ARG_DIFF_DST, o->dy},
                                {DNNL_ARG_MEAN, o->mean},
                                {DNNL_ARG_VARIANCE, o->variance},
                                {DNNL_ARG_SCALE, o->gamma},
                                {DNNL_ARG_SHIFT, o->beta},
                                {DNNL_ARG_WORKSPACE, o->workspace},
                                {DNNL_ARG_DIFF_SRC, o->dx},
                                {DNNL_ARG_DIFF_SCALE, o->dgamma},
                                {DNNL_ARG_DIFF_SHIFT, o->dbeta}});
    if (o->reorders)
        reorder(o, o->to_plain, o->dx, o->plain_dx);
    dnnl_stream_wait(o->stream);
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        if ((call) != dnnl_success) {                                                              \
            fprintf(stderr, "batchnorm: oneDNN: %s failed\n", #call);                              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static dnnl_memory_t memory(dnnl_engine_t engine, const dnnl_memory_desc_t *md, void *data)
{
    dnnl_memory_t m;
    CHECK(dnnl_memory_create(&m, md, engine, data ? data : DNNL_MEMORY_ALLOCATE));
    return m;
}

static dnnl_primitive_t reorder_primitive(dnnl_engine_t engine, const dnnl_memory_desc_t *from,
                                          const dnnl_memory_desc_t *to)
{
    dnnl_primitive_desc_t pd;
    dnnl_primitive_t p;
    CHECK(dnnl_reorder_primitive_desc_create(&pd, from, engine, to, engine, NULL));
    CHECK(dnnl_primitive_create(&p, pd));
    dnnl_primitive_desc_destroy(pd);
    return p;
}

/* oneDNN's fused batch norm + ReLU for t's shape (side x side planes) in the blocked layout its
 * convolutions use on this CPU (16 channels per block with AVX-512, else 8); `impl` gets its
 * implementation. */
static void onednn_make(onednn_t *o, dnnl_engine_t engine, tensors_t *t, int side,
                        const char **impl)
{
    dnnl_dims_t dims = {t->shape.batch, t->shape.c, side, side}, channels = {t->shape.c};
    dnnl_format_tag_t blocked = conv_dnnl_block() == 16 ? dnnl_nChw16c : dnnl_nChw8c;
    dnnl_memory_desc_t md, plain, vec;
    CHECK(dnnl_memory_desc_init_by_tag(&md, 4, dims, dnnl_f32, blocked));
    CHECK(dnnl_memory_desc_init_by_tag(&plain, 4, dims, dnnl_f32, dnnl_nchw));
    CHECK(dnnl_memory_desc_init_by_tag(&vec, 1, channels, dnnl_f32, dnnl_a));
    unsigned flags = dnnl_use_scale | dnnl_use_shift | dnnl_fuse_norm_relu;
    dnnl_batch_normalization_desc_t fd, bd;
    dnnl_primitive_desc_t fpd, bpd;
    CHECK(
        dnnl_batch_normalization_forward_desc_init(&fd, dnnl_forward_training, &md, BN_EPS, flags));
    CHECK(dnnl_primitive_desc_create(&fpd, &fd, NULL, engine, NULL));
    CHECK(dnnl_batch_normalization_backward_desc_init(&bd, dnnl_backward, &md, &md, BN_EPS, flags));
    CHECK(dnnl_primitive_desc_create(&bpd, &bd, NULL, engine, fpd));
    CHECK(dnnl_primitive_desc_query(fpd, dnnl_query_impl_info_str, 0, impl));
    CHECK(dnnl_primitive_create(&o->forward, fpd));
    CHECK(dnnl_primitive_create(&o->backward, bpd));
    o->workspace =
        memory(engine, dnnl_primitive_desc_query_md(fpd, dnnl_query_workspace_md, 0), NULL);
    o->mean = memory(engine, &vec, NULL);
    o->variance = memory(engine, &vec, NULL);
    o->gamma = memory(engine, &vec, t->gamma);
    o->beta = memory(engine, &vec, t->beta);
    o->dgamma = memory(engine, &vec, t->dgamma);
    o->dbeta = memory(engine, &vec, t->dbeta);
    o->x = memory(engine, &md, NULL);
    o->y = memory(engine, &md, NULL);
    o->dy = memory(engine, &md, NULL);
    o->dx = memory(engine, &md, NULL);
    o->plain_x = memory(engine, &plain, t->x);
    o->plain_y = memory(engine, &plain, t->relu_out);
    o->plain_dy = memory(engine, &plain, t->dy);
    o->plain_dx = memory(engine, &plain, t->relu_dx);
    o->to_blocked = reorder_primitive(engine, &plain, &md);
    o->to_plain = reorder_primitive(engine, &md, &plain);
    o->reorders = 1;
    reorder(o, o->to_blocked, o->plain_x, o->x);
    reorder(o, o->to_blocked, o->plain_dy, o->dy);
    dnnl_primitive_desc_destroy(fpd);
    dnnl_primitive_desc_destroy(bpd);
}

static float *filled(size_t n, float scale, float offset)
{
    float *p = malloc(n * sizeof *p);
    if (!p) {
        fprintf(stderr, "batchnorm: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = offset + scale * ((float)rand() / (float)RAND_MAX - 0.5f);
    return p;
}

int main(int argc, char **argv)
{
    int batch = argc > 1 ? atoi(argv[1]) : 64;
    if (batch < 1) {
        fprintf(stderr, "usage: batchnorm BATCH\n");
        return 2;
    }
    dnnl_engine_t engine;
    onednn_t o = {0};
    CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&o.stream, engine, dnnl_stream_default_flags));
    layers_set_threads(1);
    int block = conv_dnnl_block();
    if (!block) {
        fprintf(stderr, "batchnorm: oneDNN's convolutions choose no blocked layout here\n");
        return 1;
    }
    printf("%-10s %9s %9s %9s %9s %9s %8s %8s %8s  %s\n", "shape", "separate", "fused", "blocked",
           "onednn", "+reorder", "fusion", "blocked", "onednn", "oneDNN implementation");
    const int shapes[][2] = {{16, 32}, {32, 16}, {64, 8}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int c = shapes[s][0], side = shapes[s][1];
        tensors_t t = {.shape = {batch, c, side * side, 1}};
        t.n = (size_t)batch * c * side * side;
        t.x = filled(t.n, 2, 0.3f), t.dy = filled(t.n, 1, 0), t.y = filled(t.n, 0, 0);
        t.dx = filled(t.n, 0, 0), t.relu_out = filled(t.n, 0, 0), t.relu_dx = filled(t.n, 0, 0);
        t.gamma = filled(c, 0.2f, 1), t.beta = filled(c, 0.2f, 0), t.running = filled(2 * c, 0, 1);
        t.saved = filled(2 * c, 0, 0), t.dgamma = filled(c, 0, 0), t.dbeta = filled(c, 0, 0);
        const char *impl;
        onednn_make(&o, engine, &t, side, &impl);
        double separate = time_step(ours_separate, &t, NULL),
               fused = time_step(ours_fused, &t, NULL), ours = time_step(ours_blocked, &t, &block);
        double with_reorders = time_step(onednn_step, &t, &o);
        o.reorders = 0;
        double blocked = time_step(onednn_step, &t, &o);
        char name[32];
        snprintf(name, sizeof name, "%dx%dx%d", c, side, side);
        printf("%-10s %9.3f %9.3f %9.3f %9.3f %9.3f %7.2fx %7.2fx %7.2fx  %s\n", name, separate,
               fused, ours, blocked, with_reorders, separate / fused, fused / ours, blocked / ours,
               impl);
    }
    printf("ms per forward + backward at batch %d, one thread, blocks of %d channels. fusion: "
           "separate / fused; blocked: fused / blocked (ours on each layout); onednn: oneDNN "
           "blocked / ours blocked (> 1: ours faster); +reorder: oneDNN with the reorders NCHW "
           "layers would need\n",
           batch, block);
    return 0;
}
