/* commands: the ddpjob subcommands and the exit codes they share (documented in ddpjob(1)). */
#ifndef DDPJOB_COMMANDS_H
#define DDPJOB_COMMANDS_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/jobs/dev_record.h"
#include "cli/view/job_view.h"
#include "cli/spec/site.h"
#include "cli/spec/spec.h"

enum {
    EXIT_OK = 0,
    EXIT_INVALID_SPEC = 1, /* the spec has problems; each was printed as FILE:LINE:COL */
    EXIT_USAGE = 2,        /* bad command line */
    EXIT_SYSTEM = 3,       /* a file could not be read or written, a template is broken */
    EXIT_SUBMITTER = 4,    /* qsub/sbatch missing, failed, or printed no job id */
    EXIT_NO_LINK = 255,    /* --on: the cluster could not be reached or the connection was lost
                              (as ssh's 255): says nothing of the job */
};

typedef struct {
    const sched_ops_t *sched; /* --scheduler, else NULL for the spec's own */
    const char *site;         /* --site, else NULL for the spec's site: (if any) */
    bool scheduler_needed;    /* false for a local run, or validate */
    bool local_run;           /* `ddpjob run`: a site's queue rules do not apply on this machine */
    bool doctor;     /* `ddpjob doctor`: the agents compare the nodes and start no worker */
    bool ask_server; /* submit: a spec without a site takes the profile that recognises
                        the PBS server it goes to (site_detect.h) */
    strv_t sets;     /* --set PATH=VALUE, each (spec_set.h) */
    strv_t values;   /* a pipeline's stage: the values its spec asks, STAGE.KIND=TEXT */
    size_t trial;    /* --trial K: a sweep's trial (sweep.h) */
    bool trial_given;
    bool quiet;      /* notes and warnings unsaid (a sweep's later trials: the first's) */
    bool silent;     /* ... and problems too (checked again, said once already) */
    bool validating; /* validate: the notes for whoever checks a spec before it runs, too */
} load_opts_t;

/* Loads and validates a spec for its target scheduler and, when it names one, its site profile
 * (whose rules it is checked against and whose choices it takes). Prints every problem, warning
 * and note; returns NULL with *exit_code set when the spec cannot be used. *site (when site is
 * not NULL) gets the profile, or NULL. */
job_spec_t *load_for_scheduler(const char *path, const load_opts_t *opts,
                               const sched_ops_t **target, site_t **site, int *exit_code);

/* --set PATH=VALUE: one more override (set: a word of the command line, kept, not copied). */
void load_opts_add_set(load_opts_t *opts, char *set);
void load_opts_free(load_opts_t *opts);
/* --trial K into opts; -1 with the problem said. */
int parse_trial_arg(const char *arg, load_opts_t *opts);

/* submit --on's first step (cmd_remote.c): the spec loaded, checked and rendered here as submit
 * would (the site profile is known here), nothing written or submitted. -1 with *spec set to
 * go on, else the exit code to return. */
int submit_render_here(int argc, char **argv, job_spec_t **spec);

/* What the command table (main.c) says of a command, for how it runs on a cluster reached from
 * this laptop (cmd_remote.c). */
enum {
    CMD_ON = 1 << 0,             /* runs on a cluster with --on NAME, or where its job was sent */
    CMD_SUBMITS = 1 << 1,        /* sends the spec's folder there and submits it (with --on) */
    CMD_HELD = 1 << 2,           /* works in an allocation held there (--in DEV) ... */
    CMD_HOLDS = 1 << 3,          /* ... or, given a spec, submits one and waits with it */
    CMD_FOLLOWS = 1 << 4,        /* follows its job to its end, through a lost link */
    CMD_FOLLOWS_WITH_F = 1 << 5, /* ... with -f or --follow */
    CMD_ALL_CLUSTERS = 1 << 6,   /* without --on: this machine's, then every cluster's */
    CMD_BRINGS_BACK = 1 << 7,    /* what it writes there is brought back here */
};

/* A command for a cluster reached from this laptop (cmd_remote.c), one the command table (main.c)
 * marks CMD_ON, its flags those of its row: `submit --on NAME`, or one of the commands after
 * submit with --on NAME or for a job the local remote index places there, run there; -1 when
 * the command is for this machine. */
int remote_dispatch(unsigned flags, int argc, char **argv);

/* The line of each --help of the commands after submit that cmd_remote.c runs on a cluster. */
#define ON_CLUSTER_HELP                                                                            \
    "  --on NAME    on cluster NAME, from this laptop (default: the cluster `submit --on` sent\n"  \
    "               JOB to); exit 255 when it could not be reached or the link was lost\n"

/* Splits a command line at its first "--": returns how many words come before it (what getopt
 * should see); *extra and *nextra get the words after it, the workload's own arguments. */
int split_workload_args(int argc, char **argv, char ***extra, int *nextra);

/* A whole sweep (its spec loaded as trial 0, rendered as text): submit sends it as one array
 * job or in lanes and returns the exit code; render gives the array's script, or trial 0's
 * where the sweep goes in lanes (cmd_sweep.c). */
struct render_opts;
struct submit_context;
int sweep_submit(const char *path, const load_opts_t *load, const site_t *site, job_spec_t *spec,
                 char *text, const struct render_opts *ro, const char *after, int dry_run,
                 struct submit_context *ctx);
char *sweep_render(const char *path, const load_opts_t *load, const site_t *site, job_spec_t *spec,
                   const char *text, const struct render_opts *ro, int *exit_code);

/* A sweep's status (its table, or --json), list line, wait (0 when every trial completed, 1
 * otherwise, 124 past the deadline; 0: none), cancel of every trial, and the record folder of
 * its trial for logs and cancel --trial (NULL with the problem said) (cmd_sweep_jobs.c). */
/* submit --retry-failed SWEEP: its trials that failed or were cancelled, each submitted again
 * with its record made afresh (the old one kept beside it as trial-K.try-N), in the sweep's
 * lanes (cmd_sweep.c). */
int sweep_retry(const char *sweep, int dry_run);
int sweep_status(const char *dir, const char *metric, int desc, int json);
void sweep_list_line(const char *dir);
int sweep_wait(const char *dir, int64_t deadline);
int sweep_cancel(const char *dir);
char *sweep_trial_record(const char *dir, long trial);

/* How long a job that neither its scheduler nor its record accounts for may stay so before
 * wait gives up on it (a record on a file system the job cannot write, a job deleted by hand
 * before it started). */
#define VANISHED_MS 120000
/* The records named on the command line (all of the index when none is and `all_if_none`);
 * NULL with the problem said (cmd_jobs.c). */
char **find_records(int argc, char **argv, int all_if_none, size_t *n);
/* The job in dir into *v: 1 once it has ended, or has been accounted for by neither its
 * scheduler nor its record for VANISHED_MS (*vanished then set); else 0 (cmd_jobs.c). */
int job_look(char *dir, job_view_t *v, int64_t *unaccounted_since, int *vanished);
/* status --watch of the job in dir until it ends: its exit as wait's (cmd_watch.c); the
 * progress line of a running job ("" none) for wait. */
int status_watch(char *dir);
void job_progress_for(const job_view_t *v, char *line, size_t size);

int cmd_validate(int argc, char **argv);
/* validate of a pipeline file (cli/spec/pipeline.h): its problems and its stages' specs', or the
 * order its stages go in (cmd_pipeline.c). */
int pipeline_validate(const char *path, const load_opts_t *load);
/* A pipeline submitted: checked whole, its record made with copies of its files, its first
 * stages submitted; its record's folder printed (--dry-run: what would be submitted when). The
 * commands after it: status (--json), list's line, wait (0 when every stage that ran completed
 * and none was cancelled, 1 otherwise, 124 past the deadline), and pipeline-next, which a
 * stage's batch shell runs as it ends (cmd_pipeline.c, pipeline_run.h; cancel: cmd_jobs.c). */
int pipeline_submit(const char *path, const load_opts_t *load, const char *bindir, int dry_run);
/* submit --on of a pipeline (its command line as submit's): *is_pipeline says whether it names
 * one; then it is checked here as submit would, nothing written, and -1 returned with *as_job
 * holding its path and name (the folder sent is named after it); else the exit code. */
int pipeline_submit_here(int argc, char **argv, int *is_pipeline, job_spec_t **as_job);
/* submit's command line, when it names a pipeline: 1 with *path, *load (--scheduler, --site),
 * *bindir (NULL: none) and *dry_run set; -1 when it gives options a pipeline does not take (said);
 * 0 when it names no pipeline, or is not right (submit_command says how) (submit_spec.c). */
int submit_args_pipeline(int argc, char **argv, const char **path, load_opts_t *load,
                         const char **bindir, int *dry_run);
/* --scheduler's value into *out; -1 with the problem said. A command's help text to f, with
 * "{schedulers}" as the scheduler seam's names ("pbs|slurm"). The cost line a site profile
 * tells, to out (submit_spec.c). */
int parse_scheduler_arg(const char *arg, const sched_ops_t **out);
void print_help(FILE *f, const char *help);
void print_cost(FILE *out, const site_t *site, const job_spec_t *spec, const char *path);
int pipeline_status(const char *dir, int json);
void pipeline_list_line(const char *dir);
int pipeline_wait(const char *dir, int64_t deadline);
int cmd_pipeline_next(int argc, char **argv);
/* The record's folder of stage `stage` of the pipeline in dir (malloc'd): logs --stage; NULL
 * with why said (no such stage, not submitted). */
char *pipeline_stage_record(const char *dir, const char *stage);
int cmd_render(int argc, char **argv);
int cmd_submit(int argc, char **argv);
int cmd_nodes(int argc, char **argv);
int cmd_pbs_agents(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_wait(int argc, char **argv);
int cmd_cancel(int argc, char **argv);
int cmd_logs(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_notify(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_launch(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_setup_nodes(int argc, char **argv);
int cmd_cluster(int argc, char **argv);
int cmd_fetch(int argc, char **argv);
int cmd_dev(int argc, char **argv);
int cmd_dev_hold(int argc, char **argv);
int cmd_shell(int argc, char **argv);
/* `ddpjob dev DEV --port PORT[:NODE]`: that port of the held node forwarded to this machine's
 * loopback until Ctrl-C (waiting up to wait_s for a queued allocation's nodes); with endpoint, the
 * node's side's address and token said on stdout for a laptop to reach it through SSH, until stdin
 * ends (cmd_dev_shell.c). */
int dev_forward(const char *dev, const char *what, int endpoint, int64_t wait_s);
int cmd_dev_shell_serve(int argc, char **argv);
/* dev's durations: "off", seconds, Ns, Nm, Nh or [[HH:]MM:]SS into *seconds (off: 0); -1 when
 * it is none (cmd_dev.c). */
int dev_parse_duration(const char *text, int64_t *seconds);
/* How long `ddpjob dev` waits for the allocation to start, unless told. */
#define DEV_WAIT_DEFAULT_S (10 * 60)
/* run --in reads "cancel" lines on its standard input as an interrupt (run --in --on sends one
 * for the laptop's Ctrl-C) (cmd_dev.c). */
void dev_run_cancel_on_input(void);
/* `ddpjob run --in DEV [SPEC]`: the spec (NULL: the one DEV holds its nodes for) run in the
 * allocation `ddpjob dev` holds, its output followed; exits with the run's status (cmd_dev.c). */
typedef struct {
    long nproc;         /* --nproc-per-node, else 0 */
    const char *bindir; /* --bindir, else NULL */
    int64_t wait_s;     /* --wait: how long to wait for a queued allocation's nodes; 0: not */
} run_in_opts_t;
int dev_run(const char *dev, const char *spec_path, load_opts_t *load, char **extra, int nextra,
            const run_in_opts_t *o);
/* Whether the allocation DEV (its record in dir) holds its nodes: EXIT_OK with *s read; else 1
 * with why said as `ddpjob COMMAND: ...` (released, ended, or queued with the pending reason),
 * or, waiting up to wait_s for a queued one, 124 when it still is (dev_ready.c). */
int dev_ready(const char *command, const char *dev, char *dir, int64_t wait_s, dev_state_t *s);
/* --wait's default: how long run --in, shell and dev --port wait for a queued allocation. */
#define DEV_WAIT_HELD_DEFAULT_S (60 * 60)
/* --port PORT[:NODE] into *port and *node (default 0); -1 with the problem said. */
int dev_parse_port(const char *what, int *port, int *node);
/* --wait[=DURATION] into *wait_s (none: DEV_WAIT_HELD_DEFAULT_S); -1 with the problem said. */
int dev_parse_wait(const char *command, const char *arg, int64_t *wait_s);
/* What a caller inside ddpjob adds to a submit's command line, and what it gets back: the record
 * and job id, instead of the id printed. */
typedef struct submit_context {
    const job_record_t *held; /* `ddpjob dev`: an allocation held, with these facts */
    const char *pipeline;     /* a pipeline's stage: the pipeline's record */
    const strv_t *values;     /* ... and the values its spec asks (pipeline.h); NULL: none */
    char *record;             /* out: the job's record (a sweep's), malloc'd */
    char id[128];             /* out: its job id (a sweep's first) */
} submit_context_t;
int submit_within(int argc, char **argv, submit_context_t *ctx);
/* logs -f of the job in dir: every rank's lines as they come (its files read every read_ms, its
 * state asked every half second), until it ends (cmd_logs.c). */
void logs_follow(char *dir, int read_ms);

/* run, submit and launch as doctor runs them (doctor: the spec's agents only compare nodes). */
int run_command(int argc, char **argv, bool doctor);
int submit_command(int argc, char **argv, bool doctor);
int launch_command(int argc, char **argv, bool doctor);

#endif
