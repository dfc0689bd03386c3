/* launch_hosts: the hosts of a `ddpjob launch`, from --hosts, a hostfile or a node file.
 *
 * `--hosts a:2,b:4,c` names hosts with optional slots (workers); a hostfile has one host per
 * line, as mpirun's `host slots=N` or `host:N` or just `host` (`#` starts a comment); a
 * scheduler's node file (PBS_NODEFILE, Slurm's) repeats a host once per slot. A host named
 * several times is one host whose slots add up (an entry without a count is one slot). Hosts
 * keep first-seen order: the first is node 0, the job's master. */
#ifndef DDPJOB_LAUNCH_HOSTS_H
#define DDPJOB_LAUNCH_HOSTS_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"

typedef struct {
    char *name;
    int slots;       /* workers on this host */
    int slots_given; /* a count was written, or the host repeats: else slots is 1 by default */
} launch_host_t;

typedef struct {
    launch_host_t *hosts;
    size_t count;
} launch_hosts_t;

int launch_hosts_from_list(const char *list, launch_hosts_t *out, ddp_error_t *err);
/* A hostfile (mpirun's forms) or a node file: both read here, line by line. */
int launch_hosts_from_file(const char *path, launch_hosts_t *out, ddp_error_t *err);
void launch_hosts_free(launch_hosts_t *h);

#endif
