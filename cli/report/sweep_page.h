/* sweep_page: a sweep as one self-contained HTML page (`ddpjob report SWEEP`, as report_page
 * draws a job): its table of trials as status prints it, and for each metric rank 0 wrote, one
 * chart with a line per trial, so that the trials' curves lie side by side. */
#ifndef DDPJOB_SWEEP_PAGE_H
#define DDPJOB_SWEEP_PAGE_H

#include <stdio.h>

#include "cli/jobs/job_history.h"
#include "cli/view/sweep_view.h"

/* Charts drawn at most, one per metric. */
#define SWEEP_PAGE_METRICS 8

/* histories[k]: trial k's (its metrics; job_history_read), sv->rec.ntrials of them. */
void sweep_page_write(FILE *f, const sweep_view_t *sv, const job_history_t *histories);

#endif
