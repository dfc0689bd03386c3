/* remote_install: this version of ddpjob on a cluster, in ~/.local/share/ddpjob/VERSION/, so a
 * job submitted from a laptop runs the same ddpjob and agent there. The files come from the
 * installed tree this ddpjob runs from, as its share/ddpjob/SHA256SUMS lists them (meson install
 * and the bundle's install.sh leave it): sent to a folder of their own beside the version's,
 * checked there by their checksums and tried (bin/ddpjob --version), then put in place in one
 * rename. A version that is there and whole is left as it is; one that is not (cut short, changed)
 * is moved aside, never run. */
#ifndef DDPJOB_REMOTE_INSTALL_H
#define DDPJOB_REMOTE_INSTALL_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"
#include "cli/remote/ssh_session.h"
#include "cli/remote/upload.h"

/* Makes sure VERSION is installed from `prefix` (the local tree); *installed is 1 when it was
 * sent now, 0 when it was there already, and sum says what was sent. */
int remote_install(ssh_session_t *s, const char *prefix, const char *version, int64_t deadline,
                   int *installed, transfer_summary_t *sum, ddp_error_t *err);

#endif
