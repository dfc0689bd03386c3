/* site_rules: what a site profile says about one spec: every rule of its queue the spec breaks,
 * each with the value that would fix it; what the profile fills in (cpus_per_node from the GPUs,
 * the PBS dialect); warnings (a path the job cannot see without a storage flag, InfiniBand turned
 * off where the site has it); and the most the job can cost. */
#ifndef DDPJOB_SITE_RULES_H
#define DDPJOB_SITE_RULES_H

#include <stddef.h>

#include "cli/spec/diag.h"
#include "cli/spec/site.h"
#include "cli/spec/spec.h"

/* Checks `spec` against `site` and fills what the profile decides. Broken rules go to problems,
 * warnings and notes (what was filled in) to `remarks`, all as FILE:LINE:COL lines. */
void site_rules_apply(const site_t *site, job_spec_t *spec, diag_t *problems, diag_t *remarks);

/* The job's worst-case cost, as NCI documents Gadi's charge (rate x max(CPUs, memory / memory per
 * CPU) x walltime hours), in one line such as "cost: at most 576.00 SU (...)". Returns -1 with
 * the reason in `line` when it cannot be known (no walltime, unknown queue). */
int site_rules_cost(const site_t *site, const job_spec_t *spec, char *line, size_t size);

#endif
