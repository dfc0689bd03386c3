/* remote_dev: an allocation `ddpjob dev --on NAME` holds on a cluster, used from this laptop
 * (`dev --on` itself is submit --on's path, cmd_remote.c). Each is this version's ddpjob run
 * there in one login:
 *
 *   run --in DEV [SPEC]  the workdir sent first (what changed: edit here, run there), then run
 *                        there, its output passed on; Ctrl-C here is a "cancel" line to it,
 *                        which cancels the run as Ctrl-C there would. A lost connection leaves
 *                        the run going (its record says how it ends).
 *   shell DEV            on a terminal there (a pseudo-terminal of this one's type and size,
 *                        this one raw) when this is one; the keys and window changes passed.
 *   dev DEV --port P[:K] localhost:P here is port P of node K: the command there says where the
 *                        node's side listens and its token (its stdout, inside SSH), and each
 *                        connection here goes to it through the login node's SSH server
 *                        (ssh_forward.h). Nothing listens on the login node.
 *   dev stop DEV         run there as it is. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "cli/commands/cluster_login.h"
#include "cli/commands/commands.h"
#include "cli/commands/remote_steps.h"
#include "cli/jobs/job_record.h"
#include "cli/jobs/remote_index.h"
#include "cli/jobs/term_text.h"
#include "cli/launch/node_relay.h"
#include "cli/ssh/ssh_forward.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_net.h"
#include "runtime/base/ddp_parse.h"

/* How long the command there may take to start (a login shell, the node's side for --port). */
#define START_MS 120000
#define PUMP_MS 200

static volatile sig_atomic_t interrupted, window_changed;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted++;
}

static void on_window(int sig)
{
    (void)sig;
    window_changed = 1;
}

static void catch_interrupts(void)
{
    struct sigaction sa = {.sa_handler = on_interrupt};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* Output there, passed on: stdout as text made safe for this terminal (or as it is on a
 * terminal's session, raw), stderr as it is. */
static void pass_text(void *arg, int stream, const char *data, size_t len)
{
    int raw = arg != NULL;
    if (stream == 1) {
        fwrite(data, 1, len, stderr);
        fflush(stderr);
    } else if (raw) {
        ddp_write_all(1, data, len);
    } else {
        term_text_write(stdout, data, len);
        fflush(stdout);
    }
}

/* A login and `words` started there (in dir when given; tail as remote_ddpjob_command's), on a
 * terminal of this one's size when term is given. NULL with the problem said. */
static ssh_session_t *start_there(const char *command, const cluster_profile_t *c,
                                  const host_options_t *ho, const char *dir, char **words, int n,
                                  const char *tail, const char *term)
{
    ddp_error_t err;
    ssh_target_t t;
    ssh_session_t *s = cluster_login(c, ho, &t, &err);
    if (!s) {
        fprintf(stderr, "ddpjob %s: %s: %s\n", command, c->name, err.msg);
        return NULL;
    }
    char *line = remote_ddpjob_command(c->name, dir, words, n, tail);
    struct winsize w = {.ws_row = 24, .ws_col = 80};
    if (term)
        ioctl(0, TIOCGWINSZ, &w);
    int64_t deadline = ddp_deadline_in(START_MS);
    int rc = !line  ? ddp_error_set(&err, "out of memory")
             : term ? ssh_session_exec_terminal(s, line, term, w.ws_row, w.ws_col, deadline, &err)
                    : ssh_session_exec(s, line, NULL, 0, deadline, &err);
    free(line);
    if (rc) {
        fprintf(stderr, "ddpjob %s: %s: %s\n", command, c->name, err.msg);
        ssh_session_close(s);
        return NULL;
    }
    return s;
}

/* The exit status of the command there once it has ended, or EXIT_NO_LINK with the loss said. */
static int ended_there(const char *command, const cluster_profile_t *c, ssh_session_t *s,
                       int pumped, const ddp_error_t *err, const char *after_loss)
{
    int rc = pumped == 1 ? ssh_session_exit_status(s) : EXIT_NO_LINK;
    if (pumped != 1)
        fprintf(stderr, "ddpjob %s: %s: %s%s\n", command, c->name, err->msg, after_loss);
    ssh_session_close(s);
    return rc;
}

/* ---- run --in ------------------------------------------------------------------------------ */

/* run's words: the allocation (--in's value) and the spec (the one word that is no option nor an
 * option's value, before "--"), by index; -1 where there is none. */
static void run_words(int argc, char **argv, int *dev_at, int *spec_at, int *in_value_joined)
{
    static const char *const valued[] = {"--in", "--set", "--trial", "--nproc-per-node",
                                         "-n",   NULL};
    *dev_at = *spec_at = -1;
    *in_value_joined = 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strncmp(argv[i], "--in=", 5)) {
            *dev_at = i;
            *in_value_joined = 1;
            continue;
        }
        int takes = 0;
        for (const char *const *v = valued; *v && !takes; v++)
            takes = !strcmp(argv[i], *v);
        if (takes && i + 1 < argc) {
            if (!strcmp(argv[i], "--in"))
                *dev_at = i + 1;
            i++;
        } else if (argv[i][0] != '-' && *spec_at < 0) {
            *spec_at = i;
        }
    }
}

const char *remote_dev_target(int argc, char **argv)
{
    if (!strcmp(argv[0], "run")) {
        int dev_at, spec_at, joined;
        run_words(argc, argv, &dev_at, &spec_at, &joined);
        return dev_at < 0 ? NULL : argv[dev_at] + (joined ? 5 : 0);
    }
    /* The first two words that are no option nor an option's value ("stop DEV", "DEV"). */
    int port = 0, n = 0;
    const char *words[2] = {NULL, NULL};
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "--port") || !strncmp(argv[i], "--port=", 7))
            port = 1;
        if (!strcmp(argv[i], "--node") || !strcmp(argv[i], "--port"))
            i++;
        else if (argv[i][0] != '-' && n < 2)
            words[n++] = argv[i];
    }
    if (strcmp(argv[0], "dev"))
        return words[0];
    if (words[0] && !strcmp(words[0], "stop"))
        return words[1];
    return port ? words[0] : NULL;
}

/* Sends what changed of the run's folder, then runs it there. */
static int run_in_there(const cluster_profile_t *c, const host_options_t *ho, int argc, char **argv,
                        job_files_t *f, int spec_at)
{
    ddp_error_t err;
    ssh_target_t t;
    ssh_session_t *s = cluster_login(c, ho, &t, &err);
    if (!s) {
        fprintf(stderr, "ddpjob run: %s: %s\n", c->name, err.msg);
        return EXIT_NO_LINK;
    }
    int rc = remote_send_job("run", s, c, f);
    ssh_session_close(s);
    if (rc)
        return rc;
    if (spec_at >= 0)
        argv[spec_at] = f->spec_there;
    catch_interrupts();
    if (!(s = start_there("run", c, ho, f->remote_dir, argv, argc,
                          " --set \"workdir=$PWD\" --cancel-on-input", NULL)))
        return EXIT_NO_LINK;
    int pumped = 0, said = 0;
    while (pumped == 0) {
        if (interrupted && !said++) {
            if (ssh_session_write(s, "cancel\n", 7, &err))
                break;
        } else if (interrupted > 1) {
            fprintf(stderr,
                    "ddpjob run: not waiting for the run there to end (ddpjob status "
                    "--on %s)\n",
                    c->name);
            ssh_session_close(s);
            return 130;
        }
        pumped = ssh_session_pump(s, PUMP_MS, pass_text, NULL, &err);
    }
    return ended_there(
        "run", c, s, pumped, &err,
        " (the connection was lost; the run there goes on: ddpjob list --on, then status, logs "
        "or cancel of DEV-runK)");
}

static int remote_run_in(int argc, char **argv, const cluster_profile_t *c,
                         const host_options_t *ho)
{
    int dev_at, spec_at, joined;
    run_words(argc, argv, &dev_at, &spec_at, &joined);
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--bindir") || !strncmp(argv[i], "--bindir=", 9) ||
            !strcmp(argv[i], "-b")) {
            fprintf(stderr, "ddpjob run: %s names this machine's files: not with --on\n", argv[i]);
            return EXIT_USAGE;
        }
    const char *dev = argv[dev_at] + (joined ? 5 : 0);
    job_files_t f = {0};
    remote_job_t j;
    int rc = EXIT_SYSTEM,
        held_from_here = remote_index_find(dev, &j) && !strcmp(j.cluster, c->name);
    if (spec_at >= 0) {
        load_opts_t load = {.sched = NULL};
        for (int i = 1; i + 1 < argc && strcmp(argv[i], "--"); i++)
            if (!strcmp(argv[i], "--set"))
                load_opts_add_set(&load, argv[++i]);
        const sched_ops_t *target;
        job_spec_t *spec = load_for_scheduler(argv[spec_at], &load, &target, NULL, &rc);
        load_opts_free(&load);
        if (!spec)
            return rc;
        rc = remote_job_files("run", c, spec, MAX_UPLOAD_DEFAULT, &f) ? EXIT_INVALID_SPEC : -1;
        spec_destroy(spec);
    } else if (!held_from_here) {
        fprintf(stderr,
                "ddpjob run: %s was not held from here (ddpjob dev SPEC --on %s): name the SPEC "
                "whose folder is sent and run\n",
                dev, c->name);
        rc = EXIT_USAGE;
    } else {
        rc = remote_folder_files("run", j.local_dir, j.remote_dir, MAX_UPLOAD_DEFAULT, &f)
                 ? EXIT_SYSTEM
                 : -1;
    }
    if (rc < 0)
        rc = run_in_there(c, ho, argc, argv, &f, spec_at);
    remote_job_files_free(&f);
    return rc;
}

/* ---- shell --------------------------------------------------------------------------------- */

static int remote_shell(int argc, char **argv, const cluster_profile_t *c, const host_options_t *ho)
{
    struct termios saved;
    const char *term = getenv("TERM");
    int tty = isatty(0) && isatty(1) && tcgetattr(0, &saved) == 0;
    ssh_session_t *s =
        start_there("shell", c, ho, NULL, argv, argc, NULL, tty ? (term ? term : "xterm") : NULL);
    if (!s)
        return EXIT_NO_LINK;
    if (tty) {
        struct sigaction sa = {.sa_handler = on_window};
        sigaction(SIGWINCH, &sa, NULL);
        struct termios raw = saved;
        relay_make_raw(&raw);
        tcsetattr(0, TCSADRAIN, &raw);
    }
    ddp_error_t err;
    int pumped = 0, input = 1;
    char buf[16384];
    while (pumped == 0) {
        if (window_changed) {
            window_changed = 0;
            struct winsize w;
            if (ioctl(0, TIOCGWINSZ, &w) == 0)
                ssh_session_window(s, w.ws_row, w.ws_col);
        }
        struct pollfd p[2] = {{input ? 0 : -1, POLLIN, 0}, {ssh_session_socket(s), POLLIN, 0}};
        poll(p, 2, PUMP_MS);
        if (p[0].revents) {
            ssize_t n = read(0, buf, sizeof buf);
            if (n > 0 && ssh_session_write(s, buf, (size_t)n, &err)) {
                pumped = -1;
                break;
            }
            if (n <= 0 && (n == 0 || errno != EINTR)) {
                input = 0;
                ssh_session_eof(s);
            }
        }
        pumped = ssh_session_pump(s, 0, pass_text, tty ? "raw" : NULL, &err);
    }
    if (tty)
        tcsetattr(0, TCSADRAIN, &saved);
    return ended_there("shell", c, s, pumped, &err, " (the allocation there stays held)");
}

/* ---- dev DEV --port ------------------------------------------------------------------------ */

/* The node side's "HOST PORT TOKEN" line, when the command there has said it. */
typedef struct {
    char line[512];
    size_t len;
    int complete;
} endpoint_line_t;

static void take_endpoint(void *arg, int stream, const char *data, size_t len)
{
    endpoint_line_t *e = arg;
    if (stream == 1 || e->complete) {
        fwrite(data, 1, len, stderr);
        return;
    }
    for (size_t i = 0; i < len && !e->complete; i++) {
        if (data[i] == '\n')
            e->complete = 1;
        else if (e->len + 1 < sizeof e->line)
            e->line[e->len++] = data[i];
    }
    e->line[e->len] = '\0';
}

static void say_nothing(void *arg, int stream, const char *data, size_t len)
{
    (void)arg;
    if (stream == 1)
        fwrite(data, 1, len, stderr);
}

/* The endpoint's words, each checked before it is used: a host name or address, a port, the
 * token's hex. */
static int parse_endpoint(char *line, char **host, int *port, char **token)
{
    *host = strtok(line, " ");
    char *port_text = strtok(NULL, " ");
    *token = strtok(NULL, " ");
    return !*host || !port_text || !*token || strtok(NULL, " ") ||
                   strspn(*host,
                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:") !=
                       strlen(*host) ||
                   **host == '-' || ddp_parse_int(port_text, 1, 65535, port) ||
                   strlen(*token) != RELAY_TOKEN_LEN ||
                   strspn(*token, "0123456789abcdef") != RELAY_TOKEN_LEN
               ? -1
               : 0;
}

/* --port's value on the command line ("" when none). */
static const char *port_word(int argc, char **argv)
{
    const char *what = "";
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--port") && i + 1 < argc)
            what = argv[i + 1];
        else if (!strncmp(argv[i], "--port=", 7))
            what = argv[i] + 7;
    return what;
}

static int remote_port(int argc, char **argv, const cluster_profile_t *c, const host_options_t *ho,
                       const char *dev)
{
    const char *what = port_word(argc, argv);
    int port, node;
    if (dev_parse_port(what, &port, &node))
        return EXIT_USAGE;
    ddp_error_t err;
    int lfd = ddp_net_listen("127.0.0.1", port, 16, NULL, &err);
    if (lfd < 0) {
        fprintf(stderr, "ddpjob dev: --port %s: %s\n", what,
                err.code == EADDRINUSE
                    ? "that port is in use on this machine: pick another (PORT:NODE)"
                    : err.msg);
        return 1;
    }
    char *words[] = {"dev", (char *)dev, "--port", (char *)what, "--endpoint", NULL};
    int64_t wait_s = 0;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--wait") || !strncmp(argv[i], "--wait=", 7))
            words[5] = argv[i];
    if (words[5] && dev_parse_wait("dev", words[5][6] ? words[5] + 7 : NULL, &wait_s)) {
        close(lfd);
        return EXIT_USAGE;
    }
    catch_interrupts();
    ssh_session_t *s = start_there("dev", c, ho, NULL, words, words[5] ? 6 : 5, NULL, NULL);
    if (!s) {
        close(lfd);
        return EXIT_NO_LINK;
    }
    endpoint_line_t e = {0};
    int64_t deadline = ddp_deadline_in(START_MS + wait_s * 1000);
    int pumped = 0;
    while (pumped == 0 && !e.complete && !interrupted && ddp_ms_left(deadline) > 0)
        pumped = ssh_session_pump(s, PUMP_MS, take_endpoint, &e, &err);
    char *host, *token;
    int node_side, rc;
    if (pumped || !e.complete) {
        if (!pumped)
            ddp_error_set(&err, interrupted ? "interrupted" : "no answer within %d s",
                          START_MS / 1000);
        rc = ended_there("dev", c, s, pumped ? pumped : -1, &err, "");
    } else if (parse_endpoint(e.line, &host, &node_side, &token)) {
        fprintf(stderr, "ddpjob dev: %s: the node's side said no address ddpjob gives\n", c->name);
        ssh_session_close(s);
        rc = EXIT_SYSTEM;
    } else {
        unsigned char opening[2 * 5 + RELAY_TOKEN_LEN];
        ssh_forward_t fw = {host, node_side, opening,
                            relay_forward_opening(token, opening, sizeof opening)};
        fprintf(stderr,
                "ddpjob dev: localhost:%d is port %d of node %d (%s) of %s on %s; "
                "Ctrl-C stops\n",
                port, port, node, host, dev, c->name);
        pumped = ssh_forward_run(s, lfd, &fw, &interrupted, say_nothing, NULL, &err);
        explicit_bzero(e.line, sizeof e.line);
        explicit_bzero(opening, sizeof opening);
        if (pumped == 0 && interrupted) {
            /* The end of its input ends the command there, and with it the node's side. */
            ssh_session_eof(s);
            for (int64_t end = ddp_deadline_in(5000); pumped == 0 && ddp_ms_left(end) > 0;)
                pumped = ssh_session_pump(s, PUMP_MS, say_nothing, NULL, &err);
            ssh_session_close(s);
            rc = EXIT_OK;
        } else if (pumped < 0 && err.code == EPERM) {
            fprintf(stderr, "ddpjob dev: %s: %s\n", c->name, err.msg);
            ssh_session_close(s);
            rc = 1;
        } else {
            /* The command there ended (its words passed on): the node's side is gone. */
            rc = ended_there("dev", c, s, pumped == 0 ? 1 : -1, &err, "");
            rc = rc == EXIT_OK ? 1 : rc;
        }
    }
    close(lfd);
    return rc;
}

int remote_dev_command(int argc, char **argv, const cluster_profile_t *c, const host_options_t *ho)
{
    const char *dev = remote_dev_target(argc, argv);
    if (!strcmp(argv[0], "run"))
        return remote_run_in(argc, argv, c, ho);
    if (!strcmp(argv[0], "shell"))
        return remote_shell(argc, argv, c, ho);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--port") || !strncmp(argv[i], "--port=", 7))
            return remote_port(argc, argv, c, ho, dev);
    /* dev stop DEV: run there as it is. */
    ssh_session_t *s = start_there("dev", c, ho, NULL, argv, argc, NULL, NULL);
    if (!s)
        return EXIT_NO_LINK;
    ddp_error_t err;
    int pumped = 0;
    while (pumped == 0)
        pumped = ssh_session_pump(s, PUMP_MS, pass_text, NULL, &err);
    return ended_there("dev", c, s, pumped, &err, "");
}
