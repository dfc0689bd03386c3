#include "runtime/train/options/train_options.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_parse.h"

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

#define FIELD(f) offsetof(train_options_t, f)
/* The one table of `ddp-train train`'s options: it drives parsing, the usage, and what ddpjob
 * validates a spec's train: block with. The session's --backend and --timeout are checked here
 * too (the session takes them out first). */
const train_option_name_t train_option_names[] = {
    {"model", TRAIN_OPT_VALUE, "mlp|resnet", TRAIN_TAKE_OTHER, 0, 0, 0, "mlp or resnet"},
    {"widths", TRAIN_OPT_VALUE, "W[,W...]", TRAIN_TAKE_OTHER, 0, 0, 0,
     "none or widths such as 256,128"},
    {"depth", TRAIN_OPT_VALUE, "6n+2", TRAIN_TAKE_INT, FIELD(model.depth), 8, 1202,
     "a depth from 8 to 1202"},
    {"width", TRAIN_OPT_VALUE, "K", TRAIN_TAKE_INT, FIELD(model.width), 1, 64, "1 to 64"},
    {"data", TRAIN_OPT_VALUE, "DIR", TRAIN_TAKE_STR, FIELD(data_dir), 0, 0, ""},
    {"synthetic", TRAIN_OPT_FLAG, NULL, TRAIN_TAKE_OTHER, 0, 0, 0, ""},
    {"synthetic-size", TRAIN_OPT_VALUE, "TRAIN,TEST", TRAIN_TAKE_OTHER, 0, 0, 0,
     "TRAIN,TEST sample counts, each 1 to 10000000"},
    {"epochs", TRAIN_OPT_VALUE, "N", TRAIN_TAKE_INT, FIELD(epochs), 1, 100000, "1 to 100000"},
    {"batch-size", TRAIN_OPT_VALUE, "B", TRAIN_TAKE_INT, FIELD(batch_size), 1, 65536, "1 to 65536"},
    {"lr", TRAIN_OPT_VALUE, "X", TRAIN_TAKE_DOUBLE, FIELD(lr), 0, 1e3, "a number from 0 to 1000"},
    {"momentum", TRAIN_OPT_VALUE, "X", TRAIN_TAKE_DOUBLE, FIELD(momentum), 0, 0.9999,
     "a number from 0 to 0.9999"},
    {"weight-decay", TRAIN_OPT_VALUE, "X", TRAIN_TAKE_DOUBLE, FIELD(weight_decay), 0, 1,
     "a number from 0 to 1"},
    {"schedule", TRAIN_OPT_VALUE, "cosine|step|constant", TRAIN_TAKE_OTHER, 0, 0, 0,
     "cosine, step or constant"},
    {"warmup-epochs", TRAIN_OPT_VALUE, "E", TRAIN_TAKE_DOUBLE, FIELD(warmup_epochs), 0, 1e5,
     "a number from 0 to 100000"},
    {"seed", TRAIN_OPT_VALUE, "S", TRAIN_TAKE_OTHER, 0, 0, 0, "0 to 2147483647"},
    {"checkpoint-dir", TRAIN_OPT_VALUE, "D", TRAIN_TAKE_STR, FIELD(checkpoint_dir), 0, 0, ""},
    {"resume", TRAIN_OPT_FLAG, NULL, TRAIN_TAKE_FLAG, FIELD(resume), 0, 0, ""},
    {"shuffle", TRAIN_OPT_SWITCH, NULL, TRAIN_TAKE_FLAG, FIELD(shuffle), 0, 0, ""},
    {"drop-last", TRAIN_OPT_FLAG, NULL, TRAIN_TAKE_FLAG, FIELD(drop_last), 0, 0, ""},
    {"augment", TRAIN_OPT_SWITCH, NULL, TRAIN_TAKE_FLAG, FIELD(augment), 0, 0, ""},
    {"bucket-cap-mb", TRAIN_OPT_VALUE, "M", TRAIN_TAKE_DOUBLE, FIELD(bucket_cap_mb), 0.001, 1e5,
     "0.001 to 100000 MiB"},
    {"threads", TRAIN_OPT_VALUE, "N", TRAIN_TAKE_INT, FIELD(threads), 1, 1024, "1 to 1024"},
    {"stop-after-epochs", TRAIN_OPT_VALUE, "N", TRAIN_TAKE_INT, FIELD(stop_after_epochs), 1, 100000,
     "1 to 100000"},
    {"max-steps", TRAIN_OPT_VALUE, "N", TRAIN_TAKE_LONG, FIELD(max_steps), 1, 1099511627776.0,
     "a step count of at least 1"},
    {"min-step-ms", TRAIN_OPT_VALUE, "MS", TRAIN_TAKE_LONG, FIELD(min_step_ms), 0, 3600000,
     "0 to 3600000"},
    {"tf32", TRAIN_OPT_FLAG, NULL, TRAIN_TAKE_FLAG, FIELD(tf32), 0, 0, ""},
    {"bf16", TRAIN_OPT_FLAG, NULL, TRAIN_TAKE_FLAG, FIELD(bf16), 0, 0, ""},
    {"cuda-graph", TRAIN_OPT_SWITCH, NULL, TRAIN_TAKE_FLAG, FIELD(cuda_graph), 0, 0, ""},
    {"cpu-conv", TRAIN_OPT_VALUE, "onednn|onednn-nchw|im2col", TRAIN_TAKE_OTHER, 0, 0, 0,
     "onednn, onednn-nchw or im2col"},
    {"backend", TRAIN_OPT_VALUE, "tcp|nccl", TRAIN_TAKE_OTHER, 0, 0, 0, "tcp or nccl"},
    {"timeout", TRAIN_OPT_VALUE, "SECONDS", TRAIN_TAKE_OTHER, 0, 0, 0, "seconds, more than 0"},
    {NULL, TRAIN_OPT_VALUE, NULL, TRAIN_TAKE_OTHER, 0, 0, 0, NULL},
};

static const char usage_defaults[] =
    "  defaults: mlp with widths 256, synthetic data (8192 train, 2048 test), 5 epochs,\n"
    "  batch 64 per rank, lr 0.1, momentum 0.9, weight decay 1e-5, cosine schedule, seed 0,\n"
    "  25 MiB buckets, 1 BLAS thread; augmentation on for --data, off for synthetic;\n"
    "  GPU convolutions in float32 (--tf32: TF32 tensor cores, PyTorch's default for them;\n"
    "  --bf16: mixed precision, as PyTorch's autocast to bfloat16: feature maps and their\n"
    "  gradients in bfloat16, parameters, their gradients, the optimizer and the loss in "
    "float32);\n"
    "  one GPU's training step recorded as a CUDA graph and replayed (--no-cuda-graph: launched\n"
    "  kernel by kernel);\n"
    "  CPU convolutions on oneDNN where this build has it, else im2col + GEMM;\n"
    "  --min-step-ms: each step takes at least MS ms (the rest slept), so that a small model\n"
    "  rehearses a long run's walltime, checkpoint and requeue path at a known pace\n";

const char *train_usage(void)
{
    static char text[4096];
    if (text[0])
        return text;
    static const char head[] = "usage: ddp-train train";
    size_t n = (size_t)snprintf(text, sizeof text, "%s", head), column = n;
    for (const train_option_name_t *opt = train_option_names; opt->name; opt++) {
        char item[96];
        int len = opt->form == TRAIN_OPT_SWITCH
                      ? snprintf(item, sizeof item, " [--%s|--no-%s]", opt->name, opt->name)
                  : opt->value ? snprintf(item, sizeof item, " [--%s %s]", opt->name, opt->value)
                               : snprintf(item, sizeof item, " [--%s]", opt->name);
        if (column + (size_t)len > 96) {
            n += (size_t)snprintf(text + n, sizeof text - n, "\n%*s", (int)sizeof head - 1, "");
            column = sizeof head - 1;
        }
        n += (size_t)snprintf(text + n, sizeof text - n, "%s", item);
        column += (size_t)len;
    }
    snprintf(text + n, sizeof text - n, "\n%s", usage_defaults);
    return text;
}

/* An option the table cannot take by kind: 0, or 1 for a bad value. */
static int take_other(train_options_t *o, const char *name, const char *val)
{
    double seconds;
    long n;
    if (!strcmp(name, "synthetic")) {
        o->data_dir = NULL;
    } else if (!strcmp(name, "model")) {
        snprintf(o->model.name, sizeof o->model.name, "%s", val);
        return strcmp(val, "mlp") && strcmp(val, "resnet");
    } else if (!strcmp(name, "widths")) {
        return parse_widths(val, &o->model) != 0;
    } else if (!strcmp(name, "synthetic-size")) {
        unsigned long tr, te;
        char tail;
        int bad = sscanf(val, "%lu,%lu%c", &tr, &te, &tail) != 2 || !tr || !te || tr > 10000000 ||
                  te > 10000000;
        o->synthetic_train = tr, o->synthetic_test = te;
        return bad;
    } else if (!strcmp(name, "schedule")) {
        o->schedule = !strcmp(val, "cosine") ? SCHEDULE_COSINE
                      : !strcmp(val, "step") ? SCHEDULE_STEP
                                             : SCHEDULE_CONSTANT;
        return o->schedule == SCHEDULE_CONSTANT && strcmp(val, "constant");
    } else if (!strcmp(name, "seed")) {
        int bad = ddp_parse_long(val, 0, 0x7fffffffL, &n) != 0;
        o->seed = (uint64_t)n;
        return bad;
    } else if (!strcmp(name, "cpu-conv")) {
        o->cpu_conv = val;
        return strcmp(val, "onednn") && strcmp(val, "onednn-nchw") && strcmp(val, "im2col");
    } else if (!strcmp(name, "backend")) {
        return strcmp(val, "tcp") && strcmp(val, "nccl");
    } else if (!strcmp(name, "timeout")) {
        return ddp_parse_double(val, 0.001, 1e7, &seconds) != 0;
    }
    return 0;
}

/* One option by its table row: 0, or 1 for a bad value. `off` is --no-NAME of a switch. */
static int take(train_options_t *o, const train_option_name_t *opt, int off, const char *val)
{
    char *at = (char *)o + opt->field;
    long n;
    switch (opt->take) {
    case TRAIN_TAKE_FLAG:
        *(int *)at = !off;
        return 0;
    case TRAIN_TAKE_INT:
        if (ddp_parse_long(val, (long)opt->lo, (long)opt->hi, &n))
            return 1;
        *(int *)at = (int)n;
        return 0;
    case TRAIN_TAKE_LONG:
        return ddp_parse_long(val, (long)opt->lo, (long)opt->hi, (long *)at) != 0;
    case TRAIN_TAKE_DOUBLE:
        return ddp_parse_double(val, opt->lo, opt->hi, (double *)at) != 0;
    case TRAIN_TAKE_STR:
        *(const char **)at = val;
        return 0;
    case TRAIN_TAKE_OTHER:
        break;
    }
    return take_other(o, opt->name, val);
}

/* The row for --NAME (or --no-NAME of a switch, *off set), or NULL. */
static const train_option_name_t *option_for(const char *arg, int *off)
{
    if (strncmp(arg, "--", 2))
        return NULL;
    for (const train_option_name_t *opt = train_option_names; opt->name; opt++) {
        *off = opt->form == TRAIN_OPT_SWITCH && !strncmp(arg + 2, "no-", 3) &&
               !strcmp(arg + 5, opt->name);
        if (*off || !strcmp(arg + 2, opt->name))
            return opt;
    }
    return NULL;
}

int train_options_parse(int argc, char **argv, train_options_t *o, ddp_error_t *err)
{
    *o = (train_options_t){
        .model = {.name = "mlp", .widths = {256}, .width_count = 1, .depth = 20, .width = 1},
        .synthetic_train = 8192,
        .synthetic_test = 2048,
        .epochs = 5,
        .batch_size = 64,
        .lr = 0.1,
        .momentum = 0.9,
        .weight_decay = 1e-5,
        .bucket_cap_mb = 25,
        .shuffle = 1,
        .cuda_graph = 1,
        .augment = -1,
        .threads = 1};
    for (int i = 1; i < argc; i++) {
        int off = 0;
        const train_option_name_t *opt = option_for(argv[i], &off);
        if (!opt)
            return ddp_error_set(err, "unknown option %s", argv[i]);
        const char *val = opt->form == TRAIN_OPT_VALUE ? argv[i + 1] : NULL;
        if (opt->form == TRAIN_OPT_VALUE && i + 1 >= argc)
            return ddp_error_set(err, "%s needs a value", argv[i]);
        if (take(o, opt, off, val))
            return ddp_error_set(err, "%s %s: expected %s", argv[i], val, opt->want);
        i += val != NULL;
    }
    if (o->augment < 0)
        o->augment = o->data_dir != NULL;
    if (o->tf32 && o->bf16)
        return ddp_error_set(err, "--tf32 and --bf16 are two precisions for the convolutions: "
                                  "choose one");
    if (o->resume && !o->checkpoint_dir)
        return ddp_error_set(err, "--resume needs --checkpoint-dir");
    if (!strcmp(o->model.name, "resnet") && (o->model.depth - 2) % 6 != 0)
        return ddp_error_set(
            err, "--depth %d: a ResNet's depth is 6n+2 (8, 14, 20, 32, 44, 56, 110, ...)",
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
    snprintf(buf, size, "data=%s seed=%llu batch-size=%d shuffle=%d drop-last=%d augment=%d", data,
             (unsigned long long)o->seed, o->batch_size, o->shuffle, o->drop_last, o->augment);
}

double train_lr(const train_options_t *o, long step, long total, long steps_per_epoch)
{
    double warmup = o->warmup_epochs * (double)steps_per_epoch;
    if (step < warmup)
        return o->lr * (double)(step + 1) / warmup;
    double p = total > warmup ? ((double)step - warmup) / ((double)total - warmup) : 1;
    switch (o->schedule) {
    case SCHEDULE_COSINE:
        return o->lr * 0.5 * (1 + cos(M_PI * p));
    case SCHEDULE_STEP:
        return o->lr * (p >= 0.75 ? 0.01 : p >= 0.5 ? 0.1 : 1);
    default:
        return o->lr;
    }
}
