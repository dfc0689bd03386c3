/* sweep_script: a sweep's array job script (Slurm --array, PBS -J). Every trial asks the scheduler
 * for the same (a trial differs in its command, env, name and folders only), so the array takes
 * trial 0's directives, adds its own, and each task runs its trial's own job script, with that
 * trial's record, as if the trial had been submitted alone from its folder: a trial requeues,
 * resumes and records itself exactly as a job does. */
#ifndef DDPJOB_SWEEP_SCRIPT_H
#define DDPJOB_SWEEP_SCRIPT_H

#include <stddef.h>

#include "cli/sched/sched.h"

typedef struct {
    const char *script; /* the trial's job script (an absolute path) */
    const char *record; /* its record's folder; NULL when there is none (render) */
} sweep_trial_script_t;

/* The array script for trials[0..ntrials) (ntrials >= 2), at most `parallel` at once (every one
 * when parallel >= ntrials), from trial 0's rendered script; malloc'd, NULL when out of memory. */
char *sweep_array_script(const sched_ops_t *sched, const char *trial0_text,
                         const sweep_trial_script_t *trials, size_t ntrials, long parallel);

#endif
