/* validate and submit: the subcommands that take a spec or a pipeline as they are given (render
 * and the submit of one job or sweep: submit_spec.c). */
#include <getopt.h>
#include <stdio.h>

#include "cli/commands/commands.h"
#include "cli/spec/pipeline.h"
#include "cli/spec/spec.h"

static const char validate_help[] =
    "usage: ddpjob validate [--scheduler {schedulers}] [--site NAME|FILE] [--set PATH=VALUE]... "
    "SPEC...\n"
    "Checks each spec and prints every problem as FILE:LINE:COL: FIELD: PROBLEM. A spec\n"
    "without scheduler: is valid for `ddpjob run` (local only). With a site profile (site: in\n"
    "the spec, or --site), also checks the queue's rules and prints the job's worst-case cost.\n"
    "  --set PATH=VALUE  as if the spec said so: nodes=4, train.lr=0.05, env.SEED=3 (repeatable)\n"
    "Exit: 0 all valid, 1 a spec has problems, 2 usage, 3 a file cannot be read.\n";

/* A sweep's trials after the first, each loaded and checked as its own spec (their notes and
 * warnings are the first's, said once): the worst exit code. */
static int check_other_trials(const char *path, load_opts_t load, size_t ntrials)
{
    int worst = EXIT_OK;
    load.quiet = true;
    for (size_t t = 1; t < ntrials; t++) {
        const sched_ops_t *target;
        int code = EXIT_OK;
        load.trial = t;
        spec_destroy(load_for_scheduler(path, &load, &target, NULL, &code));
        worst = code > worst ? code : worst;
    }
    return worst;
}

/* "SPEC: ok (...)" for a spec that passed. */
static void say_ok(const char *path, const job_spec_t *spec, const sched_ops_t *target,
                   const site_t *site)
{
    char spares[48] = "", sweep[160] = "";
    if (spec->spares)
        snprintf(spares, sizeof spares, " + %ld spare%s", spec->spares,
                 spec->spares == 1 ? "" : "s");
    if (spec->sweep.ntrials)
        snprintf(sweep, sizeof sweep, ", a sweep of %zu trial%s, %ld at once%s%.0ld%s",
                 spec->sweep.ntrials, spec->sweep.ntrials == 1 ? "" : "s", spec->sweep.parallel,
                 spec->sweep.pack_nodes ? ", packed into allocations of " : "",
                 spec->sweep.pack_nodes, spec->sweep.pack_nodes ? " nodes" : "");
    printf("%s: ok (%s, %ld node%s x %ld worker%s%s%s%s%s%s%s)\n", path,
           target ? target->name : "unset", spec->nodes, spec->nodes == 1 ? "" : "s",
           spec->procs_per_node, spec->procs_per_node == 1 ? "" : "s", spares,
           site ? ", site " : "", site ? site->name : "",
           spec->container.present ? ", in a container run by " : "",
           spec->container.present ? spec->container.runtime : "", sweep);
}

int cmd_validate(int argc, char **argv)
{
    static const struct option opts[] = {{"scheduler", required_argument, NULL, 's'},
                                         {"site", required_argument, NULL, 'S'},
                                         {"set", required_argument, NULL, 'E'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    load_opts_t load = {.sched = NULL, .validating = true};
    int c;
    while ((c = getopt_long(argc, argv, "s:h", opts, NULL)) != -1) {
        if (c == 'h') {
            print_help(stdout, validate_help);
            return EXIT_OK;
        }
        if (c == 'S' || c == 'E') {
            if (c == 'S')
                load.site = optarg;
            else
                load_opts_add_set(&load, optarg);
            continue;
        }
        if (c != 's' || parse_scheduler_arg(optarg, &load.sched) < 0) {
            print_help(stderr, validate_help);
            return EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        print_help(stderr, validate_help);
        return EXIT_USAGE;
    }
    int worst = EXIT_OK;
    for (int i = optind; i < argc; i++) {
        const sched_ops_t *target;
        int code = EXIT_OK;
        site_t *site = NULL;
        if (pipeline_file_is(argv[i])) {
            code = pipeline_validate(argv[i], &load);
            worst = code > worst ? code : worst;
            continue;
        }
        /* A spec without a scheduler is a local one (`ddpjob run`); render and submit need one. */
        job_spec_t *spec = load_for_scheduler(argv[i], &load, &target, &site, &code);
        if (spec && spec->sweep.ntrials > 1 &&
            (code = check_other_trials(argv[i], load, spec->sweep.ntrials)) != EXIT_OK) {
            spec_destroy(spec);
            spec = NULL;
        }
        if (spec && target == NULL)
            printf("%s: ok (local only: no scheduler, for `ddpjob run`; render and submit need "
                   "scheduler: or --scheduler)\n",
                   argv[i]);
        else if (spec)
            say_ok(argv[i], spec, target, site);
        if (spec)
            print_cost(stdout, site, spec, argv[i]);
        worst = code > worst ? code : worst;
        spec_destroy(spec);
        site_destroy(site);
    }
    load_opts_free(&load);
    return worst;
}

int cmd_submit(int argc, char **argv)
{
    const char *path;
    load_opts_t load;
    const char *bindir;
    int dry_run, rc = submit_args_pipeline(argc, argv, &path, &load, &bindir, &dry_run);
    if (rc == 0)
        return submit_command(argc, argv, false);
    if (rc < 0)
        return EXIT_USAGE;
    rc = pipeline_submit(path, &load, bindir, dry_run);
    load_opts_free(&load);
    return rc;
}
