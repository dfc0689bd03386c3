#include "cli/ssh/ssh_config.h"

#include <errno.h>
#include <fnmatch.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"

/* An ssh configuration is a few pages: anything near this is not one. */
#define SSH_CONFIG_MAX (1 << 20)

static const char *home_dir(void)
{
    const char *home = getenv("HOME");
    if (home && *home)
        return home;
    struct passwd *pw = getpwuid(getuid());
    return pw ? pw->pw_dir : "/";
}

void ssh_expand_home(const char *path, char *out, size_t size)
{
    if (path[0] == '~' && path[1] == '/')
        snprintf(out, size, "%s%s", home_dir(), path + 1);
    else
        snprintf(out, size, "%s", path);
}

/* A `Host` line's patterns: matches when one pattern does and no `!pattern` does. */
static int host_matches(char *patterns, const char *host)
{
    int hit = 0;
    for (char *save = NULL, *p = strtok_r(patterns, " \t", &save); p;
         p = strtok_r(NULL, " \t", &save)) {
        if (*p == '!') {
            if (fnmatch(p + 1, host, 0) == 0)
                return 0;
        } else if (fnmatch(p, host, 0) == 0) {
            hit = 1;
        }
    }
    return hit;
}

int ssh_config_lookup(const char *config_path, const char *host, ssh_target_t *t, ddp_error_t *err)
{
    *t = (ssh_target_t){.port = 0};
    /* It says which host and key a login uses: as OpenSSH, only a file of the user's own that
     * group and others cannot write is used ("Bad owner or permissions"). */
    size_t len = 0;
    char *text = ddp_read_own_file(config_path, S_IWGRP | S_IWOTH, SSH_CONFIG_MAX, &len, err);
    if (!text && err->code != ENOENT)
        return ddp_error_prefix(err, "ssh configuration");
    FILE *f = text ? fmemopen(text, len, "r") : NULL;
    if (text && !f) {
        free(text);
        return ddp_error_set(err, "out of memory");
    }
    char line[4096];
    int active = 1, line_no = 0; /* lines before any Host block apply to every host */
    int proxy_jump_seen = 0;
    while (f && fgets(line, sizeof line, f)) {
        line_no++;
        line[strcspn(line, "\r\n#")] = '\0';
        char *key = line + strspn(line, " \t");
        size_t key_len = strcspn(key, " \t=");
        if (!key_len)
            continue;
        char *value = key + key_len;
        value += strspn(value, " \t=");
        key[key_len] = '\0';
        size_t value_len = strlen(value);
        while (value_len && (value[value_len - 1] == ' ' || value[value_len - 1] == '\t'))
            value[--value_len] = '\0';
        if (value_len >= 2 && value[0] == '"' && value[value_len - 1] == '"') {
            value[value_len - 1] = '\0';
            value++;
        }
        if (!strcasecmp(key, "Host")) {
            active = host_matches(value, host);
        } else if (!strcasecmp(key, "Match")) {
            active = 0;
        } else if (!active) {
            continue;
        } else if (!strcasecmp(key, "HostName") && !t->hostname[0]) {
            snprintf(t->hostname, sizeof t->hostname, "%s", value);
        } else if (!strcasecmp(key, "User") && !t->user[0]) {
            snprintf(t->user, sizeof t->user, "%s", value);
        } else if (!strcasecmp(key, "Port") && !t->port) {
            long port;
            if (ddp_parse_long(value, 1, 65535, &port)) {
                ddp_error_set(err, "%s:%d: Port %s is not a port number", config_path, line_no,
                              value);
                fclose(f);
                free(text);
                return -1;
            }
            t->port = (int)port;
        } else if (!strcasecmp(key, "ProxyJump") && !proxy_jump_seen) {
            proxy_jump_seen = 1;
            if (strcasecmp(value, "none"))
                snprintf(t->proxy_jump, sizeof t->proxy_jump, "%s", value);
        } else if (!strcasecmp(key, "IdentityFile") && t->nidentities < SSH_MAX_IDENTITIES) {
            ssh_expand_home(value, t->identities[t->nidentities++], sizeof t->identities[0]);
        }
    }
    if (f)
        fclose(f);
    free(text);
    if (!t->hostname[0])
        snprintf(t->hostname, sizeof t->hostname, "%s", host);
    if (!t->port)
        t->port = 22;
    if (!t->user[0]) {
        /* The static build's C library (musl) reads /etc/passwd only: a site's directory users
         * (LDAP, sssd) are found by their login's USER. */
        struct passwd *pw = getpwuid(getuid());
        const char *user = pw ? pw->pw_name : getenv("USER");
        snprintf(t->user, sizeof t->user, "%s", user && *user ? user : "root");
    }
    static const char *const defaults[] = {"~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa"};
    if (!t->nidentities)
        for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
            ssh_expand_home(defaults[i], t->identities[t->nidentities++], sizeof t->identities[0]);
    return 0;
}

int ssh_jump_parse(const char *text, ssh_jump_t *j, ddp_error_t *err)
{
    *j = (ssh_jump_t){.port = 0};
    if (strchr(text, ','))
        return ddp_error_set(err, "\"%s\": a chain of jump hosts: this ddpjob takes one", text);
    char copy[512];
    if (snprintf(copy, sizeof copy, "%s", text) >= (int)sizeof copy)
        return ddp_error_set(err, "too long");
    char *host = copy, *at = strrchr(copy, '@'), *colon;
    if (at) {
        *at = '\0';
        host = at + 1;
        if (!ddp_plain_name(copy, "._-") || strlen(copy) >= sizeof j->user)
            return ddp_error_set(err, "\"%s\": \"%s\" is no user name", text, copy);
        snprintf(j->user, sizeof j->user, "%s", copy);
    }
    if ((colon = strchr(host, ':'))) {
        long port;
        *colon = '\0';
        if (ddp_parse_long(colon + 1, 1, 65535, &port))
            return ddp_error_set(err, "\"%s\": \"%s\" is no port", text, colon + 1);
        j->port = (int)port;
    }
    if (!ddp_plain_name(host, "._-") || strlen(host) >= sizeof j->host)
        return ddp_error_set(err, "\"%s\": \"%s\" is no host name ([user@]host[:port])", text,
                             host);
    snprintf(j->host, sizeof j->host, "%s", host);
    return 0;
}
