/* render: a validated job spec + a scheduler's template = a job script.
 *
 * The template is a data file: --template FILE, else the scheduler's file in the template
 * directory ($DDPJOB_TEMPLATE_DIR, else share/ddpjob/templates beside the installed binary, else
 * the build tree's copy). Every spec value is shell-quoted here before the template sees it
 * (shquote.h), except `setup`, which is shell code by definition. */
#ifndef DDPJOB_RENDER_H
#define DDPJOB_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include "runtime/base/ddp_error.h"
#include "cli/sched/sched.h"
#include "cli/spec/spec.h"

typedef struct render_opts {
    const sched_ops_t *sched;  /* target scheduler (already resolved, never NULL) */
    const char *template_path; /* NULL: the scheduler's installed template */
    const char *bindir;        /* where ddpjob and ddpjob-agent live on the nodes; NULL: ours */
    bool hold;                 /* `ddpjob dev`: the job holds its nodes for runs (dev_record.h) */
    long long idle_s;          /* ... and is released after this long idle (0: at its walltime) */
    const char *pipeline;      /* the record of the pipeline the job is a stage of: as it ends,
                                  its batch shell has the stages after it started (NULL: none) */
    bool held_run;             /* a run in such a held allocation: its nodes are those its
                                  holder gives it (HELD_NODES_ENV), not all the job's */
    int pack_parallel;         /* with hold, a packed sweep's allocation: its trials, this many
                                  at once at most, then released (0: not one) */
} render_opts_t;

/* Writes the script to out, and a note to `notes` for each spec field the target scheduler
 * leaves out. The spec must have passed validation. */
int render_script(const job_spec_t *spec, const render_opts_t *opts, FILE *out, FILE *notes,
                  ddp_error_t *err);

/* The script of one node without a scheduler (template node.sh), run with bash: the spec's
 * node setup, then the agent running the spec's command. `ddpjob run` executes it here (a
 * standalone agent); `ddpjob launch` on each host over SSH (over_ssh: the token from stdin, the
 * node's facts as positional parameters). */
int render_node_script(const job_spec_t *spec, const char *bindir, bool over_ssh, FILE *out,
                       ddp_error_t *err);

#endif
