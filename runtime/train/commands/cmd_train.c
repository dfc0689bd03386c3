/* ddp-train train: data-parallel training on every rank of the job.
 *
 * Each step: this rank's batch (DistributedSampler order), batch-norm buffers from rank 0 (DDP's
 * broadcast_buffers), forward, loss, backward with the gradient buckets averaged across ranks
 * as backward produces them, SGD with momentum and weight decay at the schedule's rate. Rank 0
 * prints a line per epoch and checkpoints after each; a SIGTERM, SIGUSR1 or SIGUSR2 ends the run
 * after the step in progress with a checkpoint and status TRAIN_EXIT_STOPPED, so a resubmitted job
 * resumes where it stopped (--resume). Restarted by its agent (TORCHELASTIC_RESTART_COUNT above
 * 0: a failure, or a lost node replaced by a spare), it resumes from the checkpoint it finds. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/train/data/checkpoint.h"
#include "runtime/train/commands/commands.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/train/data/data.h"
#include "runtime/train/model/device.h"
#include "runtime/train/model/layers.h"
#include "runtime/train/model/model.h"
#include "runtime/train/model/reducer.h"
#include "runtime/train/data/sampler.h"
#include "runtime/train/options/train_options.h"
#include "runtime/job/worker_env.h"

/* Stopped on request with a checkpoint; run again with --resume (the agent's contract). */
#define TRAIN_EXIT_STOPPED WORKER_EXIT_CHECKPOINTED

/* How long after SIGTERM the other ranks may keep this one waiting: the step in progress and the
 * checkpoint take far less when they are alive; when one is gone (a partition), the job is being
 * torn down and this rank leaves instead of waiting for the process group's timeout. */
#define STOP_WAIT_MS 3000

/* What a signal handler touches: this flag, and the process group's time to give up. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
    if (sig == SIGTERM)
        pg_give_up_waiting_at(ddp_now_ms() + STOP_WAIT_MS);
}

typedef struct {
    const train_options_t *o;
    pg_t *pg;
    int rank, world;
    const device_ops_t *dev;
    model_t *model;
    reducer_t *reducer;
    float *momentum;   /* device */
    ckpt_state_t host; /* the model's state on the host: init, checkpoints, resume */
    double *scalars;   /* backend memory for reducing host values across ranks */
    dataset_t train, test;
    sampler_t sampler;
    void *device_batch; /* a step's input in device memory, as batch_at lays it out */
    void *staging[2];   /* where batches are made: host_alloc's, or device_batch on the host */
    int slot;           /* the staging slot the next batch is made in */
    double *tally;      /* device memory: the epoch's {summed loss, right answers}, the test's */
    int full_steps;     /* steps of a whole batch run in this process */
    void *recording;    /* the training step as the device recorded it, or NULL */
    long steps_per_epoch, total_steps, step;
    int progress_fd; /* DDP_PROGRESS_ENV's file; -1: none */
    int epoch;       /* position: the epoch in progress */
    long batch;      /* and the next batch in it */
    char checkpoint[4096];
    int resuming; /* --resume, or a restart of the job (a lost node's spare, say) with a checkpoint
                   */
    char model_text[128], config_text[1024];
} trainer_t;

static int load_data(trainer_t *t, ddp_error_t *err)
{
    const train_options_t *o = t->o;
    if (o->data_dir)
        return data_load_cifar(o->data_dir, &t->train, &t->test, err);
    return data_synthetic(o->seed, o->synthetic_train, o->synthetic_test, &t->train, &t->test, err);
}

/* The model's state between the device and t->host (to the device when `upload`). */
static void move_state(trainer_t *t, int upload)
{
    model_t *m = t->model;
    size_t np = model_param_count(m) * sizeof(float), nb = model_buffer_count(m) * sizeof(float);
    struct {
        float *device, *host;
        size_t bytes;
    } parts[] = {{model_params(m), t->host.params, np},
                 {t->momentum, t->host.momentum, np},
                 {model_buffers(m), t->host.buffers, nb}};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        if (upload)
            t->dev->upload(parts[i].device, parts[i].host, parts[i].bytes);
        else
            t->dev->download(parts[i].host, parts[i].device, parts[i].bytes);
    }
}

/* Host values reduced across ranks through backend memory (device memory under nccl). */
static int reduce_host(trainer_t *t, double *v, int n, pg_op_t op, ddp_error_t *err)
{
    if (t->world == 1)
        return 0;
    size_t bytes = (size_t)n * sizeof *v;
    return pg_copy_in(t->pg, t->scalars, v, bytes, err) ||
                   pg_all_reduce(t->pg, t->scalars, t->scalars, (size_t)n, PG_FLOAT64, op, err) ||
                   pg_copy_out(t->pg, v, t->scalars, bytes, err)
               ? -1
               : 0;
}

/* Reads the checkpoint and takes its position; anything that does not fit this run is an error
 * (a silent fresh start would throw the earlier work away). */
static int resume(trainer_t *t, ddp_error_t *err)
{
    checkpoint_t c;
    if (checkpoint_read(t->checkpoint, &c, err))
        return ddp_error_prefix(err, "cannot resume");
    int rc = -1;
    if (strcmp(c.model, t->model_text) != 0)
        ddp_error_set(err, "cannot resume: %s was made for model \"%s\", this run is \"%s\"",
                      t->checkpoint, c.model, t->model_text);
    else if (strcmp(c.config, t->config_text) != 0)
        ddp_error_set(err, "cannot resume: %s was made with \"%s\", this run has \"%s\"",
                      t->checkpoint, c.config, t->config_text);
    else if (c.world != t->world)
        ddp_error_set(err, "cannot resume: %s was made by %d ranks, this run has %d", t->checkpoint,
                      c.world, t->world);
    else if (c.batch >= t->steps_per_epoch || c.epoch < 0)
        ddp_error_set(err,
                      "cannot resume: %s: position epoch %d batch %ld is outside an epoch of "
                      "%ld batches",
                      t->checkpoint, c.epoch, c.batch, t->steps_per_epoch);
    else if (checkpoint_restore(&c, t->checkpoint, t->model, &t->host, err) == 0) {
        move_state(t, 1);
        t->epoch = c.epoch;
        t->batch = c.batch;
        t->step = c.step;
        rc = 0;
    }
    checkpoint_free(&c);
    return rc;
}

/* DDP's rule: every replica starts from rank 0's state, buffers included. */
static int sync_from_rank0(trainer_t *t, int params, ddp_error_t *err)
{
    model_t *m = t->model;
    if (t->world == 1)
        return 0;
    if (params && pg_broadcast(t->pg, model_params(m), model_param_count(m), PG_FLOAT32, 0, err))
        return -1;
    size_t nbuf = model_buffer_count(m);
    return nbuf ? pg_broadcast(t->pg, model_buffers(m), nbuf, PG_FLOAT32, 0, err) : 0;
}

/* Rank 0 writes; the others wait for it, so no rank's exit can stop the writer. */
static int save(trainer_t *t, ddp_error_t *err)
{
    if (!t->o->checkpoint_dir)
        return 0;
    if (sync_from_rank0(t, 0, err))
        return -1;
    int rc = 0;
    if (t->rank == 0) {
        checkpoint_t meta = {
            .epoch = t->epoch, .batch = t->batch, .step = t->step, .world = t->world};
        snprintf(meta.model, sizeof meta.model, "%s", t->model_text);
        snprintf(meta.config, sizeof meta.config, "%s", t->config_text);
        move_state(t, 0);
        rc = checkpoint_write(t->checkpoint, &meta, t->model, &t->host, err);
    }
    double failed = rc != 0;
    ddp_error_t pg_err;
    if (reduce_host(t, &failed, 1, PG_MAX, &pg_err)) {
        *err = pg_err;
        return -1;
    }
    if (failed && rc == 0)
        return ddp_error_set(err, "rank 0 could not write the checkpoint %s", t->checkpoint);
    return rc;
}

/* A step's input, one block so that one copy stages it: the images of a whole batch, the step's
 * learning rate (read by the device, so that a recorded step takes each step's), the labels. */
typedef struct {
    float *images, *lr;
    unsigned char *labels;
} batch_t;

static size_t batch_bytes(int batch_size)
{
    return (size_t)batch_size * (IMAGE_SIZE * sizeof(float) + 1) + sizeof(float);
}

static batch_t batch_at(void *base, int batch_size)
{
    float *images = base, *lr = images + (size_t)batch_size * IMAGE_SIZE;
    return (batch_t){images, lr, (unsigned char *)(lr + 1)};
}

/* Makes the next batch in a free staging slot and queues its upload: on a device with memory
 * of its own, the host makes the next while the device runs this one, at most two ahead. */
static int stage_batch(trainer_t *t, const dataset_t *d, const size_t *idx, int n, int augment,
                       double lr, ddp_error_t *err)
{
    const device_ops_t *dev = t->dev;
    if (dev->stage && dev->stage_wait(t->slot, err))
        return -1;
    batch_t b = batch_at(t->staging[t->slot], t->o->batch_size);
    data_batch(d, idx, n, augment, t->o->seed, (uint64_t)t->epoch, b.images, b.labels);
    *b.lr = (float)lr;
    if (dev->stage) {
        dev->stage(t->device_batch, t->staging[t->slot], batch_bytes(t->o->batch_size), t->slot);
        t->slot ^= 1;
    }
    return 0;
}

/* The step this rank has reached, for its agent (DDP_PROGRESS_ENV), before the gradients'
 * all-reduce: a rank the others wait for is then a step behind them. Written over the last in
 * place: the count only grows, so no shorter text is ever left with a longer one's tail. */
static void report_progress(trainer_t *t)
{
    if (t->progress_fd < 0)
        return;
    char text[32];
    int len = snprintf(text, sizeof text, "%ld\n", t->step);
    if (pwrite(t->progress_fd, text, (size_t)len, 0) < 0) {
        close(t->progress_fd);
        t->progress_fd = -1;
    }
}

/* The epoch's figures as one JSON line appended to DDP_METRICS_ENV's file, for a sweep's table. A
 * file that cannot be written costs the training nothing. */
static void report_metrics(const trainer_t *t, double loss, double train_acc, double test_loss,
                           double test_acc, double samples_per_s)
{
    const char *path = getenv(DDP_METRICS_ENV);
    FILE *f = path && *path ? fopen(path, "ae") : NULL;
    if (!f)
        return;
    fprintf(f,
            "{\"step\": %ld, \"epoch\": %d, \"loss\": %.6g, \"train_acc\": %.6g, "
            "\"test_loss\": %.6g, \"test_acc\": %.6g, \"samples_per_s\": %.6g}\n",
            t->step, t->epoch + 1, loss, train_acc, test_loss, test_acc, samples_per_s);
    fclose(f);
}

/* The steps the whole training takes, once, for `ddpjob status --watch`'s ETA. */
static void report_total_steps(const trainer_t *t)
{
    const char *path = getenv(DDP_METRICS_ENV);
    FILE *f = path && *path ? fopen(path, "ae") : NULL;
    if (!f)
        return;
    long total =
        t->o->max_steps && t->o->max_steps < t->total_steps ? t->o->max_steps : t->total_steps;
    fprintf(f, "{\"total_steps\": %ld}\n", total);
    fclose(f);
}

/* Forward, loss, backward with the gradients averaged as they are made, the SGD step. */
static int queue_step(trainer_t *t, int n, ddp_error_t *err)
{
    const train_options_t *o = t->o;
    batch_t b = batch_at(t->device_batch, o->batch_size);
    model_forward(t->model, b.images, n, 1);
    model_loss(t->model, b.labels, n, t->tally);
    reducer_start(t->reducer);
    model_backward(t->model, b.images, n, reducer_ready, t->reducer);
    if (reducer_finish(t->reducer, err))
        return -1;
    t->dev->sgd(model_params(t->model), model_grads(t->model), t->momentum,
                model_param_count(t->model), b.lr, (float)o->momentum, (float)o->weight_decay);
    return 0;
}

/* One GPU's step is recorded (a CUDA graph) once a whole batch has run as plain launches
 * (cuDNN's plans and the buffers that grow on first use are made then), and replayed: the host
 * queues a step in one call. Not with other ranks: the averaging waits on the host for each
 * bucket. */
static int steps_recorded(const trainer_t *t)
{
    return t->o->cuda_graph && t->dev->record_begin && t->world == 1;
}

static int step_recordable(const trainer_t *t, int n)
{
    return steps_recorded(t) && n == t->o->batch_size && t->full_steps > 0;
}

static int record_step(trainer_t *t, int n, ddp_error_t *err)
{
    if (t->dev->record_begin(err) || queue_step(t, n, err) ||
        !(t->recording = t->dev->record_end(err)))
        return ddp_error_prefix(err, "recording a training step as a CUDA graph (--no-cuda-graph: "
                                     "steps launched kernel by kernel)");
    return 0;
}

static int train_step(trainer_t *t, int n, double *count, ddp_error_t *err)
{
    const size_t *idx = t->sampler.mine + t->batch * t->o->batch_size;
    double lr = train_lr(t->o, t->step, t->total_steps, t->steps_per_epoch);
    if (stage_batch(t, &t->train, idx, n, t->o->augment, lr, err) || sync_from_rank0(t, 0, err))
        return -1;
    report_progress(t);
    if (step_recordable(t, n)) {
        if (!t->recording && record_step(t, n, err))
            return -1;
        t->dev->replay(t->recording);
    } else if (queue_step(t, n, err)) {
        return -1;
    }
    /* A GPU of its own runs on (its failures come back from the next stage_wait); where other
     * ranks read this one's memory, or the device is the host, the step ends here. */
    if ((t->world > 1 || t->dev->host_memory) && t->dev->sync(err))
        return -1;
    t->full_steps += n == t->o->batch_size;
    *count += n;
    t->step++;
    t->batch++;
    return 0;
}

/* {summed loss, right answers} from the device's tally at `at` once the queued work is done
 * (-1 with the device's error if it failed), and the tally zeroed for the next. */
static int take_tally(trainer_t *t, double *at, double sums[2], ddp_error_t *err)
{
    if (t->dev->sync(err))
        return -1;
    t->dev->download(sums, at, 2 * sizeof(double));
    t->dev->zero(at, 2 * sizeof(double));
    return 0;
}

/* Whether any rank was asked to stop: all ranks stop after the same step. */
static int agree_to_stop(trainer_t *t, int *stop, ddp_error_t *err)
{
    double flag = stop_signal != 0;
    if (reduce_host(t, &flag, 1, PG_MAX, err))
        return -1;
    *stop = flag != 0;
    return 0;
}

/* The whole test set, split over the ranks (rank r takes samples r, r+W, ...). */
static int evaluate(trainer_t *t, double *accuracy, double *loss, ddp_error_t *err)
{
    if (sync_from_rank0(t, 0, err))
        return -1;
    int b = t->o->batch_size;
    size_t *idx = malloc((size_t)b * sizeof *idx);
    if (!idx)
        return ddp_error_set(err, "out of memory");
    double sums[3] = {0, 0, 0};
    size_t next = (size_t)t->rank;
    batch_t on_device = batch_at(t->device_batch, b);
    int rc = 0;
    while (next < t->test.count && rc == 0) {
        int n = 0;
        for (; n < b && next < t->test.count; next += (size_t)t->world)
            idx[n++] = next;
        if ((rc = stage_batch(t, &t->test, idx, n, 0, 0, err)) == 0) {
            model_forward(t->model, on_device.images, n, 0);
            model_loss(t->model, on_device.labels, n, t->tally + 2);
            sums[2] += n;
        }
    }
    free(idx);
    if (rc || take_tally(t, t->tally + 2, sums, err) || reduce_host(t, sums, 3, PG_SUM, err))
        return -1;
    *loss = sums[2] ? sums[0] / sums[2] : 0;
    *accuracy = sums[2] ? sums[1] / sums[2] : 0;
    return 0;
}

typedef enum { RUN_DONE, RUN_STOPPED, RUN_LIMIT } run_end_t;

static int run(trainer_t *t, run_end_t *end, ddp_error_t *err)
{
    const train_options_t *o = t->o;
    double start = ddp_now_s(), test_acc = 0, test_loss = 0;
    int last_epoch =
        o->stop_after_epochs && o->stop_after_epochs < o->epochs ? o->stop_after_epochs : o->epochs;
    int stop = 0;
    *end = RUN_DONE;
    report_total_steps(t);
    while (t->epoch < last_epoch) {
        sampler_set_epoch(&t->sampler, (uint64_t)t->epoch);
        double count = 0, epoch_start = ddp_now_s();
        while (t->batch < t->steps_per_epoch) {
            long left = (long)t->sampler.num_samples - t->batch * o->batch_size;
            int n = left < o->batch_size ? (int)left : o->batch_size;
            double step_start = ddp_now_s();
            if (train_step(t, n, &count, err))
                return -1;
            /* Before the stop vote, so a signal during the pause is taken at this step. */
            double rest_ms = (double)o->min_step_ms - (ddp_now_s() - step_start) * 1000;
            if (rest_ms > 0)
                ddp_sleep_ms((int64_t)rest_ms);
            if (agree_to_stop(t, &stop, err))
                return -1;
            /* At an epoch's last step the epoch's end saves, with the position past it. */
            if (o->max_steps && t->step >= o->max_steps && t->batch < t->steps_per_epoch) {
                *end = RUN_LIMIT;
                return save(t, err);
            }
            if (stop && t->batch < t->steps_per_epoch) {
                *end = RUN_STOPPED;
                return save(t, err);
            }
        }
        double sums[3] = {0, 0, count};
        if (take_tally(t, t->tally, sums, err))
            return -1;
        double seconds = ddp_now_s() - epoch_start;
        if (reduce_host(t, sums, 3, PG_SUM, err) || evaluate(t, &test_acc, &test_loss, err))
            return -1;
        if (t->rank == 0) {
            printf("epoch %d/%d  loss %.4f  train-acc %.4f  test-loss %.4f  test-acc %.4f  "
                   "samples/s %.0f  time %.2fs\n",
                   t->epoch + 1, o->epochs, sums[2] ? sums[0] / sums[2] : 0,
                   sums[2] ? sums[1] / sums[2] : 0, test_loss, test_acc,
                   seconds > 0 ? sums[2] / seconds : 0, seconds);
            fflush(stdout);
            report_metrics(t, sums[2] ? sums[0] / sums[2] : 0, sums[2] ? sums[1] / sums[2] : 0,
                           test_loss, test_acc, seconds > 0 ? sums[2] / seconds : 0);
        }
        t->epoch++;
        t->batch = 0;
        if (save(t, err))
            return -1;
        if (stop) {
            *end = RUN_STOPPED;
            return 0;
        }
        if (o->max_steps && t->step >= o->max_steps) {
            *end = RUN_LIMIT;
            return 0;
        }
    }
    if (t->rank == 0) {
        printf("%s after %d of %d epochs (%ld steps, %d rank%s): test-acc %.4f  test-loss %.4f  "
               "%.1fs%s%s\n",
               last_epoch < o->epochs ? "stopped as asked" : "trained", t->epoch, o->epochs,
               t->step, t->world, t->world > 1 ? "s" : "", test_acc, test_loss, ddp_now_s() - start,
               o->checkpoint_dir ? "  checkpoint " : "", o->checkpoint_dir ? t->checkpoint : "");
        fflush(stdout);
    }
    return 0;
}

/* Gradients in the process group's memory when they live on the host: the averaging then
 * reduces them in place between this host's ranks instead of copying them through a segment. */
static void *grads_alloc(void *ctx, size_t bytes)
{
    ddp_error_t ignored;
    void *p = pg_alloc(ctx, bytes, &ignored);
    if (p)
        memset(p, 0, bytes);
    return p;
}

static void grads_free(void *ctx, void *p)
{
    pg_free(ctx, p);
}

static int setup(trainer_t *t, ddp_error_t *err)
{
    const train_options_t *o = t->o;
    model_config_describe(&o->model, t->model_text, sizeof t->model_text);
    train_options_describe(o, t->config_text, sizeof t->config_text);
    if (o->checkpoint_dir) {
        if (ddp_make_dirs(o->checkpoint_dir, 0777, err))
            return -1;
        snprintf(t->checkpoint, sizeof t->checkpoint, "%s/checkpoint.ddpt", o->checkpoint_dir);
    }
    const char *restarts = getenv(DDP_RESTART_COUNT_ENV);
    t->resuming = o->resume || (o->checkpoint_dir && restarts && atoi(restarts) > 0 &&
                                access(t->checkpoint, R_OK) == 0);
    if (load_data(t, err))
        return -1;
    if (sampler_init(&t->sampler, t->train.count, t->rank, t->world, o->shuffle, o->drop_last,
                     o->seed))
        return ddp_error_set(err, "out of memory");
    if (t->sampler.num_samples == 0)
        return ddp_error_set(err, "%zu training samples leave nothing for %d ranks", t->train.count,
                             t->world);
    t->steps_per_epoch =
        (long)((t->sampler.num_samples + (size_t)o->batch_size - 1) / (size_t)o->batch_size);
    t->total_steps = t->steps_per_epoch * o->epochs;
    grad_memory_t pg_memory = {grads_alloc, grads_free, t->pg};
    int grads_in_pg = t->dev->host_memory && !strcmp(pg_backend_name(t->pg), "tcp");
    if (!(t->model =
              model_create(&o->model, t->dev, o->batch_size, grads_in_pg ? &pg_memory : NULL, err)))
        return -1;
    size_t np = model_param_count(t->model), nb = model_buffer_count(t->model);
    t->host.params = calloc(np + 1, sizeof(float));
    t->host.momentum = calloc(np + 1, sizeof(float));
    t->host.buffers = calloc(nb + 1, sizeof(float));

    t->momentum = t->dev->alloc(np * sizeof(float));
    size_t batch_size_bytes = batch_bytes(o->batch_size);
    t->device_batch = t->dev->alloc(batch_size_bytes);
    t->tally = t->dev->alloc(4 * sizeof(double));
    t->scalars = pg_alloc(t->pg, 8 * sizeof(double), err);
    if (!t->momentum || !t->device_batch || !t->tally) {
        char memory[256];
        t->dev->describe_memory(memory, sizeof memory);
        return ddp_error_set(err, "out of %s for the optimizer's state and a batch", memory);
    }
    for (int s = 0; s < 2; s++)
        t->staging[s] = t->dev->stage ? t->dev->host_alloc(batch_size_bytes) : t->device_batch;
    if (!t->host.params || !t->host.momentum || !t->host.buffers || !t->staging[0] ||
        !t->staging[1] || !t->scalars)
        return ddp_error_set(err, "out of memory");
    model_init(t->model, o->seed, t->host.params, t->host.buffers);
    move_state(t, 1);
    if (t->resuming && resume(t, err))
        return -1;
    if (!(t->reducer = reducer_create(t->pg, model_grads(t->model), np,
                                      (size_t)(o->bucket_cap_mb * 1024 * 1024), t->dev, err)))
        return -1;
    if (t->rank == 0) {
        printf("ddp-train: %s, %zu parameters in %d bucket(s); %zu train / %zu test samples, "
               "%d rank(s) x batch %d on %s%s; %s\n",
               t->model_text, np, reducer_bucket_count(t->reducer), t->train.count, t->test.count,
               t->world, o->batch_size, t->dev->name,
               steps_recorded(t) ? " (each step a CUDA graph)" : "", t->config_text);
        char memory[160];
        model_describe_memory(t->model, memory, sizeof memory);
        printf("ddp-train: the model holds %s of %s memory\n", memory,
               t->dev->host_memory ? "host" : "device");
        if (t->resuming)
            printf("ddp-train: resuming from %s at epoch %d, batch %ld (step %ld)\n", t->checkpoint,
                   t->epoch + 1, t->batch, t->step);
        fflush(stdout);
    }
    return sync_from_rank0(t, 1, err);
}

static void teardown(trainer_t *t)
{
    reducer_destroy(t->reducer);
    if (t->recording)
        t->dev->recording_free(t->recording);
    for (int s = 0; s < 2; s++)
        if (t->dev->stage && t->staging[s])
            t->dev->host_free(t->staging[s]);
    void *device_memory[] = {t->momentum, t->device_batch, t->tally};
    for (size_t i = 0; i < sizeof device_memory / sizeof *device_memory; i++)
        if (device_memory[i])
            t->dev->free(device_memory[i]);
    pg_free(t->pg, t->scalars);
    model_destroy(t->model);
    sampler_free(&t->sampler);
    data_free(&t->train);
    data_free(&t->test);
    free(t->host.params);
    free(t->host.momentum);
    free(t->host.buffers);
}

int cmd_train(int argc, char **argv)
{
    session_options_t so = {0};
    train_options_t o;
    ddp_error_t err;
    if (session_parse(&argc, argv, &so))
        return 2;
    if (train_options_parse(argc, argv, &o, &err)) {
        fprintf(stderr, "ddp-train train: %s\n%s", err.msg, train_usage());
        return 2;
    }
    struct sigaction sa = {.sa_handler = on_stop_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL); /* what the Slurm script asks for before the time limit */
    layers_set_threads(o.threads);
    const device_ops_t *cpu = device_cpu_open(o.cpu_conv, &err);
    if (!cpu) {
        fprintf(stderr, "ddp-train train: %s\n", err.msg);
        return 2;
    }
    pg_t *pg = session_open("train", &so);
    if (!pg)
        return 1;
    const char *progress = getenv(DDP_PROGRESS_ENV);
    trainer_t t = {.o = &o,
                   .pg = pg,
                   .rank = pg_rank(pg),
                   .world = pg_size(pg),
                   .progress_fd = progress && *progress
                                      ? open(progress, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)
                                      : -1};
    run_end_t end = RUN_DONE;
    /* The nccl backend reduces GPU memory, so the model lives on this rank's GPU. */
    int gpu = strcmp(pg_backend_name(pg), "nccl") == 0;
    if (!gpu && o.bf16) {
        fprintf(stderr, "ddp-train train: --bf16 is mixed precision on a GPU (--backend nccl); "
                        "the CPU trains in float32\n");
        return session_close("train", pg, 2);
    }
    gpu_math_t math = o.bf16 ? GPU_MATH_BF16 : o.tf32 ? GPU_MATH_TF32 : GPU_MATH_FLOAT32;
    if (gpu && !(t.dev = device_cuda_open(pg_local_rank(pg), math, &err))) {
        fprintf(stderr, "ddp-train train: rank %d: --backend nccl: %s\n", t.rank, err.msg);
        return session_close("train", pg, 1);
    }
    if (!gpu)
        t.dev = cpu;
    int status = setup(&t, &err) || run(&t, &end, &err) ? 1 : 0;
    if (status && stop_signal == SIGTERM) {
        fprintf(stderr,
                "ddp-train train: rank %d: stopped by SIGTERM while the other ranks did not "
                "answer (%s); nothing saved\n",
                t.rank, err.msg);
        status = 128 + SIGTERM;
    } else if (status) {
        fprintf(stderr, "ddp-train train: rank %d: %s\n", t.rank, err.msg);
    } else if (end == RUN_STOPPED) {
        if (t.rank == 0)
            fprintf(stderr,
                    "ddp-train train: stopped by %s after step %ld (epoch %d, batch %ld)%s%s; "
                    "exit status %d: run again with --resume\n",
                    stop_signal ? strsignal(stop_signal) : "a signal to another rank", t.step,
                    t.epoch + 1, t.batch,
                    o.checkpoint_dir ? ", checkpoint " : " (no --checkpoint-dir: nothing saved)",
                    o.checkpoint_dir ? t.checkpoint : "", TRAIN_EXIT_STOPPED);
        status = TRAIN_EXIT_STOPPED;
    } else if (end == RUN_LIMIT && t.rank == 0) {
        printf("stopped at --max-steps %ld (epoch %d, batch %ld)%s%s\n", o.max_steps, t.epoch + 1,
               t.batch, o.checkpoint_dir ? "  checkpoint " : "",
               o.checkpoint_dir ? t.checkpoint : "");
    }
    teardown(&t);
    if (t.progress_fd >= 0)
        close(t.progress_fd);
    return session_close("train", pg, status);
}
