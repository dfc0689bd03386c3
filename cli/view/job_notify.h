/* job_notify: a job's messages to its webhook (the spec's notify:). The record keeps the URL
 * and the events (notify.json, 0600: the URL is a secret, so the script and every output leave
 * it out) and a line per message sent or not (link-K/notify.log, never the URL); the message is
 * Slack-compatible JSON: "text" in words, and the job's fields. */
#ifndef DDPJOB_JOB_NOTIFY_H
#define DDPJOB_JOB_NOTIFY_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"
#include "cli/view/job_view.h"

/* Writes DIR/notify.json: the URL and the events (each of `on`, n of them; none: failed and
 * completed). */
int job_notify_save(const char *dir, const char *webhook, char *const *on, size_t n,
                    ddp_error_t *err);

typedef struct {
    char *webhook;
    char **on; /* NULL-terminated */
} job_notify_t;

/* Reads DIR/notify.json; -1 with err when it is missing or not the user's own. */
int job_notify_load(const char *dir, job_notify_t *n, ddp_error_t *err);
void job_notify_free(job_notify_t *n);
int job_notify_wants(const job_notify_t *n, const char *event);

/* The message for `event` of v's link `link` (0-based): {"text": ..., "job": {...}}; `detail`
 * (a slow rank's words; NULL: the job's failed ranks) goes into its text. Malloc'd. */
char *job_notify_message(const job_view_t *v, int link, const char *event, const char *detail);

/* One line in DIR/link-K/notify.log: the time, the event and how it went. */
void job_notify_log(const char *dir, int link, const char *event, const char *outcome);

#endif
