#include "agent/supervision/report.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_json.h"
#include "runtime/base/ddp_parse.h"

/* How much of a worker's error file the JSON report embeds. */
#define ERROR_FILE_MAX 65536

static const char *const kind_names[] = {"worker",  "lost",      "signal",
                                         "timeout", "preflight", "membership"};

static void format_time(time_t t, char *buf, size_t size)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void failure_stamp(failure_t *f)
{
    format_time(time(NULL), f->when, sizeof f->when);
}

void failure_from_status(int status, char *what, size_t size, int *code)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        const char *abbrev = ddp_signal_name(sig);
        snprintf(what, size, "killed by SIG%s", abbrev ? abbrev : "?");
        *code = 128 + sig;
    } else {
        *code = WEXITSTATUS(status);
        snprintf(what, size, "exited with code %d", *code);
    }
}

int failure_encode(const failure_t *f, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s %d %d %d %d %s %s %s\n%s", kind_names[f->kind], f->code,
                     f->node, f->rank, f->local_rank, f->host[0] ? f->host : "-", f->when,
                     cause_name(f->cause), f->what);
    return n < 0 || (size_t)n >= size ? -1 : n;
}

int failure_decode(const char *text, failure_t *f)
{
    char kind[16], cause[32];
    memset(f, 0, sizeof *f);
    if (sscanf(text, "%15s %d %d %d %d %255s %31s %31s", kind, &f->code, &f->node, &f->rank,
               &f->local_rank, f->host, f->when, cause) != 8)
        return -1;
    int c = cause_from_name(cause);
    if (c < 0)
        return -1;
    f->cause = (failure_cause_t)c;
    const char *nl = strchr(text, '\n');
    snprintf(f->what, sizeof f->what, "%s", nl ? nl + 1 : "");
    for (size_t i = 0; i < sizeof kind_names / sizeof kind_names[0]; i++)
        if (!strcmp(kind, kind_names[i])) {
            f->kind = (failure_kind_t)i;
            return 0;
        }
    return -1;
}

void failure_line(const failure_t *f, char *buf, size_t size)
{
    if (f->rank >= 0)
        snprintf(buf, size, "rank %d (node %d, host %s, local rank %d) %s at %s", f->rank, f->node,
                 f->host, f->local_rank, f->what, f->when);
    else if (f->node >= 0)
        snprintf(buf, size, "node %d (host %s): %s at %s", f->node, f->host, f->what, f->when);
    else
        snprintf(buf, size, "%s at %s", f->what, f->when);
}

failure_t failure_of_worker(const worker_t *w, int node, const char *host)
{
    failure_t f = {.kind = FAIL_WORKER,
                   .node = node,
                   .rank = w->rank,
                   .local_rank = w->local_rank,
                   .cause = w->cause};
    snprintf(f.host, sizeof f.host, "%s", host);
    failure_from_status(w->status, f.what, sizeof f.what, &f.code);
    if (w->cause == CAUSE_OUT_OF_MEMORY || w->cause == CAUSE_CHECKPOINT_SIGNAL)
        snprintf(f.what, sizeof f.what, "%s", w->cause_detail);
    if (w->cause == CAUSE_GPU_OUT_OF_MEMORY) {
        char status[sizeof f.what];
        snprintf(status, sizeof status, "%s", f.what);
        snprintf(f.what, sizeof f.what, "ran out of GPU memory%s%s%s%s%s (%.100s)",
                 *w->gpu ? " on GPU " : "", w->gpu, *w->gpu_pci ? " (PCI " : "", w->gpu_pci,
                 *w->gpu_pci ? ")" : "", status);
    }
    format_time(w->exit_time, f.when, sizeof f.when);
    return f;
}

/* f with its what from fmt and its time stamped. */
static failure_t described(failure_t f, const char *fmt, va_list ap)
{
    vsnprintf(f.what, sizeof f.what, fmt, ap);
    failure_stamp(&f);
    return f;
}

failure_t node_failure(failure_kind_t kind, int code, int node, const char *host, const char *fmt,
                       ...)
{
    failure_t f = {.kind = kind, .code = code, .node = node, .rank = -1, .local_rank = -1};
    snprintf(f.host, sizeof f.host, "%s", host && *host ? host : "-");
    va_list ap;
    va_start(ap, fmt);
    f = described(f, fmt, ap);
    va_end(ap);
    return f;
}

failure_t worker_failure(const worker_t *w, int node, const char *host, int code, const char *fmt,
                         ...)
{
    failure_t f = failure_of_worker(w, node, host);
    f.code = code;
    va_list ap;
    va_start(ap, fmt);
    f = described(f, fmt, ap);
    va_end(ap);
    return f;
}

/* A worker exiting 2 this soon after its start is taken as refusing its arguments. */
#define USAGE_ERROR_S 10

/* A worker that failed by itself, as opposed to one the agent stopped. */
static int failed_by_itself(const worker_t *w)
{
    return w->reaped && !w->stopped && (!WIFEXITED(w->status) || WEXITSTATUS(w->status) != 0);
}

/* A rank of this node that failed by itself: what, why, and its last words. */
static void summarise_failed(FILE *out, const worker_t *w, int node, const char *host)
{
    char line[1024];
    failure_t x = failure_of_worker(w, node, host);
    failure_line(&x, line, sizeof line);
    fprintf(out, "ddpjob-agent:   %s\n", line);
    if (x.cause == CAUSE_CONSEQUENCE)
        fprintf(out,
                "ddpjob-agent:     a consequence, not the cause: its stderr says \"%s\" (a peer "
                "went first)\n",
                w->cause_detail);
    if (x.cause == CAUSE_GPU_OUT_OF_MEMORY)
        fprintf(out,
                "ddpjob-agent:     its stderr says \"%.300s\" (the GPU's memory, not the "
                "node's: no OOM kill)\n",
                w->cause_detail);
    size_t kept;
    relay_tail_line(&w->relay[1], 0, &kept);
    /* Exit 2 at once is, by the convention argparse and getopt follow, the program refusing its
     * own command line: the job never started. */
    if (WIFEXITED(w->status) && WEXITSTATUS(w->status) == 2 &&
        w->exit_time - w->start_time <= USAGE_ERROR_S)
        fprintf(out,
                "ddpjob-agent:     exit 2 within %d s of its start: the workload's own usage "
                "error, not the job's; check the command's arguments\n",
                USAGE_ERROR_S);
    if (kept)
        fprintf(out, "ddpjob-agent:     last lines of its stderr:\n");
    for (size_t k = 0; k < kept; k++)
        fprintf(out, "ddpjob-agent:     | %s\n", relay_tail_line(&w->relay[1], k, NULL));
    if (access(w->error_file, R_OK) == 0)
        fprintf(out, "ddpjob-agent:     it wrote an error file (TORCHELASTIC_ERROR_FILE; "
                     "--error-file's report holds it)\n");
}

void report_summary(FILE *out, const failure_t *first, const worker_t *w, int n, int node,
                    const char *host)
{
    char line[1024];
    failure_line(first, line, sizeof line);
    fprintf(out, "ddpjob-agent: job failed (exit %d): %s\n", first->code, line);
    /* This node's ranks that failed by themselves, the consequences after the rest. */
    for (int consequences = 0; consequences < 2; consequences++)
        for (int i = 0; i < n; i++)
            if (failed_by_itself(&w[i]) && (w[i].cause == CAUSE_CONSEQUENCE) == consequences)
                summarise_failed(out, &w[i], node, host);
    for (int i = 0; i < n; i++) {
        char what[128];
        int code;
        if (!w[i].reaped || !w[i].stopped)
            continue;
        failure_from_status(w[i].status, what, sizeof what, &code);
        if (code != 0)
            fprintf(out,
                    "ddpjob-agent:   rank %d (node %d, host %s, local rank %d) stopped by the "
                    "agent (%s)\n",
                    w[i].rank, node, host, w[i].local_rank, what);
    }
    fflush(out);
}

/* The fields of a failure, without the braces, so that callers can add their own. */
static void json_failure_fields(FILE *f, const failure_t *x)
{
    fprintf(f, "\"kind\": ");
    ddp_json_string(f, kind_names[x->kind]);
    fprintf(f, ", \"exit_code\": %d, \"node\": %d, \"rank\": %d, \"local_rank\": %d, \"host\": ",
            x->code, x->node, x->rank, x->local_rank);
    ddp_json_string(f, x->host);
    fprintf(f, ", \"time\": ");
    ddp_json_string(f, x->when);
    fprintf(f, ", \"what\": ");
    ddp_json_string(f, x->what);
    fprintf(f, ", \"cause\": ");
    ddp_json_string(f, cause_name(x->cause));
}

/* A byte count, or null when unknown. */
static void json_bytes(FILE *f, long long bytes)
{
    if (bytes < 0)
        fputs("null", f);
    else
        fprintf(f, "%lld", bytes);
}

/* A worker's error file (at most ERROR_FILE_MAX bytes of it), or NULL when it wrote none. */
static char *read_error_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *text = malloc(ERROR_FILE_MAX + 1);
    size_t len = text ? fread(text, 1, ERROR_FILE_MAX, f) : 0;
    fclose(f);
    if (text)
        text[len] = '\0';
    return text;
}

int report_error_file(const char *path, const failure_t *first, const worker_t *w, int n, int node,
                      const char *host, const char *membership, ddp_error_t *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return ddp_error_set(err, "--error-file %s: out of memory", path);
    fprintf(f, "{\n  \"status\": \"failed\",\n  \"exit_code\": %d,\n  \"first_failure\": {",
            first->code);
    json_failure_fields(f, first);
    fprintf(f, "},\n  \"node\": %d,\n  \"host\": ", node);
    ddp_json_string(f, host);
    fprintf(f, ",\n  \"failed_ranks\": [");
    int count = 0;
    for (int i = 0; i < n; i++) {
        if (!failed_by_itself(&w[i]))
            continue;
        failure_t x = failure_of_worker(&w[i], node, host);
        fprintf(f, "%s\n    {", count++ ? "," : "");
        json_failure_fields(f, &x);
        fprintf(f, ", \"cause_detail\": ");
        if (x.cause != CAUSE_OWN)
            ddp_json_string(f, w[i].cause_detail);
        else
            fputs("null", f);
        if (x.cause == CAUSE_GPU_OUT_OF_MEMORY) {
            fprintf(f, ", \"gpu\": ");
            ddp_json_string(f, w[i].gpu);
            fprintf(f, ", \"gpu_pci\": ");
            ddp_json_string(f, w[i].gpu_pci);
        }
        if (x.cause == CAUSE_OUT_OF_MEMORY) {
            fprintf(f, ", \"memory_limit_bytes\": ");
            json_bytes(f, w[i].mem_limit);
            fprintf(f, ", \"memory_peak_bytes\": ");
            json_bytes(f, w[i].mem_peak);
        }
        fprintf(f, ", \"stderr_tail\": [");
        size_t kept;
        relay_tail_line(&w[i].relay[1], 0, &kept);
        for (size_t k = 0; k < kept; k++) {
            if (k)
                fputs(", ", f);
            ddp_json_string(f, relay_tail_line(&w[i].relay[1], k, NULL));
        }
        /* The worker's TORCHELASTIC_ERROR_FILE itself, not its path: the agent's temporary
         * directory that holds it is gone once the agent exits. */
        fprintf(f, "], \"error\": ");
        char *error = read_error_file(w[i].error_file);
        if (error)
            ddp_json_string(f, error);
        else
            fputs("null", f);
        free(error);
        fputc('}', f);
    }
    fprintf(f, "%s],\n  \"membership\": [%s%s]\n}\n", count ? "\n  " : "",
            membership ? "\n    " : "", membership ? membership : "");
    int bad = ferror(f) | fclose(f);
    int rc = bad ? ddp_error_set(err, "out of memory")
                 : ddp_write_file_atomic(path, text, len, 0600, err);
    free(text);
    return rc ? ddp_error_prefix(err, "--error-file") : 0;
}
