#include "runtime/train/model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/train/model/layers.h"
#include "runtime/train/data/rng.h"

typedef enum {
    NODE_INPUT,
    NODE_CONV,
    NODE_BN,
    NODE_RELU,
    NODE_ADD,
    NODE_POOL,
    NODE_LINEAR
} node_kind_t;

typedef struct {
    node_kind_t kind;
    int in0, in1;
    int c, h, w;         /* output, per sample (linear: c features, h = w = 1) */
    conv_shape_t conv;   /* conv */
    size_t weight, bias; /* param offsets: conv/linear weight and linear bias; bn gamma and beta */
    int has_params;
    size_t running; /* bn: running mean and variance in the buffers */
    size_t saved;   /* bn: batch mean and 1/std of the last training forward */
    int relu;       /* bn, add: the ReLU that follows it, fused */
    size_t elem;    /* bytes per element of its output: a feature map's (device.h) or a float */
    size_t act;     /* byte offset of this node's output in the activations */
    /* Backward (plan_gradients): how this node stores its inputs' gradients; the backward step
     * whose node first stores into its own output's gradient (the loss's: node_count), before
     * which that gradient is zeroed when zero_grad; and where the gradient lives in act_grads,
     * shared with nodes whose gradients are never live at the same time. */
    grad_mode_t in0_mode, in1_mode;
    int first_writer, zero_grad;
    size_t grad; /* byte offset */
} node_t;

struct model {
    model_config_t cfg;
    const device_ops_t *dev;
    int batch_cap;
    node_t *nodes;
    int node_count;
    tensor_info_t *tensors;
    int tensor_count;
    size_t param_count, buffer_count, saved_count, work_count; /* floats */
    size_t act_bytes, act_grad_bytes;
    float *params, *grads, *buffers, *acts, *act_grads, *saved, *work; /* work: conv's */
    grad_memory_t grad_memory; /* where grads came from, when not the device's */
    int failed;                /* out of memory while building */
};

int model_config_check(const model_config_t *cfg, ddp_error_t *err)
{
    if (strcmp(cfg->name, "mlp") == 0) {
        for (int i = 0; i < cfg->width_count; i++)
            if (cfg->widths[i] < 1 || cfg->widths[i] > 65536)
                return ddp_error_set(err, "mlp width %d is out of range (1 to 65536)",
                                     cfg->widths[i]);
        return 0;
    }
    if (strcmp(cfg->name, "resnet") == 0) {
        if (cfg->depth < 8 || (cfg->depth - 2) % 6 != 0 || cfg->depth > 1202)
            return ddp_error_set(
                err, "resnet depth %d is not 6n+2 (8, 14, 20, 32, 44, 56, 110, ...)", cfg->depth);
        if (cfg->width < 1 || cfg->width > 64)
            return ddp_error_set(err, "resnet width %d is out of range (1 to 64)", cfg->width);
        return 0;
    }
    return ddp_error_set(err, "unknown model \"%s\" (mlp or resnet)", cfg->name);
}

void model_config_describe(const model_config_t *cfg, char *buf, size_t size)
{
    if (strcmp(cfg->name, "resnet") == 0) {
        snprintf(buf, size, "resnet depth=%d width=%d", cfg->depth, cfg->width);
        return;
    }
    size_t len = (size_t)snprintf(buf, size, "mlp widths=");
    for (int i = 0; i < cfg->width_count && len < size; i++)
        len += (size_t)snprintf(buf + len, size - len, "%s%d", i ? "," : "", cfg->widths[i]);
    if (cfg->width_count == 0 && len < size)
        snprintf(buf + len, size - len, "none");
}

static size_t node_size(const node_t *n)
{
    return (size_t)n->c * n->h * n->w;
}

/* Tensors start 256-byte aligned, as cudaMalloc's do (cuDNN's fastest kernels want it). */
static size_t node_bytes(const node_t *n, int batch)
{
    return (node_size(n) * n->elem * (size_t)batch + 255) & ~(size_t)255;
}

static float *activation(const model_t *m, const node_t *n)
{
    return (float *)((char *)m->acts + n->act);
}

static float *activation_grad(const model_t *m, const node_t *n)
{
    return (float *)((char *)m->act_grads + n->grad);
}

static int is_feature_map(node_kind_t kind)
{
    return kind == NODE_CONV || kind == NODE_BN || kind == NODE_ADD;
}

/* Whether the first layer reads image_input's converted copy rather than the caller's batch. */
static int input_converted(const model_t *m)
{
    return m->nodes[0].elem != sizeof(float);
}

/* ---- building the graph ------------------------------------------------------------------- */

static size_t add_tensor(model_t *m, const char *prefix, const char *suffix, int is_buffer,
                         int ndim, const int *dims)
{
    tensor_info_t *grown = realloc(m->tensors, (size_t)(m->tensor_count + 1) * sizeof *grown);
    if (!grown) {
        m->failed = 1;
        return 0;
    }
    m->tensors = grown;
    tensor_info_t *t = &m->tensors[m->tensor_count++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s%s%s", prefix, *prefix ? "." : "", suffix);
    t->is_buffer = is_buffer;
    t->ndim = ndim;
    t->count = 1;
    for (int i = 0; i < ndim; i++) {
        t->dims[i] = dims[i];
        t->count *= (size_t)dims[i];
    }
    size_t *next = is_buffer ? &m->buffer_count : &m->param_count;
    t->offset = *next;
    *next += t->count;
    return t->offset;
}

/* Room for n's output among the activations, at the model's batch cap. */
static void hold_output(model_t *m, node_t *n)
{
    n->act = m->act_bytes;
    m->act_bytes += node_bytes(n, m->batch_cap);
}

static int add_node(model_t *m, node_kind_t kind, int in0, int in1, int c, int h, int w)
{
    node_t *grown = realloc(m->nodes, (size_t)(m->node_count + 1) * sizeof *grown);
    if (!grown) {
        m->failed = 1;
        return 0;
    }
    m->nodes = grown;
    node_t *n = &m->nodes[m->node_count];
    *n = (node_t){.kind = kind, .in0 = in0, .in1 = in1, .c = c, .h = h, .w = w};
    n->elem = is_feature_map(kind) ? m->dev->feature_size : sizeof(float);
    /* The input node's output is the caller's batch, not an activation of ours. */
    if (kind != NODE_INPUT)
        hold_output(m, n);
    return m->node_count++;
}

/* The image batch as a convolution reads it: where feature maps are not floats, a converted
 * copy of the caller's batch, held with the activations. */
static int image_input(model_t *m)
{
    int id = add_node(m, NODE_INPUT, -1, -1, IMAGE_C, IMAGE_H, IMAGE_W);
    node_t *n = &m->nodes[id];
    if (!m->failed && m->dev->feature_size != sizeof(float)) {
        n->elem = m->dev->feature_size;
        hold_output(m, n);
    }
    return id;
}

static int conv(model_t *m, int in, int co, int k, int stride, const char *name)
{
    const node_t *src = &m->nodes[in];
    int pad = k / 2, ho = (src->h + 2 * pad - k) / stride + 1,
        wo = (src->w + 2 * pad - k) / stride + 1;
    int id = add_node(m, NODE_CONV, in, -1, co, ho, wo);
    if (m->failed)
        return 0;
    node_t *n = &m->nodes[id];
    src = &m->nodes[in];
    n->conv = (conv_shape_t){src->c, src->h, src->w, co, ho, wo, k, stride, pad};
    int dims[4] = {co, src->c, k, k};
    n->weight = add_tensor(m, name, "weight", 0, 4, dims);
    n->has_params = 1;
    size_t work = m->dev->conv_workspace(&n->conv, m->batch_cap);
    if (work > m->work_count)
        m->work_count = work;
    return id;
}

/* relu: the ReLU after it runs inside it (one node, one pass over the tensor each way). */
static int batchnorm(model_t *m, int in, const char *name, int relu)
{
    const node_t *src = &m->nodes[in];
    int id = add_node(m, NODE_BN, in, -1, src->c, src->h, src->w);
    if (m->failed)
        return 0;
    node_t *n = &m->nodes[id];
    int c = n->c;
    n->weight = add_tensor(m, name, "weight", 0, 1, &c);
    n->bias = add_tensor(m, name, "bias", 0, 1, &c);
    n->running = add_tensor(m, name, "running_mean", 1, 1, &c);
    add_tensor(m, name, "running_var", 1, 1, &c);
    n->has_params = 1;
    n->saved = m->saved_count;
    n->relu = relu;
    m->saved_count += 2 * (size_t)c;
    return id;
}

static int same_shape(model_t *m, node_kind_t kind, int in0, int in1)
{
    const node_t *src = &m->nodes[in0];
    return add_node(m, kind, in0, in1, src->c, src->h, src->w);
}

static int linear(model_t *m, int in, int out, const char *name)
{
    const node_t *src = &m->nodes[in];
    int fan_in = src->c * src->h * src->w;
    int id = add_node(m, NODE_LINEAR, in, -1, out, 1, 1);
    if (m->failed)
        return 0;
    node_t *n = &m->nodes[id];
    int dims[2] = {out, fan_in};
    n->weight = add_tensor(m, name, "weight", 0, 2, dims);
    n->bias = add_tensor(m, name, "bias", 0, 1, &out);
    n->has_params = 1;
    return id;
}

static void build_mlp(model_t *m)
{
    int x = add_node(m, NODE_INPUT, -1, -1, IMAGE_C, IMAGE_H, IMAGE_W);
    char name[16];
    for (int i = 0; i < m->cfg.width_count && !m->failed; i++) {
        snprintf(name, sizeof name, "fc%d", i + 1);
        x = same_shape(m, NODE_RELU, linear(m, x, m->cfg.widths[i], name), -1);
    }
    snprintf(name, sizeof name, "fc%d", m->cfg.width_count + 1);
    if (!m->failed)
        linear(m, x, CLASSES, name);
}

static int basic_block(model_t *m, int in, int planes, int stride, const char *prefix)
{
    char name[40];
    snprintf(name, sizeof name, "%s.conv1", prefix);
    int x = conv(m, in, planes, 3, stride, name);
    snprintf(name, sizeof name, "%s.bn1", prefix);
    x = batchnorm(m, x, name, 1);
    snprintf(name, sizeof name, "%s.conv2", prefix);
    x = conv(m, x, planes, 3, 1, name);
    snprintf(name, sizeof name, "%s.bn2", prefix);
    x = batchnorm(m, x, name, 0);
    int shortcut = in;
    if (!m->failed && (stride != 1 || m->nodes[in].c != planes)) {
        snprintf(name, sizeof name, "%s.shortcut.0", prefix);
        shortcut = conv(m, in, planes, 1, stride, name);
        snprintf(name, sizeof name, "%s.shortcut.1", prefix);
        shortcut = batchnorm(m, shortcut, name, 0);
    }
    if (m->failed)
        return 0;
    int out = same_shape(m, NODE_ADD, x, shortcut);
    if (!m->failed)
        m->nodes[out].relu = 1;
    return out;
}

static void build_resnet(model_t *m)
{
    int blocks = (m->cfg.depth - 2) / 6, w = m->cfg.width;
    int x = image_input(m);
    x = batchnorm(m, conv(m, x, 16 * w, 3, 1, "conv1"), "bn1", 1);
    for (int stage = 0; stage < 3 && !m->failed; stage++)
        for (int b = 0; b < blocks && !m->failed; b++) {
            char prefix[24];
            snprintf(prefix, sizeof prefix, "layer%d.%d", stage + 1, b);
            x = basic_block(m, x, (16 * w) << stage, stage > 0 && b == 0 ? 2 : 1, prefix);
        }
    if (m->failed)
        return;
    const node_t *last = &m->nodes[x];
    x = add_node(m, NODE_POOL, x, -1, last->c, 1, 1);
    if (!m->failed)
        linear(m, x, CLASSES, "fc");
}

/* The layers that can write an input gradient rather than add to it (layers.h). */
static int writes_gradients(node_kind_t kind)
{
    return kind == NODE_CONV || kind == NODE_BN || kind == NODE_ADD;
}

/* A gradient's place in act_grads while it is live: the blocks live at one step of the backward,
 * by offset. */
typedef struct {
    size_t offset, size;
    int node;
} grad_block_t;

/* The lowest offset where size fits among the live blocks; the block is then live there. */
static size_t grad_block_place(grad_block_t *live, int *count, size_t size, int node)
{
    size_t at = 0;
    int k = 0;
    for (; k < *count && live[k].offset - at < size; k++)
        at = live[k].offset + live[k].size;
    memmove(&live[k + 1], &live[k], (size_t)(*count - k) * sizeof *live);
    live[k] = (grad_block_t){at, size, node};
    (*count)++;
    return at;
}

static void grad_block_release(grad_block_t *live, int *count, int node)
{
    for (int k = 0; k < *count; k++)
        if (live[k].node == node) {
            memmove(&live[k], &live[k + 1], (size_t)(*count - k - 1) * sizeof *live);
            (*count)--;
            return;
        }
}

/* A node's output gradient is live from its first writer's backward step down to its own: the
 * steps are walked in backward order, each gradient placed where the ones released before it
 * were. act_grad_bytes is the most the walk holds at once. */
static void plan_gradient_memory(model_t *m)
{
    grad_block_t *live = malloc((size_t)m->node_count * sizeof *live);
    if (!live) {
        m->failed = 1;
        return;
    }
    int count = 0;
    for (int step = m->node_count; step >= 1; step--) {
        for (int j = 1; j < m->node_count; j++) {
            node_t *n = &m->nodes[j];
            if (n->first_writer != step)
                continue;
            size_t size = node_bytes(n, m->batch_cap);
            n->grad = grad_block_place(live, &count, size, j);
            if (n->grad + size > m->act_grad_bytes)
                m->act_grad_bytes = n->grad + size;
        }
        if (step < m->node_count)
            grad_block_release(live, &count, step);
    }
    free(live);
}

/* Going backward, the first reader of a tensor to run is the one built last: it writes the
 * tensor's gradient and the others add theirs, so no gradient is zeroed for nothing. Only a
 * gradient whose first writer can only add (ReLU, pooling, linear), or that nothing writes, is
 * zeroed, just before that step (its memory may be another gradient's until then). */
static void plan_gradients(model_t *m)
{
    int *last_reader = malloc((size_t)m->node_count * sizeof *last_reader);
    if (!last_reader) {
        m->failed = 1;
        return;
    }
    for (int i = 0; i < m->node_count; i++)
        last_reader[i] = -1;
    for (int i = 1; i < m->node_count; i++) {
        last_reader[m->nodes[i].in0] = i;
        if (m->nodes[i].in1 >= 0)
            last_reader[m->nodes[i].in1] = i;
    }
    for (int i = 1; i < m->node_count; i++) {
        node_t *n = &m->nodes[i];
        n->in0_mode = last_reader[n->in0] == i ? GRAD_WRITE : GRAD_ADD;
        n->in1_mode =
            n->in1 >= 0 && n->in1 != n->in0 && last_reader[n->in1] == i ? GRAD_WRITE : GRAD_ADD;
        if (n->in0 > 0 && n->in0_mode == GRAD_WRITE && !writes_gradients(n->kind))
            m->nodes[n->in0].zero_grad = 1;
        /* The last node's gradient is the loss's to write; one that nothing reads stays 0. */
        n->first_writer = i == m->node_count - 1 ? m->node_count
                          : last_reader[i] >= 0  ? last_reader[i]
                                                 : i;
        if (last_reader[i] < 0 && i != m->node_count - 1)
            n->zero_grad = 1;
    }
    free(last_reader);
    plan_gradient_memory(m);
}

void model_destroy(model_t *m)
{
    if (!m)
        return;
    free(m->nodes);
    free(m->tensors);
    if (m->grads && m->grad_memory.free)
        m->grad_memory.free(m->grad_memory.ctx, m->grads);
    else if (m->grads)
        m->dev->free(m->grads);
    float *device_arrays[] = {m->params, m->buffers, m->acts, m->act_grads, m->saved, m->work};
    for (size_t i = 0; i < sizeof device_arrays / sizeof *device_arrays; i++)
        if (device_arrays[i])
            m->dev->free(device_arrays[i]);
    free(m);
}

model_t *model_create(const model_config_t *cfg, const device_ops_t *dev, int batch_cap,
                      const grad_memory_t *grads, ddp_error_t *err)
{
    if (model_config_check(cfg, err))
        return NULL;
    model_t *m = calloc(1, sizeof *m);
    if (!m) {
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    m->cfg = *cfg;
    m->dev = dev;
    m->batch_cap = batch_cap;
    if (strcmp(cfg->name, "mlp") == 0)
        build_mlp(m);
    else
        build_resnet(m);
    if (!m->failed)
        plan_gradients(m);
    if (!m->failed) {
        m->params = dev->alloc(m->param_count * sizeof(float));
        if (grads)
            m->grad_memory = *grads;
        m->grads = grads ? grads->alloc(grads->ctx, m->param_count * sizeof(float))
                         : dev->alloc(m->param_count * sizeof(float));
        m->buffers = dev->alloc((m->buffer_count + 1) * sizeof(float));
        m->acts = dev->alloc(m->act_bytes);
        m->act_grads = dev->alloc(m->act_grad_bytes);
        m->saved = dev->alloc((m->saved_count + 1) * sizeof(float));
        m->work = dev->alloc((m->work_count + 1) * sizeof(float));
    }
    if (m->failed || !m->params || !m->grads || !m->buffers || !m->acts || !m->act_grads ||
        !m->saved || !m->work) {
        char memory[256];
        dev->describe_memory(memory, sizeof memory);
        ddp_error_set(err,
                      "out of %s for the model's %zu parameters and %.1f MiB of activations "
                      "(batch %d)",
                      memory, m->param_count, m->act_bytes / 1048576.0, batch_cap);
        model_destroy(m);
        return NULL;
    }
    return m;
}

void model_describe_memory(const model_t *m, char *buf, size_t size)
{
    const double mib = 1048576.0, floats_mib = mib / sizeof(float);
    double acts = m->act_bytes / mib, grads = m->act_grad_bytes / mib,
           work = m->work_count / floats_mib,
           params = (2.0 * m->param_count + m->buffer_count + m->saved_count) / floats_mib;
    snprintf(buf, size,
             "%.1f MiB (activations %.1f, their gradients %.1f, convolution workspace %.1f, "
             "parameters with their gradients %.1f)",
             acts + grads + work + params, acts, grads, work, params);
}

void model_init(model_t *m, uint64_t seed, float *host_params, float *host_buffers)
{
    for (int i = 0; i < m->tensor_count; i++) {
        const tensor_info_t *t = &m->tensors[i];
        float *p = (t->is_buffer ? host_buffers : host_params) + t->offset;
        rng_t r = rng_keyed(seed, RNG_INIT, (uint64_t)i, 0);
        const char *leaf = strrchr(t->name, '.') + 1;
        if (t->ndim == 4) { /* conv weight: Kaiming normal, fan_out */
            double std = sqrt(2.0 / (double)(t->dims[0] * t->dims[2] * t->dims[3]));
            for (size_t k = 0; k < t->count; k++)
                p[k] = (float)(rng_normal(&r) * std);
        } else if (t->ndim == 2 ||
                   (strcmp(leaf, "bias") == 0 && i > 0 && m->tensors[i - 1].ndim == 2)) {
            /* linear weight and bias: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) */
            int fan_in = t->ndim == 2 ? t->dims[1] : m->tensors[i - 1].dims[1];
            double bound = 1.0 / sqrt((double)fan_in);
            for (size_t k = 0; k < t->count; k++)
                p[k] = (float)((2 * rng_uniform(&r) - 1) * bound);
        } else { /* batch norm: weight and running_var 1, bias and running_mean 0 */
            float v = strcmp(leaf, "weight") == 0 || strcmp(leaf, "running_var") == 0 ? 1.0f : 0.0f;
            for (size_t k = 0; k < t->count; k++)
                p[k] = v;
        }
    }
}

size_t model_param_count(const model_t *m)
{
    return m->param_count;
}
size_t model_buffer_count(const model_t *m)
{
    return m->buffer_count;
}
float *model_params(model_t *m)
{
    return m->params;
}
float *model_grads(model_t *m)
{
    return m->grads;
}
float *model_buffers(model_t *m)
{
    return m->buffers;
}
int model_tensor_count(const model_t *m)
{
    return m->tensor_count;
}
const tensor_info_t *model_tensor(const model_t *m, int i)
{
    return &m->tensors[i];
}

/* ---- running it --------------------------------------------------------------------------- */

/* What the first layer reads: the caller's batch, or image_input's copy of it. */
static const float *layer_input(const model_t *m, const float *input)
{
    return input_converted(m) ? activation(m, &m->nodes[0]) : input;
}

const float *model_forward(model_t *m, const float *input, int batch, int training)
{
    const device_ops_t *d = m->dev;
    if (input_converted(m))
        d->features_from_floats((size_t)batch * IMAGE_SIZE, input, activation(m, &m->nodes[0]));
    for (int i = 1; i < m->node_count; i++) {
        node_t *n = &m->nodes[i];
        const node_t *a = &m->nodes[n->in0];
        const float *x = n->in0 == 0 ? layer_input(m, input) : activation(m, a);
        float *y = activation(m, n);
        size_t total = (size_t)batch * node_size(n);
        switch (n->kind) {
        case NODE_CONV:
            d->conv_forward(&n->conv, batch, x, m->params + n->weight, y, m->work);
            break;
        case NODE_BN:
            d->bn_forward(&(bn_shape_t){batch, n->c, n->h * n->w, n->relu}, x,
                          m->params + n->weight, m->params + n->bias, m->buffers + n->running,
                          training, m->saved + n->saved, y);
            break;
        case NODE_RELU:
            d->relu_forward(total, x, y);
            break;
        case NODE_ADD:
            d->add_forward(total, n->relu, x, activation(m, &m->nodes[n->in1]), y);
            break;
        case NODE_POOL:
            d->avgpool_forward(batch, a->c, a->h * a->w, x, y);
            break;
        case NODE_LINEAR:
            d->linear_forward(batch, (int)node_size(a), n->c, x, m->params + n->weight,
                              m->params + n->bias, y);
            break;
        case NODE_INPUT:
            break;
        }
    }
    return activation(m, &m->nodes[m->node_count - 1]);
}

void model_loss(model_t *m, const unsigned char *labels, int batch, double *tally)
{
    const node_t *last = &m->nodes[m->node_count - 1];
    m->dev->softmax_xent(batch, CLASSES, activation(m, last), labels, activation_grad(m, last),
                         tally);
}

/* The gradients that step i stores into first and that must start at zero: its inputs', or
 * its own when nothing reads it. */
static void zero_gradients_first_written_at(model_t *m, int i, int batch)
{
    const node_t *n = &m->nodes[i];
    int candidates[3] = {i, n->in0, n->in1 != n->in0 ? n->in1 : -1};
    for (int k = 0; k < 3; k++) {
        const node_t *z = candidates[k] > 0 ? &m->nodes[candidates[k]] : NULL;
        if (z && z->zero_grad && z->first_writer == i)
            m->dev->zero(activation_grad(m, z), (size_t)batch * node_size(z) * z->elem);
    }
}

void model_backward(model_t *m, const float *input, int batch, grads_ready_fn ready, void *ctx)
{
    const device_ops_t *d = m->dev;
    for (int i = m->node_count - 1; i >= 1; i--) {
        node_t *n = &m->nodes[i];
        const node_t *a = &m->nodes[n->in0];
        zero_gradients_first_written_at(m, i, batch);
        const float *x = n->in0 == 0 ? layer_input(m, input) : activation(m, a);
        const float *dy = activation_grad(m, n);
        float *dx = n->in0 == 0 ? NULL : activation_grad(m, a);
        size_t total = (size_t)batch * node_size(n);
        switch (n->kind) {
        case NODE_CONV:
            d->conv_backward(&n->conv, batch, x, m->params + n->weight, dy, dx, n->in0_mode,
                             m->grads + n->weight, m->work);
            break;
        case NODE_BN:
            d->bn_backward(&(bn_shape_t){batch, n->c, n->h * n->w, n->relu}, x,
                           m->params + n->weight, m->saved + n->saved, activation(m, n), dy, dx,
                           n->in0_mode, m->grads + n->weight, m->grads + n->bias);
            break;
        case NODE_RELU:
            d->relu_backward(total, activation(m, n), dy, dx);
            break;
        case NODE_ADD:
            d->add_backward(total, n->relu, activation(m, n), dy, dx, n->in0_mode,
                            activation_grad(m, &m->nodes[n->in1]), n->in1_mode);
            break;
        case NODE_POOL:
            d->avgpool_backward(batch, a->c, a->h * a->w, dy, dx);
            break;
        case NODE_LINEAR:
            d->linear_backward(batch, (int)node_size(a), n->c, x, m->params + n->weight, dy, dx,
                               m->grads + n->weight, m->grads + n->bias);
            break;
        case NODE_INPUT:
            break;
        }
        if (n->has_params && ready)
            ready(ctx, n->weight);
    }
}
