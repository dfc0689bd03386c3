/* The link's history (history.h): a week of 1,024 ranks sampled at every 5 s heartbeat stays
 * within its bound and spans the whole week; events are kept through the thinning and capped;
 * a symbolic link planted at the file's path is not followed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/findings/history.h"
#include "tests/unit/tap.h"

/* Lines holding `with`; the first number after it in the first and last such line. */
static int count_lines(const char *path, const char *with, long long *first, long long *last)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    static char line[1 << 16];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strstr(line, with))
            continue;
        long long v = atoll(strstr(line, with) + strlen(with));
        if (!n && first)
            *first = v;
        if (last)
            *last = v;
        n++;
    }
    fclose(f);
    return n;
}

int main(void)
{
    char dir[] = "/tmp/test_history.XXXXXX", path[256], link[256];
    ok(mkdtemp(dir) != NULL, "a folder");
    snprintf(path, sizeof path, "%s/history.jsonl", dir);
    ddp_error_t err;
    history_t *h = history_open(path, 5000, &err);
    ok(h != NULL, "a history opens");

    enum { WORLD = 1024 };
    progress_job_t job = {.world = WORLD, .ranks = calloc(WORLD, sizeof(progress_rank_t))};
    int64_t week_ms = 7LL * 24 * 3600 * 1000;
    int failures = 0, samples_asked = 0;
    history_event(h, "attempt_start", 0, -1, "2 node(s), 1024 rank(s)", &err);
    for (int64_t now = 0; now <= week_ms; now += 5000, samples_asked++) {
        for (int r = 0; r < WORLD; r++) {
            job.ranks[r].fig.step = 1000000 + now / 5000;
            job.ranks[r].fig.busy_us = r == 7 ? 999999 : 123456;
        }
        failures += history_sample(h, &job, 0, now, 0, &err) != 0;
        if (now == week_ms / 2)
            history_event(h, "slow", 0, 7, "rank 7 is slow", &err);
    }
    ok(failures == 0, "%d samples asked over a week, none failed", samples_asked);
    struct stat st;
    stat(path, &st);
    ok(st.st_size < 4 << 20, "a week of 1,024 ranks: %lld bytes, under 4 MiB",
       (long long)st.st_size);
    long long first = 0, last = 0;
    int rows = count_lines(path, "\"steps\": [", &first, &last);
    ok(rows > HISTORY_ROWS / 2 && rows <= HISTORY_ROWS, "%d samples kept (at most %d)", rows,
       HISTORY_ROWS);
    ok(first == 1000000 && last > 1000000 + samples_asked * 9 / 10,
       "they span the week: steps %lld to %lld", first, last);
    ok(count_lines(path, "\"event\": \"slow\"", NULL, NULL) == 1 &&
           count_lines(path, "\"event\": \"attempt_start\"", NULL, NULL) == 1,
       "the events are kept through the thinning");
    history_close(h);

    h = history_open(path, 1000, &err);
    for (int k = 0; k < HISTORY_EVENTS + 50; k++)
        history_event(h, "slow", 0, 1, "again", &err);
    history_close(h);
    ok(count_lines(path, "\"event\"", NULL, NULL) == HISTORY_EVENTS &&
           count_lines(path, "later events are left out", NULL, NULL) == 1,
       "events stop at %d, the last saying so; a reopened history starts afresh", HISTORY_EVENTS);

    snprintf(link, sizeof link, "%s/planted", dir);
    symlink("/etc/passwd", link);
    h = history_open(link, 1000, &err);
    ok(h == NULL && strstr(err.msg, "planted"), "a symbolic link at the path is refused: %s",
       h ? "(opened)" : err.msg);
    history_close(h);
    free(job.ranks);
    unlink(path);
    unlink(link);
    rmdir(dir);
    return done_testing();
}
