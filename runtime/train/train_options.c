#include "train_options.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_parse.h"

const char train_usage[] =
    "usage: ddp-train train [--model mlp|resnet] [--widths W[,W...]] [--depth 6n+2] [--width K]\n"
    "                       [--data DIR | --synthetic [--synthetic-size TRAIN,TEST]]\n"
    "                       [--epochs N] [--batch-size B] [--lr X] [--momentum X]\n"
    "                       [--weight-decay X] [--schedule cosine|step|constant]\n"
    "                       [--warmup-epochs E] [--seed S] [--checkpoint-dir D] [--resume]\n"
    "                       [--no-shuffle] [--drop-last] [--augment|--no-augment]\n"
    "                       [--bucket-cap-mb M] [--threads N] [--stop-after-epochs N]\n"
    "                       [--max-steps N] [--min-step-ms MS] [--tf32]\n"
    "                       [--cpu-conv onednn|im2col] [--backend tcp|nccl] [--timeout SECONDS]\n"
    "  defaults: mlp with widths 256, synthetic data (8192 train, 2048 test), 5 epochs,\n"
    "  batch 64 per rank, lr 0.1, momentum 0.9, weight decay 1e-5, cosine schedule, seed 0,\n"
    "  25 MiB buckets, 1 BLAS thread; augmentation on for --data, off for synthetic;\n"
    "  GPU convolutions in float32 (--tf32: TF32 tensor cores, PyTorch's default for them);\n"
    "  CPU convolutions on oneDNN where this build has it, else im2col + GEMM;\n"
    "  --min-step-ms: each step takes at least MS ms (the rest slept), so that a small model\n"
    "  rehearses a long run's walltime, checkpoint and requeue path at a known pace\n";

const train_option_name_t train_option_names[] = {
    {"model", TRAIN_OPT_VALUE},         {"widths", TRAIN_OPT_VALUE},
    {"depth", TRAIN_OPT_VALUE},         {"width", TRAIN_OPT_VALUE},
    {"data", TRAIN_OPT_VALUE},          {"synthetic", TRAIN_OPT_FLAG},
    {"synthetic-size", TRAIN_OPT_VALUE}, {"epochs", TRAIN_OPT_VALUE},
    {"batch-size", TRAIN_OPT_VALUE},    {"lr", TRAIN_OPT_VALUE},
    {"momentum", TRAIN_OPT_VALUE},      {"weight-decay", TRAIN_OPT_VALUE},
    {"schedule", TRAIN_OPT_VALUE},      {"warmup-epochs", TRAIN_OPT_VALUE},
    {"seed", TRAIN_OPT_VALUE},          {"checkpoint-dir", TRAIN_OPT_VALUE},
    {"resume", TRAIN_OPT_FLAG},         {"shuffle", TRAIN_OPT_SWITCH},
    {"drop-last", TRAIN_OPT_FLAG},      {"augment", TRAIN_OPT_SWITCH},
    {"bucket-cap-mb", TRAIN_OPT_VALUE}, {"threads", TRAIN_OPT_VALUE},
    {"stop-after-epochs", TRAIN_OPT_VALUE}, {"max-steps", TRAIN_OPT_VALUE},
    {"min-step-ms", TRAIN_OPT_VALUE},
    {"tf32", TRAIN_OPT_FLAG},           {"cpu-conv", TRAIN_OPT_VALUE},
    {"backend", TRAIN_OPT_VALUE},       {"timeout", TRAIN_OPT_VALUE},
    {NULL, TRAIN_OPT_VALUE},
};

static int parse_widths(const char *s, model_config_t *m)
{
    char copy[256];
    snprintf(copy, sizeof copy, "%s", s);
    m->width_count = 0;
    if (strcmp(copy, "none") == 0)
        return 0;
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        long w;
        if (m->width_count == MODEL_MAX_WIDTHS || ddp_parse_long(tok, 1, 65536, &w))
            return -1;
        m->widths[m->width_count++] = (int)w;
    }
    return m->width_count ? 0 : -1;
}

int train_options_parse(int argc, char **argv, train_options_t *o, ddp_error_t *err)
{
    *o = (train_options_t){.model = {.name = "mlp", .widths = {256}, .width_count = 1, .depth = 20,
                                     .width = 1},
                           .synthetic_train = 8192, .synthetic_test = 2048, .epochs = 5,
                           .batch_size = 64, .lr = 0.1, .momentum = 0.9, .weight_decay = 1e-5,
                           .bucket_cap_mb = 25, .shuffle = 1, .augment = -1, .threads = 1};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        long n = 0;
        int bad = 0, takes = 1;
        const char *want = "";
        double unused;
        if (!strcmp(arg, "--synthetic")) {
            o->data_dir = NULL, takes = 0;
        } else if (!strcmp(arg, "--resume")) {
            o->resume = 1, takes = 0;
        } else if (!strcmp(arg, "--shuffle") || !strcmp(arg, "--no-shuffle")) {
            o->shuffle = arg[2] == 's', takes = 0;
        } else if (!strcmp(arg, "--tf32")) {
            o->tf32 = 1, takes = 0;
        } else if (!strcmp(arg, "--drop-last")) {
            o->drop_last = 1, takes = 0;
        } else if (!strcmp(arg, "--augment") || !strcmp(arg, "--no-augment")) {
            o->augment = arg[2] == 'a', takes = 0;
        } else if (!val) {
            return ddp_error_set(err, "%s needs a value", arg);
        } else if (!strcmp(arg, "--model")) {
            bad = strcmp(val, "mlp") && strcmp(val, "resnet"), want = "mlp or resnet";
            snprintf(o->model.name, sizeof o->model.name, "%s", val);
        } else if (!strcmp(arg, "--widths")) {
            bad = parse_widths(val, &o->model), want = "none or widths such as 256,128";
        } else if (!strcmp(arg, "--depth")) {
            bad = ddp_parse_long(val, 8, 1202, &n), o->model.depth = (int)n;
            want = "a depth from 8 to 1202";
        } else if (!strcmp(arg, "--width")) {
            bad = ddp_parse_long(val, 1, 64, &n), o->model.width = (int)n, want = "1 to 64";
        } else if (!strcmp(arg, "--data")) {
            o->data_dir = val;
        } else if (!strcmp(arg, "--synthetic-size")) {
            unsigned long tr, te;
            char tail;
            bad = sscanf(val, "%lu,%lu%c", &tr, &te, &tail) != 2 || !tr || !te || tr > 10000000 ||
                  te > 10000000;
            want = "TRAIN,TEST sample counts, each 1 to 10000000";
            o->synthetic_train = tr, o->synthetic_test = te;
        } else if (!strcmp(arg, "--epochs")) {
            bad = ddp_parse_long(val, 1, 100000, &n), o->epochs = (int)n, want = "1 to 100000";
        } else if (!strcmp(arg, "--batch-size")) {
            bad = ddp_parse_long(val, 1, 65536, &n), o->batch_size = (int)n, want = "1 to 65536";
        } else if (!strcmp(arg, "--lr")) {
            bad = ddp_parse_double(val, 0, 1e3, &o->lr), want = "a number from 0 to 1000";
        } else if (!strcmp(arg, "--momentum")) {
            bad = ddp_parse_double(val, 0, 0.9999, &o->momentum), want = "a number from 0 to 0.9999";
        } else if (!strcmp(arg, "--weight-decay")) {
            bad = ddp_parse_double(val, 0, 1, &o->weight_decay), want = "a number from 0 to 1";
        } else if (!strcmp(arg, "--warmup-epochs")) {
            bad = ddp_parse_double(val, 0, 1e5, &o->warmup_epochs), want = "a number from 0 to 100000";
        } else if (!strcmp(arg, "--schedule")) {
            o->schedule = !strcmp(val, "cosine") ? SCHEDULE_COSINE
                          : !strcmp(val, "step") ? SCHEDULE_STEP
                                                 : SCHEDULE_CONSTANT;
            bad = o->schedule == SCHEDULE_CONSTANT && strcmp(val, "constant");
            want = "cosine, step or constant";
        } else if (!strcmp(arg, "--seed")) {
            bad = ddp_parse_long(val, 0, 0x7fffffffL, &n), o->seed = (uint64_t)n;
            want = "0 to 2147483647";
        } else if (!strcmp(arg, "--checkpoint-dir")) {
            o->checkpoint_dir = val;
        } else if (!strcmp(arg, "--bucket-cap-mb")) {
            bad = ddp_parse_double(val, 0.001, 1e5, &o->bucket_cap_mb), want = "0.001 to 100000 MiB";
        } else if (!strcmp(arg, "--threads")) {
            bad = ddp_parse_long(val, 1, 1024, &n), o->threads = (int)n, want = "1 to 1024";
        } else if (!strcmp(arg, "--stop-after-epochs")) {
            bad = ddp_parse_long(val, 1, 100000, &n), o->stop_after_epochs = (int)n;
            want = "1 to 100000";
        } else if (!strcmp(arg, "--max-steps")) {
            bad = ddp_parse_long(val, 1, 1L << 40, &o->max_steps), want = "a step count of at least 1";
        } else if (!strcmp(arg, "--min-step-ms")) {
            bad = ddp_parse_long(val, 0, 3600000, &n), o->min_step_ms = n, want = "0 to 3600000";
        } else if (!strcmp(arg, "--cpu-conv")) {
            bad = strcmp(val, "onednn") && strcmp(val, "im2col"), want = "onednn or im2col";
            o->cpu_conv = val;
        } else if (!strcmp(arg, "--backend")) {
            bad = strcmp(val, "tcp") && strcmp(val, "nccl"), want = "tcp or nccl";
        } else if (!strcmp(arg, "--timeout")) {
            bad = ddp_parse_double(val, 0.001, 1e7, &unused), want = "seconds, more than 0";
        } else {
            return ddp_error_set(err, "unknown option %s", arg);
        }
        if (bad)
            return ddp_error_set(err, "%s %s: expected %s", arg, val, want);
        i += takes;
    }
    if (o->augment < 0)
        o->augment = o->data_dir != NULL;
    if (o->resume && !o->checkpoint_dir)
        return ddp_error_set(err, "--resume needs --checkpoint-dir");
    if (!strcmp(o->model.name, "resnet") && (o->model.depth - 2) % 6 != 0)
        return ddp_error_set(err, "--depth %d: a ResNet's depth is 6n+2 (8, 14, 20, 32, 44, 56, 110, ...)",
                             o->model.depth);
    return 0;
}

void train_options_describe(const train_options_t *o, char *buf, size_t size)
{
    char data[64];
    if (o->data_dir)
        snprintf(data, sizeof data, "cifar");
    else
        snprintf(data, sizeof data, "synthetic:%zu,%zu", o->synthetic_train, o->synthetic_test);
    snprintf(buf, size, "data=%s seed=%llu batch-size=%d shuffle=%d drop-last=%d augment=%d",
             data, (unsigned long long)o->seed, o->batch_size, o->shuffle, o->drop_last, o->augment);
}

double train_lr(const train_options_t *o, long step, long total, long steps_per_epoch)
{
    double warmup = o->warmup_epochs * (double)steps_per_epoch;
    if (step < warmup)
        return o->lr * (double)(step + 1) / warmup;
    double p = total > warmup ? ((double)step - warmup) / ((double)total - warmup) : 1;
    switch (o->schedule) {
    case SCHEDULE_COSINE: return o->lr * 0.5 * (1 + cos(M_PI * p));
    case SCHEDULE_STEP: return o->lr * (p >= 0.75 ? 0.01 : p >= 0.5 ? 0.1 : 1);
    default: return o->lr;
    }
}
