/* cluster_login: one SSH login to a cluster the user named in their profiles
 * (cluster_profiles.h), where its profile and ~/.ssh/config say, the host key checked as launch
 * checks it: for `cluster check` and the commands run on a cluster from a laptop (--on). */
#ifndef DDPJOB_CLUSTER_LOGIN_H
#define DDPJOB_CLUSTER_LOGIN_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"
#include "cli/commands/host_options.h"
#include "cli/laptop/cluster_profiles.h"
#include "cli/ssh/ssh_session.h"

/* The profile `name` into *c from the user's clusters file (its path into path): 0; -1 with err
 * code ENOENT when the file names no such cluster, else the file could not be read. */
int cluster_profile_load(const char *name, cluster_profile_t *c, char *path, size_t size,
                         ddp_error_t *err);

/* Logs in to c within ho->connect_s; *t gets where and as whom. NULL with err set. */
ssh_session_t *cluster_login(const cluster_profile_t *c, const host_options_t *ho, ssh_target_t *t,
                             ddp_error_t *err);

#endif
