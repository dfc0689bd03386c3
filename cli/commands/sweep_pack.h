/* sweep_pack: a sweep's trials run inside held allocations (sweep: {pack: {nodes: N,
 * allocations: K}}, submit --pack N): each allocation a record of the sweep's, pack-J, held as
 * `ddpjob dev` holds one (dev_record.h), its holder running the trials asked of it on the nodes
 * each asks, several at once where they fit, and letting the nodes go once none is left. Each
 * trial keeps a record of its own (trial-K), a run of its allocation (held_in). */
#ifndef DDPJOB_SWEEP_PACK_H
#define DDPJOB_SWEEP_PACK_H

#include <stddef.h>

#include "cli/commands/submit_steps.h"

typedef struct {
    job_spec_t *spec;        /* trial 0's: the allocations' resources (changed and put back) */
    const render_opts_t *ro; /* how the trials were rendered */
    const sched_ops_t *ops;
    const char *sweep_dir; /* the sweep's record (NULL when dry) */
    const char *jobdir;    /* where the allocations are submitted from */
    char *const *trials;   /* [t]: trial t's record, a run of allocation t mod nalloc */
    const long *nodes;     /* [t]: the nodes trial t takes */
    size_t ntrials, nalloc;
    long requeue;      /* the trials' requeue: the allocations' own, whose next links go on with the
                          trials left at their walltime (the trials' runs take none) */
    size_t first;      /* the first allocation's number less 1 (pack-(first+1)) */
    const char *after; /* what the allocations wait for (job_after.h); "" nothing */
    const job_output_t *output;
    int dry_run;
} sweep_pack_t;

/* Allocation j's record: SWEEP/pack-(j+1). */
void sweep_pack_dir(const char *sweep_dir, size_t j, char *out, size_t size);
/* The lowest j whose allocation record SWEEP/pack-(j+1) is not there yet. */
size_t sweep_pack_next(const char *sweep_dir);
/* How many allocations a packed sweep of ntrials holds at once: pack.allocations, no more than
 * its trials nor than `parallel`. */
size_t sweep_pack_count(const job_spec_t *spec, size_t ntrials);
/* Each allocation's record made, its trials asked of it, and it submitted (shown when dry), its
 * id into ids[j] and into its trials' records; EXIT_OK, or the exit code with the problem said
 * and the allocations already submitted cancelled. */
int sweep_pack_submit(const sweep_pack_t *p, char (*ids)[128]);
/* --retry-failed: one allocation more, pack-(first+1), as the one whose record is `like` (its
 * script and resources), for p's trials (renewed, their held_in it); its id into id. */
int sweep_pack_resubmit(const sweep_pack_t *p, const char *like, char *id, size_t size);

#endif
