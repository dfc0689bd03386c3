#include "runtime/train/model/conv_dnnl.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char conv_dnnl_kind[] = "onednn";

/* A tensor as the caller holds it (at a pointer given per call) and as a primitive wants it.
 * `reorder` copies between the two; where the layouts agree there is none and the primitive
 * works on the caller's memory, except for an input gradient that is to be added: the primitive
 * writes it to `inner` and a loop adds it in (`add_floats`: its size). */
typedef struct {
    dnnl_memory_t user, inner;
    dnnl_primitive_t reorder;
    size_t add_floats;
} port_t;

/* The three primitives of one convolution shape at one batch size, with their tensors. */
typedef struct plan {
    conv_shape_t shape;
    int batch, block; /* block: the activation layout's (conv_dnnl.h) */
    int usable;       /* 0: oneDNN made no primitive for it */
    dnnl_primitive_t forward, backward_data, backward_weights;
    port_t fwd_src, fwd_weights, fwd_dst;
    port_t bd_diff_dst, bd_weights, bd_diff_src;
    port_t bw_src, bw_diff_dst, bw_diff_weights;
    /* Both backward primitives read the output gradient in the same layout (the usual case):
     * backward-data takes the copy backward-weights' port made. */
    int diff_dst_shared;
    struct plan *next;
} plan_t;

static dnnl_engine_t engine;
static dnnl_stream_t stream;
static plan_t *plans;
static int cpu_block = -1; /* conv_dnnl_block's, found on first use */
static char failure[200];

typedef enum { INTO_PRIMITIVE, OUT_OF_PRIMITIVE, ADDED_OUT_OF_PRIMITIVE } direction_t;

static int port_make(port_t *p, const dnnl_memory_desc_t *user_md,
                     const dnnl_memory_desc_t *inner_md, direction_t dir)
{
    if (dnnl_memory_create(&p->user, user_md, engine, DNNL_MEMORY_NONE) != dnnl_success)
        return -1;
    if (dir != ADDED_OUT_OF_PRIMITIVE && dnnl_memory_desc_equal(user_md, inner_md)) {
        p->inner = p->user;
        return 0;
    }
    if (dnnl_memory_create(&p->inner, inner_md, engine, DNNL_MEMORY_ALLOCATE) != dnnl_success)
        return -1;
    /* oneDNN's reorder with a sum post-op between equal blocked layouts is its slow generic one;
     * a vector loop does the same. */
    if (dnnl_memory_desc_equal(user_md, inner_md)) {
        p->add_floats = dnnl_memory_desc_get_size(inner_md) / sizeof(float);
        return 0;
    }
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t ops = NULL;
    /* Backward adds into the input gradient (layers.h): the reorder out of the primitive's layout
     * does the adding, as a sum post-op. */
    int bad = dir == ADDED_OUT_OF_PRIMITIVE &&
              (dnnl_primitive_attr_create(&attr) != dnnl_success ||
               dnnl_post_ops_create(&ops) != dnnl_success ||
               dnnl_post_ops_append_sum(ops, 1.0f) != dnnl_success ||
               dnnl_primitive_attr_set_post_ops(attr, ops) != dnnl_success);
    dnnl_primitive_desc_t pd = NULL;
    int into = dir == INTO_PRIMITIVE;
    bad = bad || dnnl_reorder_primitive_desc_create(&pd, into ? user_md : inner_md, engine,
                                                    into ? inner_md : user_md, engine,
                                                    attr) != dnnl_success;
    bad = bad || dnnl_primitive_create(&p->reorder, pd) != dnnl_success;
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (ops)
        dnnl_post_ops_destroy(ops);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    return bad ? -1 : 0;
}

static void port_destroy(port_t *p)
{
    if (p->reorder)
        dnnl_primitive_destroy(p->reorder);
    if (p->inner && p->inner != p->user)
        dnnl_memory_destroy(p->inner);
    if (p->user)
        dnnl_memory_destroy(p->user);
}

static void run(dnnl_primitive_t prim, int nargs, const dnnl_exec_arg_t *args)
{
    dnnl_primitive_execute(prim, stream, nargs, args);
}

static void reorder(dnnl_primitive_t prim, dnnl_memory_t from, dnnl_memory_t to)
{
    run(prim, 2, (dnnl_exec_arg_t[]){{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
}

/* The caller's tensor at `data`, in the primitive's layout. */
static dnnl_memory_t port_in(port_t *p, const float *data)
{
    dnnl_memory_set_data_handle(p->user, (void *)data);
    if (p->reorder)
        reorder(p->reorder, p->user, p->inner);
    return p->inner;
}

/* Where the primitive writes the tensor that port_out then hands to the caller at `data`. */
static dnnl_memory_t port_target(port_t *p, float *data)
{
    dnnl_memory_set_data_handle(p->user, data);
    return p->inner;
}

static void port_out(port_t *p)
{
    if (p->reorder)
        reorder(p->reorder, p->inner, p->user);
    if (p->add_floats) {
        float *to, *from;
        dnnl_stream_wait(stream);
        dnnl_memory_get_data_handle(p->user, (void **)&to);
        dnnl_memory_get_data_handle(p->inner, (void **)&from);
#pragma omp simd
        for (size_t i = 0; i < p->add_floats; i++)
            to[i] += from[i];
    }
}

/* Where the primitive writes an input gradient that port_gradient_out then gives the caller at
 * `data`, written or added as `mode` says: where the layouts agree a written one goes straight to
 * the caller's memory; else the reorder out adds, into zeros when written. */
static dnnl_memory_t port_gradient_target(port_t *p, float *data, grad_mode_t mode)
{
    dnnl_memory_set_data_handle(p->user, data);
    if (mode == GRAD_ADD)
        return p->inner;
    if (p->add_floats)
        return p->user;
    const dnnl_memory_desc_t *md;
    dnnl_memory_get_memory_desc(p->user, &md);
    memset(data, 0, dnnl_memory_desc_get_size(md));
    return p->inner;
}

static void port_gradient_out(port_t *p, grad_mode_t mode)
{
    if (mode == GRAD_ADD || !p->add_floats)
        port_out(p);
}

static const dnnl_memory_desc_t *query(const_dnnl_primitive_desc_t pd, dnnl_query_t what)
{
    return dnnl_primitive_desc_query_md(pd, what, 0);
}

static int make_primitive(dnnl_primitive_t *prim, dnnl_primitive_desc_t pd)
{
    return dnnl_primitive_create(prim, pd) == dnnl_success ? 0 : -1;
}

static void plan_destroy(plan_t *p)
{
    port_t *ports[] = {&p->fwd_src,     &p->fwd_weights, &p->fwd_dst,
                       &p->bd_diff_dst, &p->bd_weights,  &p->bd_diff_src,
                       &p->bw_src,      &p->bw_diff_dst, &p->bw_diff_weights};
    for (size_t i = 0; i < sizeof ports / sizeof *ports; i++)
        port_destroy(ports[i]);
    dnnl_primitive_t prims[] = {p->forward, p->backward_data, p->backward_weights};
    for (size_t i = 0; i < 3; i++)
        if (prims[i])
            dnnl_primitive_destroy(prims[i]);
}

static int engine_ready(void)
{
    return engine ||
           (dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success &&
            dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success);
}

static dnnl_format_tag_t blocked_tag(int channels_per_block)
{
    return channels_per_block == 16 ? dnnl_nChw16c : dnnl_nChw8c;
}

static dnnl_format_tag_t activation_tag(int layout_block, int c)
{
    return layout_blocked(layout_block, c) ? blocked_tag(layout_block) : dnnl_nchw;
}

/* The destination layout oneDNN's forward convolution picks for a typical layer (16 channels in
 * and out, 3x3, 32x32): nChw16c or nChw8c give the block; anything else, none. */
static int probe_block(void)
{
    dnnl_dims_t act = {1, 16, 32, 32}, w = {16, 16, 3, 3}, strides = {1, 1}, pad = {1, 1};
    dnnl_memory_desc_t act_any, w_any, want;
    dnnl_convolution_desc_t d;
    dnnl_primitive_desc_t pd = NULL;
    if (!engine_ready() ||
        dnnl_memory_desc_init_by_tag(&act_any, 4, act, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&w_any, 4, w, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_convolution_forward_desc_init(&d, dnnl_forward_training, dnnl_convolution_direct,
                                           &act_any, &w_any, NULL, &act_any, strides, pad, pad) ||
        dnnl_primitive_desc_create(&pd, &d, NULL, engine, NULL))
        return 0;
    int found = 0;
    for (int lanes = 16; lanes >= 8 && !found; lanes -= 8)
        if (dnnl_memory_desc_init_by_tag(&want, 4, act, dnnl_f32, blocked_tag(lanes)) ==
                dnnl_success &&
            dnnl_memory_desc_equal(&want, query(pd, dnnl_query_dst_md)))
            found = lanes;
    dnnl_primitive_desc_destroy(pd);
    return found;
}

int conv_dnnl_block(void)
{
    if (cpu_block < 0)
        cpu_block = probe_block();
    return cpu_block;
}

/* The three primitives with their layouts chosen by oneDNN (format "any"): where one differs
 * from the activation layout, a reorder on the way. -1 where oneDNN has none for this shape. */
static int plan_build(plan_t *p)
{
    const conv_shape_t *s = &p->shape;
    dnnl_dims_t src_dims = {p->batch, s->c, s->h, s->w}, dst_dims = {p->batch, s->co, s->ho, s->wo},
                w_dims = {s->co, s->c, s->k, s->k}, strides = {s->stride, s->stride},
                pad = {s->pad, s->pad};
    dnnl_memory_desc_t src_user, dst_user, w_user, src_any, dst_any, w_any;
    if (dnnl_memory_desc_init_by_tag(&src_user, 4, src_dims, dnnl_f32,
                                     activation_tag(p->block, s->c)) ||
        dnnl_memory_desc_init_by_tag(&dst_user, 4, dst_dims, dnnl_f32,
                                     activation_tag(p->block, s->co)) ||
        dnnl_memory_desc_init_by_tag(&w_user, 4, w_dims, dnnl_f32, dnnl_oihw) ||
        dnnl_memory_desc_init_by_tag(&src_any, 4, src_dims, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&dst_any, 4, dst_dims, dnnl_f32, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&w_any, 4, w_dims, dnnl_f32, dnnl_format_tag_any))
        return -1;

    dnnl_convolution_desc_t fwd_d, bd_d, bw_d;
    dnnl_primitive_desc_t fwd = NULL, bd = NULL, bw = NULL;
    int bad =
        dnnl_convolution_forward_desc_init(&fwd_d, dnnl_forward_training, dnnl_convolution_direct,
                                           &src_any, &w_any, NULL, &dst_any, strides, pad, pad) ||
        dnnl_primitive_desc_create(&fwd, &fwd_d, NULL, engine, NULL) ||
        dnnl_convolution_backward_data_desc_init(&bd_d, dnnl_convolution_direct, &src_any, &w_any,
                                                 &dst_any, strides, pad, pad) ||
        dnnl_primitive_desc_create(&bd, &bd_d, NULL, engine, fwd) ||
        dnnl_convolution_backward_weights_desc_init(&bw_d, dnnl_convolution_direct, &src_any,
                                                    &w_any, NULL, &dst_any, strides, pad, pad) ||
        dnnl_primitive_desc_create(&bw, &bw_d, NULL, engine, fwd);
    bad =
        bad || make_primitive(&p->forward, fwd) || make_primitive(&p->backward_data, bd) ||
        make_primitive(&p->backward_weights, bw) ||
        port_make(&p->fwd_src, &src_user, query(fwd, dnnl_query_src_md), INTO_PRIMITIVE) ||
        port_make(&p->fwd_weights, &w_user, query(fwd, dnnl_query_weights_md), INTO_PRIMITIVE) ||
        port_make(&p->fwd_dst, &dst_user, query(fwd, dnnl_query_dst_md), OUT_OF_PRIMITIVE) ||
        port_make(&p->bd_weights, &w_user, query(bd, dnnl_query_weights_md), INTO_PRIMITIVE) ||
        port_make(&p->bd_diff_src, &src_user, query(bd, dnnl_query_diff_src_md),
                  ADDED_OUT_OF_PRIMITIVE) ||
        port_make(&p->bw_src, &src_user, query(bw, dnnl_query_src_md), INTO_PRIMITIVE) ||
        port_make(&p->bw_diff_dst, &dst_user, query(bw, dnnl_query_diff_dst_md), INTO_PRIMITIVE) ||
        port_make(&p->bw_diff_weights, &w_user, query(bw, dnnl_query_diff_weights_md),
                  OUT_OF_PRIMITIVE);
    p->diff_dst_shared = !bad && dnnl_memory_desc_equal(query(bd, dnnl_query_diff_dst_md),
                                                        query(bw, dnnl_query_diff_dst_md));
    bad = bad ||
          (!p->diff_dst_shared && port_make(&p->bd_diff_dst, &dst_user,
                                            query(bd, dnnl_query_diff_dst_md), INTO_PRIMITIVE));
    dnnl_primitive_desc_t pds[] = {fwd, bd, bw};
    for (size_t i = 0; i < 3; i++)
        if (pds[i])
            dnnl_primitive_desc_destroy(pds[i]);
    return bad ? -1 : 0;
}

static plan_t *record_failure(const conv_shape_t *s, int batch)
{
    if (!failure[0])
        snprintf(failure, sizeof failure,
                 "oneDNN made no convolution for %dx%dx%d -> %dx%dx%d (kernel %d, stride %d) at "
                 "batch %d (out of memory?)",
                 s->c, s->h, s->w, s->co, s->ho, s->wo, s->k, s->stride, batch);
    return NULL;
}

/* The plan for this shape, batch and layout, made on first use; NULL (recorded) where oneDNN
 * cannot run it. */
static plan_t *plan_for(const conv_shape_t *s, int batch, int layout_block)
{
    for (plan_t *p = plans; p; p = p->next)
        if (p->batch == batch && p->block == layout_block && !memcmp(&p->shape, s, sizeof *s))
            return p->usable ? p : record_failure(s, batch);
    if (!engine_ready())
        return record_failure(s, batch);
    plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return record_failure(s, batch);
    p->shape = *s;
    p->batch = batch;
    p->block = layout_block;
    p->usable = plan_build(p) == 0;
    if (!p->usable)
        plan_destroy(p); /* kept in the list, so the shape is not tried again */
    p->next = plans;
    plans = p;
    return p->usable ? p : record_failure(s, batch);
}

int conv_dnnl_failure(ddp_error_t *err)
{
    if (!failure[0])
        return 0;
    ddp_error_set(err, "%s", failure);
    failure[0] = 0;
    return -1;
}

size_t conv_dnnl_workspace(const conv_shape_t *s, int batch)
{
    return 0;
}

void conv_dnnl_forward(const conv_shape_t *s, int batch, int block, const float *in,
                       const float *weight, float *out, float *work)
{
    plan_t *p = plan_for(s, batch, block);
    if (!p)
        return;
    run(p->forward, 3,
        (dnnl_exec_arg_t[]){{DNNL_ARG_SRC, port_in(&p->fwd_src, in)},
                            {DNNL_ARG_WEIGHTS, port_in(&p->fwd_weights, weight)},
                            {DNNL_ARG_DST, port_target(&p->fwd_dst, out)}});
    port_out(&p->fwd_dst);
    dnnl_stream_wait(stream);
}

void conv_dnnl_backward(const conv_shape_t *s, int batch, int block, const float *in,
                        const float *weight, const float *dout, float *din, grad_mode_t din_mode,
                        float *dweight, float *work)
{
    plan_t *p = plan_for(s, batch, block);
    if (!p)
        return;
    run(p->backward_weights, 3,
        (dnnl_exec_arg_t[]){{DNNL_ARG_SRC, port_in(&p->bw_src, in)},
                            {DNNL_ARG_DIFF_DST, port_in(&p->bw_diff_dst, dout)},
                            {DNNL_ARG_DIFF_WEIGHTS, port_target(&p->bw_diff_weights, dweight)}});
    port_out(&p->bw_diff_weights);
    if (din) {
        run(p->backward_data, 3,
            (dnnl_exec_arg_t[]){
                {DNNL_ARG_DIFF_DST,
                 p->diff_dst_shared ? p->bw_diff_dst.inner : port_in(&p->bd_diff_dst, dout)},
                {DNNL_ARG_WEIGHTS, port_in(&p->bd_weights, weight)},
                {DNNL_ARG_DIFF_SRC, port_gradient_target(&p->bd_diff_src, din, din_mode)}});
        port_gradient_out(&p->bd_diff_src, din_mode);
    }
    dnnl_stream_wait(stream);
}

void conv_dnnl_set_threads(int n)
{
    omp_set_num_threads(n);
}
