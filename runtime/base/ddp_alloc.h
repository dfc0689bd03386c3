/* ddp_alloc: allocation that cannot fail, for the programs' own code (ddpjob, ddpjob-agent),
 * where running out of memory leaves nothing sensible to do: it says so on stderr and exits
 * 1. Library code (libddp, libddp_pg, the training core) keeps returning errors instead. */
#ifndef DDP_ALLOC_H
#define DDP_ALLOC_H

#include <stddef.h>

void *ddp_xcalloc(size_t count, size_t size);
void *ddp_xrealloc(void *p, size_t size);
char *ddp_xstrdup(const char *s);
char *ddp_xstrndup(const char *s, size_t n);

#endif
