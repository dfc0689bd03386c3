/* setup-nodes: what the cloud guides' setup_nodes.sh does before `mpirun -H`, safely. For each
 * host: does this head log in with a key, no password? With --install-key, a host that does not
 * is logged in to once (a password, asked for or in DDPJOB_SSH_PASSWORD, or --login-identity),
 * the head's public key is appended to the host's ~/.ssh/authorized_keys, and the key login is
 * tried again. Host keys are checked as launch checks them: this never turns that off. Prints
 * what it found and what it changed; exits 0 when every host takes the key login. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands/commands.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"
#include "cli/commands/host_options.h"
#include "cli/launch/launch_hosts.h"
#include "cli/spec/shquote.h"
#include "cli/ssh/remote_command.h"
#include "cli/ssh/ssh_config.h"
#include "cli/ssh/ssh_session.h"

static const char setup_help[] =
    "usage: ddpjob setup-nodes (--hosts H,... | --hostfile FILE) [--install-key]\n"
    "       [--login-identity FILE] [--accept-new-host-keys] [OPTIONS]\n"
    "Checks that this head logs in to every host with a key, no password (list the head too if\n"
    "it is one of the nodes). With --install-key, a host that does not gets the head's public key\n"
    "(the first of ~/.ssh/id_ed25519.pub, id_ecdsa.pub, id_rsa.pub, or IdentityFile's) in its\n"
    "~/.ssh/authorized_keys, logging in once with a password (DDPJOB_SSH_PASSWORD, else asked)\n"
    "or --login-identity FILE; then the key login is checked again. Host keys are checked\n"
    "against known_hosts as for launch (--accept-new-host-keys adds unknown ones, never a\n"
    "changed one). Prints what it changed. Exit: 0 every host takes the key login, 1 not.\n"
    "  --connect-timeout S     per host (default 30)\n"
    "  --ssh-config FILE       default ~/.ssh/config\n"
    "  --known-hosts FILE      default ~/.ssh/known_hosts\n";

enum { EXIT_NOT_READY = 1 };

/* The head's public key: the first identity with a .pub beside it. */
static char *public_key(const ssh_target_t *t, char *path, size_t size, ddp_error_t *err)
{
    for (int i = 0; i < t->nidentities; i++) {
        snprintf(path, size, "%s.pub", t->identities[i]);
        if (access(path, R_OK) == 0) {
            char *key = ddp_read_file(path, NULL, err);
            if (key)
                key[strcspn(key, "\r\n")] = '\0';
            return key;
        }
    }
    ddp_error_set(err,
                  "no public key to install (%s.pub, ...): make one with ssh-keygen -t ed25519",
                  t->identities[0]);
    return NULL;
}

/* Appends `key` to the host's ~/.ssh/authorized_keys unless it is there; *added says which. */
static int install_key(ssh_session_t *s, const char *key, int *added, int64_t deadline,
                       ddp_error_t *err)
{
    char *q = shquote(key), *command = NULL;
    if (!q || asprintf(&command,
                       "umask 077 && mkdir -p ~/.ssh && touch ~/.ssh/authorized_keys && "
                       "if grep -qxF -- %s ~/.ssh/authorized_keys; then echo present; "
                       "else printf '%%s\\n' %s >>~/.ssh/authorized_keys && echo added; fi",
                       q, q) < 0) {
        free(q);
        return ddp_error_set(err, "out of memory");
    }
    free(q);
    remote_result_t *reply = malloc(sizeof *reply);
    int rc = reply ? remote_command_run(s, command, "", 0, deadline, reply, err)
                   : ddp_error_set(err, "out of memory");
    free(command);
    if (!rc && reply->status != 0)
        rc = ddp_error_set(err, "writing ~/.ssh/authorized_keys there failed (exit %d)",
                           reply->status);
    if (!rc)
        *added = !strncmp(reply->out, "added", 5);
    free(reply);
    return rc;
}

/* The one-time login for --install-key: a password, or the --login-identity key. */
static ssh_session_t *login_once(const char *alias, const ssh_target_t *t, const host_options_t *ho,
                                 const char *login_identity, int64_t deadline, ddp_error_t *err)
{
    if (login_identity) {
        ssh_target_t with = *t;
        snprintf(with.identities[0], sizeof with.identities[0], "%s", login_identity);
        with.nidentities = 1;
        return ssh_session_open(alias, &with, ho->known_hosts, ho->accept_new_keys, NULL, deadline,
                                err);
    }
    const char *password = getenv("DDPJOB_SSH_PASSWORD");
    char prompt[512];
    if (!password && isatty(STDIN_FILENO)) {
        snprintf(prompt, sizeof prompt, "%s@%s's password (once, to install the key): ", t->user,
                 alias);
        password = getpass(prompt);
    }
    if (!password) {
        ddp_error_set(err,
                      "%s: a password is needed to install the key: DDPJOB_SSH_PASSWORD, a "
                      "terminal to ask on, or --login-identity FILE",
                      alias);
        return NULL;
    }
    return ssh_session_open(alias, t, ho->known_hosts, ho->accept_new_keys, password, deadline,
                            err);
}

/* One host: whether a key login works, and with `install` the key put in place where the login
 * was refused. Says what it found; returns 1 when a key login works. */
static int set_up_host(const char *alias, const host_options_t *ho, int install,
                       const char *login_identity)
{
    ddp_error_t err;
    ssh_target_t t;
    char key_path[1100];
    if (ssh_config_lookup(ho->ssh_config, alias, &t, &err)) {
        printf("%s: %s\n", alias, err.msg);
        return 0;
    }
    int64_t deadline = ddp_deadline_in(ho->connect_s * 1000);
    ssh_session_t *s =
        ssh_session_open(alias, &t, ho->known_hosts, ho->accept_new_keys, NULL, deadline, &err);
    if (s) {
        printf("%s: key login works (%s@%s:%d); nothing changed\n", alias, t.user, t.hostname,
               t.port);
        ssh_session_close(s);
        return 1;
    }
    printf("%s: no key login: %s\n", alias, err.msg);
    /* Only a refused login is a matter of keys: not a host that is not itself, or not there. */
    if (!install || err.code != EACCES)
        return 0;
    int ready = 0, added = 0;
    char *key = public_key(&t, key_path, sizeof key_path, &err);
    s = key ? login_once(alias, &t, ho, login_identity, deadline, &err) : NULL;
    if (!s || install_key(s, key, &added, deadline, &err)) {
        printf("%s: the key was not installed: %s\n", alias, err.msg);
    } else {
        printf("%s: %s %s in ~/.ssh/authorized_keys\n", alias,
               added ? "added" : "found (already there)", key_path);
        ssh_session_close(s);
        s = ssh_session_open(alias, &t, ho->known_hosts, ho->accept_new_keys, NULL,
                             ddp_deadline_in(ho->connect_s * 1000), &err);
        if (s) {
            printf("%s: key login works now\n", alias);
            ready = 1;
        } else {
            printf("%s: key login still refused: %s (the host's sshd may not read "
                   "~/.ssh/authorized_keys, or refuses keys)\n",
                   alias, err.msg);
        }
    }
    ssh_session_close(s);
    free(key);
    return ready;
}

int cmd_setup_nodes(int argc, char **argv)
{
    static const struct option opts[] = {HOST_OPTIONS_LONGOPTS,
                                         {"install-key", no_argument, NULL, 'i'},
                                         {"login-identity", required_argument, NULL, 'l'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    host_options_t ho;
    host_options_init(&ho);
    const char *login_identity = NULL;
    int install = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int taken = host_options_take(&ho, c, optarg, "setup-nodes");
        if (taken < 0)
            return EXIT_USAGE;
        if (taken)
            continue;
        switch (c) {
        case 'h':
            fputs(setup_help, stdout);
            return EXIT_OK;
        case 'i':
            install = 1;
            break;
        case 'l':
            login_identity = optarg;
            break;
        default:
            fputs(setup_help, stderr);
            return EXIT_USAGE;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "ddpjob setup-nodes: unexpected argument \"%s\"\n%s", argv[optind],
                setup_help);
        return EXIT_USAGE;
    }
    ddp_error_t err;
    launch_hosts_t hosts;
    if (host_options_hosts(&ho, "--hostfile", &hosts, &err)) {
        fprintf(stderr, "ddpjob setup-nodes: %s\n", err.msg);
        return EXIT_USAGE;
    }
    if (ssh_session_init(&err)) {
        fprintf(stderr, "ddpjob setup-nodes: %s\n", err.msg);
        launch_hosts_free(&hosts);
        return EXIT_USAGE;
    }
    int ready = 0;
    for (size_t i = 0; i < hosts.count; i++)
        ready += set_up_host(hosts.hosts[i].name, &ho, install, login_identity);
    printf("setup-nodes: %d of %zu host(s) take a key login from this head\n", ready, hosts.count);
    int all_ready = ready == (int)hosts.count;
    launch_hosts_free(&hosts);
    return all_ready ? EXIT_OK : EXIT_NOT_READY;
}
