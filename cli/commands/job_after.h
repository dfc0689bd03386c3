/* job_after: a job that waits for others (`submit --after JOB[:ok|any|notok]`, the spec's
 * `after:`). Each JOB is found as status finds it (a record's folder, a scheduler id, a job's
 * name, or a sweep's), on the scheduler the new job goes to; what it asks becomes one
 * dependency in the words Slurm and PBS share (afterok:ID:ID,afterany:ID), which the
 * scheduler's after_args turns into its submitter's arguments. A JOB that has already ended as
 * asked holds nothing back; one that ended otherwise refuses the submission, since the new job
 * could never start. */
#ifndef DDPJOB_JOB_AFTER_H
#define DDPJOB_JOB_AFTER_H

#include <stddef.h>

#include "cli/sched/sched.h"
#include "cli/spec/spec.h"
#include "runtime/base/ddp_error.h"

/* Into depend (size bytes): the dependency for the spec's after: and the command line's
 * `--after` words (JOB[:ok|any|notok], ok when none is said) together; "" when nothing is left
 * to wait for. 0, or -1 with err naming the JOB and why. */
int job_after_dependency(const job_spec_t *spec, const sched_ops_t *ops, char *const *words,
                         size_t nwords, char *depend, size_t size, ddp_error_t *err);

#endif
