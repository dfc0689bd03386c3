#include "runtime/train/model/reducer.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct {
    size_t lo, hi; /* element range in the gradient buffer */
} bucket_t;

struct reducer {
    pg_t *pg;
    float *grads;
    const device_ops_t *dev;
    bucket_t *buckets; /* in the order they are sent: from the end of the buffer */
    int count;
    pthread_t thread;
    int thread_running;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int launched, done, stopping, failed;
    ddp_error_t error;
};

static void *communicate(void *arg)
{
    reducer_t *r = arg;
    r->dev->bind_thread();
    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (r->done == r->launched && !r->stopping)
            pthread_cond_wait(&r->changed, &r->lock);
        if (r->stopping)
            break;
        bucket_t b = r->buckets[r->done];
        int failed = r->failed;
        pthread_mutex_unlock(&r->lock);
        ddp_error_t err;
        int rc = failed ? 0
                        : pg_all_reduce(r->pg, r->grads + b.lo, r->grads + b.lo, b.hi - b.lo,
                                        PG_FLOAT32, PG_AVG, &err);
        pthread_mutex_lock(&r->lock);
        if (rc && !r->failed) {
            r->failed = 1;
            ddp_error_set(&r->error, "averaging gradient bucket %d (elements %zu-%zu): %s", r->done,
                          b.lo, b.hi, err.msg);
        }
        r->done++;
        pthread_cond_broadcast(&r->changed);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

reducer_t *reducer_create(pg_t *pg, float *grads, size_t count, size_t bucket_cap_bytes,
                          const device_ops_t *dev, ddp_error_t *err)
{
    reducer_t *r = calloc(1, sizeof *r);
    size_t cap = bucket_cap_bytes / sizeof(float),
           first = REDUCER_FIRST_BUCKET_BYTES / sizeof(float);
    if (cap < 1)
        cap = 1;
    if (first > count)
        first = count;
    size_t most = (count - first + cap - 1) / cap + 1;
    if (!r || !(r->buckets = calloc(most, sizeof *r->buckets))) {
        free(r);
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    r->pg = pg;
    r->grads = grads;
    r->dev = dev;
    for (size_t hi = count, lo; hi > first; hi = lo) {
        lo = hi - first > cap ? hi - cap : first;
        r->buckets[r->count++] = (bucket_t){lo, hi};
    }
    if (first > 0)
        r->buckets[r->count++] = (bucket_t){0, first};
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->changed, NULL);
    if (pg_size(pg) > 1) {
        if (pthread_create(&r->thread, NULL, communicate, r) != 0) {
            ddp_error_set(err, "cannot start the gradient communication thread");
            reducer_destroy(r);
            return NULL;
        }
        r->thread_running = 1;
    }
    return r;
}

void reducer_destroy(reducer_t *r)
{
    if (!r)
        return;
    if (r->thread_running) {
        pthread_mutex_lock(&r->lock);
        r->stopping = 1;
        pthread_cond_broadcast(&r->changed);
        pthread_mutex_unlock(&r->lock);
        pthread_join(r->thread, NULL);
    }
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->changed);
    free(r->buckets);
    free(r);
}

int reducer_bucket_count(const reducer_t *r)
{
    return r->count;
}

void reducer_start(reducer_t *r)
{
    pthread_mutex_lock(&r->lock);
    r->launched = r->done = 0;
    pthread_mutex_unlock(&r->lock);
}

void reducer_ready(void *arg, size_t offset)
{
    reducer_t *r = arg;
    if (!r->thread_running)
        return;
    pthread_mutex_lock(&r->lock);
    int ready = r->launched;
    while (ready < r->count && r->buckets[ready].lo >= offset)
        ready++;
    pthread_mutex_unlock(&r->lock);
    if (ready == r->launched) /* only this thread moves `launched` */
        return;
    ddp_error_t err;
    int synced = r->dev->sync(&err) == 0;
    pthread_mutex_lock(&r->lock);
    if (!synced && !r->failed) {
        r->failed = 1; /* the thread passes over the buckets; reducer_finish reports it */
        ddp_error_set(&r->error, "before averaging gradients: %s", err.msg);
    }
    r->launched = ready;
    pthread_cond_broadcast(&r->changed);
    pthread_mutex_unlock(&r->lock);
}

int reducer_finish(reducer_t *r, ddp_error_t *err)
{
    if (!r->thread_running)
        return 0;
    reducer_ready(r, 0);
    pthread_mutex_lock(&r->lock);
    while (r->done < r->count)
        pthread_cond_wait(&r->changed, &r->lock);
    int failed = r->failed;
    if (failed && err)
        *err = r->error;
    pthread_mutex_unlock(&r->lock);
    return failed ? -1 : 0;
}
