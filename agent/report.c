#include "report.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ddp_json.h"

/* How much of a worker's error file the JSON report embeds. */
#define ERROR_FILE_MAX 65536

static const char *const kind_names[] = {"worker", "lost", "signal", "timeout", "preflight"};

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
        const char *abbrev = sigabbrev_np(sig);
        snprintf(what, size, "killed by SIG%s", abbrev ? abbrev : "?");
        *code = 128 + sig;
    } else {
        *code = WEXITSTATUS(status);
        snprintf(what, size, "exited with code %d", *code);
    }
}

int failure_encode(const failure_t *f, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s %d %d %d %d %s %s\n%s", kind_names[f->kind], f->code, f->node,
                     f->rank, f->local_rank, f->host[0] ? f->host : "-", f->when, f->what);
    return n < 0 || (size_t)n >= size ? -1 : n;
}

int failure_decode(const char *text, failure_t *f)
{
    char kind[16];
    memset(f, 0, sizeof *f);
    if (sscanf(text, "%15s %d %d %d %d %255s %31s", kind, &f->code, &f->node, &f->rank,
               &f->local_rank, f->host, f->when) != 7)
        return -1;
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

/* A worker exiting 2 this soon after its start is taken as refusing its arguments. */
#define USAGE_ERROR_S 10

/* A worker that failed by itself, as opposed to one the agent stopped. */
static int failed_by_itself(const worker_t *w)
{
    return w->reaped && !w->stopped && (!WIFEXITED(w->status) || WEXITSTATUS(w->status) != 0);
}

void report_summary(FILE *out, const failure_t *first, const worker_t *w, int n, int node,
                    const char *host)
{
    char line[1024];
    failure_line(first, line, sizeof line);
    fprintf(out, "ddpjob-agent: job failed (exit %d): %s\n", first->code, line);
    for (int i = 0; i < n; i++) {
        char what[128], when[32];
        int code;
        if (!w[i].reaped)
            continue;
        failure_from_status(w[i].status, what, sizeof what, &code);
        format_time(w[i].exit_time, when, sizeof when);
        if (failed_by_itself(&w[i])) {
            fprintf(out, "ddpjob-agent:   rank %d (node %d, host %s, local rank %d) %s at %s\n",
                    w[i].rank, node, host, w[i].local_rank, what, when);
            size_t kept;
            relay_tail_line(&w[i].relay[1], 0, &kept);
            /* Exit 2 at once is, by the convention argparse and getopt follow, the program
             * refusing its own command line: the job never started. */
            if (WIFEXITED(w[i].status) && WEXITSTATUS(w[i].status) == 2 &&
                w[i].exit_time - w[i].start_time <= USAGE_ERROR_S)
                fprintf(out,
                        "ddpjob-agent:     exit 2 within %d s of its start: the workload's "
                        "own usage error, not the job's; check the command's arguments\n",
                        USAGE_ERROR_S);
            if (kept)
                fprintf(out, "ddpjob-agent:     last lines of its stderr:\n");
            for (size_t k = 0; k < kept; k++)
                fprintf(out, "ddpjob-agent:     | %s\n", relay_tail_line(&w[i].relay[1], k, NULL));
            if (access(w[i].error_file, R_OK) == 0)
                fprintf(out, "ddpjob-agent:     it wrote an error file (TORCHELASTIC_ERROR_FILE; "
                             "--error-file's report holds it)\n");
        } else if (w[i].stopped && code != 0) {
            fprintf(out,
                    "ddpjob-agent:   rank %d (node %d, host %s, local rank %d) stopped by "
                    "the agent (%s)\n",
                    w[i].rank, node, host, w[i].local_rank, what);
        }
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
                      const char *host, ddp_error_t *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return ddp_error_set(err, "--error-file %s: %s", path, strerror(errno));
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
        failure_t x = {
            .kind = FAIL_WORKER, .node = node, .rank = w[i].rank, .local_rank = w[i].local_rank};
        snprintf(x.host, sizeof x.host, "%s", host);
        failure_from_status(w[i].status, x.what, sizeof x.what, &x.code);
        format_time(w[i].exit_time, x.when, sizeof x.when);
        fprintf(f, "%s\n    {", count++ ? "," : "");
        json_failure_fields(f, &x);
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
    fprintf(f, "%s]\n}\n", count ? "\n  " : "");
    int bad = ferror(f) | fclose(f);
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return ddp_error_set(err, "--error-file %s: cannot write it", path);
    }
    return 0;
}
