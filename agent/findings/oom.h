/* oom: whether the kernel's out-of-memory killer ended a worker.
 *
 * Before an attempt's workers start, the agent reads the count of OOM kills that would include
 * theirs: the memory cgroup it runs in (its workers inherit it), `oom_kill` of cgroup v1's
 * memory.oom_control or v2's memory.events, which counts the processes of that group the killer
 * chose, whatever limit (the group's, an ancestor's, the machine's) was reached; where no memory
 * cgroup can be read, the machine's count (/proc/vmstat `oom_kill`, readable by anyone). A worker
 * that later dies of SIGKILL the agent did not send is an OOM kill when the count has risen;
 * each kill counted explains one worker. */
#ifndef AGENT_OOM_H
#define AGENT_OOM_H

#include <stddef.h>

#define OOM_DIR_MAX 4096

typedef struct {
    char dir[OOM_DIR_MAX];  /* the memory cgroup's folder; "" when none can be read */
    int version;            /* its cgroup version: 1 or 2 */
    char root[OOM_DIR_MAX]; /* the hierarchy's mount point (where the limits stop) */
    long long kills;        /* the count at the start, less the kills explained since; -1 none */
    int by_group;           /* kills counts the group's (else the machine's) */
} oom_watch_t;

/* One OOM kill: what the worker's memory cgroup allowed and used. */
typedef struct {
    int by_group;
    char group[OOM_DIR_MAX]; /* the cgroup's path in its hierarchy ("" without one) */
    long long limit;         /* bytes: the lowest limit of the group and its ancestors; -1 none */
    long long peak;          /* bytes: the group's highest use; -1 unknown */
} oom_kill_t;

/* Reads the count that applies to the calling process's workers. */
void oom_watch_start(oom_watch_t *w);
/* Whether one more OOM kill has been counted since the start (or since the last one this
 * explained): fills k and counts it as explained. */
int oom_explain(oom_watch_t *w, oom_kill_t *k);
/* "killed by the out-of-memory killer: its memory cgroup's limit 64 MiB was reached (/slurm/
 * job_7, peak 64 MiB)", or that the node ran out of memory where no limit applies. */
void oom_describe(const oom_kill_t *k, char *buf, size_t size);

/* The parts, for the unit tests. The memory cgroup's folder from the texts of
 * /proc/PID/cgroup and /proc/PID/mountinfo: the v1 memory controller's, else v2's; its
 * hierarchy's mount point into root; 0, or -1 when neither is mounted. */
int oom_group_dir(const char *cgroup, const char *mountinfo, char *dir, char *root, size_t size,
                  int *version);
/* The number after `key ` on a line of text ("oom_kill 3"); -1 when absent. */
long long oom_counter(const char *text, const char *key);

#endif
