#include "runtime/train/data/checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_file.h"

#define MAGIC "DDPTRAIN-CHECKPOINT 1\n"

static const char *const kind_names[] = {"param", "momentum", "buffer"};
#define KIND_COUNT (int)(sizeof kind_names / sizeof *kind_names)

const char *checkpoint_kind_name(ckpt_kind_t kind)
{
    return kind_names[kind];
}

uint64_t checkpoint_fnv1a(const void *data, size_t len, uint64_t hash)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        hash = (hash ^ p[i]) * 0x100000001b3ull;
    return hash;
}

/* Written in three passes: parameters, momentum (when there is one), batch-norm buffers. */
static int in_pass(const tensor_info_t *t, int pass, const float *momentum)
{
    return pass == 2 ? t->is_buffer : !t->is_buffer && (pass == 0 || momentum);
}

static int emit_tensor(FILE *f, const tensor_info_t *t, ckpt_kind_t kind)
{
    fprintf(f, "tensor %s %s %zu", t->name, kind_names[kind], t->count);
    for (int d = 0; d < t->ndim; d++)
        fprintf(f, " %d", t->dims[d]);
    return fputc('\n', f) == EOF ? -1 : 0;
}

int checkpoint_write(const char *path, const checkpoint_t *meta, const model_t *m,
                     const ckpt_state_t *state, ddp_error_t *err)
{
    const float *momentum = state->momentum;
    char *image = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&image, &size);
    if (!f)
        return ddp_error_set(err, "out of memory");
    fprintf(f, MAGIC "model %s\nconfig %s\nposition epoch=%d batch=%ld step=%ld\nworld %d\n",
            meta->model, meta->config, meta->epoch, meta->batch, meta->step, meta->world);
    int n = model_tensor_count(m);
    for (int pass = 0; pass < KIND_COUNT; pass++)
        for (int i = 0; i < n; i++)
            if (in_pass(model_tensor(m, i), pass, momentum))
                emit_tensor(f, model_tensor(m, i), (ckpt_kind_t)pass);
    fputs("end\n", f);
    for (int pass = 0; pass < KIND_COUNT; pass++)
        for (int i = 0; i < n; i++) {
            const tensor_info_t *t = model_tensor(m, i);
            if (!in_pass(t, pass, momentum))
                continue;
            const float *src = pass == 0 ? state->params : pass == 1 ? momentum : state->buffers;
            fwrite(src + t->offset, sizeof(float), t->count, f);
        }
    if (fflush(f) != 0) {
        fclose(f);
        free(image);
        return ddp_error_set(err, "out of memory");
    }
    uint64_t sum = checkpoint_fnv1a(image, size, CKPT_FNV_INIT);
    unsigned char tail[8];
    for (int i = 0; i < 8; i++)
        tail[i] = (unsigned char)(sum >> (8 * i));
    fwrite(tail, 1, sizeof tail, f);
    fclose(f);
    int rc = ddp_write_file_atomic(path, image, size, 0644, err);
    free(image);
    return rc;
}

void checkpoint_free(checkpoint_t *c)
{
    free(c->tensors);
    free(c->values);
    memset(c, 0, sizeof *c);
}

/* The next header line (NUL-terminated in place), or NULL past the header. */
static char *next_line(char **at, char *end)
{
    char *line = *at, *nl = memchr(line, '\n', (size_t)(end - line));
    if (!nl)
        return NULL;
    *nl = 0;
    *at = nl + 1;
    return line;
}

static int parse_tensor(char *line, ckpt_tensor_t *t)
{
    char kind[16];
    int used = 0;
    memset(t, 0, sizeof *t);
    if (sscanf(line, "tensor %47s %15s %zu%n", t->name, kind, &t->count, &used) != 3)
        return -1;
    int k = 0;
    while (k < KIND_COUNT && strcmp(kind, kind_names[k]) != 0)
        k++;
    if (k == KIND_COUNT)
        return -1;
    t->kind = (ckpt_kind_t)k;
    const char *p = line + used;
    int n = 0;
    size_t product = 1;
    while (t->ndim < 4 && sscanf(p, "%d%n", &t->dims[t->ndim], &n) == 1) {
        product *= (size_t)t->dims[t->ndim++];
        p += n;
    }
    return t->ndim > 0 && product == t->count ? 0 : -1;
}

int checkpoint_read(const char *path, checkpoint_t *c, ddp_error_t *err)
{
    memset(c, 0, sizeof *c);
    size_t size;
    char *image = ddp_read_file(path, &size, err);
    if (!image)
        return -1;
    unsigned char *bytes = (unsigned char *)image;
    if (size < sizeof MAGIC + 8 || memcmp(image, MAGIC, strlen(MAGIC)) != 0) {
        ddp_error_set(err, "%s: not a ddp-train checkpoint (no \"DDPTRAIN-CHECKPOINT 1\" header)",
                      path);
        goto error;
    }
    uint64_t stored = 0;
    for (int i = 0; i < 8; i++)
        stored |= (uint64_t)bytes[size - 8 + i] << (8 * i);
    if (checkpoint_fnv1a(image, size - 8, CKPT_FNV_INIT) != stored) {
        ddp_error_set(err, "%s: checksum mismatch: the file is damaged or was cut short", path);
        goto error;
    }
    char *at = image + strlen(MAGIC), *end = image + size - 8, *line;
    while ((line = next_line(&at, end)) && strcmp(line, "end") != 0) {
        if (strncmp(line, "model ", 6) == 0)
            snprintf(c->model, sizeof c->model, "%s", line + 6);
        else if (strncmp(line, "config ", 7) == 0)
            snprintf(c->config, sizeof c->config, "%s", line + 7);
        else if (sscanf(line, "position epoch=%d batch=%ld step=%ld", &c->epoch, &c->batch,
                        &c->step) == 3 ||
                 sscanf(line, "world %d", &c->world) == 1)
            continue;
        else if (strncmp(line, "tensor ", 7) == 0) {
            ckpt_tensor_t *grown =
                realloc(c->tensors, (size_t)(c->tensor_count + 1) * sizeof *grown);
            if (!grown) {
                ddp_error_set(err, "out of memory");
                goto error;
            }
            c->tensors = grown;
            if (parse_tensor(line, &c->tensors[c->tensor_count])) {
                ddp_error_set(err, "%s: malformed tensor line \"%.80s\"", path, line);
                goto error;
            }
            c->tensor_count++;
        } else {
            ddp_error_set(err, "%s: unknown header line \"%.80s\"", path, line);
            goto error;
        }
    }
    if (!line || !c->model[0]) {
        ddp_error_set(err, "%s: the header has no %s", path, line ? "model line" : "end line");
        goto error;
    }
    size_t need = 0;
    for (int i = 0; i < c->tensor_count; i++)
        need += c->tensors[i].count * sizeof(float);
    if ((size_t)(end - at) != need) {
        ddp_error_set(err, "%s: %zu bytes of tensor data, the header lists %zu", path,
                      (size_t)(end - at), need);
        goto error;
    }
    /* Copied out of the file image: the header's length leaves the data unaligned there. */
    if (!(c->values = malloc(need + 1))) {
        ddp_error_set(err, "out of memory");
        goto error;
    }
    memcpy(c->values, at, need);
    float *next = c->values;
    for (int i = 0; i < c->tensor_count; i++) {
        c->tensors[i].data = next;
        next += c->tensors[i].count;
    }
    free(image);
    return 0;
error:
    free(image);
    checkpoint_free(c);
    return -1;
}

const ckpt_tensor_t *checkpoint_find(const checkpoint_t *c, const char *name, ckpt_kind_t kind)
{
    for (int i = 0; i < c->tensor_count; i++)
        if (c->tensors[i].kind == kind && strcmp(c->tensors[i].name, name) == 0)
            return &c->tensors[i];
    return NULL;
}

int checkpoint_restore(const checkpoint_t *c, const char *path, const model_t *m,
                       const ckpt_state_t *state, ddp_error_t *err)
{
    float *momentum = state->momentum;
    for (int i = 0; i < model_tensor_count(m); i++) {
        const tensor_info_t *t = model_tensor(m, i);
        for (int pass = 0; pass < 2; pass++) {
            ckpt_kind_t kind = t->is_buffer ? CKPT_BUFFER : pass ? CKPT_MOMENTUM : CKPT_PARAM;
            if (pass && (t->is_buffer || !momentum))
                continue;
            const ckpt_tensor_t *saved = checkpoint_find(c, t->name, kind);
            if (!saved)
                return ddp_error_set(err, "%s: has no %s %s", path, kind_names[kind], t->name);
            if (saved->count != t->count)
                return ddp_error_set(err, "%s: %s %s has %zu values, the model needs %zu", path,
                                     kind_names[kind], t->name, saved->count, t->count);
            float *dst = (kind == CKPT_BUFFER     ? state->buffers
                          : kind == CKPT_MOMENTUM ? momentum
                                                  : state->params) +
                         t->offset;
            memcpy(dst, saved->data, t->count * sizeof(float));
        }
    }
    return 0;
}
