/* sweep_pack: a sweep packed into held allocations (sweep: {pack: {nodes: N, allocations: K}}).
 * Each allocation is an allocation as `ddpjob dev` holds one (dev_record.h), its record the
 * sweep's pack-J, its script trial 0's resources on N nodes, whose holder runs the trials asked of
 * it, each on the nodes it asks, `parallel` at once at most between them all, and lets the nodes
 * go once none is left (--until-done). Trial k is asked of allocation k mod K, before the
 * allocation is submitted, so that its holder finds every one of its trials when it starts. */
#include "cli/commands/sweep_pack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/jobs/dev_record.h"
#include "cli/jobs/job_record.h"
#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_file.h"

void sweep_pack_dir(const char *sweep_dir, size_t j, char *out, size_t size)
{
    snprintf(out, size, "%s/pack-%zu", sweep_dir, j + 1);
}

size_t sweep_pack_next(const char *sweep_dir)
{
    char path[8192];
    struct stat st;
    size_t j = 0;
    for (;; j++) {
        sweep_pack_dir(sweep_dir, j, path, sizeof path);
        if (lstat(path, &st) != 0)
            return j;
    }
}

size_t sweep_pack_count(const job_spec_t *spec, size_t ntrials)
{
    size_t k = (size_t)spec->sweep.pack_allocations;
    k = k < 1 ? 1 : k;
    k = k > ntrials ? ntrials : k;
    return k > (size_t)spec->sweep.parallel ? (size_t)spec->sweep.parallel : k;
}

/* Allocation j's share of `parallel`: the trials it runs at once at most. */
static int share_of(long parallel, size_t k, size_t j)
{
    return (int)((size_t)parallel / k + (j < (size_t)parallel % k));
}

/* How long allocation j holds its nodes: the pack's walltime, else a trial's walltime for each
 * wave of its trials (as many as run at once), 0 when the trials name none. */
static uint64_t walltime_of(const sweep_pack_t *p, size_t j, int parallel)
{
    if (p->spec->sweep.pack_walltime_s)
        return p->spec->sweep.pack_walltime_s;
    long widest = 1;
    size_t mine = 0;
    for (size_t t = j; t < p->ntrials; t += p->nalloc) {
        widest = p->nodes[t] > widest ? p->nodes[t] : widest;
        mine++;
    }
    size_t at_once = (size_t)(p->spec->sweep.pack_nodes / widest);
    at_once = at_once < 1 ? 1 : at_once > (size_t)parallel ? (size_t)parallel : at_once;
    return p->spec->walltime_s * ((mine + at_once - 1) / at_once);
}

/* What trial 0's spec says that its allocation says otherwise. */
typedef struct {
    long nodes, min_nodes, spares, requeue;
    uint64_t walltime_s;
    char *name;
    char held_name[300];
} spec_saved_t;

/* Trial 0's spec made allocation j's (its nodes the pack's, no spares, a walltime for all its
 * trials, named NAME-packJ) until `restore`. Its requeue is the trials': at its walltime the
 * trials left, checkpointed or not started, go on in its next link. */
static void as_allocation(const sweep_pack_t *p, size_t j, int parallel, spec_saved_t *saved)
{
    job_spec_t *spec = p->spec;
    *saved = (spec_saved_t){.nodes = spec->nodes,
                            .min_nodes = spec->min_nodes,
                            .spares = spec->spares,
                            .requeue = spec->requeue,
                            .walltime_s = spec->walltime_s,
                            .name = spec->name};
    snprintf(saved->held_name, sizeof saved->held_name, "%.200s-pack%zu", spec->name, j + 1);
    spec->walltime_s = walltime_of(p, j, parallel);
    spec->nodes = spec->min_nodes = spec->sweep.pack_nodes;
    spec->spares = 0;
    spec->requeue = p->requeue;
    spec->name = saved->held_name;
}

static void restore(job_spec_t *spec, const spec_saved_t *saved)
{
    spec->nodes = saved->nodes;
    spec->min_nodes = saved->min_nodes;
    spec->spares = saved->spares;
    spec->requeue = saved->requeue;
    spec->walltime_s = saved->walltime_s;
    spec->name = saved->name;
}

/* Asks the trials t = j, j + nalloc, ... of the allocation whose record is `record`. */
static int ask_trials(const char *record, char *const *trials, size_t ntrials, size_t j,
                      size_t nalloc, ddp_error_t *err)
{
    for (size_t t = j; t < ntrials; t += nalloc) {
        int k;
        if (dev_reserve(record, "runs", &k, err) || dev_run_request(record, k, trials[t], err))
            return -1;
    }
    return 0;
}

/* Submits the allocation whose record (its script in it, `text`) is made, from jobdir, after
 * `after`; its id into id, and into its trials'. */
static int submit_record(const sweep_pack_t *p, const char *record, const char *text, size_t j,
                         char *id, size_t size)
{
    char file[8300], record_var[8300], output_arg[4200], depend[4300], *extra[10] = {NULL};
    size_t n = 0;
    if (*p->after)
        p->ops->after_args(p->after, depend, sizeof depend, extra, &n);
    p->ops->output_args(p->output->dir, 0, output_arg, sizeof output_arg, extra, &n);
    record_handoff(p->ops, record, p->output, record_var, sizeof record_var, extra, &n);
    snprintf(file, sizeof file, "%s/script", record);
    int code = submit_script(p->ops, p->jobdir, file, text, extra, 0, id, size);
    if (code == EXIT_OK) {
        record_submitted(record, id, 0);
        for (size_t t = j; t < p->ntrials; t += p->nalloc)
            record_submitted(p->trials[t], id, 0);
    }
    return code;
}

/* A dry run's allocation j: its script written into the folder it would be submitted from, to be
 * seen (NAME.packJ.sbatch, .pbs), and what would hold its nodes said. */
static int show_allocation(const sweep_pack_t *p, size_t j, int parallel, const char *sweep_name,
                           const char *text)
{
    char file[300], path[8192], depend[4300], *extra[6] = {NULL};
    size_t last = j + p->nalloc * ((p->ntrials - 1 - j) / p->nalloc), n = 0;
    ddp_error_t err;
    snprintf(file, sizeof file, "%.200s.pack%zu%s", sweep_name, j + 1, p->ops->script_suffix);
    snprintf(path, sizeof path, "%s/%s", p->jobdir, file);
    if (ddp_write_file_atomic(path, text, strlen(text), 0700, &err) < 0) {
        fprintf(stderr, "ddpjob: %s\n", err.msg);
        return EXIT_SYSTEM;
    }
    char every[64] = "";
    if (p->nalloc > 1)
        snprintf(every, sizeof every, " (one in %zu)", p->nalloc);
    printf("would hold %ld node(s) as %s for trials %zu to %zu%s, %d at once: ", p->spec->nodes,
           p->spec->name, j, last, every, parallel);
    if (*p->after)
        p->ops->after_args(p->after, depend, sizeof depend, extra, &n);
    return submit_script(p->ops, p->jobdir, file, text, extra, 1, NULL, 0);
}

/* Submits allocation j (its record made; shown when dry), its id into id. */
static int submit_allocation(const sweep_pack_t *p, size_t j, char *id, size_t size)
{
    int parallel = share_of(p->spec->sweep.parallel, p->nalloc, j), code = EXIT_OK;
    spec_saved_t saved;
    as_allocation(p, j, parallel, &saved);
    render_opts_t ro = *p->ro;
    ro.hold = true;
    ro.held_run = false;
    ro.idle_s = 0;
    ro.pack_parallel = parallel;
    ro.pipeline = NULL;
    char *text = render_to_string(p->spec, &ro, &code), *record = NULL, at[8192];
    ddp_error_t err;
    job_record_t held = {.held = 1};
    snprintf(held.name, sizeof held.name, "%s", p->spec->name);
    if (text && p->dry_run) {
        code = show_allocation(p, j, parallel, saved.name, text);
    } else if (text) {
        sweep_pack_dir(p->sweep_dir, p->first + j, at, sizeof at);
        if (make_record(p->spec, p->ops, p->jobdir, text, at, &held, &record, &err) ||
            ask_trials(record, p->trials, p->ntrials, j, p->nalloc, &err)) {
            fprintf(stderr, "ddpjob: sweep %s: %s\n", saved.name, err.msg);
            code = EXIT_SYSTEM;
        }
    }
    uint64_t held_s = p->spec->walltime_s;
    long held_nodes = p->spec->nodes;
    restore(p->spec, &saved);
    if (text && !p->dry_run && code == EXIT_OK)
        code = submit_record(p, record, text, j, id, size);
    if (text && !p->dry_run && code == EXIT_OK && held_s)
        fprintf(stderr,
                "ddpjob: sweep %s: job %s holds %ld node(s) for %02llu:%02llu:%02llu%s, at most "
                "%d trial(s) at once: %s\n",
                saved.name, id, held_nodes, (unsigned long long)held_s / 3600,
                (unsigned long long)held_s / 60 % 60, (unsigned long long)held_s % 60,
                p->requeue ? " a link" : "", parallel,
                p->spec->sweep.pack_walltime_s ? "sweep.pack.walltime"
                                               : "a trial's walltime for each turn of trials");
    free(record);
    free(text);
    return code;
}

/* Cancels the allocations submitted before the one that failed: nothing of the sweep is left. */
static void undo(const sweep_pack_t *p, char (*ids)[128], size_t submitted)
{
    char **list = calloc(submitted + 1, sizeof *list);
    ddp_error_t err;
    for (size_t i = 0; list && i < submitted; i++)
        list[i] = ids[i];
    if (list && submitted && sched_cancel(p->ops, list, submitted, &err))
        fprintf(stderr, "ddpjob: cancelling the allocations already submitted: %s\n", err.msg);
    free(list);
}

int sweep_pack_submit(const sweep_pack_t *p, char (*ids)[128])
{
    for (size_t j = 0; j < p->nalloc; j++) {
        int code = submit_allocation(p, j, ids[j], sizeof ids[j]);
        if (code) {
            undo(p, ids, j);
            return code;
        }
    }
    return EXIT_OK;
}

int sweep_pack_resubmit(const sweep_pack_t *p, const char *like, char *id, size_t size)
{
    char at[8192], path[8300];
    sweep_pack_dir(p->sweep_dir, p->first, at, sizeof at);
    job_record_t r = {0};
    ddp_error_t err;
    char *spec_text = NULL, *script = NULL, *record = NULL;
    int code = EXIT_SYSTEM;
    snprintf(path, sizeof path, "%s/spec.yaml", like);
    if (job_record_read(like, &r, &err) || !(spec_text = ddp_read_file(path, NULL, &err)))
        goto out;
    snprintf(path, sizeof path, "%s/script", like);
    if (!(script = ddp_read_file(path, NULL, &err)))
        goto out;
    char *suffix = strrchr(r.name, '-');
    if (suffix && !strncmp(suffix, "-pack", 5))
        snprintf(suffix, sizeof r.name - (size_t)(suffix - r.name), "-pack%zu", p->first + 1);
    r.nlinks = 0;
    r.cancelled = 0;
    r.submitted = (int64_t)time(NULL);
    if (p->dry_run) {
        printf("would hold %d node(s) again as %s for the %zu trial(s) to retry, with %s\n",
               r.nodes, at, p->ntrials, p->ops->submit_program);
        code = EXIT_OK;
        goto out;
    }
    if (job_record_create_at(at, &r, spec_text, script, &err) || !(record = ddp_xstrdup(at)) ||
        ask_trials(record, p->trials, p->ntrials, 0, 1, &err))
        goto out;
    code = submit_record(p, record, script, 0, id, size);
out:
    if (code == EXIT_SYSTEM && !p->dry_run)
        fprintf(stderr, "ddpjob: sweep %s: holding its nodes again: %s\n", r.name, err.msg);
    job_record_free(&r);
    free(spec_text);
    free(script);
    free(record);
    return code;
}
