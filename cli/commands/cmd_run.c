/* run: a spec's workload on this machine, one node, no scheduler (what `torchrun --standalone`
 * or mp.spawn is used for). The spec's setup, env and workdir are applied by a script rendered
 * from templates/node.sh, which then becomes the agent, so the job's exit status and signals
 * are the agent's. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands/commands.h"
#include "runtime/base/ddp_parse.h"
#include "runtime/job/job_contract.h"
#include "cli/script/render.h"

/* How `ddpjob run` hands bash the node script. */
#define RUN_SCRIPT_ENV "DDPJOB_NODE_SCRIPT"

static const char run_help[] =
    "usage: ddpjob run SPEC [--nproc-per-node N] [--bindir DIR] [--set PATH=VALUE]... [-- "
    "ARGS...]\n"
    "       ddpjob run --in DEV [SPEC] [the same options]\n"
    "Runs the spec's command on this machine under one standalone ddpjob-agent, with the spec's\n"
    "modules, setup, env and workdir applied, and ARGS appended to the command (or to train:'s\n"
    "options, e.g. -- --resume). Exits with the job's status.\n"
    "  --nproc-per-node N  workers to start (default: the spec's procs_per_node)\n"
    "  --bindir DIR        where ddpjob-agent is (default: beside this ddpjob)\n"
    "  --set PATH=VALUE    as if the spec said so: env.SEED=3, train.lr=0.05 (repeatable)\n"
    "  --trial K           a sweep's trial K (default 0)\n"
    "  --in DEV            in the allocation `ddpjob dev` holds (DEV: its name or job id), on\n"
    "                      every held node: SPEC (default: the spec DEV was held for) as its\n"
    "                      batch job would run, each run with a record of its own (status,\n"
    "                      logs, cancel), its output followed here; an interrupt cancels the\n"
    "                      run, and the allocation stays held whatever the run's end;\n"
    "                      with --on NAME (or where `dev --on` held DEV), from this laptop:\n"
    "                      the folder sent first (what changed), then run there\n"
    "  --wait[=D]          with --in, wait for a queued allocation's nodes (default 60m)\n";

/* What a spec asks that one machine's run does not do, said. */
static void say_left_out(const job_spec_t *spec, const char *path, bool trial_given)
{
    if (spec->sweep.ntrials > 1 && !trial_given)
        fprintf(stderr,
                "ddpjob run: %s: a sweep of %zu trials: running trial 0 alone here (--trial K "
                "for another; `ddpjob submit` runs them all)\n",
                path, spec->sweep.ntrials);
    if (spec->nodes > 1 || spec->spares)
        fprintf(stderr, "ddpjob run: %s asks for %ld node(s)%s; running one node here\n", path,
                spec->nodes, spec->spares ? " and spares" : "");
    if (spec->requeue)
        fprintf(stderr,
                "ddpjob run: %s: requeue: %ld is a scheduler's chain of jobs, not run here: a run "
                "stopped at its walltime ends with 75, and `ddpjob run` again resumes it\n",
                path, spec->requeue);
}

int cmd_run(int argc, char **argv)
{
    return run_command(argc, argv, false);
}

/* Becomes bash running the node script (it returns only when that fails). The script carries
 * the spec's env: and setup: values: bash takes it from the environment (this user's alone to
 * read), not from a command line anyone's `ps` shows. */
static int exec_node_script(char *script)
{
    fflush(NULL);
    if (setenv(RUN_SCRIPT_ENV, script, 1)) {
        perror("ddpjob run: the node script");
        free(script);
        return EXIT_SYSTEM;
    }
    free(script);
    execl("/bin/bash", "bash", "-c",
          "ddpjob_script=$" RUN_SCRIPT_ENV "; unset " RUN_SCRIPT_ENV "; eval \"$ddpjob_script\"",
          "ddpjob-run", (char *)NULL);
    perror("ddpjob run: /bin/bash");
    return EXIT_SYSTEM;
}

/* run's options as parsed. */
typedef struct {
    load_opts_t load;
    const char *dev;
    run_in_opts_t in; /* nproc and bindir, a local run's too */
} run_args_t;

/* Parses run's options into a: -1 to go on, else the exit code (usage said). */
static int run_options(int argc, char **argv, bool doctor, run_args_t *a)
{
    static const struct option opts[] = {{"nproc-per-node", required_argument, NULL, 'n'},
                                         {"bindir", required_argument, NULL, 'b'},
                                         {"set", required_argument, NULL, 'E'},
                                         {"trial", required_argument, NULL, 'T'},
                                         {"in", required_argument, NULL, 'I'},
                                         {"cancel-on-input", no_argument, NULL, 'C'},
                                         {"wait", optional_argument, NULL, 'W'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    int c;
    while ((c = getopt_long(argc, argv, "n:b:h", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            fputs(run_help, stdout);
            return EXIT_OK;
        case 'n':
            if (ddp_parse_long(optarg, 1, JOB_PROCS_PER_NODE_MAX, &a->in.nproc)) {
                fprintf(stderr, "ddpjob run: --nproc-per-node: invalid value \"%s\"\n", optarg);
                return EXIT_USAGE;
            }
            break;
        case 'b':
            a->in.bindir = optarg;
            break;
        case 'E':
            load_opts_add_set(&a->load, optarg);
            break;
        case 'T':
            if (parse_trial_arg(optarg, &a->load))
                return EXIT_USAGE;
            break;
        case 'I':
            if (doctor)
                goto usage;
            a->dev = optarg;
            break;
        case 'W':
            if (doctor)
                goto usage;
            if (dev_parse_wait("run", optarg, &a->in.wait_s))
                return EXIT_USAGE;
            break;
        case 'C':
            /* What run --in --on says for the laptop's Ctrl-C, undocumented. */
            dev_run_cancel_on_input();
            break;
        default:
            goto usage;
        }
    }
    return -1;
usage:
    fputs(run_help, stderr);
    return EXIT_USAGE;
}

int run_command(int argc, char **argv, bool doctor)
{
    run_args_t a = {.load = {.sched = NULL, .local_run = true, .doctor = doctor}};
    char **extra;
    int nextra;
    argc = split_workload_args(argc, argv, &extra, &nextra);
    int parsed = run_options(argc, argv, doctor, &a);
    if (parsed >= 0) {
        load_opts_free(&a.load);
        return parsed;
    }
    if (a.dev && optind >= argc - 1) {
        a.load.local_run = false;
        int rc =
            dev_run(a.dev, optind == argc - 1 ? argv[optind] : NULL, &a.load, extra, nextra, &a.in);
        load_opts_free(&a.load);
        return rc;
    }
    if (optind != argc - 1) {
        fputs(run_help, stderr);
        load_opts_free(&a.load);
        return EXIT_USAGE;
    }
    int exit_code;
    const sched_ops_t *target;
    job_spec_t *spec = load_for_scheduler(argv[optind], &a.load, &target, NULL, &exit_code);
    load_opts_free(&a.load);
    if (!spec)
        return exit_code;
    ddp_error_t err;
    if (spec_append_args(spec, extra, nextra, &err)) {
        fprintf(stderr, "ddpjob run: %s: %s\n", argv[optind], err.msg);
        spec_destroy(spec);
        return EXIT_USAGE;
    }
    say_left_out(spec, argv[optind], a.load.trial_given);
    if (a.in.nproc)
        spec->procs_per_node = a.in.nproc;
    char *script = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&script, &len);
    int rc = f ? render_node_script(spec, a.in.bindir, false, f, &err) : -1;
    if (f)
        fclose(f);
    spec_destroy(spec);
    if (rc) {
        fprintf(stderr, "ddpjob run: %s\n", f ? err.msg : "out of memory");
        free(script);
        return EXIT_SYSTEM;
    }
    return exec_node_script(script);
}
