/* cluster_profiles: the clusters a user submits to from a laptop, by name, in
 * ~/.config/ddpjob/clusters.yaml ($XDG_CONFIG_HOME/ddpjob/clusters.yaml):
 *
 *   gadi:
 *     host: gadi.nci.org.au      # an ~/.ssh/config alias works too
 *     user: ab1234               # else ~/.ssh/config's User, else the local user
 *     port: 22                   # else ~/.ssh/config's Port
 *     identity: ~/.ssh/id_ed25519  # else ssh-agent, else ~/.ssh/config's IdentityFile
 *     proxy_jump: bastion.example.org  # [user@]host[:port]; else ~/.ssh/config's ProxyJump
 *     remote_dir: /scratch/xy1/ab1234/ddpjob
 *     remote_share: private      # or group: remote_dir is the team's (setgid, sticky)
 *     site: gadi
 *
 * The file decides where the user's code and jobs go, so it is read only when it is the user's
 * own, a regular file (no link) that group and others cannot write; it is written whole
 * (atomically, mode 0600). Every value is checked before it reaches a command: names of
 * letters, digits, '.', '_' and '-'; no value that could be taken for an option; paths without
 * control characters. */
#ifndef DDPJOB_CLUSTER_PROFILES_H
#define DDPJOB_CLUSTER_PROFILES_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"

typedef struct {
    char name[64];
    char host[256];
    char user[128];       /* "": ~/.ssh/config's, else the local user */
    int port;             /* 0: ~/.ssh/config's, else 22 */
    char identity[1024];  /* "": ssh-agent, then ~/.ssh/config's IdentityFile */
    char proxy_jump[512]; /* "": ~/.ssh/config's ProxyJump, if any (ssh_jump_parse's form) */
    char remote_dir[1024];
    char remote_share[16]; /* "" or "private": the jobs' folders there are the user's alone;
                            * "group": remote_dir is the team's, and they are the group's to read */
    char site[64];         /* "": none named */
} cluster_profile_t;

typedef struct {
    cluster_profile_t *items;
    size_t count;
} cluster_profiles_t;

/* Where the file is: $XDG_CONFIG_HOME/ddpjob/clusters.yaml, else ~/.config/ddpjob/... */
void cluster_profiles_path(char *out, size_t size);

/* Reads `path` into *p; a missing file is no profile and no error. Errors name the file, the
 * line and the field. */
int cluster_profiles_read(const char *path, cluster_profiles_t *p, ddp_error_t *err);

/* Writes *p to `path` whole (its folder made private where missing). */
int cluster_profiles_write(const char *path, const cluster_profiles_t *p, ddp_error_t *err);

/* The profile named `name`, or NULL. */
cluster_profile_t *cluster_profiles_find(const cluster_profiles_t *p, const char *name);

/* Whether c's values may be used (reach ssh and the remote shell); err names the field. */
int cluster_profile_valid(const cluster_profile_t *c, ddp_error_t *err);

/* Whether c's folders there are the team's to read (remote_share: group). */
int cluster_profile_shared(const cluster_profile_t *c);

/* Adds c, or replaces the profile of its name. */
int cluster_profiles_put(cluster_profiles_t *p, const cluster_profile_t *c, ddp_error_t *err);

void cluster_profiles_free(cluster_profiles_t *p);

#endif
