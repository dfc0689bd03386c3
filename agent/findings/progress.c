#include "agent/findings/progress.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_json.h"

/* Ring capacity bounds: the window over the heartbeat, plus a few. */
#define RING_MIN 8
#define RING_MAX 4096

typedef struct {
    int64_t at;
    long long step;
    unsigned long long busy_ns;
} sample_t;

typedef struct {
    long long step;
    int64_t reached_ns; /* when it wrote `step` (its file's mtime, CLOCK_REALTIME); 0: unknown */
    sample_t *ring;
    size_t head, count; /* the oldest sample is at head */
} worker_progress_t;

struct progress_local {
    int n;
    int64_t window_ms;
    size_t cap;
    worker_progress_t *w;
};

progress_local_t *progress_local_new(int n, int64_t window_ms, int64_t heartbeat_ms)
{
    progress_local_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->n = n;
    p->window_ms = window_ms;
    int64_t need = window_ms / (heartbeat_ms > 0 ? heartbeat_ms : 1) + 4;
    p->cap = need < RING_MIN ? RING_MIN : need > RING_MAX ? RING_MAX : (size_t)need;
    p->w = calloc((size_t)n, sizeof *p->w);
    for (int i = 0; p->w && i < n; i++) {
        p->w[i].step = -1;
        if (!(p->w[i].ring = calloc(p->cap, sizeof *p->w[i].ring))) {
            progress_local_free(p);
            return NULL;
        }
    }
    if (!p->w) {
        free(p);
        return NULL;
    }
    return p;
}

void progress_local_free(progress_local_t *p)
{
    for (int i = 0; p && p->w && i < p->n; i++)
        free(p->w[i].ring);
    if (p)
        free(p->w);
    free(p);
}

static int64_t realtime_ns(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

/* The step the worker last wrote, and when (*written_ns, from the file's mtime); -1 when it has
 * written none (or nothing readable). */
static long long read_step(const char *path, int64_t *written_ns)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[32];
    struct stat st;
    *written_ns = fstat(fd, &st) ? 0 : realtime_ns(&st.st_mtim);
    ssize_t len = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (len <= 0)
        return -1;
    buf[len] = '\0';
    char *end;
    long long step = strtoll(buf, &end, 10);
    return end == buf || step < 0 ? -1 : step;
}

/* What the process's threads have spent on a CPU and waiting on a run queue (ns). */
static unsigned long long busy_ns(int pid)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", pid);
    DIR *d = opendir(dir);
    unsigned long long total = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300 + sizeof e->d_name], text[128];
        snprintf(path, sizeof path, "%s/%s/schedstat", dir, e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t len = read(fd, text, sizeof text - 1);
        close(fd);
        unsigned long long run, wait;
        if (len > 0 && (text[len] = '\0', sscanf(text, "%llu %llu", &run, &wait) == 2))
            total += run + wait;
    }
    if (d)
        closedir(d);
    return total;
}

void progress_sample(progress_local_t *p, int i, const char *path, int pid, int64_t now)
{
    worker_progress_t *w = &p->w[i];
    int64_t written_ns;
    long long step = read_step(path, &written_ns);
    if (step < 0)
        step = w->step; /* between a truncation and the write, or never */
    if (step < 0)
        return;
    /* The first write of a step is its arrival: a script may write the same step again. */
    if (step != w->step)
        w->reached_ns = written_ns;
    sample_t s = {.at = now, .step = step, .busy_ns = busy_ns(pid)};
    const sample_t *last = w->count ? &w->ring[(w->head + w->count - 1) % p->cap] : NULL;
    /* A step counted down (a new run) or threads gone with their time: start again. */
    if (last && (s.step < last->step || s.busy_ns < last->busy_ns))
        w->count = 0;
    w->step = step;
    if (w->count == p->cap) {
        w->head = (w->head + 1) % p->cap;
        w->count--;
    }
    w->ring[(w->head + w->count++) % p->cap] = s;
}

void progress_last_step(progress_local_t *p, int i, const char *path)
{
    int64_t written_ns;
    long long step = read_step(path, &written_ns);
    if (step > p->w[i].step) {
        p->w[i].step = step;
        p->w[i].reached_ns = written_ns;
    }
}

progress_figure_t progress_local_figure(const progress_local_t *p, int i)
{
    const worker_progress_t *w = &p->w[i];
    progress_figure_t f = {.step = w->step, .busy_us = -1, .age_us = -1};
    if (w->reached_ns) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        int64_t age = (realtime_ns(&now) - w->reached_ns) / 1000;
        f.age_us = age < 0 ? 0 : age;
    }
    if (w->count < 2)
        return f;
    const sample_t *now = &w->ring[(w->head + w->count - 1) % p->cap], *then = NULL;
    /* The newest sample a whole window old: until there is one, nothing is known. */
    for (size_t k = 0; k < w->count; k++) {
        const sample_t *s = &w->ring[(w->head + k) % p->cap];
        if (now->at - s->at < p->window_ms)
            break;
        then = s;
    }
    if (then && now->step > then->step)
        f.busy_us = (long long)((now->busy_ns - then->busy_ns) / 1000 /
                                (unsigned long long)(now->step - then->step));
    return f;
}

size_t progress_encode(const progress_local_t *p, const int *ranks, char *buf, size_t size)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->n; i++) {
        progress_figure_t f = progress_local_figure(p, i);
        if (f.step < 0)
            continue;
        int k = snprintf(buf + len, size - len, "%s%d/%d:%lld:%lld:%lld", len ? " " : "", ranks[i],
                         i, f.step, f.busy_us, f.age_us);
        if (k < 0 || (size_t)k >= size - len)
            break;
        len += (size_t)k;
    }
    return len;
}

int progress_job_init(progress_job_t *j, int world, int64_t now)
{
    memset(j, 0, sizeof *j);
    j->ranks = calloc((size_t)world, sizeof *j->ranks);
    if (!j->ranks)
        return -1;
    j->world = world;
    j->max_step = -1;
    j->moved_at = now;
    for (int r = 0; r < world; r++)
        j->ranks[r] = (progress_rank_t){
            .fig = {-1, -1, -1}, .node = -1, .local_rank = -1, .step_at = now, .late_us = -1};
    return 0;
}

void progress_job_free(progress_job_t *j)
{
    free(j->ranks);
    j->ranks = NULL;
}

/* A rank's arrival at `step`, `age_us` before now_us: its time per step from the last one. */
static void note_arrival(progress_rank_t *r, long long step, long long age_us, int64_t now_us)
{
    if (age_us < 0 || (step == r->fig.step && r->reached_us))
        return;
    int64_t reached = now_us - age_us;
    if (r->reached_us && step > r->fig.step && reached > r->reached_us) {
        double period = (double)(reached - r->reached_us) / (double)(step - r->fig.step);
        r->period_us = r->period_us > 0 ? 0.7 * r->period_us + 0.3 * period : period;
    }
    r->reached_us = reached;
}

void progress_job_update(progress_job_t *j, int node, const char *text, int64_t now,
                         int64_t aged_us)
{
    int64_t written_us = ddp_now_us() - aged_us;
    for (const char *p = text; p && *p;) {
        int rank, local_rank, used = 0;
        long long step, busy, age = -1;
        if (sscanf(p, "%d/%d:%lld:%lld%n", &rank, &local_rank, &step, &busy, &used) != 4 ||
            used == 0)
            return;
        p += used;
        if (*p == ':') {
            char *end;
            age = strtoll(p + 1, &end, 10);
            p = end;
        }
        while (*p == ' ')
            p++;
        if (rank < 0 || rank >= j->world)
            continue;
        progress_rank_t *r = &j->ranks[rank];
        note_arrival(r, step, age, written_us);
        if (step != r->fig.step)
            r->step_at = now;
        r->fig = (progress_figure_t){step, busy, age};
        r->node = node;
        r->local_rank = local_rank;
        if (step > j->max_step) {
            j->max_step = step;
            j->moved_at = now;
        }
    }
}

static int by_value(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* The lower middle of the n values (sorted in place); -1 when there are none. */
static long long lower_median(long long *values, int n)
{
    if (n <= 0)
        return -1;
    qsort(values, (size_t)n, sizeof *values, by_value);
    return values[(n - 1) / 2];
}

/* The job's time per step: the median rank's (µs); 0 when no rank's is known yet. */
static double job_period(const progress_job_t *j, long long *scratch)
{
    int n = 0;
    for (int r = 0; r < j->world; r++)
        if (j->ranks[r].period_us > 0)
            scratch[n++] = (long long)j->ranks[r].period_us;
    long long median = lower_median(scratch, n);
    return median > 0 ? (double)median : 0;
}

/* Each rank's lateness: when it reaches (or, projected at the job's time per step, will reach)
 * the newest step any rank has reached, after the median rank, held between 0 and one step (a
 * rank further behind is stalled, not slow: progress_stalled's), smoothed by `weight`. */
static void judge_lateness(progress_job_t *j, double period, double weight, long long *scratch)
{
    long long newest = -1;
    int n = 0;
    for (int r = 0; r < j->world; r++)
        if (j->ranks[r].reached_us && j->ranks[r].fig.step > newest)
            newest = j->ranks[r].fig.step;
    for (int r = 0; r < j->world && period > 0; r++) {
        const progress_rank_t *x = &j->ranks[r];
        if (x->reached_us)
            scratch[n++] = x->reached_us + (long long)((double)(newest - x->fig.step) * period);
    }
    if (n < 2)
        return;
    long long *projected = scratch + j->world;
    memcpy(projected, scratch, (size_t)n * sizeof *scratch);
    long long median = lower_median(scratch, n);
    for (int r = 0, k = 0; r < j->world; r++) {
        progress_rank_t *x = &j->ranks[r];
        if (!x->reached_us)
            continue;
        double late = (double)(projected[k++] - median);
        late = late < 0 ? 0 : late > period ? period : late;
        x->late_us = x->late_us < 0 ? late : (1 - weight) * x->late_us + weight * late;
    }
}

/* How much longer the job's step is for the rank, by its lateness where that is judged, else its
 * busy time over the median rank's; 0 until its busy time is known, which says whether a late
 * rank computes or waits. */
static double slowness(const progress_rank_t *x, double period, long long median_busy,
                       int by_lateness, int *busy_bound, double factor)
{
    *busy_bound = 0;
    if (x->fig.busy_us < 0)
        return 0;
    double busy = median_busy > 0 ? (double)x->fig.busy_us / (double)median_busy : 1.0;
    *busy_bound = busy >= factor;
    if (!by_lateness)
        return busy;
    double unwaited = period - x->late_us;
    return unwaited < period / 100 ? 100.0 : period / unwaited;
}

int progress_judge(progress_job_t *j, double factor, double weight, progress_event_t *ev, int max)
{
    long long *scratch = malloc(2 * (size_t)j->world * sizeof *scratch + 1);
    int count = 0, events = 0;
    if (!scratch || factor <= 0) {
        free(scratch);
        return 0;
    }
    double period = job_period(j, scratch);
    judge_lateness(j, period, weight, scratch);
    for (int r = 0; r < j->world; r++)
        if (j->ranks[r].fig.busy_us >= 0)
            scratch[count++] = j->ranks[r].fig.busy_us;
    long long median = lower_median(scratch, count);
    free(scratch);
    for (int r = 0; r < j->world && events < max; r++) {
        progress_rank_t *x = &j->ranks[r];
        int busy_bound, by_lateness = x->late_us >= PROGRESS_LATE_MIN_US && period > 0;
        double ratio = slowness(x, period, median, by_lateness, &busy_bound, factor);
        if (ratio <= 0 || (!by_lateness && count < 2))
            continue;
        progress_event_kind_t kind;
        if (!x->slow && ratio >= factor)
            kind = PROGRESS_SLOW;
        else if (x->slow && ratio < factor)
            kind = PROGRESS_RECOVERED;
        else if (x->slow && ratio * 100 >= 1.5 * x->slow)
            kind = PROGRESS_SLOWER;
        else
            continue;
        x->slow = kind == PROGRESS_RECOVERED ? 0 : (int)(ratio * 100);
        ev[events++] =
            (progress_event_t){kind,           r,      ratio,      busy_bound || !by_lateness,
                               x->fig.busy_us, median, x->late_us, period > 0 ? period : -1};
    }
    return events;
}

int progress_stalled(const progress_job_t *j, int64_t now, int64_t timeout_ms, int *rank)
{
    *rank = -1;
    if (j->max_step < 0 || now - j->moved_at < timeout_ms)
        return 0;
    for (int r = 0; r < j->world; r++) {
        long long step = j->ranks[r].fig.step;
        if (step >= 0 && step < j->max_step && (*rank < 0 || step < j->ranks[*rank].fig.step))
            *rank = r;
    }
    return *rank >= 0 ? 1 : 2;
}

int progress_job_write(const progress_job_t *j, const char *path, int attempt, char *const *hosts,
                       const char *membership, ddp_error_t *err)
{
    char *text = NULL, when[32];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return ddp_error_set(err, "%s: out of memory", path);
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    fprintf(f, "{\"version\": 1, \"time\": \"%s\", \"attempt\": %d, \"ranks\": [", when, attempt);
    for (int r = 0; r < j->world; r++) {
        const progress_rank_t *x = &j->ranks[r];
        fputs(r ? ",\n  " : "\n  ", f);
        if (x->fig.step < 0) {
            fputs("null", f);
            continue;
        }
        fprintf(f, "{\"rank\": %d, \"node\": %d, \"host\": ", r, x->node);
        ddp_json_string(f, hosts && x->node >= 0 ? hosts[x->node] : NULL);
        fprintf(f, ", \"step\": %lld, \"busy_us_per_step\": ", x->fig.step);
        if (x->fig.busy_us >= 0)
            fprintf(f, "%lld", x->fig.busy_us);
        else
            fputs("null", f);
        fprintf(f, ", \"slow\": %s}", x->slow ? "true" : "false");
    }
    fprintf(f, "\n], \"membership\": [%s%s]}\n", membership ? "\n  " : "",
            membership ? membership : "");
    fclose(f);
    int rc = text ? ddp_write_file_atomic(path, text, len, 0600, err)
                  : ddp_error_set(err, "%s: out of memory", path);
    free(text);
    return rc;
}
