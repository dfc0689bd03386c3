#include "cli/jobs/sweep_record.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/jobs/job_record.h"
#include "cli/jobs/json_doc.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"

/* Far above a sweep of thousands of trials' parameters. */
#define SWEEP_FILE_MAX (8u << 20)

static char *sweep_json(const sweep_record_t *s, ddp_error_t *err)
{
    json_t *o = json_object(), *trials = json_array();
    if (!o || !trials) {
        json_decref(o);
        json_decref(trials);
        return ddp_error_set(err, "out of memory"), NULL;
    }
    json_object_set_new(o, "version", json_integer(SWEEP_RECORD_VERSION));
    json_object_set_new(o, "name", json_shown_string(s->name));
    json_object_set_new(o, "scheduler", json_string(s->scheduler));
    json_object_set_new(o, "spec", json_shown_string(s->spec));
    json_object_set_new(o, "submitted", json_integer(s->submitted));
    json_object_set_new(o, "parallel", json_integer(s->parallel));
    json_object_set_new(o, "how", json_string(s->how));
    if (s->pack_nodes) {
        json_t *pack = json_object();
        json_object_set_new(pack, "nodes", json_integer(s->pack_nodes));
        json_object_set_new(pack, "allocations", json_integer(s->pack_allocations));
        json_object_set_new(o, "pack", pack);
    }
    if (s->objective[0]) {
        json_t *objective = json_object();
        json_object_set_new(objective, "metric", json_shown_string(s->objective));
        json_object_set_new(objective, "goal", json_string(s->maximize ? "max" : "min"));
        json_object_set_new(o, "objective", objective);
    }
    for (size_t k = 0; k < s->ntrials; k++) {
        json_t *params = json_loads(s->params[k], 0, NULL), *trial = json_object();
        json_object_set_new(trial, "params", params ? params : json_object());
        json_array_append_new(trials, trial);
    }
    json_object_set_new(o, "trials", trials);
    char *text = json_dump_text(o);
    if (!text)
        ddp_error_set(err, "out of memory");
    return text;
}

int sweep_record_create(const sweep_record_t *s, const char *workdir, int group_readable,
                        char **dir, ddp_error_t *err)
{
    if (record_folder_make(workdir, "sweeps", s->name, s->submitted, group_readable, dir, err))
        return -1;
    char *text = sweep_json(s, err), path[8192];
    snprintf(path, sizeof path, "%s/sweep.json", *dir);
    if (text &&
        ddp_write_file_atomic(path, text, strlen(text), group_readable ? 0640 : 0600, err) == 0) {
        free(text);
        return 0;
    }
    free(text);
    rmdir(*dir);
    free(*dir);
    *dir = NULL;
    return -1;
}

int sweep_record_is(const char *dir)
{
    char path[8192];
    struct stat st;
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

void sweep_trial_dir(const char *dir, size_t k, char *out, size_t size)
{
    snprintf(out, size, "%s/trial-%zu", dir, k);
}

/* The spec's objective, taken only whole: a metric's plain name and a goal of min or max. */
static void read_objective(const json_t *o, sweep_record_t *s)
{
    char metric[sizeof s->objective] = "", goal[8] = "";
    if (!o || json_copy_text(o, "metric", metric, sizeof metric) ||
        json_copy_text(o, "goal", goal, sizeof goal) || !ddp_plain_name(metric, "_.-") ||
        (strcmp(goal, "min") && strcmp(goal, "max")))
        return;
    snprintf(s->objective, sizeof s->objective, "%s", metric);
    s->maximize = !strcmp(goal, "max");
}

static void read_trials(const json_t *list, sweep_record_t *s)
{
    s->ntrials = json_items(list);
    s->params = calloc(s->ntrials ? s->ntrials : 1, sizeof *s->params);
    if (!s->params) {
        s->ntrials = 0;
        return;
    }
    for (size_t k = 0; k < s->ntrials; k++) {
        const json_t *params = json_child(json_item(list, k), "params");
        char *text =
            json_is_object(params)
                ? json_dumps(params, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_DOC_REAL_DIGITS)
                : NULL;
        s->params[k] = text ? text : strdup("{}");
    }
}

int sweep_record_read(const char *dir, sweep_record_t *s, ddp_error_t *err)
{
    memset(s, 0, sizeof *s);
    if (record_dir_check(dir, err))
        return ddp_error_prefix(err, "not trusting the sweep record %s", dir);
    char path[8192];
    snprintf(path, sizeof path, "%s/sweep.json", dir);
    size_t len;
    char *text = ddp_read_file_max(path, SWEEP_FILE_MAX, &len, err);
    json_doc_t doc;
    if (!text || json_doc_parse(&doc, text, len)) {
        free(text);
        return ddp_error_set(err, "%s holds no sweep record (no whole sweep.json)", dir);
    }
    free(text);
    const json_t *o = json_root(&doc);
    int64_t version = 0, parallel = 0, pack_nodes = 0, pack_allocations = 0;
    json_whole(o, "version", 0, 1000, &version);
    json_copy_text(o, "name", s->name, sizeof s->name);
    json_copy_text(o, "scheduler", s->scheduler, sizeof s->scheduler);
    json_copy_text(o, "spec", s->spec, sizeof s->spec);
    json_copy_text(o, "how", s->how, sizeof s->how);
    json_whole(o, "submitted", 0, INT64_C(1) << 40, &s->submitted);
    json_whole(o, "parallel", 0, 1 << 30, &parallel);
    const json_t *pack = json_child(o, "pack");
    if (pack && !json_whole(pack, "nodes", 1, 1 << 20, &pack_nodes) &&
        !json_whole(pack, "allocations", 1, 1 << 20, &pack_allocations)) {
        s->pack_nodes = (long)pack_nodes;
        s->pack_allocations = (long)pack_allocations;
    }
    s->version = (int)version;
    s->parallel = (long)parallel;
    read_trials(json_child(o, "trials"), s);
    read_objective(json_child(o, "objective"), s);
    json_doc_free(&doc);
    if (!(s->dir = strdup(dir))) {
        sweep_record_free(s);
        return ddp_error_set(err, "out of memory");
    }
    return 0;
}

void sweep_record_free(sweep_record_t *s)
{
    for (size_t k = 0; s->params && k < s->ntrials; k++)
        free(s->params[k]);
    free(s->params);
    free(s->dir);
    memset(s, 0, sizeof *s);
}
