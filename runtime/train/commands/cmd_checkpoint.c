/* ddp-train inspect / diff / make-data: the tools around training that need no process group.
 *
 *   inspect CKPT          the checkpoint's metadata and, per tensor, its size, FNV-1a checksum
 *                         and root mean square
 *   diff A B [--tolerance T]
 *                         per tensor the largest difference relative to the tensor's largest
 *                         magnitude, and the largest of all; with --tolerance, exit 1 above it
 *   make-data DIR [--size TRAIN,TEST] [--seed S]
 *                         the synthetic set written as CIFAR-10 files */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/train/data/checkpoint.h"
#include "runtime/train/commands/commands.h"
#include "runtime/train/data/data.h"
#include "runtime/base/ddp_parse.h"

int cmd_inspect(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ddp-train inspect CHECKPOINT\n");
        return 2;
    }
    checkpoint_t c;
    ddp_error_t err;
    if (checkpoint_read(argv[1], &c, &err)) {
        fprintf(stderr, "ddp-train inspect: %s\n", err.msg);
        return 1;
    }
    printf("checkpoint %s\nmodel      %s\nconfig     %s\nposition   epoch %d, batch %ld, step %ld\n"
           "world      %d rank(s)\ntensors    %d\n",
           argv[1], c.model, c.config, c.epoch, c.batch, c.step, c.world, c.tensor_count);
    printf("%-36s %-9s %10s  %-16s %12s\n", "name", "kind", "count", "fnv1a", "rms");
    for (int i = 0; i < c.tensor_count; i++) {
        const ckpt_tensor_t *t = &c.tensors[i];
        double sq = 0;
        for (size_t k = 0; k < t->count; k++)
            sq += (double)t->data[k] * t->data[k];
        printf(
            "%-36s %-9s %10zu  %016llx %12.6g\n", t->name, checkpoint_kind_name(t->kind), t->count,
            (unsigned long long)checkpoint_fnv1a(t->data, t->count * sizeof(float), CKPT_FNV_INIT),
            t->count ? sqrt(sq / (double)t->count) : 0.0);
    }
    checkpoint_free(&c);
    return 0;
}

int cmd_diff(int argc, char **argv)
{
    double tolerance = -1;
    int with_tolerance = argc == 5 && strcmp(argv[3], "--tolerance") == 0;
    if (with_tolerance ? ddp_parse_double(argv[4], 0, 1e30, &tolerance) != 0 : argc != 3) {
        fprintf(stderr, "usage: ddp-train diff A B [--tolerance T]\n");
        return 2;
    }
    checkpoint_t a, b;
    ddp_error_t err;
    if (checkpoint_read(argv[1], &a, &err)) {
        fprintf(stderr, "ddp-train diff: %s\n", err.msg);
        return 1;
    }
    if (checkpoint_read(argv[2], &b, &err)) {
        fprintf(stderr, "ddp-train diff: %s\n", err.msg);
        checkpoint_free(&a);
        return 1;
    }
    int status = 0;
    double worst = 0;
    const char *worst_name = "-";
    for (int i = 0; i < a.tensor_count; i++) {
        const ckpt_tensor_t *x = &a.tensors[i], *y = checkpoint_find(&b, x->name, x->kind);
        if (!y || y->count != x->count) {
            fprintf(stderr, "ddp-train diff: %s %s: %s\n", checkpoint_kind_name(x->kind), x->name,
                    y ? "sizes differ" : "only in the first checkpoint");
            status = 1;
            break;
        }
        double scale = 0, diff = 0;
        for (size_t k = 0; k < x->count; k++) {
            scale = fmax(scale, fmax(fabs(x->data[k]), fabs(y->data[k])));
            diff = fmax(diff, fabs((double)x->data[k] - y->data[k]));
        }
        double rel = scale > 0 ? diff / scale : 0;
        printf("%-36s %-9s %12.3e\n", x->name, checkpoint_kind_name(x->kind), rel);
        if (rel >= worst) {
            worst = rel;
            worst_name = x->name;
        }
    }
    if (status == 0 && a.tensor_count != b.tensor_count) {
        fprintf(stderr, "ddp-train diff: the checkpoints hold %d and %d tensors\n", a.tensor_count,
                b.tensor_count);
        status = 1;
    }
    if (status == 0) {
        printf("max relative difference %.3e (%s)\n", worst, worst_name);
        if (tolerance >= 0 && worst > tolerance)
            status = 1;
    }
    checkpoint_free(&a);
    checkpoint_free(&b);
    return status;
}

/* --size TRAIN,TEST: two counts of samples, each at least 1. */
static int parse_size(const char *text, unsigned long *train, unsigned long *test)
{
    char first[32];
    const char *comma = strchr(text, ',');
    long a, b;
    if (!comma || (size_t)(comma - text) >= sizeof first)
        return -1;
    memcpy(first, text, (size_t)(comma - text));
    first[comma - text] = '\0';
    if (ddp_parse_long(first, 1, LONG_MAX, &a) || ddp_parse_long(comma + 1, 1, LONG_MAX, &b))
        return -1;
    *train = (unsigned long)a;
    *test = (unsigned long)b;
    return 0;
}

int cmd_make_data(int argc, char **argv)
{
    unsigned long train = 8192, test = 2048, seed = 0;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--size") && i + 1 < argc) {
            if (parse_size(argv[++i], &train, &test))
                dir = NULL, argc = 0;
        } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            long v = 0;
            if (ddp_parse_long(argv[++i], 0, LONG_MAX, &v))
                dir = NULL, argc = 0;
            seed = (unsigned long)v;
        } else if (argv[i][0] != '-' && !dir) {
            dir = argv[i];
        } else {
            argc = 0;
        }
    }
    if (!dir || argc == 0) {
        fprintf(stderr, "usage: ddp-train make-data DIR [--size TRAIN,TEST] [--seed S]\n");
        return 2;
    }
    dataset_t tr, te;
    ddp_error_t err;
    if (data_synthetic(seed, train, test, &tr, &te, &err) ||
        data_write_cifar(dir, &tr, &te, &err)) {
        fprintf(stderr, "ddp-train make-data: %s\n", err.msg);
        return 1;
    }
    printf("wrote %lu training and %lu test images (seed %lu) to %s/data_batch_1.bin and "
           "%s/test_batch.bin\n",
           train, test, seed, dir, dir);
    data_free(&tr);
    data_free(&te);
    return 0;
}
