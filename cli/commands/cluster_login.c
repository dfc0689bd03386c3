#include "cli/commands/cluster_login.h"

#include <errno.h>
#include <stdio.h>

#include "runtime/base/ddp_clock.h"

int cluster_profile_load(const char *name, cluster_profile_t *c, char *path, size_t size,
                         ddp_error_t *err)
{
    cluster_profiles_t p;
    cluster_profiles_path(path, size);
    if (cluster_profiles_read(path, &p, err))
        return -1;
    const cluster_profile_t *found = cluster_profiles_find(&p, name);
    if (found) {
        *c = *found;
    } else {
        ddp_error_set(err, "no cluster \"%s\" in %s (ddpjob cluster list)", name, path);
        err->code = ENOENT;
    }
    cluster_profiles_free(&p);
    return found ? 0 : -1;
}

ssh_session_t *cluster_login(const cluster_profile_t *c, const host_options_t *ho, ssh_target_t *t,
                             ddp_error_t *err)
{
    if (ssh_config_lookup(ho->ssh_config, c->host, t, err) || ssh_session_init(err))
        return NULL;
    if (c->user[0])
        snprintf(t->user, sizeof t->user, "%s", c->user);
    if (c->port)
        t->port = c->port;
    if (c->identity[0]) {
        ssh_expand_home(c->identity, t->identities[0], sizeof t->identities[0]);
        t->nidentities = 1;
    }
    int64_t deadline = ddp_deadline_in(ho->connect_s * 1000);
    const char *jump_text = c->proxy_jump[0] ? c->proxy_jump : t->proxy_jump;
    if (!*jump_text)
        return ssh_session_open(c->host, t, ho->known_hosts, ho->accept_new_keys, NULL, deadline,
                                err);
    ssh_jump_t jump;
    ssh_target_t jt;
    if (ssh_jump_parse(jump_text, &jump, err) ||
        ssh_config_lookup(ho->ssh_config, jump.host, &jt, err)) {
        ddp_error_prefix(err, "%s: ProxyJump", c->host);
        return NULL;
    }
    if (jt.proxy_jump[0]) {
        ddp_error_set(err,
                      "%s: ProxyJump %s: its own ProxyJump %s makes a chain: this ddpjob takes "
                      "one jump host",
                      c->host, jump.host, jt.proxy_jump);
        return NULL;
    }
    if (jump.user[0])
        snprintf(jt.user, sizeof jt.user, "%s", jump.user);
    if (jump.port)
        jt.port = jump.port;
    ssh_session_t *via =
        ssh_session_open(jump.host, &jt, ho->known_hosts, ho->accept_new_keys, NULL, deadline, err);
    if (!via) {
        ddp_error_prefix(err, "%s: its jump host", c->host);
        return NULL;
    }
    return ssh_session_open_via(via, c->host, t, ho->known_hosts, ho->accept_new_keys, deadline,
                                err);
}
