#include "cli/sched/sched_slurm.h"

#include <string.h>

/* Slurm's reasons (squeue %r) that need no more than the job's own figures; {id}, {name} and
 * {partition} are filled in. Resources, Priority and the partition limits are said apart. */
static const struct {
    const char *reason, *words;
} slurm_words[] = {
    {"Dependency", "waiting for the job it depends on to end (the earlier link of a requeue "
                   "chain, a sweep's lane, or a dependency you gave)"},
    {"DependencyNeverSatisfied", "its dependency can never be met (the job it waits for ended in "
                                 "a way it does not accept): `ddpjob cancel {name}`"},
    {"JobHeldUser", "held by you: `scontrol release {id}` lets it start"},
    {"JobHeldAdmin", "held by an administrator: ask them to release it"},
    {"BeginTime", "not to start before its begin time (Slurm holds a requeued job for about 2 "
                  "minutes)"},
    {"Reservation", "waiting for its reservation to start"},
    {"PartitionDown", "partition {partition} is down: ask the administrators, or submit to "
                      "another partition"},
    {"PartitionInactive", "partition {partition} is inactive: ask the administrators, or submit "
                          "to another partition"},
    {"NodeDown", "a node it needs is down: ask the administrators"},
    {"BadConstraints", "no node of partition {partition} has what it asks for (features, GPUs, "
                       "memory): `ddpjob cancel {name}`, fix the spec and submit again"},
    {"JobArrayTaskLimit", "its array already runs as many tasks at once as it allows (the "
                          "sweep's parallel:)"},
    {"Licenses", "waiting for licenses"},
    {"InvalidAccount", "Slurm refuses its account: `ddpjob cancel {name}` and fix the spec's "
                       "account:"},
    {"InvalidQOS", "Slurm refuses its QOS: `ddpjob cancel {name}` and fix the spec's qos:"},
    {"launch failed requeued held", "held after its launch failed on a node: `scontrol release "
                                    "{id}` once the node is fixed"},
    {"Cleaning", "waiting for the nodes of its last run to be cleaned up"},
    {"PartitionTimeLimit", "its walltime is over partition {partition}'s limit (`sinfo -p "
                           "{partition} -o %l` shows it): it will not start unless the limit "
                           "is raised; `ddpjob cancel {name}`, lower walltime: and submit again"},
    {"PartitionNodeLimit", "it asks for more nodes than partition {partition} allows or has "
                           "(`sinfo -p {partition}`): it will not start; `ddpjob cancel {name}`, "
                           "lower nodes: and submit again"},
};

void sched_slurm_explain_pending(pending_text_t *t, const sched_job_t *j, const char *id,
                                 const char *name)
{
    const char *part = j->partition[0] ? j->partition : "?";
    if (!strcmp(j->reason, "Resources")) {
        pending_put(t, "waiting for %d free node%s in partition %s", j->nodes_asked,
                    pending_plural(j->nodes_asked), part);
        pending_put_running(t, j);
        return;
    }
    if (!strcmp(j->reason, "Priority")) {
        pending_put(t, "waiting behind jobs of higher priority in partition %s", part);
        pending_put_running(t, j);
        return;
    }
    if (!strncmp(j->reason, "ReqNodeNotAvail", 15)) {
        pending_put(t,
                    "nodes it needs are down, drained or reserved (%s): ask the administrators, or "
                    "`ddpjob cancel %s` and submit without naming them",
                    j->reason, name);
        return;
    }
    if (!strncmp(j->reason, "QOS", 3) || !strncmp(j->reason, "Assoc", 5)) {
        pending_put(
            t,
            "held back by a limit of your QOS or account (%s): it starts as your other jobs "
            "end; `sacctmgr show assoc user=$USER` and `sacctmgr show qos` show the limits",
            j->reason);
        return;
    }
    for (size_t k = 0; k < sizeof slurm_words / sizeof *slurm_words; k++)
        if (!strcmp(j->reason, slurm_words[k].reason)) {
            pending_put_filled(t, slurm_words[k].words, j, id, name);
            return;
        }
    pending_put(t, "Slurm's reason: %s", j->reason);
}

bool sched_slurm_starts_by_itself(const sched_job_t *j)
{
    static const char *const waits[] = {"Resources", "Priority",    "Dependency",
                                        "BeginTime", "Reservation", "JobArrayTaskLimit",
                                        "Licenses",  "Cleaning"};
    for (size_t k = 0; k < sizeof waits / sizeof *waits; k++)
        if (!strcmp(j->reason, waits[k]))
            return 1;
    return !strncmp(j->reason, "QOS", 3) || !strncmp(j->reason, "Assoc", 5);
}
