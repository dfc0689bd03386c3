#include "conv_dnnl.h"

#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

const char conv_dnnl_kind[] = "onednn";

/* A tensor as the caller holds it (plain layout, at a pointer given per call) and as a primitive
 * wants it. `reorder` copies between the two; where the layouts agree there is none and the
 * primitive works on the caller's memory. */
typedef struct {
    dnnl_memory_t user, inner;
    dnnl_primitive_t reorder;
} port_t;

/* The three primitives of one convolution shape at one batch size, with their tensors. */
typedef struct plan {
    conv_shape_t shape;
    int batch;
    int usable; /* 0: oneDNN made no primitive for it, the im2col path runs it */
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

/* The three primitives with their layouts chosen by oneDNN (format "any"). -1 where oneDNN
 * has none for this shape. */
static int plan_build(plan_t *p)
{
    const conv_shape_t *s = &p->shape;
    dnnl_dims_t src_dims = {p->batch, s->c, s->h, s->w}, dst_dims = {p->batch, s->co, s->ho, s->wo},
                w_dims = {s->co, s->c, s->k, s->k}, strides = {s->stride, s->stride},
                pad = {s->pad, s->pad};
    dnnl_memory_desc_t src_user, dst_user, w_user, src_any, dst_any, w_any;
    if (dnnl_memory_desc_init_by_tag(&src_user, 4, src_dims, dnnl_f32, dnnl_nchw) ||
        dnnl_memory_desc_init_by_tag(&dst_user, 4, dst_dims, dnnl_f32, dnnl_nchw) ||
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

/* The plan for this shape and batch, made on first use; NULL where oneDNN cannot run it. */
static plan_t *plan_for(const conv_shape_t *s, int batch)
{
    for (plan_t *p = plans; p; p = p->next)
        if (p->batch == batch && !memcmp(&p->shape, s, sizeof *s))
            return p->usable ? p : NULL;
    if (!engine && (dnnl_engine_create(&engine, dnnl_cpu, 0) != dnnl_success ||
                    dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) != dnnl_success))
        return NULL;
    plan_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->shape = *s;
    p->batch = batch;
    p->usable = plan_build(p) == 0;
    if (!p->usable)
        plan_destroy(p); /* kept in the list, so the shape is not tried again */
    p->next = plans;
    plans = p;
    return p->usable ? p : NULL;
}

void conv_dnnl_forward(const conv_shape_t *s, int batch, const float *in, const float *weight,
                       float *out, float *work)
{
    plan_t *p = plan_for(s, batch);
    if (!p) {
        conv_forward(s, batch, in, weight, out, work);
        return;
    }
    run(p->forward, 3,
        (dnnl_exec_arg_t[]){{DNNL_ARG_SRC, port_in(&p->fwd_src, in)},
                            {DNNL_ARG_WEIGHTS, port_in(&p->fwd_weights, weight)},
                            {DNNL_ARG_DST, port_target(&p->fwd_dst, out)}});
    port_out(&p->fwd_dst);
    dnnl_stream_wait(stream);
}

void conv_dnnl_backward(const conv_shape_t *s, int batch, const float *in, const float *weight,
                        const float *dout, float *din, float *dweight, float *work)
{
    plan_t *p = plan_for(s, batch);
    if (!p) {
        conv_backward(s, batch, in, weight, dout, din, dweight, work);
        return;
    }
    run(p->backward_weights, 3,
        (dnnl_exec_arg_t[]){{DNNL_ARG_SRC, port_in(&p->bw_src, in)},
                            {DNNL_ARG_DIFF_DST, port_in(&p->bw_diff_dst, dout)},
                            {DNNL_ARG_DIFF_WEIGHTS, port_target(&p->bw_diff_weights, dweight)}});
    port_out(&p->bw_diff_weights);
    if (din) {
        run(p->backward_data, 3,
            (dnnl_exec_arg_t[]){{DNNL_ARG_DIFF_DST, p->diff_dst_shared
                                                        ? p->bw_diff_dst.inner
                                                        : port_in(&p->bd_diff_dst, dout)},
                                {DNNL_ARG_WEIGHTS, port_in(&p->bd_weights, weight)},
                                {DNNL_ARG_DIFF_SRC, port_target(&p->bd_diff_src, din)}});
        port_out(&p->bd_diff_src);
    }
    dnnl_stream_wait(stream);
}

void conv_dnnl_set_threads(int n)
{
    omp_set_num_threads(n);
}
