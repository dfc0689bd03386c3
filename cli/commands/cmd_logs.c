/* logs: a job's per-rank output from its record, every link and attempt in order. Both streams
 * by default, interleaved in the order they arrived (the agent's rank_R/order file notes each
 * chunk it copied: relay.h), stderr's lines marked; --stdout or --stderr for one alone. -f
 * follows a running job until it ends. */
#include <getopt.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jobs/term_text.h"
#include "cli/commands/commands.h"
#include "cli/jobs/pipeline_record.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_parse.h"
#include "cli/jobs/sweep_record.h"

/* How often -f looks again. */
#define FOLLOW_MS 500
/* A chunk the order file names is read whole; one larger is no chunk the agent wrote. */
#define CHUNK_MAX (1 << 20)

enum { STREAM_OUT = 1, STREAM_ERR = 2, STREAMS_BOTH = 3 };

static const char logs_help[] =
    "usage: ddpjob logs JOB [--rank N | --node N] [--attempt K] [--link K] [--stdout | --stderr]\n"
    "                       [-f]\n"
    "       ddpjob logs JOB --batch [--link K]\n"
    "       ddpjob logs SWEEP --trial K [the same options]\n"
    "       ddpjob logs PIPELINE --stage NAME [--trial K] [the same options]\n"
    "The job's per-rank output from its record (link-K/logs), every link of the chain and every\n"
    "attempt in order unless told one; the whole job's lines prefixed \"[rank R]\", one rank's\n"
    "bare. Both streams, interleaved as they came, stderr's lines marked \"[rank R stderr]\" (one\n"
    "rank's: \"[stderr]\"); --stdout or --stderr: that stream alone. -f: follow until the job\n"
    "ends (--on: through a lost link, tried again, no line twice). --batch: what the batch shell\n"
    "and what it started (srun, pbsdsh, pyxis) said, bar the ranks' lines (link-K/batch.log):\n"
    "a job that failed before its workers started says why there, and a job without a rank's\n"
    "log shows it.\n" ON_CLUSTER_HELP;

typedef struct {
    int rank, node, attempt, link, streams, follow, trial, batch;
    const char *stage; /* a pipeline's stage */
} logs_args_t;

/* A rank's logs in the record, and how far each file has been printed. */
typedef struct {
    int link, attempt, rank;
    char *dir;
    long offset[3];   /* stdout.log, stderr.log, order */
    char *pending[2]; /* a line of each stream not ended yet (interleaving) */
    size_t npending[2];
} rank_logs_t;

typedef struct {
    rank_logs_t *ranks;
    size_t n;
} log_set_t;

static const char *const log_names[3] = {"stdout.log", "stderr.log", "order"};

static int log_order(const void *x, const void *y)
{
    const rank_logs_t *a = x, *b = y;
    if (a->link != b->link)
        return a->link < b->link ? -1 : 1;
    if (a->attempt != b->attempt)
        return a->attempt < b->attempt ? -1 : 1;
    return a->rank < b->rank ? -1 : a->rank > b->rank;
}

/* Adds the record's rank folders that match and are new, kept in order (link, attempt, rank). */
static void find_logs(const job_view_t *v, const logs_args_t *a, log_set_t *set)
{
    char pattern[8192];
    /* The trailing slash matches folders alone (POSIX; GLOB_ONLYDIR is glibc's). */
    snprintf(pattern, sizeof pattern, "%s/link-*/logs/*/attempt_*/rank_*/", v->rec.dir);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0)
        return;
    int per_node = v->rec.procs_per_node > 0 ? v->rec.procs_per_node : 1;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        char *path = g.gl_pathv[i];
        path[strlen(path) - 1] = '\0';
        const char *l = strstr(path + strlen(v->rec.dir), "/link-");
        const char *at = strstr(path, "/attempt_"), *r = strstr(path, "/rank_");
        if (!l || !at || !r)
            continue;
        rank_logs_t f = {.link = atoi(l + 6), .attempt = atoi(at + 9), .rank = atoi(r + 6)};
        if ((a->link >= 0 && f.link != a->link) || (a->attempt >= 0 && f.attempt != a->attempt) ||
            (a->rank >= 0 && f.rank != a->rank) || (a->node >= 0 && f.rank / per_node != a->node))
            continue;
        size_t k = 0;
        while (k < set->n && strcmp(set->ranks[k].dir, path))
            k++;
        if (k < set->n)
            continue;
        rank_logs_t *more = realloc(set->ranks, (set->n + 1) * sizeof *more);
        if (!more || !(f.dir = strdup(path)))
            break;
        set->ranks = more;
        set->ranks[set->n++] = f;
    }
    globfree(&g);
    qsort(set->ranks, set->n, sizeof *set->ranks, log_order);
}

/* One line of a rank's stream, with the prefix and mark the command line asks for. */
static void print_line(const logs_args_t *a, int rank, int err, const char *text, size_t len)
{
    int marked = err && a->streams == STREAMS_BOTH;
    if (a->rank < 0)
        printf(marked ? "[rank %d stderr] " : "[rank %d] ", rank);
    else if (marked)
        fputs("[stderr] ", stdout);
    term_text_write(stdout, text, len);
    if (!len || text[len - 1] != '\n')
        putchar('\n');
}

static FILE *open_log(const rank_logs_t *lf, int k)
{
    char path[8300];
    snprintf(path, sizeof path, "%s/%s", lf->dir, log_names[k]);
    return fopen(path, "re");
}

/* Stream k's whole lines past its offset; at the end (`last`) what is left of a line never
 * ended. */
static void print_stream(rank_logs_t *lf, int k, const logs_args_t *a, int last)
{
    char line[65536];
    FILE *f = open_log(lf, k);
    if (!f || fseek(f, lf->offset[k], SEEK_SET)) {
        if (f)
            fclose(f);
        return;
    }
    /* A line still being written is printed once it ends (or is longer than the buffer). */
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        if (len == 0) /* a NUL byte in the file: the rest is not text */
            break;
        if (line[len - 1] != '\n' && len + 1 < sizeof line && !last)
            break;
        lf->offset[k] = ftell(f);
        print_line(a, lf->rank, k == 1, line, len);
    }
    fclose(f);
}

/* A chunk of stream k: its ended lines printed, the rest kept for the next chunk. */
static void take_chunk(rank_logs_t *lf, int k, const char *data, size_t n, const logs_args_t *a)
{
    char *buf = realloc(lf->pending[k], lf->npending[k] + n);
    if (!buf)
        return;
    memcpy(buf + lf->npending[k], data, n);
    lf->pending[k] = buf;
    size_t len = lf->npending[k] + n, start = 0;
    for (char *nl; (nl = memchr(buf + start, '\n', len - start));) {
        print_line(a, lf->rank, k, buf + start, (size_t)(nl - (buf + start)) + 1);
        start = (size_t)(nl - buf) + 1;
    }
    memmove(buf, buf + start, len - start);
    lf->npending[k] = len - start;
}

/* Both streams in the order the order file gives; 0 when there is no order file. */
static int print_interleaved(rank_logs_t *lf, const logs_args_t *a, int last)
{
    FILE *order = open_log(lf, 2), *f[2] = {open_log(lf, 0), open_log(lf, 1)};
    char entry[64], *chunk = NULL;
    int found = order != NULL;
    while (order && f[0] && f[1] && !fseek(order, lf->offset[2], SEEK_SET) &&
           fgets(entry, sizeof entry, order) && strchr(entry, '\n')) {
        char s;
        size_t n;
        if (sscanf(entry, "%c %zu", &s, &n) != 2 || (s != 'o' && s != 'e') || n > CHUNK_MAX)
            break;
        int k = s == 'e';
        /* The agent writes a chunk before noting it: one not all there yet is read next time. */
        if (!(chunk = realloc(chunk, n ? n : 1)) || fseek(f[k], lf->offset[k], SEEK_SET) ||
            fread(chunk, 1, n, f[k]) != n)
            break;
        lf->offset[k] += (long)n;
        lf->offset[2] = ftell(order);
        take_chunk(lf, k, chunk, n, a);
    }
    for (int k = 0; last && k < 2; k++)
        if (lf->npending[k]) {
            print_line(a, lf->rank, k, lf->pending[k], lf->npending[k]);
            lf->npending[k] = 0;
        }
    free(chunk);
    for (int k = 0; k < 2; k++)
        if (f[k])
            fclose(f[k]);
    if (order)
        fclose(order);
    return found;
}

static void print_logs(log_set_t *set, const logs_args_t *a, int last)
{
    for (size_t i = 0; i < set->n; i++) {
        rank_logs_t *lf = &set->ranks[i];
        if (a->streams == STREAMS_BOTH && print_interleaved(lf, a, last))
            continue;
        /* One stream, or a record older than the order file: each stream whole, in turn. */
        for (int k = 0; k < 2; k++)
            if (a->streams & (1 << k))
                print_stream(lf, k, a, last);
    }
    fflush(stdout);
}

/* Each link's batch.log (or --link's), its lines "[batch] " first where `marked`; how many links
 * had one. */
static int print_batch_logs(const job_view_t *v, const logs_args_t *a, int marked)
{
    int printed = 0;
    for (int k = 0; k < (v->rec.nlinks ? v->rec.nlinks : 1); k++) {
        if (a->link >= 0 && k != a->link)
            continue;
        char path[8192], line[65536];
        snprintf(path, sizeof path, "%s/link-%d/batch.log", v->rec.dir, k);
        FILE *f = fopen(path, "re");
        if (!f)
            continue;
        printed++;
        while (fgets(line, sizeof line, f)) {
            if (marked)
                fputs("[batch] ", stdout);
            term_text_write(stdout, line, strlen(line));
            if (line[strlen(line) - 1] != '\n')
                putchar('\n');
        }
        fclose(f);
    }
    return printed;
}

/* The command line into a; -1 when it is one, else the exit status (help, usage). */
static int logs_options(int argc, char **argv, logs_args_t *ap)
{
    static const struct option opts[] = {
        {"rank", required_argument, NULL, 'r'},    {"node", required_argument, NULL, 'n'},
        {"attempt", required_argument, NULL, 'a'}, {"link", required_argument, NULL, 'l'},
        {"stdout", no_argument, NULL, 'o'},        {"stderr", no_argument, NULL, 'e'},
        {"follow", no_argument, NULL, 'f'},        {"trial", required_argument, NULL, 't'},
        {"batch", no_argument, NULL, 'b'},         {"stage", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},          {0}};
    logs_args_t a = {.rank = -1, .node = -1, .attempt = -1, .link = -1, .trial = -1};
    int only = 0;
    int c;
    while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
        int *target = c == 'r'   ? &a.rank
                      : c == 'n' ? &a.node
                      : c == 'a' ? &a.attempt
                      : c == 'l' ? &a.link
                      : c == 't' ? &a.trial
                                 : NULL;
        if (target) {
            if (ddp_parse_int(optarg, 0, 1 << 24, target)) {
                fprintf(stderr, "ddpjob logs: %s: expected a number >= 0\n", optarg);
                return EXIT_USAGE;
            }
            /* --link and --attempt count from 1 as status shows them. */
            if ((c == 'l' || c == 'a') && (*target)-- == 0) {
                fprintf(stderr, "ddpjob logs: --%s counts from 1\n", c == 'l' ? "link" : "attempt");
                return EXIT_USAGE;
            }
        } else if (c == 'o' || c == 'e') {
            only |= c == 'o' ? STREAM_OUT : STREAM_ERR;
        } else if (c == 'f') {
            a.follow = 1;
        } else if (c == 'b') {
            a.batch = 1;
        } else if (c == 's') {
            a.stage = optarg;
        } else if (c == 'h') {
            return fputs(logs_help, stdout), EXIT_OK;
        } else {
            return fputs(logs_help, stderr), EXIT_USAGE;
        }
    }
    if (optind + 1 != argc || (a.rank >= 0 && a.node >= 0) || only == STREAMS_BOTH ||
        (a.batch && (a.rank >= 0 || a.node >= 0 || a.attempt >= 0 || only || a.follow)))
        return fputs(logs_help, stderr), EXIT_USAGE;
    a.streams = only ? only : STREAMS_BOTH;
    *ap = a;
    return -1;
}

/* The job's logs in dir as a asks, followed until it ends with a->follow, its files read every
 * read_ms. */
static void print_job_logs(char *dir, const logs_args_t *a, int read_ms)
{
    log_set_t set = {0};
    int64_t unaccounted_since = 0, next_look = 0;
    job_view_t v;
    int looked = 0, last = 0;
    for (;;) {
        /* The job's state (a scheduler call) every FOLLOW_MS; its files every read_ms. */
        if (ddp_now_ms() >= next_look) {
            if (looked)
                job_views_free(&v, 1);
            int vanished;
            last = job_look(dir, &v, &unaccounted_since, &vanished) || !a->follow;
            looked = 1;
            next_look = ddp_now_ms() + FOLLOW_MS;
        }
        /* After the state: lines written before the end are all printed. */
        find_logs(&v, a, &set);
        print_logs(&set, a, last);
        /* No rank wrote anything (its workers never started): what the batch shell said. */
        if (last && !set.n && a->rank < 0 && a->node < 0 && a->attempt < 0 &&
            !print_batch_logs(&v, a, 1))
            fprintf(stderr, "ddpjob logs: no rank of %s has written a log yet\n", v.rec.name);
        if (last)
            break;
        ddp_sleep_ms(read_ms);
    }
    job_views_free(&v, 1);
    for (size_t i = 0; i < set.n; i++) {
        free(set.ranks[i].dir);
        free(set.ranks[i].pending[0]);
        free(set.ranks[i].pending[1]);
    }
    free(set.ranks);
}

void logs_follow(char *dir, int read_ms)
{
    logs_args_t a = {.rank = -1,
                     .node = -1,
                     .attempt = -1,
                     .link = -1,
                     .trial = -1,
                     .streams = STREAMS_BOTH,
                     .follow = 1};
    print_job_logs(dir, &a, read_ms);
}

int cmd_logs(int argc, char **argv)
{
    logs_args_t a;
    int rc = logs_options(argc, argv, &a);
    if (rc >= 0)
        return rc;
    size_t n;
    char **dirs = find_records(1, argv + optind, 0, &n);
    if (!dirs)
        return EXIT_SYSTEM;
    if (pipeline_record_is(dirs[0]) || a.stage) {
        char *stage =
            pipeline_record_is(dirs[0]) && a.stage ? pipeline_stage_record(dirs[0], a.stage) : NULL;
        if (!stage && !a.stage)
            fprintf(stderr, "ddpjob logs: %s is a pipeline: --stage NAME\n", argv[optind]);
        else if (!stage && !pipeline_record_is(dirs[0]))
            fprintf(stderr, "ddpjob logs: --stage is for a pipeline\n");
        free(dirs[0]);
        dirs[0] = stage;
        if (!stage) {
            job_index_free(dirs);
            return EXIT_USAGE;
        }
    }
    if (sweep_record_is(dirs[0]) || a.trial >= 0) {
        char *trial = sweep_record_is(dirs[0]) ? sweep_trial_record(dirs[0], a.trial) : NULL;
        if (!trial && a.trial >= 0 && !sweep_record_is(dirs[0]))
            fprintf(stderr, "ddpjob logs: --trial is for a sweep\n");
        free(dirs[0]);
        dirs[0] = trial;
        if (!trial) {
            job_index_free(dirs);
            return EXIT_USAGE;
        }
    }
    int64_t unaccounted_since = 0;
    if (a.batch) {
        job_view_t v;
        int vanished;
        job_look(dirs[0], &v, &unaccounted_since, &vanished);
        if (!print_batch_logs(&v, &a, 0))
            fprintf(stderr,
                    "ddpjob logs: %s has no batch.log%s (its batch shell has not started, "
                    "or an older ddpjob submitted it)\n",
                    v.rec.dir, a.link >= 0 ? " for that link" : "");
        job_views_free(&v, 1);
        job_index_free(dirs);
        return EXIT_OK;
    }
    print_job_logs(dirs[0], &a, FOLLOW_MS);
    job_index_free(dirs);
    return EXIT_OK;
}
