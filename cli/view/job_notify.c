#include "cli/view/job_notify.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/base/ddp_file.h"
#include "cli/jobs/json_doc.h"

#define NOTIFY_FILE "notify.json"

int job_notify_save(const char *dir, const char *webhook, char *const *on, size_t n,
                    ddp_error_t *err)
{
    json_t *o = json_object(), *events = json_array();
    json_object_set_new(o, "webhook", json_string(webhook));
    for (size_t i = 0; i < n; i++)
        json_array_append_new(events, json_string(on[i]));
    if (!n) {
        json_array_append_new(events, json_string("failed"));
        json_array_append_new(events, json_string("completed"));
    }
    json_object_set_new(o, "on", events);
    char *text = json_dumps(o, JSON_COMPACT), path[8192];
    json_decref(o);
    snprintf(path, sizeof path, "%s/%s", dir, NOTIFY_FILE);
    int rc = text ? ddp_write_file_atomic(path, text, strlen(text), 0600, err)
                  : ddp_error_set(err, "%s: out of memory", path);
    free(text);
    return rc;
}

int job_notify_load(const char *dir, job_notify_t *n, ddp_error_t *err)
{
    memset(n, 0, sizeof *n);
    if (record_dir_check(dir, err))
        return -1;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, NOTIFY_FILE);
    size_t len;
    char *text = ddp_read_file_max(path, JSON_DOC_MAX_BYTES, &len, err);
    if (!text)
        return -1;
    json_t *o = json_loadb(text, len, 0, NULL);
    free(text);
    const char *url = json_string_value(json_object_get(o, "webhook"));
    const json_t *on = json_object_get(o, "on");
    size_t count = json_array_size(on);
    n->on = calloc(count + 1, sizeof *n->on);
    n->webhook = url ? strdup(url) : NULL;
    for (size_t i = 0; n->on && i < count; i++) {
        const char *event = json_string_value(json_array_get(on, i));
        n->on[i] = strdup(event ? event : "");
    }
    json_decref(o);
    if (!n->webhook || !n->on) {
        job_notify_free(n);
        return ddp_error_set(err, "%s: no webhook in it", path);
    }
    return 0;
}

void job_notify_free(job_notify_t *n)
{
    free(n->webhook);
    for (size_t i = 0; n->on && n->on[i]; i++)
        free(n->on[i]);
    free(n->on);
    memset(n, 0, sizeof *n);
}

int job_notify_wants(const job_notify_t *n, const char *event)
{
    for (size_t i = 0; n->on && n->on[i]; i++)
        if (!strcmp(n->on[i], event))
            return 1;
    return 0;
}

/* The failed ranks in words: "rank 1 (node 0, host n1): exited with code 3; ...". */
static void failure_words(const job_view_t *v, char *out, size_t size)
{
    out[0] = 0;
    for (int i = 0; i < v->nfailed; i++) {
        const failed_rank_t *x = &v->failed[i];
        size_t have = strlen(out);
        snprintf(out + have, size - have, "%srank %d (node %d, host %s): %s%s", i ? "; " : "",
                 x->rank, x->node, x->host, x->cause,
                 x->consequence ? " (a consequence: a peer went first)" : "");
    }
}

char *job_notify_message(const job_view_t *v, int link, const char *event, const char *detail)
{
    char cause[4096], text[8192];
    if (detail)
        snprintf(cause, sizeof cause, "%s", detail);
    else
        failure_words(v, cause, sizeof cause);
    const char *id = link < v->rec.nlinks ? v->rec.links[link].id : "";
    int status = link < v->rec.nlinks && v->rec.links[link].ended ? v->rec.links[link].status : -1;
    snprintf(text, sizeof text, "ddpjob: %s (%s job %s) %s%s%s", v->rec.name, v->rec.scheduler, id,
             !strcmp(event, "slow") ? "has a slow rank" : event, cause[0] ? ": " : "", cause);
    json_t *o = json_object(), *job = json_object();
    json_object_set_new(o, "text", json_string(text));
    json_object_set_new(job, "name", json_string(v->rec.name));
    json_object_set_new(job, "scheduler", json_string(v->rec.scheduler));
    json_object_set_new(job, "id", json_string(id));
    json_object_set_new(job, "event", json_string(event));
    /* An end's state is the event itself: the scheduler still sees the batch shell running. */
    json_object_set_new(job, "state",
                        json_string(strcmp(event, "slow") ? event : job_state_name(v->state)));
    json_object_set_new(job, "link", json_integer(link + 1));
    json_object_set_new(job, "exit_status", status >= 0 ? json_integer(status) : json_null());
    json_object_set_new(job, "cause", cause[0] ? json_string(cause) : json_null());
    json_object_set_new(job, "record", json_string(v->rec.dir));
    json_object_set_new(o, "job", job);
    char *body = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return body;
}

void job_notify_log(const char *dir, int link, const char *event, const char *outcome)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/link-%d/notify.log", dir, link);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    dprintf(fd, "%lld %s %s\n", (long long)time(NULL), event, outcome);
    close(fd);
}
