#include "cli/commands/host_options.h"

#include <stdio.h>

#include "runtime/base/ddp_parse.h"
#include "cli/ssh/ssh_config.h"

void host_options_init(host_options_t *h)
{
    *h = (host_options_t){.connect_s = 30};
    ssh_expand_home("~/.ssh/config", h->ssh_config, sizeof h->ssh_config);
    ssh_expand_home("~/.ssh/known_hosts", h->known_hosts, sizeof h->known_hosts);
}

int host_options_take(host_options_t *h, int c, const char *arg, const char *command)
{
    switch (c) {
    case 'H':
        h->list = arg;
        return 1;
    case 'f':
        h->file = arg;
        return 1;
    case 'a':
        h->accept_new_keys = 1;
        return 1;
    case 't':
        if (ddp_parse_long(arg, 1, 3600, &h->connect_s) == 0)
            return 1;
        fprintf(stderr, "ddpjob %s: --connect-timeout: invalid value \"%s\" (1 to 3600)\n", command,
                arg);
        return -1;
    case 'c':
        snprintf(h->ssh_config, sizeof h->ssh_config, "%s", arg);
        return 1;
    case 'k':
        snprintf(h->known_hosts, sizeof h->known_hosts, "%s", arg);
        return 1;
    default:
        return 0;
    }
}

int host_options_hosts(const host_options_t *h, const char *file_options, launch_hosts_t *hosts,
                       ddp_error_t *err)
{
    if (!h->list == !h->file)
        return ddp_error_set(err, "give one of --hosts, %s", file_options);
    return h->list ? launch_hosts_from_list(h->list, hosts, err)
                   : launch_hosts_from_file(h->file, hosts, err);
}
