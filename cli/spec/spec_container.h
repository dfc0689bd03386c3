/* spec_container: the checks of a spec's container: block that need more than its own fields:
 * its runtime's default (the site profile's, else the scheduler's: pyxis under Slurm, else
 * apptainer; outside a scheduler enroot where that would be pyxis), where each
 * runtime can run, the image's path and kind, and each mount's SRC[:DST[:ro]] form, as the agent
 * reads them (runtime/job/container_spec.h). */
#ifndef DDPJOB_SPEC_CONTAINER_H
#define DDPJOB_SPEC_CONTAINER_H

#include <stdbool.h>

#include "cli/spec/diag.h"
#include "cli/spec/spec.h"

/* What the job's scheduler gives a container, from its row (cli/sched/sched.h): the runtime a spec
 * that names none gets, whether its launcher starts the agents inside an image (srun's pyxis),
 * and its name for messages (NULL: none, as for `ddpjob run`). */
typedef struct {
    const char *runtime;
    bool agent_inside;
    const char *name;
} container_sched_t;

/* Fills spec->container.runtime when the spec names none (site_default, NULL: none; else the
 * scheduler's) and reports what is wrong into diag, a default it had to change into remarks.
 * local_run: `ddpjob run` or `launch`, outside any scheduler. */
void spec_container_settle(job_spec_t *spec, const char *site_default,
                           const container_sched_t *sched, bool local_run, diag_t *diag,
                           diag_t *remarks);

#endif
