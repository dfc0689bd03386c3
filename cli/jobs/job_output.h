/* job_output: where the scheduler writes a job's own output file (Slurm's NAME-JOBID.out, PBS's
 * NAME.oSEQ). The scheduler opens it by name, as the user, following links: in a folder others
 * can change (a team's workdir, with every member of the project group able to rename and plant)
 * a member could put a link there and have the user's own files written over. So the file goes
 * where the user expects it (the workdir, a sweep's record) only when nobody else can rename or
 * replace anything on the way there; else into the user's own
 * ${XDG_STATE_HOME:-~/.local/state}/ddpjob/output, which must pass the same check. */
#ifndef DDPJOB_JOB_OUTPUT_H
#define DDPJOB_JOB_OUTPUT_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"

/* A PBS job's moved output folder, as its requeued successor's qsub -o takes it (templates/pbs.sh).
 */
#define JOB_OUTPUT_ENV "DDPJOB_OUTPUT"

typedef struct {
    char dir[4096]; /* where the scheduler writes the output file */
    int moved;      /* 1: not in the folder asked for, which others could change */
    char why[1024]; /* when moved: why the folder asked for was left */
} job_output_t;

/* The place for a job's output file that belongs in `wanted`. -1 with err when neither wanted nor
 * the user's output folder is closed to others, or that folder's path holds a character the
 * schedulers' options cannot carry (Slurm's % patterns, qsub -v's commas and quotes). */
int job_output_place(const char *wanted, job_output_t *out, ddp_error_t *err);

/* When moved: a line on stderr saying where the output goes and why, and the folder kept in the
 * record (its file output-dir) for status. */
void job_output_tell(const char *record, const job_output_t *out);

/* The folder a record's job writes its output file into when it was moved (malloc'd), else NULL. */
char *job_output_moved(const char *record);

#endif
