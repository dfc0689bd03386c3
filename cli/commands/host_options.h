/* host_options: the options that say which hosts a command reaches over SSH and how, shared by
 * launch, doctor and setup-nodes: --hosts or --hostfile (launch adds --nodefile), the ssh
 * config and known_hosts files, --accept-new-host-keys and --connect-timeout. */
#ifndef DDPJOB_HOST_OPTIONS_H
#define DDPJOB_HOST_OPTIONS_H

#include <getopt.h>

#include "runtime/base/ddp_error.h"
#include "cli/launch/launch_hosts.h"

typedef struct {
    const char *list, *file; /* --hosts, --hostfile */
    int accept_new_keys;
    long connect_s;
    char ssh_config[4096], known_hosts[4096];
} host_options_t;

/* For a command's getopt_long table; host_options_take takes what these return. */
/* clang-format off */
#define HOST_OPTIONS_LONGOPTS                                                                      \
    {"hosts", required_argument, NULL, 'H'}, {"hostfile", required_argument, NULL, 'f'},           \
    {"accept-new-host-keys", no_argument, NULL, 'a'},                                              \
    {"connect-timeout", required_argument, NULL, 't'},                                             \
    {"ssh-config", required_argument, NULL, 'c'}, {"known-hosts", required_argument, NULL, 'k'}
/* clang-format on */

/* The defaults: ~/.ssh/config and ~/.ssh/known_hosts, 30 s to reach each host. */
void host_options_init(host_options_t *h);
/* Takes getopt's `c` with its argument: 1 when it was one of HOST_OPTIONS_LONGOPTS, 0 when it
 * is not, -1 for a bad value (said on stderr for `command`). */
int host_options_take(host_options_t *h, int c, const char *arg, const char *command);
/* The hosts, from whichever of --hosts and --hostfile was given; err says when not exactly one
 * was (`file_options` names the file options the command has). */
int host_options_hosts(const host_options_t *h, const char *file_options, launch_hosts_t *hosts,
                       ddp_error_t *err);

#endif
