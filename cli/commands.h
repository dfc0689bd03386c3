/* commands: the ddpjob subcommands and the exit codes they share (documented in ddpjob(1)). */
#ifndef DDPJOB_COMMANDS_H
#define DDPJOB_COMMANDS_H

#include <stdbool.h>

#include "spec.h"

enum {
    EXIT_OK = 0,
    EXIT_INVALID_SPEC = 1, /* the spec has problems; each was printed as FILE:LINE:COL */
    EXIT_USAGE = 2,        /* bad command line */
    EXIT_SYSTEM = 3,       /* a file could not be read or written, a template is broken */
    EXIT_SUBMITTER = 4,    /* qsub/sbatch missing, failed, or printed no job id */
};

/* Loads and validates a spec for its target scheduler (the override, else the spec's; none is
 * needed for a local run). Prints every problem; returns NULL with *exit_code set when the spec
 * cannot be used. */
job_spec_t *load_for_scheduler(const char *path, sched_kind_t override, sched_kind_t *target,
                               bool scheduler_needed, int *exit_code);

int cmd_validate(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_submit(int argc, char **argv);
int cmd_nodes(int argc, char **argv);
int cmd_run(int argc, char **argv);

#endif
