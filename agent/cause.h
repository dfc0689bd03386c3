/* cause: why a worker failed, beyond what its wait status says.
 *
 * Two findings: the kernel's out-of-memory killer ended it (oom.h), or it failed because
 * another process of the job went first: its last lines of stderr say a peer closed or reset
 * its connection, or a collective timed out waiting for one (gloo, NCCL, PyTorch's store,
 * libddp). Such a failure is a consequence: the job's summary leads with the failure that
 * started it, wherever and whenever that one was seen. */
#ifndef AGENT_CAUSE_H
#define AGENT_CAUSE_H

#include <stddef.h>

typedef enum { CAUSE_OWN, CAUSE_OUT_OF_MEMORY, CAUSE_CONSEQUENCE } failure_cause_t;

/* "own", "out_of_memory", "consequence": the names in the error file and the store. */
const char *cause_name(failure_cause_t c);
/* The cause named so; -1 when none is. */
int cause_from_name(const char *name);
/* Whether a line a worker wrote says a peer of it went away; the phrase it matched into
 * evidence. */
int cause_peer_lost(const char *line, char *evidence, size_t size);

#endif
