/* sched: the scheduler seam. Everything that differs between schedulers is a row of this table,
 * one per scheduler, and callers go through the row, never name a scheduler: rendering (the
 * template and the variables only it knows, in its own units), submitting (its output file, an
 * array with its cap, a dependency on another job), reading back the job id, cancelling,
 * asking a running job to checkpoint, what it says of jobs (its query, its states mapped to
 * ours, a pending job in words), array task ids, the variables a job of it is given, the server
 * a site profile recognises.
 *
 * To add a scheduler, these things:
 *   1. cli/sched/sched_NAME.c: its row (sched_ops_t), with what renders and submits;
 *      sched_NAME_query.c: its query and its states in our words; sched_NAME_pending.c: a
 *      pending job in words; sched_NAME.h: what those files share and what unit tests reach;
 *   2. the row's address in sched.c's table, its files in cli/sched/meson.build;
 *   3. its template, templates/NAME.sh (the variables every scheduler's template gets are
 *      render.c's; the row's fill adds its own);
 *   4. for the agent and the nodes, its row in runtime/job/node_source.c (how to tell its job,
 *      its node list, this node's rank, its job id and node-local disk variables);
 *   5. a test cluster (tests/cluster/) and its suites; golden.sh renders every row;
 *   6. not yet behind the seam: spec fields of its own (the spec's pbs:, slurm: and sge: blocks
 *      are spec.c's, read by the rows' fill), its site profile fields (site.c, site_rules.c),
 *      and, where its script starts the other nodes' agents as tasks of the job (pbsdsh, qrsh
 *      -inherit), that launcher in `ddpjob node-agents --via` (cmd_pbs_agents.c).
 * tests/lint/seam.sh fails when a file outside the seam and templates/ names a scheduler (bar
 * those it lists as not yet moved behind it). */
#ifndef DDPJOB_SCHED_H
#define DDPJOB_SCHED_H

#include <stdbool.h>
#include <stdio.h>

#include "runtime/base/ddp_error.h"
#include "cli/jobs/job_state.h"
#include "cli/sched/sched_job.h"
#include "cli/sched/sched_pending_text.h"
#include "cli/spec/diag.h"
#include "cli/spec/spec.h"
#include "cli/spec/template.h"

typedef struct sched_ops {
    const char *name;    /* as a spec's scheduler: and --scheduler say it, and records keep it */
    const char *display; /* its name in messages */
    const char *template_file; /* file name under the template directory */
    const char *script_suffix; /* for the script `submit` writes */
    const char *submit_program;
    /* Asks it its version, what `cluster check` runs on a login: it fails under another
     * scheduler of the same submit program (PBS's qstat --version, Grid Engine's qstat -help). */
    const char *version_command;
    /* Extra arguments before the script path. */
    const char *const *submit_args;
    /* Sets this scheduler's template variables. Returns -1 when out of memory. */
    int (*fill)(const job_spec_t *spec, tmpl_ctx_t *ctx);
    /* Writes one "note: ..." line to `notes` per spec field this scheduler leaves out. */
    void (*note_ignored)(const job_spec_t *spec, FILE *notes);
    /* Extracts the job id from the submitter's stdout into out; -1 when none is there. */
    int (*parse_job_id)(const char *output, char *out, size_t outsize);
    /* The submitter's arguments that put the job's output file (each array task's, when
     * `array`) into folder dir: appended to extra at *n, their text in buf. */
    void (*output_args)(const char *dir, int array, char *buf, size_t size, char **extra,
                        size_t *n);
    /* The submitter's arguments (at most four) that hold the job until others have ended as
     * `depend` says, in the words Slurm and PBS share ("afterok:ID:ID,afterany:ID"): appended
     * to extra at *n, their text in buf. */
    void (*after_args)(const char *depend, char *buf, size_t size, char **extra, size_t *n);
    const char *cancel_program; /* ends jobs given by id */
    const char *options_end;    /* what ends its options before the ids ("--"); NULL: nothing */
    /* Asks a running job's workers to checkpoint with signal sig (a name such as "USR1"); the
     * job's record is record_dir. 0, or -1 with err set. */
    int (*ask_checkpoint)(const char *job_id, const char *record_dir, const char *sig,
                          ddp_error_t *err);
    /* An array job (a sweep): the directive lines of its tasks' range, one per trial, with at
     * most `parallel` at once (0: no cap); its first task's index (trial 0's); the variable a
     * task finds its index in, and the variable that names the folder a task's script starts in
     * where the scheduler has one (NULL where a script starts where it was submitted). */
    void (*array_range)(size_t ntrials, long parallel, char *out, size_t size);
    int array_first_task;
    const char *array_index_var, *task_workdir_var;
    /* The job's mail events in the scheduler's words (the template's mail_events), from
     * whether the spec asks for mail when it fails, completes, is requeued; "" for none. */
    void (*mail_events)(bool failed, bool completed, bool requeued, char *out, size_t size);
    /* Why its script cannot hold an allocation for runs (`ddpjob dev`, a packed sweep); NULL:
     * it can. */
    const char *no_hold_why;
    /* Whether the script hands every node the node script (`ddpjob launch`'s); NULL: never. */
    bool (*needs_node_script)(const job_spec_t *spec);
    /* The submitter's flag that passes VAR=VALUE,... into the job; NULL where the job gets the
     * submitter's environment as it is. */
    const char *env_flag;
    /* The variables a job of this scheduler is given (SLURM_...), which a submit from inside
     * one would hand its new job where env_flag is NULL: such a submit drops them, bar those
     * that say how to reach the scheduler (job_env_kept). NULL: none. */
    const char *job_env_prefix;
    const char *const *job_env_kept;
    /* The server this host submits to, for a site profile to recognise; NULL: none is asked.
     * 0 with its name in out, or -1. */
    int (*server_name)(char *out, size_t size);
    /* The container runtime a spec that names none gets, and whether the scheduler's launcher
     * starts the agents inside an image (srun --container-image: pyxis). */
    const char *container_runtime;
    bool container_agent_inside;
    /* The spec's checks only this scheduler makes (PBS's job-name rule), into diag; NULL none. */
    void (*check_spec)(const job_spec_t *spec, diag_t *diag);

    /* What it says of jobs, in one call per source for many (not one per job): fills each of
     * the n jobs whose id is set as the scheduler knows it (found 0 where it does not); a
     * scheduler command that cannot run or fails is named in err with its stderr (-1); no
     * accounting (Slurm's sacct) is not an error. */
    int (*query)(sched_job_t *jobs, size_t n, ddp_error_t *err);
    const char *sources[3]; /* the source words its query writes into sched_job_t */
    /* A pending job in words (pending_reason.h): whether a reason is needed for any (Slurm's
     * squeue gives one whenever it has something to say); the words; whether it starts
     * without anyone acting (only then is an estimated start worth saying). */
    bool reason_needed;
    void (*explain_pending)(pending_text_t *t, const sched_job_t *j, const char *id,
                            const char *name);
    bool (*starts_by_itself)(const sched_job_t *j);
    /* Its state word, as a batch shell records what ended it ("sched=WORD", job_record.h), in
     * ours; NULL where its script records none. */
    job_state_t (*state_from_word)(const char *word);
    /* An array job's task k as the scheduler names it everywhere (Slurm's ARRAY_K, PBS's
     * ARRAY[K].server from qsub's ARRAY[].server), and the array job of a task. -1 when the id
     * has not that shape or out is too small. */
    int (*array_task_id)(const char *array_id, size_t k, char *out, size_t outsize);
    int (*array_job_id)(const char *task_id, char *out, size_t outsize);
} sched_ops_t;

/* The row named `name` ("slurm"); NULL for any other word. */
const sched_ops_t *sched_by_name(const char *name);

/* The schedulers' names joined by `sep`, the last two by `last_sep` (", " and " or ": "pbs,
 * slurm or sge"; "|" and "|"), for usage and messages. */
void sched_names(const char *sep, const char *last_sep, char *out, size_t size);

/* Every row's name, NULL-ended, for a suggestion among them (diag_suggest). */
const char *const *sched_name_list(void);

/* Row i of the table; NULL past the last. */
const sched_ops_t *sched_at(size_t i);

/* A submit from inside a job (a pipeline's next stage, from the stage before it): every
 * scheduler's job_env_prefix variables dropped from this process's environment. */
void sched_leave_job_env(void);

/* A job script run again inside its job (a held run): every scheduler's task_workdir_var that
 * this job has, set to workdir, where the script looks for its folder. */
void sched_set_task_workdir(const char *workdir);

/* Ends the jobs ids[0..n) with the scheduler's cancel program. One that has just ended is no
 * failure: what counts is that all end. 0, or -1 with err set. */
int sched_cancel(const sched_ops_t *ops, char *const *ids, size_t n, ddp_error_t *err);

/* The file `submit` writes a job's script to, in the job directory: the job name (anything but
 * letters, digits and ._- becomes _), a sweep trial's ".tK", and the scheduler's suffix. A
 * requeued job whose scheduler cannot requeue it submits it again. */
void sched_script_file(const sched_ops_t *ops, const job_spec_t *spec, char *out, size_t outsize);

/* Runs a scheduler command (argv[0] looked up on PATH); its stdout into *out unless out is
 * NULL. -1 with err naming the command (and its stderr, trimmed) when it cannot run, or when it
 * fails and `failure_ok` is 0; *failed says whether it exited non-zero. */
int sched_run(char **argv, char **out, int failure_ok, int *failed, ddp_error_t *err);

/* For the rows' fill: the spec's own directives of that scheduler, as the template's
 * `directives` list. -1 when out of memory. */
int sched_fill_directives(tmpl_ctx_t *ctx, const strv_t *directives);

#endif
