/* spec: a job spec file (YAML) read into a typed job_spec_t, with every problem reported.
 *
 * spec_load parses with libyaml's document API, so each value keeps the line and column it came
 * from, and checks every field against a table (type, range, whether it may appear in a
 * scheduler directive). All problems go into a diag_t at once; a spec with any problem must not
 * be rendered. What the fields mean is documented in share/man/ddpjob.1 and README.md. */
#ifndef DDPJOB_SPEC_H
#define DDPJOB_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "cli/spec/diag.h"

typedef enum { PBS_LAUNCH_PBSDSH = 0, PBS_LAUNCH_SSH } pbs_launcher_t;
/* How a PBS job asks for its nodes: PBS Pro's chunks (-l select=N:ncpus=C:...), or Gadi's job-wide
 * totals (-l ncpus=, -l ngpus=), which only Gadi's site hooks spread over nodes. UNSET: the site
 * profile's choice, else select. */
typedef enum { PBS_RESOURCES_UNSET = 0, PBS_RESOURCES_SELECT, PBS_RESOURCES_GADI } pbs_resources_t;

typedef struct {
    char **items;
    size_t count;
} strv_t;

typedef struct {
    char *key;
    char *value;
} env_var_t;

typedef struct {
    unsigned long line, col;
} spec_loc_t;

typedef struct {
    char *field; /* "cpus_per_node", "pbs.jobfs", "env.NCCL_IB_DISABLE" */
    spec_loc_t loc;
} spec_field_loc_t;

typedef struct {
    char *path;
    char *name;
    spec_field_loc_t *locs; /* where each field given in the file is */
    size_t loc_count;
    char *site;          /* a site profile's name or path (site.h) */
    char *scheduler;     /* its name as written (the scheduler seam knows them); NULL: none */
    long nodes;          /* the most nodes that run workers */
    long min_nodes;      /* nodes: MIN:MAX (an elastic world, for ddpjob launch): MIN; else nodes */
    long spares;         /* more nodes whose agents stand by to take a lost node's place */
    long gpus_per_node;  /* 0: a CPU-only job */
    long procs_per_node; /* workers per node; 0 in the file means "gpus_per_node, or 1" */
    long cpus_per_node;  /* 0: scheduler default */
    uint64_t mem_bytes;  /* per node; 0: scheduler default */
    uint64_t walltime_s; /* 0: scheduler default */
    bool walltime_mm_ss; /* written MM:SS, minutes and seconds (as Slurm and PBS both read it) */
    bool walltime_bare;  /* written as a bare number: seconds here and to PBS, minutes to Slurm */
    char *queue;
    char *project;
    strv_t modules;
    char *setup;
    env_var_t *env;
    size_t env_count;
    char *workdir;
    long master_port; /* 0: derived from the job id in the script */
    long max_restarts;
    long rendezvous_timeout;
    long hang_timeout; /* seconds; 0: off */
    long grace;        /* seconds from SIGTERM to SIGKILL (the agent's --grace); 0: its default */
    long output_stall_timeout; /* seconds the agent's output may stall before lines drop; 0: the
                                * agent's default */
    double slow_factor;        /* the agent's --slow-factor; -1: its default */
    long slow_window;          /* the agent's --slow-window (seconds); 0: its default */
    char *log_dir;             /* each rank's output under LOG_DIR/RUN_ID (the agent's --log-dir) */
    char *error_file;   /* the JSON failure report (the agent's --error-file; %n: per node) */
    char *gpu_binding;  /* the agent's --gpu-binding: per-rank or none (NULL: none) */
    char *cpu_binding;  /* the agent's --cpu-binding: cores, numa or none (NULL: none) */
    char *preflight;    /* the agent's --preflight: report or strict (NULL: report) */
    char *share_record; /* private or group: who may read the job's record (NULL: private) */
    bool
        local_rank_arg; /* the agent's --local-rank-arg (torch.distributed.launch's --local_rank) */
    /* The walltime contract: `signal` goes once to every worker `before_s` seconds before the
     * walltime; ranks that checkpoint and exit 75 end the job with 75, which `requeue` times
     * resubmits the job to resume. */
    struct {
        bool present;
        int signal; /* 0: nothing is sent early */
        long before_s;
    } checkpoint;
    long requeue;
    /* Messages about the job: the scheduler's own mail to `email`, and a JSON POST to `webhook`
     * (a secret: kept in the job's record, never in its script or ddpjob's outputs), on the
     * events `on` names (job_notify_events; none given: failed and completed). */
    struct {
        bool present;
        char *email;
        char *webhook;
        strv_t on;
    } notify;
    /* Jobs this one starts after (job_after.h): names, ids or sweeps, by how they must end. */
    struct {
        bool present;
        strv_t ok, any, notok;
    } after;
    strv_t command;
    bool command_is_shell; /* command was one string, run by sh -c */
    bool command_is_train; /* a train: block: command holds ddp-train's arguments ("train", ...);
                              the renderer puts the installed ddp-train in front */
    /* The image the job runs in (container_spec.h, spec_container.h); runtime NULL until
     * spec_container_settle gives the site's or the scheduler's default. */
    struct {
        bool present;
        char *image;
        char *runtime;
        strv_t mounts;
        char *stage; /* jobfs or a folder: the image copied to node-local storage first */
    } container;
    /* A sweep: this spec is trial `trial` of `ntrials` (0: no sweep), at most `parallel` at
     * once. */
    struct {
        size_t trial, ntrials;
        long parallel;
        char objective[64]; /* the metric the best trial is judged by ("": test_acc, else loss) */
        bool maximize;
        long pack_nodes;          /* packed into held allocations of this many nodes (0: not) */
        long pack_allocations;    /* ... this many at once */
        uint64_t pack_walltime_s; /* ... each held this long a link (0: a trial's walltime for
                                     each wave of its trials) */
    } sweep;
    struct {
        bool present;
        strv_t storage;
        uint64_t jobfs_bytes; /* per node */
        pbs_launcher_t launcher;
        pbs_resources_t resources;
        bool exclusive; /* select: place=scatter:excl, whole nodes to this job */
        strv_t directives;
    } pbs;
    struct {
        bool present;
        char *constraint;
        bool exclusive;
        strv_t directives;
    } slurm;
    /* Grid Engine: the parallel environment (its allocation rule gives whole nodes), the
     * resource memory is asked as per slot (h_vmem, mem_free). */
    struct {
        bool present;
        char *pe;
        char *memory;
        strv_t directives;
    } sge;
} job_spec_t;

/* What notify.on may name: a job that failed, a link requeued to resume, a job that completed,
 * a rank node 0 names slow. */
extern const char *const spec_notify_events[];

/* Reads and validates `path`, with the values of a pipeline's earlier stages (`values`, each
 * STAGE.KIND=TEXT, pipeline.h; NULL: not a stage) put in, then the overrides `sets` (each
 * PATH=VALUE, spec_set.h; NULL: none) applied, as trial `trial` of its sweep: when it has one
 * (sweep.h). Returns NULL only when the file cannot be read at all (err says why); otherwise a
 * spec whose problems, if any, are in diag (check diag->count). */
job_spec_t *spec_load(const char *path, const strv_t *values, const strv_t *sets, size_t trial,
                      diag_t *diag, ddp_error_t *err);

/* Appends args to the workload: after the command's arguments, or as more ddp-train options
 * for train:. A command given as one shell string takes none (err says so). */
int spec_append_args(job_spec_t *spec, char *const *args, int n, ddp_error_t *err);

/* What `ddpjob doctor --hosts` runs when given no spec: one agent per host, comparing them
 * (preflight only), with python3 as the command so that its versions and torch's are read. */
job_spec_t *spec_doctor_default(ddp_error_t *err);

/* Whether the workload's arguments include `arg` ("--resume", "--checkpoint-dir"). */
bool spec_command_has(const job_spec_t *spec, const char *arg);
/* The nodes the scheduler is asked for: the job's and its spares. */
long spec_alloc_nodes(const job_spec_t *spec);
/* The CPUs a worker gets where the spec names none (site_rules.c fills cpus_per_node). */
#define SPEC_CPUS_PER_WORKER 1

/* Where `field` is in the file; line 0 when the spec does not give it. */
spec_loc_t spec_field_loc(const job_spec_t *spec, const char *field);

void spec_destroy(job_spec_t *spec);
/* The agent's options the spec's fields become (each field's agent_flag in spec.c's table), as
 * argv words, in the table's order; every script passes them to every agent. -1: out of memory. */
int spec_agent_args(const job_spec_t *spec, strv_t *args);
/* Appends a copy of the first len bytes of s to v; -1 when out of memory. */
int spec_strv_push(strv_t *v, const char *s, size_t len);
void spec_strv_free(strv_t *v);

#endif
