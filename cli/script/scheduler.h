/* scheduler: what differs between PBS and Slurm, as one table entry per scheduler.
 *
 * Each entry names its template, fills the template variables only it knows (directive values
 * in its own units), lists the spec fields it ignores (for the note that `render --scheduler`
 * prints), and knows how to submit (its output file, a dependency on another job) and read back
 * the job id, how to cancel, and how to ask a running job to checkpoint. Adding a scheduler means
 * adding an entry and a template, not editing callers: that is the aim (issue 67), not yet all
 * of the way. To add a scheduler today, these things:
 *   1. an entry here (scheduler.c: its programs, template variables, mail words, how the job
 *      gets its record, the server a site profile recognises, its default container runtime)
 *      and its template, templates/NAME.sh;
 *   2. its name in the spec (spec.h's sched_kind_t, spec.c's names) and its detection
 *      (site_detect.c);
 *   3. its row in sched_query.c's sched_queriers: its query, with its states mapped to ours,
 *      and its pending reasons in words (cli/jobs/pending_NAME.c, pending_sched.h);
 *   4. for the agent, its node rank and node list (agent/supervision/options.c,
 *      runtime/job/job_contract.c);
 *   5. its loop in tests/cli/golden.sh and a test cluster (tests/cluster/). */
#ifndef DDPJOB_SCHED_H
#define DDPJOB_SCHED_H

#include <stdbool.h>
#include <stdio.h>

#include "runtime/base/ddp_error.h"
#include "cli/spec/spec.h"
#include "cli/script/template.h"

typedef struct sched_ops {
    sched_kind_t kind;
    const char *name;
    const char *display;       /* its name in messages */
    const char *template_file; /* file name under the template directory */
    const char *script_suffix; /* for the script `submit` writes */
    const char *submit_program;
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
    /* The submitter's arguments (at most two) that hold the job until others have ended as
     * `depend` says, in the words Slurm and PBS share ("afterok:ID:ID,afterany:ID"): appended
     * to extra at *n, their text in buf. */
    void (*after_args)(const char *depend, char *buf, size_t size, char **extra, size_t *n);
    const char *cancel_program; /* ends jobs given by id */
    /* Asks a running job's workers to checkpoint with signal sig (a name such as "USR1"); the
     * job's record is record_dir. 0, or -1 with err set. */
    int (*ask_checkpoint)(const char *job_id, const char *record_dir, const char *sig,
                          ddp_error_t *err);
    /* An array job (a sweep): the directive that starts the line of its range, the variable a
     * task finds its index in, and the variable that names the folder a task's script starts in
     * where the scheduler has one (NULL where a script starts where it was submitted). */
    const char *array_directive, *array_index_var, *task_workdir_var;
    /* The job's mail events in the scheduler's words (the template's mail_events), from
     * whether the spec asks for mail when it fails, completes, is requeued; "" for none. */
    void (*mail_events)(bool failed, bool completed, bool requeued, char *out, size_t size);
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
} sched_ops_t;

const sched_ops_t *sched_get(sched_kind_t kind);

/* A submit from inside a job (a pipeline's next stage, from the stage before it): every
 * scheduler's job_env_prefix variables dropped from this process's environment. */
void sched_leave_job_env(void);

/* Ends the jobs ids[0..n) with the scheduler's cancel program. One that has just ended is no
 * failure: what counts is that all end. 0, or -1 with err set. */
int sched_cancel(const sched_ops_t *ops, char *const *ids, size_t n, ddp_error_t *err);

/* The file `submit` writes a job's script to, in the job directory: the job name (anything but
 * letters, digits and ._- becomes _), a sweep trial's ".tK", and the scheduler's suffix. A
 * requeued PBS job submits it again. */
void sched_script_file(const sched_ops_t *ops, const job_spec_t *spec, char *out, size_t outsize);

/* An array job's task k as the scheduler names it everywhere (squeue -r, sacct, scancel, qstat,
 * qdel): Slurm's ARRAY_K, PBS's ARRAY[K].server from qsub's ARRAY[].server. -1 when array_id
 * has not that shape or out is too small. */
/* The array job of task task_id (ARRAY_K, ARRAY[K].server): ARRAY, ARRAY[].server. -1 when
 * task_id has not that shape or out is too small. */
int sched_array_job_id(sched_kind_t kind, const char *task_id, char *out, size_t outsize);

int sched_array_task_id(sched_kind_t kind, const char *array_id, size_t k, char *out,
                        size_t outsize);

#endif
