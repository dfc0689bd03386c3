/* The steps render and submit share (the command line, the spec loaded for its scheduler, its
 * script rendered into memory), render, and submit of a job or a sweep: `ddpjob submit`'s, and
 * one made from inside ddpjob (`ddpjob dev`, a pipeline's stage). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands/commands.h"
#include "cli/commands/job_after.h"
#include "cli/commands/submit_steps.h"
#include "cli/jobs/job_record.h"
#include "cli/script/render.h"
#include "cli/sched/sched.h"
#include "cli/spec/pipeline.h"
#include "cli/spec/site_rules.h"
#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_file.h"

int parse_scheduler_arg(const char *arg, const sched_ops_t **out)
{
    *out = sched_by_name(arg);
    if (*out == NULL) {
        char names[128];
        sched_names(", ", " or ", names, sizeof names);
        fprintf(stderr, "ddpjob: --scheduler: expected %s, got \"%s\"\n", names, arg);
        return -1;
    }
    return 0;
}

void print_help(FILE *f, const char *help)
{
    static const char mark[] = "{schedulers}";
    char names[128];
    sched_names("|", "|", names, sizeof names);
    for (const char *at; (at = strstr(help, mark)); help = at + strlen(mark))
        fprintf(f, "%.*s%s", (int)(at - help), help, names);
    fputs(help, f);
}

/* The cost line, when a site profile can tell it. */
void print_cost(FILE *out, const site_t *site, const job_spec_t *spec, const char *path)
{
    char line[512];
    if (site) {
        site_rules_cost(site, spec, line, sizeof line);
        fprintf(out, "%s: %s\n", path, line);
    }
}

/* Options shared by render and submit. */
typedef struct {
    load_opts_t load;
    const char *template_path;
    const char *bindir;
    const char *output;
    int dry_run;
    int retry_failed;
    char *after[16]; /* submit --after JOB[:ok|any|notok], as given */
    size_t nafter;
    char depend[4200]; /* what they and the spec's after: wait for (job_after.h); "" nothing */
    submit_context_t *within; /* a submit from inside ddpjob (NULL: the command line's) */
    char pack_set[64];        /* --pack N, as the --set it stands for */
} script_args_t;

static int parse_script_args(int argc, char **argv, const char *help, bool is_submit,
                             script_args_t *a, const char **spec_path)
{
    static const struct option opts[] = {{"scheduler", required_argument, NULL, 's'},
                                         {"site", required_argument, NULL, 'S'},
                                         {"template", required_argument, NULL, 't'},
                                         {"bindir", required_argument, NULL, 'b'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"dry-run", no_argument, NULL, 'n'},
                                         {"set", required_argument, NULL, 'E'},
                                         {"trial", required_argument, NULL, 'T'},
                                         {"retry-failed", no_argument, NULL, 'R'},
                                         {"after", required_argument, NULL, 'A'},
                                         {"pack", required_argument, NULL, 'P'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    memset(a, 0, sizeof *a);
    a->load.scheduler_needed = true;
    int c;
    while ((c = getopt_long(argc, argv, "s:t:b:o:nh", opts, NULL)) != -1) {
        switch (c) {
        case 'h':
            print_help(stdout, help);
            return 1;
        case 's':
            if (parse_scheduler_arg(optarg, &a->load.sched) < 0)
                goto usage;
            break;
        case 'S':
            a->load.site = optarg;
            break;
        case 'E':
            load_opts_add_set(&a->load, optarg);
            break;
        case 'P':
            snprintf(a->pack_set, sizeof a->pack_set, "sweep.pack.nodes=%.40s", optarg);
            load_opts_add_set(&a->load, a->pack_set);
            break;
        case 'T':
            if (parse_trial_arg(optarg, &a->load))
                goto usage;
            break;
        case 't':
            a->template_path = optarg;
            break;
        case 'b':
            a->bindir = optarg;
            break;
        case 'o':
            if (is_submit)
                goto usage;
            a->output = optarg;
            break;
        case 'A':
            if (!is_submit || a->nafter == sizeof a->after / sizeof a->after[0])
                goto usage;
            a->after[a->nafter++] = optarg;
            break;
        case 'n':
        case 'R':
            if (!is_submit)
                goto usage;
            *(c == 'n' ? &a->dry_run : &a->retry_failed) = 1;
            break;
        default:
            goto usage;
        }
    }
    if (optind != argc - 1)
        goto usage;
    *spec_path = argv[optind];
    return 0;
usage:
    print_help(stderr, help);
    return -1;
}

/* How the script is rendered: for the scheduler, and as the caller inside ddpjob asks. */
static render_opts_t render_opts_of(const script_args_t *a, const sched_ops_t *target)
{
    const job_record_t *held = a->within ? a->within->held : NULL;
    return (render_opts_t){.sched = target,
                           .template_path = a->template_path,
                           .bindir = a->bindir,
                           .hold = held != NULL,
                           .idle_s = held ? held->idle_s : 0,
                           .pipeline = a->within ? a->within->pipeline : NULL};
}

/* The steps render and submit share: parse the command line, load and validate the spec, render
 * its script into memory. Returns -1 when the caller should go on (then *spec and *text are
 * set), else the exit code to return. */
static int prepare_script(int argc, char **argv, const char *help, bool is_submit, bool doctor,
                          script_args_t *a, job_spec_t **spec, const sched_ops_t **target,
                          char **text)
{
    const char *path;
    submit_context_t *within = a->within;
    int rc = parse_script_args(argc, argv, help, is_submit, a, &path);
    if (rc != 0)
        return rc > 0 ? EXIT_OK : EXIT_USAGE;
    a->within = within;
    const job_record_t *held = within ? within->held : NULL;
    for (size_t i = 0; within && within->values && i < within->values->count; i++) {
        a->load.values.items =
            ddp_xrealloc(a->load.values.items, (a->load.values.count + 1) * sizeof(char *));
        a->load.values.items[a->load.values.count++] = within->values->items[i];
    }
    if (a->retry_failed) {
        load_opts_free(&a->load);
        return doctor ? EXIT_USAGE : sweep_retry(path, a->dry_run);
    }
    a->load.doctor = doctor;
    a->load.ask_server = is_submit;
    if (pipeline_file_is(path)) {
        fprintf(stderr, "ddpjob: %s is a pipeline (stages:): %s\n", path,
                is_submit ? "submit takes it with --scheduler, --site, --bindir and --dry-run "
                            "alone (a stage's set: and after: are in the file)"
                          : "render one stage's spec; `ddpjob validate` checks the whole");
        load_opts_free(&a->load);
        return EXIT_USAGE;
    }
    int code = EXIT_OK;
    site_t *site = NULL;
    *spec = load_for_scheduler(path, &a->load, target, &site, &code);
    if (!*spec) {
        load_opts_free(&a->load);
        return code;
    }
    ddp_error_t err;
    if (is_submit && !doctor &&
        job_after_dependency(*spec, *target, a->after, a->nafter, a->depend, sizeof a->depend,
                             &err)) {
        fprintf(stderr, "ddpjob: %s: after: %s\n", path, err.msg);
        load_opts_free(&a->load);
        site_destroy(site);
        spec_destroy(*spec);
        return EXIT_INVALID_SPEC;
    }
    /* stdout may be the script: the cost goes beside it. */
    print_cost(stderr, site, *spec, path);
    render_opts_t ro = render_opts_of(a, *target);
    if (held && (*spec)->sweep.ntrials && !a->load.trial_given) {
        fprintf(stderr,
                "ddpjob dev: %s is a sweep: `ddpjob dev` holds one job's nodes (--trial K for "
                "one trial's)\n",
                path);
        load_opts_free(&a->load);
        site_destroy(site);
        spec_destroy(*spec);
        return EXIT_USAGE;
    }
    *text = render_to_string(*spec, &ro, &code);
    if (*text && (*spec)->sweep.ntrials && !a->load.trial_given) {
        char *trial0 = *text;
        if (is_submit) {
            code = doctor ? EXIT_USAGE
                          : sweep_submit(path, &a->load, site, *spec, trial0, &ro, a->depend,
                                         a->dry_run, within);
            if (doctor)
                fprintf(stderr, "ddpjob: %s: doctor checks one trial's nodes: --trial K\n", path);
            *text = NULL;
        } else {
            *text = sweep_render(path, &a->load, site, *spec, trial0, &ro, &code);
        }
        free(trial0);
    }
    load_opts_free(&a->load);
    site_destroy(site);
    if (!*text) {
        spec_destroy(*spec);
        return code == EXIT_OK && !is_submit ? EXIT_SYSTEM : code;
    }
    return -1;
}

static const char render_help[] =
    "usage: ddpjob render SPEC [--scheduler {schedulers}] [--site NAME|FILE] [-o FILE]\n"
    "                          [--template FILE] [--bindir DIR] [--set PATH=VALUE]... [--trial K]\n"
    "                          [--pack N]\n"
    "Prints the job script for SPEC without submitting anything (the dry run).\n"
    "  --scheduler  render for this scheduler instead of the spec's own\n"
    "  --site       check against this site profile (instead of the spec's site:) and print\n"
    "               the job's worst-case cost on stderr\n"
    "  -o FILE      write the script to FILE (mode 0755) instead of stdout\n"
    "  --template   use this template file instead of the installed one\n"
    "  --bindir     where ddpjob and ddpjob-agent are on the nodes (default: beside this ddpjob)\n"
    "  --set PATH=VALUE  as if the spec said so: nodes=4, train.lr=0.05 (repeatable)\n"
    "  --trial K    a sweep's trial K alone (default: the sweep's array job script)\n"
    "  --pack N     a sweep packed into held allocations of N nodes (sweep.pack.nodes=N)\n"
    "Exit: 0 rendered, 1 invalid spec, 2 usage, 3 file or template error.\n";

int cmd_render(int argc, char **argv)
{
    script_args_t a = {0};
    job_spec_t *spec;
    const sched_ops_t *target;
    char *text;
    int code = prepare_script(argc, argv, render_help, false, false, &a, &spec, &target, &text);
    if (code >= 0)
        return code;
    code = EXIT_OK;
    ddp_error_t err;
    if (a.output) {
        if (ddp_write_file_atomic(a.output, text, strlen(text), 0700, &err) < 0) {
            fprintf(stderr, "ddpjob: %s\n", err.msg);
            code = EXIT_SYSTEM;
        }
    } else if (fputs(text, stdout) < 0 || fflush(stdout) != 0) {
        fprintf(stderr, "ddpjob: writing the script: %s\n", strerror(errno));
        code = EXIT_SYSTEM;
    }
    free(text);
    spec_destroy(spec);
    return code;
}

static const char submit_help[] =
    "usage: ddpjob submit SPEC [--scheduler {schedulers}] [--site NAME|FILE] [--dry-run]\n"
    "                          [--template FILE] [--bindir DIR] [--set PATH=VALUE]... [--trial K]\n"
    "                          [--after JOB[:ok|any|notok]]... [--pack N]\n"
    "       ddpjob submit --retry-failed SWEEP [--dry-run]\n"
    "       ddpjob submit PIPELINE [--scheduler {schedulers}] [--site NAME|FILE] [--bindir DIR]\n"
    "                              [--dry-run]\n"
    "Writes the job script into the job directory (the spec's workdir, else the current\n"
    "directory) and submits it to its scheduler; prints the job id. A pipeline (stages:):\n"
    "its first stages now, each later one as those it waits for end; prints its record.\n"
    "  --dry-run    write the script and show the submit command without running it\n"
    "  --set PATH=VALUE  as if the spec said so: nodes=4, train.lr=0.05 (repeatable)\n"
    "  --after JOB[:ok|any|notok]  start only once JOB (a job's name or id, or a sweep) has\n"
    "               ended completed (ok, the default), in any way (any), or not completed\n"
    "               (notok); where it cannot end so, the job is cancelled, never left waiting\n"
    "               (repeatable; the spec's after: {ok: [...], any: [...], notok: [...]} too)\n"
    "  --trial K    a sweep's trial K alone, as a job of its own (default: every trial, as\n"
    "               one array job, or in lanes where the site takes no such array)\n"
    "  --pack N     a sweep's trials run inside one allocation of N nodes held for them,\n"
    "               each on the nodes it asks, several at once where they fit (the spec's\n"
    "               sweep: {pack: {nodes: N, allocations: K}})\n"
    "  --retry-failed  submit again the trials of SWEEP that failed or were cancelled, each\n"
    "               with a fresh record (the old one kept as trial-K.try-N), in its lanes\n"
    "  --on NAME    submit on cluster NAME from this laptop (ddpjob cluster add): the spec\n"
    "               checked here, this ddpjob installed there where missing, the workdir (if a\n"
    "               folder here, else this one) uploaded to REMOTE_DIR/JOBNAME (what changed)\n"
    "               and submitted there to run in it (--dry-run: said, nothing sent); never\n"
    "               a home folder, nor credentials (.ssh, .gnupg, .aws, .netrc, ...); with\n"
    "               --max-upload SIZE  what may be sent at most (default 1GB)\n"
    "               --accept-new-host-keys  --connect-timeout S (default 15)  --ssh-config\n"
    "               FILE  --known-hosts FILE as for cluster check\n"
    "Exit: 0 submitted, 1 invalid spec or a job to wait for that is missing or cannot end as\n"
    "      asked, 2 usage, 3 file or template error,\n"
    "      4 the submit command missing, failed or printed no job id, 255 (--on) the cluster\n"
    "      could not be reached or the link was lost.\n";

static int submit_as(int argc, char **argv, bool doctor, submit_context_t *within);

int submit_render_here(int argc, char **argv, job_spec_t **spec)
{
    script_args_t a = {0};
    const sched_ops_t *target;
    char *text;
    int code = prepare_script(argc, argv, submit_help, false, false, &a, spec, &target, &text);
    if (code < 0)
        free(text);
    return code;
}

int submit_command(int argc, char **argv, bool doctor)
{
    return submit_as(argc, argv, doctor, NULL);
}

int submit_within(int argc, char **argv, submit_context_t *within)
{
    return submit_as(argc, argv, false, within);
}

static int submit_as(int argc, char **argv, bool doctor, submit_context_t *within)
{
    script_args_t a = {.within = within};
    job_spec_t *spec;
    const sched_ops_t *target;
    char *text;
    int code = prepare_script(argc, argv, submit_help, true, doctor, &a, &spec, &target, &text);
    if (code >= 0)
        return code;
    const sched_ops_t *ops = target;
    char *script = NULL, *record = NULL, record_var[8300], output_arg[4200], file[256], job_id[128],
         depend[4300];
    ddp_error_t err;
    job_output_t output = {0};
    const char *jobdir = spec->workdir ? spec->workdir : ".";
    if ((code = write_job_script(spec, ops, jobdir, text, file, sizeof file, &script)))
        goto out;
    char *sub_argv[16];
    size_t n = 0;
    sub_argv[n++] = (char *)ops->submit_program;
    for (size_t i = 0; ops->submit_args[i]; i++)
        sub_argv[n++] = (char *)ops->submit_args[i];
    if (a.depend[0])
        ops->after_args(a.depend, depend, sizeof depend, sub_argv, &n);
    if (!a.dry_run && !doctor) {
        if (make_record(spec, ops, jobdir, text, NULL, within ? within->held : NULL, &record,
                        &err)) {
            fprintf(stderr, "ddpjob: %s: cannot make the job's record: %s\n", spec->path, err.msg);
            code = EXIT_SYSTEM;
            goto out;
        }
        if ((code = place_output(jobdir, &output)))
            goto out;
        if (output.moved)
            ops->output_args(output.dir, 0, output_arg, sizeof output_arg, sub_argv, &n);
        record_handoff(ops, record, &output, record_var, sizeof record_var, sub_argv, &n);
    }
    sub_argv[n++] = file;
    sub_argv[n] = NULL;
    if (a.dry_run) {
        printf("wrote %s\nwould run in %s:", script, jobdir);
        for (size_t i = 0; i < n; i++)
            printf(" %s", sub_argv[i]);
        printf("\n");
    } else if ((code = run_submitter(ops, sub_argv, jobdir, script, text, job_id, sizeof job_id)) ==
               EXIT_OK) {
        if (record) {
            record_submitted(record, job_id, 1);
            job_output_tell(record, &output);
        }
        if (within) {
            snprintf(within->id, sizeof within->id, "%s", job_id);
            within->record = record;
            record = NULL;
        } else {
            printf("%s\n", job_id);
        }
    }
out:
    if (record && code != EXIT_OK)
        job_record_remove(record);
    free(record);
    free(script);
    free(text);
    spec_destroy(spec);
    return code;
}

int submit_args_pipeline(int argc, char **argv, const char **path, load_opts_t *load,
                         const char **bindir, int *dry_run)
{
    script_args_t a;
    int opterr_was = opterr;
    opterr = 0; /* submit_command parses it again, and says what is wrong */
    int rc = parse_script_args(argc, argv, "", true, &a, path);
    opterr = opterr_was;
    optind = 0;
    if (rc != 0 || a.retry_failed || !pipeline_file_is(*path)) {
        load_opts_free(&a.load);
        return 0;
    }
    /* Its stages take their own options: the pipeline's set: and their specs. */
    if (a.load.sets.count || a.load.trial_given || a.nafter || a.template_path) {
        fprintf(stderr,
                "ddpjob: %s is a pipeline (stages:): submit takes it with --scheduler, --site, "
                "--bindir and --dry-run alone (a stage's set: and after: are in the file)\n",
                *path);
        load_opts_free(&a.load);
        return -1;
    }
    *load = a.load;
    *bindir = a.bindir;
    *dry_run = a.dry_run;
    return 1;
}
