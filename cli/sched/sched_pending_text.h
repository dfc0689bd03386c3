/* sched_pending_text: the pieces each scheduler's pending words (sched.h's explain_pending) are
 * written with: text appended to a bounded buffer, words with the job's {id}, {name} and
 * {partition} filled in, plurals, and the running jobs of its partition. */
#ifndef DDPJOB_SCHED_PENDING_TEXT_H
#define DDPJOB_SCHED_PENDING_TEXT_H

#include <stddef.h>

#include "cli/sched/sched_job.h"

typedef struct {
    char *p;
    size_t left;
} pending_text_t;

void pending_put(pending_text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* words with {id}, {name} and {partition} filled in. */
void pending_put_filled(pending_text_t *t, const char *words, const sched_job_t *j, const char *id,
                        const char *name);

/* "s" unless n is 1. */
const char *pending_plural(int n);

/* " (3 running jobs hold 4 nodes)" where the scheduler was asked; nothing else. */
void pending_put_running(pending_text_t *t, const sched_job_t *j);

#endif
