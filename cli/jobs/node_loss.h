/* node_loss: whether a run's link ended because one of its nodes was lost, told from what its
 * agents left in its record (job_record.h). An agent that fails in any other way reports it
 * (link-K/error-node*.json), so the loss is either named in a report (the first failure an agent
 * lost, or node 0's store gone: that node's host) or the silence of node 0's agent, which began
 * the job (its history file) and then left no report: killed, or its host gone down. */
#ifndef DDPJOB_NODE_LOSS_H
#define DDPJOB_NODE_LOSS_H

#include <stddef.h>

/* 1 with host set when link `link` of the record in `dir` lost a node; node0_host is the host its
 * node 0 ran on. 0 when it did not (or nothing says so). */
int node_loss_find(const char *dir, int link, const char *node0_host, char *host, size_t size);

#endif
