/* hostlist: ordered lists of host names, from Slurm hostlist expressions and PBS node files.
 *
 * Slurm writes a job's nodes as an expression (`gpu[01-04,07],login1`, `a[1-2]-b[01-02]`);
 * PBS writes a file with one line per CPU or chunk, so hosts repeat. Both become a ddp_hostlist_t
 * of unique names in first-seen order: the first host is the job's master, a host's index is its
 * node rank. This is our own code so that job scripts and agents never need `scontrol`.
 *
 * A ddp_hostlist_t owns its strings; ddp_hostlist_destroy frees everything and accepts NULL. */
#ifndef DDP_HOSTLIST_H
#define DDP_HOSTLIST_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"

/* Upper bound on the hosts one expression or node file may produce, so that a typo such as
 * `n[1-999999999]` is an error instead of an allocation storm. */
#define HOSTLIST_MAX_HOSTS 1000000

typedef struct {
    char **hosts;
    size_t count;
    /* For node files: the 0-based index of the line where each host first appears (what
     * `pbsdsh -n` takes). For expressions: equal to the host's position. */
    size_t *first_line;
} ddp_hostlist_t;

/* Expands a Slurm hostlist expression. Repeated hosts are kept once, in first-seen order.
 * Zero padding of ranges is kept (`n[08-10]` gives n08 n09 n10). */
ddp_hostlist_t *ddp_hostlist_expand(const char *expr, ddp_error_t *err);

/* Reads a PBS node file: one host per line (surrounding blanks ignored, blank lines skipped). */
ddp_hostlist_t *ddp_hostlist_from_nodefile(const char *path, ddp_error_t *err);

/* Same as ddp_hostlist_from_nodefile, from text in memory; `origin` names it in errors. */
ddp_hostlist_t *ddp_hostlist_from_nodefile_text(const char *text, const char *origin,
                                                ddp_error_t *err);

/* The reverse of ddp_hostlist_expand: a compact expression for the list (`n[1,3-5],login`).
 * Hosts are grouped by their prefix before the trailing digits and by zero padding; groups keep
 * first-seen order. Returns a malloc'd string, or NULL on allocation failure. */
char *ddp_hostlist_compress(const ddp_hostlist_t *hl);

/* Position of `host` in the list, matching a short name against a fully qualified one in either
 * direction (`gpu1` matches `gpu1.cluster`); -1 when absent. */
long ddp_hostlist_find(const ddp_hostlist_t *hl, const char *host);

void ddp_hostlist_destroy(ddp_hostlist_t *hl);

#endif
