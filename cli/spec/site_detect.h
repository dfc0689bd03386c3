/* site_detect: the site profile a spec, or the server a job is submitted to, belongs to when
 * the spec names none. A profile says how it is recognised (its `recognise:` map): its PBS
 * server's names, its queues, spec pbs: fields only it has, path prefixes only it has (Gadi:
 * gadi-pbs; gpuvolta, hugemem; jobfs, storage; /scratch/, /g/data/). Every profile in the
 * folders site_dirs lists is tried, the user's before the installed ones. */
#ifndef DDPJOB_SITE_DETECT_H
#define DDPJOB_SITE_DETECT_H

#include <stddef.h>

#include "cli/spec/site.h"
#include "cli/spec/spec.h"

/* The first profile the spec looks like, with what gave it away in `why` ("queue gpuvolta,
 * pbs.jobfs"); NULL when none. */
site_t *site_detect_spec(const job_spec_t *spec, char *why, size_t size);
/* The profile that names server `server` (the scheduler's server_name) among its own; NULL
 * when none. */
site_t *site_detect_server(const char *server);

#endif
