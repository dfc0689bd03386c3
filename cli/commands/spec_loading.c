/* spec_loading: what the commands that read a spec share (commands.h): loading it for its
 * scheduler and site profile, and splitting a command line at "--". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands/commands.h"
#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_parse.h"
#include "cli/spec/site_detect.h"
#include "cli/spec/site_rules.h"
#include "cli/spec/spec.h"
#include "cli/spec/spec_container.h"
#include "cli/sched/sched.h"

/* Prints a list of lines to stderr. */
static void print_lines(const diag_t *d)
{
    for (size_t i = 0; i < d->count; i++)
        fprintf(stderr, "%s\n", d->lines[i]);
}

/* The site profile named by --site or the spec; problems finding or reading it go to diag. */
static site_t *load_site(const job_spec_t *spec, const char *site_arg, diag_t *diag)
{
    const char *name = site_arg ? site_arg : spec->site;
    if (!name)
        return NULL;
    ddp_error_t err;
    site_t *site = site_load(name, &err);
    if (!site) {
        spec_loc_t at = site_arg ? (spec_loc_t){1, 1} : spec_field_loc(spec, "site");
        diag_add(diag, at.line, at.col, site_arg ? "--site" : "site", "%s", err.msg);
    }
    return site;
}

/* The scheduler --scheduler names, else the spec's own (NULL: none); a spec naming one the seam
 * has no row for goes to diag. */
static const sched_ops_t *target_of(const job_spec_t *spec, const load_opts_t *opts, diag_t *diag)
{
    if (opts->sched)
        return opts->sched;
    if (!spec->scheduler || !*spec->scheduler)
        return NULL;
    const sched_ops_t *ops = sched_by_name(spec->scheduler);
    if (!ops) {
        char names[128];
        sched_names(", ", " or ", names, sizeof names);
        const char *hint = diag_suggest(spec->scheduler, sched_name_list());
        spec_loc_t at = spec_field_loc(spec, "scheduler");
        diag_add(diag, at.line, at.col, "scheduler", "expected %s, got \"%s\"%s%s%s", names,
                 spec->scheduler, hint ? " (did you mean " : "", hint ? hint : "",
                 hint ? "?)" : "");
    }
    return ops;
}

/* The checks that depend on the target scheduler: one named, and its own rules. */
static void check_for_scheduler(const job_spec_t *spec, const sched_ops_t *target, diag_t *diag)
{
    char names[128];
    sched_names(", ", " or ", names, sizeof names);
    if (!target)
        diag_add(diag, 1, 1, "scheduler",
                 "missing: set scheduler: %s in the spec, or pass --scheduler", names);
    else if (target->check_spec)
        target->check_spec(spec, diag);
}

/* A spec that names no site: the profile that recognises the server it is submitted to (when
 * ask_server), taken and said so; else, for a spec that looks like a site's, a warning that says
 * what to add. Only a scheduler whose server is asked for has sites to recognise. */
static site_t *guess_site(const job_spec_t *spec, const sched_ops_t *ops, bool ask_server,
                          diag_t *remarks)
{
    if (!ops || !ops->server_name)
        return NULL;
    char server[256], why[512];
    site_t *site = NULL;
    if (ask_server && ops->server_name(server, sizeof server) == 0 &&
        (site = site_detect_server(server))) {
        diag_add(remarks, 1, 1, "site",
                 "note: the %s server %s is site %s's (%s recognises it): checked and rendered "
                 "for it; `site:` in the spec chooses another",
                 ops->display, server, site->name, site->path);
        return site;
    }
    if ((site = site_detect_spec(spec, why, sizeof why))) {
        diag_add(remarks, 1, 1, "site",
                 "warning: this spec looks like site %s's (%s) but names no site: its PBS script "
                 "then asks for -l select chunks, which %s's qsub may refuse; add `site: %s`",
                 site->name, why, site->name, site->name);
        site_destroy(site);
    }
    return NULL;
}

int split_workload_args(int argc, char **argv, char ***extra, int *nextra)
{
    int ours = 1;
    while (ours < argc && strcmp(argv[ours], "--"))
        ours++;
    *extra = argv + (ours < argc ? ours + 1 : argc);
    *nextra = ours < argc ? argc - ours - 1 : 0;
    return ours;
}

/* A command: (not ddp-train, which handles it) given a checkpoint signal must handle it: the
 * signal's default action ends the program, and the work since its last checkpoint is lost. */
static void note_checkpoint_handler(const job_spec_t *spec, diag_t *remarks)
{
    if (!spec->checkpoint.signal || spec->command_is_train)
        return;
    spec_loc_t at = spec_field_loc(spec, "checkpoint");
    diag_add(remarks, at.line, at.col, "checkpoint",
             "note: the program must handle SIG%s (set a flag, finish the step, save, exit 75): "
             "without a handler the signal kills it (ddpjob-agent(1), CHECKPOINT)",
             ddp_signal_name(spec->checkpoint.signal));
}

/* A node's one task gets one CPU from Slurm and PBS unless asked for more, and every worker would
 * share it: a spec that names no CPUs and takes no whole nodes asks SPEC_CPUS_PER_WORKER per
 * worker, and says so. After the site's own rules, which may fill it by its CPUs per GPU. */
static void fill_worker_cpus(job_spec_t *spec, diag_t *remarks)
{
    if (spec->cpus_per_node || spec->slurm.exclusive || spec->pbs.exclusive)
        return;
    spec->cpus_per_node = spec->procs_per_node * SPEC_CPUS_PER_WORKER;
    spec_loc_t at = spec_field_loc(spec, "procs_per_node");
    diag_add(
        remarks, at.line, at.col, "procs_per_node",
        "note: no cpus_per_node, so each node asks for %ld: %ld worker(s) x %d CPU (data "
        "loaders and threads want more: set cpus_per_node, or exclusive: true for whole nodes)",
        spec->cpus_per_node, spec->procs_per_node, SPEC_CPUS_PER_WORKER);
}

/* `walltime: 10` is ten seconds here and to PBS, but Slurm's own --time reads a bare number as
 * minutes: below a minute, both readings are said, with the forms that leave no doubt. */
static void note_bare_walltime(const job_spec_t *spec, diag_t *remarks)
{
    if (!spec->walltime_bare || spec->walltime_s >= 60)
        return;
    spec_loc_t at = spec_field_loc(spec, "walltime");
    unsigned long n = (unsigned long)spec->walltime_s;
    diag_add(remarks, at.line, at.col, "walltime",
             "warning: %lu is taken as %lu seconds (as PBS reads it; Slurm's own --time=%lu would "
             "be %lu minutes, and Slurm allows no job under a minute): write \"00:00:%02lu\" for "
             "seconds or \"%lu:00\" for minutes",
             n, n, n, n, n, n);
}

/* A spec with no scheduler runs only here (`ddpjob run`): its image must be here too. */
static void check_local_image(const job_spec_t *spec, diag_t *diag)
{
    const char *image = spec->container.image;
    struct stat st;
    if (!spec->container.present || !image || image[0] != '/' || stat(image, &st) == 0)
        return;
    spec_loc_t at = spec_field_loc(spec, "container.image");
    diag_add(diag, at.line, at.col, "container.image",
             "%s: %s (a spec with no scheduler runs on this machine, with `ddpjob run`)", image,
             strerror(errno));
}

job_spec_t *load_for_scheduler(const char *path, const load_opts_t *opts,
                               const sched_ops_t **target, site_t **site_out, int *exit_code)
{
    ddp_error_t err;
    diag_t *diag = diag_create(path), *remarks = diag_create(path);
    job_spec_t *spec = diag && remarks ? spec_load(path, opts->values.count ? &opts->values : NULL,
                                                   &opts->sets, opts->trial, diag, &err)
                                       : NULL;
    site_t *site = NULL;
    if (!spec) {
        if (!opts->silent)
            fprintf(stderr, "ddpjob: %s\n", diag && remarks ? err.msg : "out of memory");
        diag_destroy(diag);
        diag_destroy(remarks);
        *exit_code = EXIT_SYSTEM;
        return NULL;
    }
    *target = target_of(spec, opts, diag);
    if (diag->count == 0 && !opts->local_run && *target != NULL && spec->min_nodes != spec->nodes) {
        spec_loc_t at = spec_field_loc(spec, "nodes");
        diag_add(diag, at.line, at.col, "nodes",
                 "%ld:%ld: an elastic world runs with `ddpjob launch`; a scheduler allocates a "
                 "fixed count (nodes: N, with spares: S for standbys)",
                 spec->min_nodes, spec->nodes);
    }
    if (diag->count == 0 && !opts->local_run &&
        ((site = load_site(spec, opts->site, diag)) ||
         (!opts->site && !spec->site && diag->count == 0 &&
          (site = guess_site(spec, *target, opts->ask_server, remarks)))))
        site_rules_apply(site, spec, diag, remarks);
    /* A spec that failed to parse has no fields worth checking against a scheduler; the site's
     * defaults (Grid Engine's parallel environment) are in by now. */
    if (diag->count == 0 && (opts->scheduler_needed || *target != NULL))
        check_for_scheduler(spec, *target, diag);
    const sched_ops_t *ops = *target;
    const container_sched_t under = {ops ? ops->container_runtime : "apptainer",
                                     ops && ops->container_agent_inside, ops ? ops->display : NULL};
    if (diag->count == 0)
        spec_container_settle(spec, site ? site->container_runtime : NULL, &under, opts->local_run,
                              diag, remarks);
    if (diag->count == 0 && opts->validating && *target == NULL)
        check_local_image(spec, diag);
    if (diag->count == 0 && opts->validating)
        note_checkpoint_handler(spec, remarks);
    if (diag->count == 0)
        note_bare_walltime(spec, remarks);
    if (diag->count == 0 && !opts->local_run && *target != NULL)
        fill_worker_cpus(spec, remarks);
    if (!opts->quiet)
        print_lines(remarks);
    if (diag->count == 0 && opts->doctor) {
        free(spec->preflight);
        if (!(spec->preflight = strdup("only")))
            diag_add(diag, 1, 1, NULL, "out of memory");
    }
    if (diag->count > 0 && !opts->silent) {
        print_lines(diag);
        fprintf(stderr, "ddpjob: %s: %zu problem%s; nothing was written\n", path, diag->count,
                diag->count == 1 ? "" : "s");
    }
    if (diag->count > 0) {
        spec_destroy(spec);
        spec = NULL;
        site_destroy(site);
        site = NULL;
        *exit_code = EXIT_INVALID_SPEC;
    }
    diag_destroy(diag);
    diag_destroy(remarks);
    if (site_out)
        *site_out = site;
    else
        site_destroy(site);
    return spec;
}

void load_opts_add_set(load_opts_t *opts, char *set)
{
    opts->sets.items = ddp_xrealloc(opts->sets.items, (opts->sets.count + 1) * sizeof(char *));
    opts->sets.items[opts->sets.count++] = set;
}

void load_opts_free(load_opts_t *opts)
{
    free(opts->sets.items); /* the words are the command line's, the values their caller's */
    free(opts->values.items);
    opts->sets = opts->values = (strv_t){0};
}

int parse_trial_arg(const char *arg, load_opts_t *opts)
{
    long trial;
    if (ddp_parse_long(arg, 0, 99999, &trial)) {
        fprintf(stderr, "ddpjob: --trial %s: expected a trial's number (0, 1, ...)\n", arg);
        return -1;
    }
    opts->trial = (size_t)trial;
    opts->trial_given = true;
    return 0;
}
