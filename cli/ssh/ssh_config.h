/* ssh_config: where and as whom to reach a host, as the user's ~/.ssh/config says.
 *
 * libssh2 reads no configuration, so the simple keys users rely on are read here: HostName,
 * Port, User, IdentityFile and ProxyJump (one jump host; "none" for none), in `Host` blocks
 * (patterns with * and ?, `!` to exclude; the first value found for a key wins, IdentityFile adds
 * up, as in OpenSSH). `Match` blocks are skipped. Without a file or a matching block: the host
 * itself, port 22, the current user, and the default identities (~/.ssh/id_ed25519, id_ecdsa,
 * id_rsa). */
#ifndef DDPJOB_SSH_CONFIG_H
#define DDPJOB_SSH_CONFIG_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"

#define SSH_MAX_IDENTITIES 8

typedef struct {
    char hostname[256];
    int port;
    char user[128];
    char identities[SSH_MAX_IDENTITIES][1024];
    int nidentities;
    char proxy_jump[512]; /* "": reached directly */
} ssh_target_t;

/* A jump host as ProxyJump and a profile's proxy_jump write it: [user@]host[:port]. */
typedef struct {
    char user[128]; /* "": the jump host's own ~/.ssh/config User, else the local user */
    char host[256];
    int port; /* 0: its ~/.ssh/config Port, else 22 */
} ssh_jump_t;

/* Reads `text` into *j; a chain (a,b), a URI or a value that could be taken for an option is
 * refused, err saying why. */
int ssh_jump_parse(const char *text, ssh_jump_t *j, ddp_error_t *err);

/* `path` with a leading ~/ made the user's home ($HOME, else the password entry's). */
void ssh_expand_home(const char *path, char *out, size_t size);

/* Fills *t for `host` from config_path (a missing file is no error). */
int ssh_config_lookup(const char *config_path, const char *host, ssh_target_t *t, ddp_error_t *err);

#endif
