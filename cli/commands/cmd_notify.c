/* notify: the batch shell's messenger for the spec's notify.webhook (job_notify.h). It follows
 * link K of the job's record: each rank node 0 names slow is sent as it is said (notify.on:
 * slow), and the link's end (completed, requeued, or failed with its causes) once the batch
 * shell writes it; each message within NOTIFY_TIMEOUT_MS, each outcome in link-K/notify.log. A
 * message that fails fails nothing: the job goes on, and this exits 0. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/commands/commands.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"
#include "cli/jobs/job_history.h"
#include "cli/view/job_notify.h"
#include "cli/view/webhook.h"

#define NOTIFY_TIMEOUT_MS 10000L
#define NOTIFY_POLL_MS 1000
/* How long past the walltime it follows a link whose end never comes. */
#define NOTIFY_LINGER_S 3600

static const char notify_help[] =
    "usage: ddpjob notify --record DIR --link K\n"
    "Run by a job's batch shell when its spec has notify.webhook: sends link K's events to the\n"
    "webhook kept in the record DIR, each within 10 s, and logs each in DIR/link-K/notify.log.\n";

typedef struct {
    char *dir;
    int link;
    job_notify_t n;
} notifier_t;

static void send_event(notifier_t *s, const char *event, const char *detail)
{
    if (!job_notify_wants(&s->n, event))
        return;
    job_view_t v = {0};
    ddp_error_t err;
    job_views_load(&s->dir, 1, &v, &err); /* the record alone answers where squeue cannot */
    char *body = v.rec.dir ? job_notify_message(&v, s->link, event, detail) : NULL;
    long status;
    char outcome[1200];
    if (!body)
        snprintf(outcome, sizeof outcome, "not sent: the record could not be read");
    else if (webhook_post(s->n.webhook, body, NOTIFY_TIMEOUT_MS, &status, &err))
        snprintf(outcome, sizeof outcome, "not sent: %s", err.msg);
    else
        snprintf(outcome, sizeof outcome, "sent (HTTP %ld)", status);
    job_notify_log(s->dir, s->link, event, outcome);
    fprintf(stderr, "ddpjob notify: %s: %s\n", event, outcome);
    free(body);
    job_views_free(&v, 1);
}

/* The link's end as an event: NULL while it runs, "" when it is none (a checkpoint that no
 * requeue follows). */
static const char *end_event(const notifier_t *s)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/link-%d/ended", s->dir, s->link);
    ddp_error_t err;
    char *text = ddp_read_file_max(path, 256, NULL, &err);
    if (!text)
        return NULL;
    int status = atoi(text);
    free(text);
    if (status == 0)
        return "completed";
    if (status != 75)
        return "failed";
    job_record_t rec = {0};
    int requeued =
        job_record_read(s->dir, &rec, &err) == 0 && rec.requeue > s->link && !rec.cancelled;
    if (rec.dir)
        job_record_free(&rec);
    return requeued ? "requeued" : "";
}

/* Each slow rank said since the last look (`seen` of them before). */
static void send_slow(notifier_t *s, int *seen)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/link-%d/history.jsonl", s->dir, s->link);
    job_history_t h = {0};
    job_history_read_link(path, s->link, &h);
    int slow = 0;
    for (int i = 0; i < h.nevents; i++)
        if (!strcmp(h.events[i].kind, "slow") && slow++ >= *seen)
            send_event(s, "slow", h.events[i].text);
    *seen = slow > *seen ? slow : *seen;
    job_history_free(&h);
}

static void follow(notifier_t *s)
{
    job_record_t rec = {0};
    ddp_error_t err;
    int64_t walltime = job_record_read(s->dir, &rec, &err) == 0 ? rec.walltime_s : 0;
    if (rec.dir)
        job_record_free(&rec);
    int64_t deadline =
        ddp_deadline_in((walltime ? walltime : 7 * 86400) * 1000 + NOTIFY_LINGER_S * 1000LL);
    int seen = 0;
    for (;;) {
        if (job_notify_wants(&s->n, "slow"))
            send_slow(s, &seen);
        const char *end = end_event(s);
        if (end) {
            if (*end)
                send_event(s, end, NULL);
            return;
        }
        if (ddp_ms_left(deadline) == 0)
            return;
        ddp_sleep_ms(NOTIFY_POLL_MS);
    }
}

int cmd_notify(int argc, char **argv)
{
    static const struct option opts[] = {{"record", required_argument, NULL, 'r'},
                                         {"link", required_argument, NULL, 'l'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    notifier_t s = {.link = -1};
    long link;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'r')
            s.dir = optarg;
        else if (c == 'l' && ddp_parse_long(optarg, 0, 1 << 20, &link) == 0)
            s.link = (int)link;
        else if (c == 'h')
            return fputs(notify_help, stdout), EXIT_OK;
        else
            return fputs(notify_help, stderr), EXIT_USAGE;
    }
    if (!s.dir || s.link < 0 || optind != argc)
        return fputs(notify_help, stderr), EXIT_USAGE;
    ddp_error_t err;
    if (job_notify_load(s.dir, &s.n, &err)) {
        fprintf(stderr, "ddpjob notify: %s: nothing will be sent\n", err.msg);
        return EXIT_OK;
    }
    follow(&s);
    job_notify_free(&s.n);
    return EXIT_OK;
}
