/* status --watch: a running job's live view, redrawn every WATCH_MS until it ends (state, link,
 * elapsed, the progress line with its ETA against the walltime, each node's step as a bar, the
 * rank still slow, rank 0's last lines), from its record and one scheduler call per refresh;
 * plain lines, printed when the progress changes, where standard output is no terminal. And
 * the progress line alone, which `wait` prints on a terminal; and how wait, watch and logs -f
 * see a job until it ends (job_look). */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands/commands.h"
#include "runtime/base/ddp_clock.h"
#include "cli/view/job_progress.h"

#define WATCH_MS 2000
#define BAR_WIDTH 40
/* Nodes drawn as bars at most: beyond, the lowest and highest are said. */
#define BARS_MAX 16
#define LAST_LINES 4

int job_look(char *dir, job_view_t *v, int64_t *unaccounted_since, int *vanished)
{
    ddp_error_t err;
    if (job_views_load(&dir, 1, v, &err) && isatty(2))
        fprintf(stderr, "ddpjob: %s\n", err.msg);
    *vanished = 0;
    if (job_state_final(v->state))
        return 1;
    if (v->state != JOB_UNKNOWN || v->sched.found) {
        *unaccounted_since = 0;
        return 0;
    }
    if (!*unaccounted_since)
        *unaccounted_since = ddp_now_ms();
    *vanished = ddp_now_ms() - *unaccounted_since > VANISHED_MS;
    return *vanished;
}

/* How far v's current link has got, now, from its history in the record. */
static void progress_now(const job_view_t *v, job_progress_t *p)
{
    job_history_t h;
    job_history_read(&v->rec, v->link, &h);
    job_progress_compute(v, &h, (double)time(NULL), p);
    job_history_free(&h);
}

void job_progress_for(const job_view_t *v, char *line, size_t size)
{
    job_progress_t p;
    progress_now(v, &p);
    job_progress_line(&p, line, size);
    job_progress_free(&p);
}

static void bar(FILE *f, int node, long long step, long long of)
{
    int filled = of > 0 && step > 0 ? (int)(BAR_WIDTH * (step > of ? of : step) / of) : 0;
    fprintf(f, "  node %-4d [", node);
    for (int i = 0; i < BAR_WIDTH; i++)
        fputc(i < filled ? '#' : '.', f);
    if (step < 0)
        fputs("]  no step yet\n", f);
    else
        fprintf(f, "]  %lld\n", step);
}

static void bars(FILE *f, const job_progress_t *p)
{
    long long of = p->total, low = -1, high = -1;
    for (int n = 0; n < p->nnodes; n++) {
        if (p->node_steps[n] > of && p->total <= 0)
            of = p->node_steps[n];
        if (p->node_steps[n] >= 0 && (low < 0 || p->node_steps[n] < low))
            low = p->node_steps[n];
        high = p->node_steps[n] > high ? p->node_steps[n] : high;
    }
    for (int n = 0; n < p->nnodes && n < BARS_MAX; n++)
        bar(f, n, p->node_steps[n], of);
    if (p->nnodes > BARS_MAX)
        fprintf(f, "  ... %d more nodes; of all %d, the lowest at step %lld, the highest %lld\n",
                p->nnodes - BARS_MAX, p->nnodes, low, high);
}

/* Rank 0's last lines in the current link's latest attempt. */
static void last_lines(FILE *f, const job_view_t *v)
{
    char pattern[8192], line[512], lines[LAST_LINES][512];
    snprintf(pattern, sizeof pattern, "%s/link-%d/logs/*/attempt_*/rank_0/stdout.log", v->rec.dir,
             v->link);
    glob_t g;
    if (glob(pattern, 0, NULL, &g) != 0)
        return;
    FILE *log = fopen(g.gl_pathv[g.gl_pathc - 1], "re");
    int n = 0;
    while (log && fgets(line, sizeof line, log))
        snprintf(lines[n++ % LAST_LINES], sizeof lines[0], "%s", line);
    if (log)
        fclose(log);
    globfree(&g);
    if (n)
        fputs("  rank 0's last lines:\n", f);
    for (int k = n > LAST_LINES ? n - LAST_LINES : 0; k < n; k++)
        fprintf(f, "    %s%s", lines[k % LAST_LINES],
                strchr(lines[k % LAST_LINES], '\n') ? "" : "\n");
}

/* One frame of the view, into a string (its progress line into `line`). */
static char *frame(const job_view_t *v, char *line, size_t size)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    job_progress_t p;
    progress_now(v, &p);
    job_progress_line(&p, line, size);
    fprintf(f, "%s (%s job %s): %s, link %d of %d", v->rec.name, v->rec.scheduler, job_view_id(v),
            job_state_name(v->state), v->link + 1, v->rec.nlinks ? v->rec.nlinks : 1);
    if (v->elapsed[0])
        fprintf(f, ", elapsed %s", v->elapsed);
    fprintf(f, "\n  %s\n", line[0] ? line : "no rank has reported a step yet");
    bars(f, &p);
    if (p.slow[0])
        fprintf(f, "  slow: %s\n", p.slow);
    last_lines(f, v);
    job_progress_free(&p);
    fclose(f);
    return text;
}

int status_watch(char *dir)
{
    int tty = isatty(1), rc = -1, vanished;
    int64_t unaccounted_since = 0;
    char said[1024] = "\001";
    while (rc < 0) {
        job_view_t v;
        int over = job_look(dir, &v, &unaccounted_since, &vanished);
        char line[1024];
        char *text = frame(&v, line, sizeof line);
        if (tty)
            printf("\033[H\033[J%s%s", text ? text : "",
                   over ? "" : "(every 2 s; Ctrl-C leaves the job running)\n");
        else if (over || strcmp(line, said))
            printf("%s\n", text ? text : "");
        fflush(stdout);
        snprintf(said, sizeof said, "%s", line);
        free(text);
        if (over)
            rc = vanished ? EXIT_SYSTEM : job_view_exit(&v);
        job_views_free(&v, 1);
        if (rc < 0)
            ddp_sleep_ms(WATCH_MS);
    }
    return rc;
}
