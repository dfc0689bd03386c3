/* remote_install: this version of ddpjob on a cluster, in ~/.local/share/ddpjob/VERSION/, so a
 * job submitted from a laptop runs the same ddpjob and agent there. What is sent is the cluster
 * build for the login node's architecture (`uname -m`), whatever the laptop runs: the tree in the
 * local install's lib/ddpjob/cluster/ARCH/ (scripts/build-static.sh: static, for any Linux), as
 * its share/ddpjob/SHA256SUMS lists it. It is sent to a folder of its own beside the version's,
 * checked there by its checksums and tried (bin/ddpjob --version), then put in place in one
 * rename; a try that fails is removed and named. A version that is there and whole is left as it
 * is; one that is not (cut short, changed) is moved aside, never run. */
#ifndef DDPJOB_REMOTE_INSTALL_H
#define DDPJOB_REMOTE_INSTALL_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "cli/ssh/ssh_session.h"
#include "cli/laptop/upload.h"

/* Makes sure VERSION is installed from `prefix` (the local install); *installed is 1 when it was
 * sent now, 0 when it was there already, and sum says what was sent. A cluster whose architecture
 * the local install has no build for is named in err before anything is sent. */
int remote_install(ssh_session_t *s, const char *prefix, const char *version, int64_t deadline,
                   int *installed, transfer_summary_t *sum, ddp_error_t *err);

/* The local install's cluster build for ARCH (what `uname -m` said there, checked here):
 * prefix/lib/ddpjob/cluster/ARCH in tree, or -1 with err naming the architectures it holds
 * builds for and how to get one. */
int remote_install_build_for(const char *prefix, const char *arch, char *tree, size_t size,
                             ddp_error_t *err);

#endif
