/* shell: a terminal (or a command) on a node of an allocation `ddpjob dev` holds, in the job's
 * environment (the batch shell's, and the spec's node setup: modules, setup, env, workdir); and
 * `ddpjob dev DEV --port P[:K]`, a port of node K forwarded here. Each asks the allocation's
 * holder through its record (dev_record.h); the holder starts the node's side (dev-shell-serve)
 * on that node as its scheduler starts a task there, and the two meet over TCP with a token
 * only the record's owner can read (node_relay.h). */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands/commands.h"
#include "cli/jobs/dev_record.h"
#include "cli/launch/node_relay.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_parse.h"

/* How long a shell waits for its node's side to say where it listens. */
#define SHELL_START_MS 60000
/* How long the node's side waits for its client. */
#define SHELL_ACCEPT_MS 60000
/* The largest command a shell carries. */
#define SHELL_ARGV_MAX 65536
/* The largest node-env, and how the shell's bash is handed it. */
#define NODE_ENV_MAX (1 << 20)
#define NODE_ENV_VAR "DDPJOB_NODE_ENV"

static const char shell_help[] =
    "usage: ddpjob shell DEV [--node K] [--wait[=D]] [-- COMMAND [ARGS...]]\n"
    "A terminal on node K (default 0) of the allocation `ddpjob dev` holds (DEV: its name or\n"
    "job id), in the job's environment: the spec's modules, setup, env and workdir, inside its\n"
    "container's image where it has one. A real terminal (line editing, Ctrl-C to the program\n"
    "inside, the window's size); with COMMAND, that command alone. `exit` leaves the allocation\n"
    "held; while a shell is open it is not idle.\n"
    "With --on NAME (or where `ddpjob dev --on` held DEV), from this laptop, through its login.\n"
    "--wait[=D] waits for a queued allocation's nodes (default 60m); without it, one is refused.\n"
    "Exit: the shell's or COMMAND's status; 1 when DEV holds nothing now, 2 usage, 3 the node's\n"
    "side could not start.\n";

/* The session's request: token, node, command (NUL-separated), the port it forwards (0: none),
 * then `asked`. */
static int ask_shell(const char *session, const char *token, int node, char **cmd, int ncmd,
                     int port, ddp_error_t *err)
{
    char path[8400], text[32], port_text[32];
    size_t len = 0;
    for (int i = 0; i < ncmd; i++)
        len += strlen(cmd[i]) + 1;
    if (len > SHELL_ARGV_MAX)
        return ddp_error_set(err, "the command is longer than %d bytes", SHELL_ARGV_MAX);
    char *words = malloc(len + 1), *at = words;
    if (!words)
        return ddp_error_set(err, "out of memory");
    for (int i = 0; i < ncmd; i++)
        at += strlen(strcpy(at, cmd[i])) + 1;
    int n = snprintf(text, sizeof text, "%d\n", node);
    int np = snprintf(port_text, sizeof port_text, "%d\n", port);
    int rc = 0;
    const struct {
        const char *name;
        const char *data;
        size_t len;
    } files[] = {{"token", token, strlen(token)},
                 {"node", text, (size_t)n},
                 {"argv", words, len},
                 {"port", port_text, (size_t)np},
                 {"asked", "", 0}};
    for (size_t i = 0; !rc && i < sizeof files / sizeof *files; i++) {
        if (!port && !strcmp(files[i].name, "port"))
            continue;
        snprintf(path, sizeof path, "%s/%s", session, files[i].name);
        rc = ddp_write_file_atomic(path, files[i].data, files[i].len, 0600, err);
    }
    free(words);
    return rc;
}

/* Where the node's side listens, once it says: 0 with host and *port; -1 with the problem. */
static int await_endpoint(const char *session, char *host, size_t size, int *port, ddp_error_t *err)
{
    char path[8400];
    int64_t deadline = ddp_deadline_in(SHELL_START_MS);
    while (ddp_ms_left(deadline)) {
        snprintf(path, sizeof path, "%s/failed", session);
        char *why = ddp_read_own_file(path, S_IWGRP | S_IWOTH, 4096, NULL, err);
        if (why) {
            why[strcspn(why, "\n")] = 0;
            ddp_error_code(err, ECHILD, "%s", why);
            free(why);
            return -1;
        }
        snprintf(path, sizeof path, "%s/endpoint", session);
        char *text = ddp_read_own_file(path, S_IWGRP | S_IWOTH, 4096, NULL, err);
        char name[256];
        if (text && sscanf(text, "%255s %d", name, port) == 2 && *port > 0 && *port < 65536) {
            snprintf(host, size, "%s", name);
            free(text);
            return 0;
        }
        free(text);
        ddp_sleep_ms(50);
    }
    return ddp_error_set(err,
                         "the node's side did not start within %d s (is the holder "
                         "running? see the allocation's output)",
                         SHELL_START_MS / 1000);
}

static void remove_session(const char *session)
{
    const char *names[] = {"token", "node", "argv", "port", "asked", "endpoint", "taken", "failed"};
    char path[8400];
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        snprintf(path, sizeof path, "%s/%s", session, names[i]);
        unlink(path);
    }
    rmdir(session);
}

/* The allocation that `dev` names, held now: its record folder (malloc'd) and state; NULL with
 * the problem said. */
/* The record of DEV while it holds its nodes (waiting up to wait_s for a queued one); NULL with
 * why said and *code set. */
static char *held_now(const char *command, const char *dev, int64_t wait_s, dev_state_t *s,
                      int *code)
{
    *code = 1;
    job_record_t r = {0};
    ddp_error_t err;
    char *dir = dev_record_find(dev, &r, &err);
    if (!dir) {
        fprintf(stderr, "ddpjob %s: %s\n", command, err.msg);
        return NULL;
    }
    job_record_free(&r);
    if ((*code = dev_ready(command, dev, dir, wait_s, s)) != EXIT_OK) {
        free(dir);
        return NULL;
    }
    return dir;
}

/* A session on node `node` of the allocation in dir: asked of its holder (a shell running cmd,
 * or with port, that port forwarded), its node side started; its token, folder (always set, ""
 * until made), and where the node's side listens. -1 with err. */
static int open_session(const char *dir, int node, char **cmd, int ncmd, int port, char *token,
                        char *session, char *host, int *node_port, ddp_error_t *err)
{
    unsigned char raw[RELAY_TOKEN_LEN / 2];
    int k;
    session[0] = 0;
    if (ddp_random(raw, sizeof raw))
        return ddp_error_set(err, "no random bytes for the session's token");
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(token + 2 * i, 3, "%02x", raw[i]);
    /* A node's side that ended before it listened started nothing: it is asked once more, as
     * PBS's pbsdsh exits 0 whether or not TM started its task (seen once, on a loaded machine). */
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt) {
            remove_session(session);
            ddp_sleep_ms(1000);
        }
        if (dev_reserve(dir, "shells", &k, err))
            return -1;
        snprintf(session, 8192, "%s/shells/%d", dir, k);
        if (ask_shell(session, token, node, cmd, ncmd, port, err))
            return -1;
        if (await_endpoint(session, host, 256, node_port, err) == 0)
            return 0;
        if (err->code != ECHILD)
            return -1;
    }
    return -1;
}

int cmd_shell(int argc, char **argv)
{
    static const struct option opts[] = {{"node", required_argument, NULL, 'n'},
                                         {"wait", optional_argument, NULL, 'w'},
                                         {"help", no_argument, NULL, 'h'},
                                         {0}};
    char **cmd;
    int ncmd, node = 0, c, code;
    int64_t wait_s = 0;
    argc = split_workload_args(argc, argv, &cmd, &ncmd);
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h')
            return fputs(shell_help, stdout), EXIT_OK;
        if (c == 'w' && dev_parse_wait("shell", optarg, &wait_s))
            return EXIT_USAGE;
        if (c != 'w' && (c != 'n' || ddp_parse_int(optarg, 0, 1 << 20, &node)))
            return fputs(shell_help, stderr), EXIT_USAGE;
    }
    if (optind + 1 != argc)
        return fputs(shell_help, stderr), EXIT_USAGE;
    dev_state_t s;
    char *dir = held_now("shell", argv[optind], wait_s, &s, &code);
    if (!dir)
        return code;
    if (node >= s.nhosts) {
        fprintf(stderr, "ddpjob shell: --node %d: %s holds nodes 0 to %d (%s)\n", node,
                argv[optind], s.nhosts - 1, s.hosts);
        free(dir);
        return EXIT_USAGE;
    }
    char token[RELAY_TOKEN_LEN + 1], session[8192], host[256];
    int port, rc = EXIT_SYSTEM;
    ddp_error_t err;
    if (open_session(dir, node, cmd, ncmd, 0, token, session, host, &port, &err))
        fprintf(stderr, "ddpjob shell: %s, node %d: %s\n", argv[optind], node, err.msg);
    else if ((rc = relay_attach(host, port, token, &err)) < 0) {
        fprintf(stderr, "ddpjob shell: %s, node %d (%s): %s\n", argv[optind], node, host, err.msg);
        rc = EXIT_SYSTEM;
    }
    if (session[0])
        remove_session(session);
    free(dir);
    return rc;
}

static void say_forwarding(void *what)
{
    fprintf(stderr, "ddpjob dev: %s; Ctrl-C stops\n", (const char *)what);
}

/* --endpoint: where the node's side listens and its token, said on stdout (a pipe to the laptop
 * that asked, over SSH), and the node's side held forwarding until that pipe's end. */
static int hold_endpoint(const char *host, int port, const char *token, ddp_error_t *err)
{
    int control = relay_control(host, port, token, err);
    if (control < 0)
        return -1;
    printf("%s %d %s\n", host, port, token);
    fflush(stdout);
    for (;;) {
        struct pollfd p[2] = {{0, POLLIN, 0}, {control, POLLIN, 0}};
        if (poll(p, 2, -1) < 0)
            continue;
        char buf[512];
        if (p[1].revents) {
            close(control);
            return ddp_error_set(err, "the node's side ended");
        }
        if (p[0].revents && read(0, buf, sizeof buf) <= 0)
            break;
    }
    close(control);
    return 0;
}

int dev_forward(const char *dev, const char *what, int endpoint, int64_t wait_s)
{
    int port, node;
    if (dev_parse_port(what, &port, &node))
        return EXIT_USAGE;
    dev_state_t s;
    int code;
    char *dir = held_now("dev", dev, wait_s, &s, &code);
    if (!dir)
        return code;
    if (node >= s.nhosts) {
        fprintf(stderr, "ddpjob dev: --port %s: %s holds nodes 0 to %d (%s)\n", what, dev,
                s.nhosts - 1, s.hosts);
        free(dir);
        return EXIT_USAGE;
    }
    char token[RELAY_TOKEN_LEN + 1], session[8192], host[256], said[600];
    int node_side, rc = EXIT_SYSTEM;
    ddp_error_t err;
    if (open_session(dir, node, NULL, 0, port, token, session, host, &node_side, &err)) {
        fprintf(stderr, "ddpjob dev: --port %s: %s, node %d: %s\n", what, dev, node, err.msg);
    } else {
        snprintf(said, sizeof said, "localhost:%d is port %d of node %d (%s) of %s", port, port,
                 node, host, dev);
        rc = (endpoint ? hold_endpoint(host, node_side, token, &err)
                       : relay_forward(host, node_side, token, port, say_forwarding, said, &err))
                 ? 1
                 : EXIT_OK;
        if (rc)
            fprintf(stderr, "ddpjob dev: --port %s: %s\n", what,
                    err.code == EADDRINUSE
                        ? "that port is in use on this machine: pick another (PORT:NODE)"
                        : err.msg);
    }
    if (session[0])
        remove_session(session);
    free(dir);
    return rc;
}

static const char serve_help[] =
    "usage: ddpjob dev-shell-serve --session DIR\n"
    "Run on a node of an allocation `ddpjob dev` holds, by its holder, for `ddpjob shell`: serves\n"
    "the shell session DIR (the allocation's record's shells/S) on a new terminal.\n";

/* The session's command as a shell runs it: the allocation's node-env (its text, read here
 * through a descriptor checked as the user's own, handed to bash in NODE_ENV_VAR, never sourced
 * by its name, which someone able to rename a folder above could swap) and the node setup first,
 * then the command (none: an interactive bash), inside the job's image where the record's
 * container-exec gives the words that put it there (the agent's, as for a worker). malloc'd,
 * its words in *words_out (both freed by the caller); NULL with err. */
static char **shell_argv(const char *session, const char *dev, char **words_out, ddp_error_t *err)
{
    char path[8400];
    size_t len = 0, image_len = 0;
    snprintf(path, sizeof path, "%s/argv", session);
    char *words = ddp_read_own_file(path, S_IWGRP | S_IWOTH, SHELL_ARGV_MAX, &len, err);
    if (!words)
        return NULL;
    ddp_error_t missing, no_image;
    snprintf(path, sizeof path, "%s/node-env", dev);
    char *env_text = ddp_read_own_file(path, S_IWGRP | S_IWOTH, NODE_ENV_MAX, NULL, &missing);
    snprintf(path, sizeof path, "%s/container-exec", dev);
    char *image = ddp_read_own_file(path, S_IWGRP | S_IWOTH, SHELL_ARGV_MAX, &image_len, &no_image);
    if ((!env_text && missing.code != ENOENT) || (!image && no_image.code != ENOENT)) {
        *err = !env_text && missing.code != ENOENT ? missing : no_image;
        free(words);
        free(env_text);
        free(image);
        return NULL;
    }
    int set = env_text ? setenv(NODE_ENV_VAR, env_text, 1) : unsetenv(NODE_ENV_VAR);
    free(env_text);
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += words[i] == 0;
    for (size_t i = 0; i < image_len; i++)
        n += image[i] == 0;
    char **argv = set ? NULL : calloc(n + 8, sizeof *argv);
    /* One block for both lists of words, freed as one. */
    char *all = argv ? malloc(len + image_len + 1) : NULL;
    if (!all) {
        free(argv);
        free(words);
        free(image);
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    memcpy(all, words, len);
    if (image_len)
        memcpy(all + len, image, image_len);
    free(words);
    free(image);
    size_t a = 0;
    argv[a++] = "/bin/bash";
    argv[a++] = "-c";
    argv[a++] = "eval \"${" NODE_ENV_VAR ":-}\"; unset " NODE_ENV_VAR "; ! declare -F "
                "ddpjob_node_setup >/dev/null || ddpjob_node_setup; exec \"$@\"";
    argv[a++] = "ddpjob-shell";
    for (size_t i = len; i < len + image_len; i += strlen(all + i) + 1)
        argv[a++] = all + i;
    if (!len) {
        argv[a++] = "/bin/bash";
        argv[a++] = "-i";
    }
    for (size_t i = 0; i < len; i += strlen(all + i) + 1)
        argv[a++] = all + i;
    argv[a] = NULL;
    *words_out = all;
    return argv;
}

/* The port a session forwards; 0 for a shell. */
static int session_port(const char *session)
{
    char path[8400];
    ddp_error_t err;
    snprintf(path, sizeof path, "%s/port", session);
    char *text = ddp_read_own_file(path, S_IWGRP | S_IWOTH, 64, NULL, &err);
    int port = 0;
    if (text)
        text[strcspn(text, "\n")] = 0;
    if (text && ddp_parse_int(text, 1, 65535, &port))
        port = 0;
    free(text);
    return port;
}

int cmd_dev_shell_serve(int argc, char **argv)
{
    static const struct option opts[] = {
        {"session", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'}, {0}};
    const char *session = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h')
            return fputs(serve_help, stdout), EXIT_OK;
        if (c != 's')
            return fputs(serve_help, stderr), EXIT_USAGE;
        session = optarg;
    }
    if (!session || optind != argc)
        return fputs(serve_help, stderr), EXIT_USAGE;
    /* The session's folder, the allocation's record above it, and the workdir above that. */
    char dev[8300], endpoint[8400], path[8400], notice[8400];
    snprintf(dev, sizeof dev, "%s", session);
    char *slash;
    for (int up = 0; up < 2 && (slash = strrchr(dev, '/')); up++)
        *slash = 0;
    snprintf(notice, sizeof notice, "%s/notice", dev);
    snprintf(endpoint, sizeof endpoint, "%s/endpoint", session);
    ddp_error_t err;
    job_record_t r = {0};
    snprintf(path, sizeof path, "%s/token", session);
    char *token = NULL, **cmd = NULL, *words = NULL;
    int rc = EXIT_SYSTEM, port;
    if (ddp_check_private_dir(session, &err) || job_record_read(dev, &r, &err) ||
        !(token = ddp_read_own_file(path, S_IRWXG | S_IRWXO, RELAY_TOKEN_LEN + 1, NULL, &err)) ||
        !(cmd = shell_argv(session, dev, &words, &err))) {
        fprintf(stderr, "ddpjob dev-shell-serve: %s\n", err.msg);
    } else if ((port = session_port(session))) {
        rc = relay_serve_port(endpoint, token, port, SHELL_ACCEPT_MS, &err) ? EXIT_SYSTEM : EXIT_OK;
        if (rc)
            fprintf(stderr, "ddpjob dev-shell-serve: %s: %s\n", session, err.msg);
    } else {
        int status = relay_serve(endpoint, token, r.workdir, cmd, notice, SHELL_ACCEPT_MS, &err);
        if (status < 0)
            fprintf(stderr, "ddpjob dev-shell-serve: %s: %s\n", session, err.msg);
        rc = status < 0 ? EXIT_SYSTEM : status;
    }
    free(words);
    free(cmd);
    free(token);
    job_record_free(&r);
    return rc;
}
