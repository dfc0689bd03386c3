/* report_page: one job as one self-contained HTML page (`ddpjob report`): inline CSS and SVG, no
 * script, nothing fetched, so it opens offline from a cluster's file browser or after scp. It
 * draws the chain of links on a time axis (queued, running, how each ended, the walltime signals,
 * restarts and spare swaps), the attempts with their causes, every rank's steps over time (a line
 * per rank up to REPORT_RANK_LINES ranks; beyond, the spread of all and a line per rank named
 * slow, stalled or failed), busy time per step as a heat strip of ranks over time (a straggler
 * is a dark row at 1,024 ranks), throughput, rank 0's metrics, and the failure in words. */
#ifndef DDPJOB_REPORT_PAGE_H
#define DDPJOB_REPORT_PAGE_H

#include <stdio.h>

#include "cli/jobs/job_history.h"
#include "cli/view/job_view.h"

#define REPORT_RANK_LINES 64

void report_page_write(FILE *f, const job_view_t *v, const job_history_t *h);

#endif
