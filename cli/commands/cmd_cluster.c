/* cluster: the clusters this user submits to from a laptop (cluster_profiles.h): `add` writes
 * one, `list` shows them, `check` logs in to one (its host key checked as launch checks them)
 * and says what is there: the scheduler and its version, the ddpjob versions installed, and the
 * remote folder's free space and whether it can be written. */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands/commands.h"
#include "cli/commands/cluster_login.h"
#include "cli/commands/host_options.h"
#include "cli/laptop/cluster_profiles.h"
#include "cli/ssh/remote_command.h"
#include "cli/laptop/remote_install.h"
#include "cli/ssh/ssh_config.h"
#include "cli/ssh/ssh_session.h"
#include "cli/spec/datafile.h"
#include "cli/spec/shquote.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_parse.h"

static const char cluster_help[] =
    "usage: ddpjob cluster add NAME --host HOST --remote-dir DIR [--user U] [--port P]\n"
    "                              [--identity FILE] [--proxy-jump [USER@]HOST[:PORT]]\n"
    "                              [--site SITE] [--remote-share private|group]\n"
    "       ddpjob cluster list\n"
    "       ddpjob cluster check NAME [--accept-new-host-keys] [--connect-timeout S]\n"
    "                                 [--ssh-config FILE] [--known-hosts FILE]\n"
    "The clusters this user reaches over SSH, by name, in $XDG_CONFIG_HOME/ddpjob/clusters.yaml\n"
    "(default ~/.config/ddpjob/clusters.yaml; mode 0600). HOST may be an ~/.ssh/config alias:\n"
    "its HostName, Port, User, IdentityFile and ProxyJump apply where the profile names none;\n"
    "--proxy-jump: reach it through that host, as ssh -J (one jump host). The folders and files\n"
    "submit --on sends there are the user's alone; --remote-share group: DIR is the team's\n"
    "(setgid and sticky), and they are the group's to read.\n"
    "  add     writes the profile NAME (replacing one of that name)\n"
    "  list    one line per cluster\n"
    "  check   logs in (the host key checked against known_hosts; --accept-new-host-keys adds\n"
    "          an unknown one, never a changed one) and says which scheduler and ddpjob are\n"
    "          there, and the remote folder's free space and whether it can be written\n"
    "  --connect-timeout S     default 30\n"
    "  --ssh-config FILE       default ~/.ssh/config\n"
    "  --known-hosts FILE      default ~/.ssh/known_hosts\n"
    "Exit: 0 done (check: the cluster answered and its folder can be written), 1 check found a\n"
    "problem there, 2 usage, 3 the clusters file could not be read or written.\n";

enum { EXIT_CLUSTER_PROBLEM = 1 };

static int load(char *path, size_t size, cluster_profiles_t *p)
{
    ddp_error_t err;
    cluster_profiles_path(path, size);
    if (cluster_profiles_read(path, p, &err)) {
        fprintf(stderr, "ddpjob cluster: %s\n", err.msg);
        return EXIT_SYSTEM;
    }
    return EXIT_OK;
}

/* add's options that fill a text field of the profile; getopt's value is the row. */
#define TEXT_OPTION(name, field)                                                                   \
    {                                                                                              \
        name, offsetof(cluster_profile_t, field), sizeof(((cluster_profile_t *)0)->field)          \
    }
static const struct {
    const char *name;
    size_t offset, size;
} text_options[] = {
    TEXT_OPTION("host", host),
    TEXT_OPTION("user", user),
    TEXT_OPTION("identity", identity),
    TEXT_OPTION("remote-dir", remote_dir),
    TEXT_OPTION("site", site),
    TEXT_OPTION("proxy-jump", proxy_jump),
    TEXT_OPTION("remote-share", remote_share),
};
enum { TEXT_OPTIONS = sizeof text_options / sizeof text_options[0], PORT_OPTION = TEXT_OPTIONS };

static int take_text(cluster_profile_t *c, size_t row, const char *value)
{
    if (strlen(value) >= text_options[row].size) {
        fprintf(stderr, "ddpjob cluster add: --%s: too long\n", text_options[row].name);
        return -1;
    }
    snprintf((char *)c + text_options[row].offset, text_options[row].size, "%s", value);
    return 0;
}

static int parse_add(int argc, char **argv, cluster_profile_t *c)
{
    struct option opts[TEXT_OPTIONS + 2] = {{"port", required_argument, NULL, PORT_OPTION}};
    for (size_t i = 0; i < TEXT_OPTIONS; i++)
        opts[i + 1] = (struct option){text_options[i].name, required_argument, NULL, (int)i};
    memset(c, 0, sizeof *c);
    int o;
    long port;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (o >= 0 && o < TEXT_OPTIONS) {
            if (take_text(c, (size_t)o, optarg))
                return -1;
        } else if (o == PORT_OPTION && !ddp_parse_long(optarg, 1, 65535, &port)) {
            c->port = (int)port;
        } else {
            if (o == PORT_OPTION)
                fprintf(stderr, "ddpjob cluster add: --port: \"%s\" is no port\n", optarg);
            else
                fputs(cluster_help, stderr);
            return -1;
        }
    }
    if (optind + 1 != argc || !c->host[0] || !c->remote_dir[0] ||
        strlen(argv[optind]) >= sizeof c->name) {
        fprintf(stderr,
                "ddpjob cluster add: NAME (under %zu characters), --host and --remote-dir "
                "are needed\n%s",
                sizeof c->name, cluster_help);
        return -1;
    }
    snprintf(c->name, sizeof c->name, "%s", argv[optind]);
    return 0;
}

static int cluster_add(int argc, char **argv)
{
    cluster_profile_t c;
    if (parse_add(argc, argv, &c))
        return EXIT_USAGE;
    char path[4096];
    cluster_profiles_t p;
    int rc = load(path, sizeof path, &p);
    if (rc)
        return rc;
    ddp_error_t err;
    int replaced = cluster_profiles_find(&p, c.name) != NULL;
    if (cluster_profiles_put(&p, &c, &err)) {
        fprintf(stderr, "ddpjob cluster add: %s\n", err.msg);
        rc = EXIT_USAGE;
    } else if (cluster_profiles_write(path, &p, &err)) {
        fprintf(stderr, "ddpjob cluster add: %s\n", err.msg);
        rc = EXIT_SYSTEM;
    } else {
        printf("cluster %s %s in %s\n", c.name, replaced ? "replaced" : "added", path);
    }
    cluster_profiles_free(&p);
    return rc;
}

static int cluster_list(void)
{
    char path[4096];
    cluster_profiles_t p;
    int rc = load(path, sizeof path, &p);
    if (rc)
        return rc;
    if (!p.count)
        printf("no clusters in %s (ddpjob cluster add NAME --host HOST --remote-dir DIR)\n", path);
    for (size_t i = 0; i < p.count; i++) {
        const cluster_profile_t *c = &p.items[i];
        printf("%-12s %s%s%s", c->name, c->user, c->user[0] ? "@" : "", c->host);
        if (c->port)
            printf(":%d", c->port);
        printf("  %s%s%s%s%s\n", c->remote_dir, c->site[0] ? "  site " : "", c->site,
               c->proxy_jump[0] ? "  through " : "", c->proxy_jump);
    }
    cluster_profiles_free(&p);
    return EXIT_OK;
}

/* Where and as whom: ~/.ssh/config's word on the host, then the profile's own fields. */
/* The probe, read by bash in a login shell (where sites put their scheduler on PATH) from its
 * stdin after the line that sets d: tagged lines the check reads back, whatever else the login
 * prints. Each scheduler's lines first (its row's submit program and version command), then
 * these. */
static const char probe_rest[] =
    "for b in \"$HOME\"/.local/share/ddpjob/*/bin/ddpjob $(command -v ddpjob); do\n"
    "  [ -x \"$b\" ] && echo \"ddpjob-probe: ddpjob $(\"$b\" --version 2>&1 | head -n 1) at $b\"\n"
    "done\n"
    "e=$d; while [ ! -e \"$e\" ]; do e=$(dirname \"$e\"); done\n"
    "echo \"ddpjob-probe: dir $d\"; echo \"ddpjob-probe: existing $e\"\n"
    "[ -d \"$e\" ] && [ -w \"$e\" ] && echo \"ddpjob-probe: writable\"\n"
    "echo \"ddpjob-probe: free_kib $(df -Pk \"$e\" | awk 'NR==2 {print $4}')\"\n"
    "echo \"ddpjob-probe: arch $(uname -m)\"\n";

/* The probe's stdin: remote_dir, then the script. */
static char *probe_input(const cluster_profile_t *c)
{
    char *dir = shquote(c->remote_dir), *input = NULL;
    size_t len = 0;
    FILE *f = dir ? open_memstream(&input, &len) : NULL;
    if (!f) {
        free(dir);
        return NULL;
    }
    fprintf(f, "d=%s\ncase $d in '~/'*) d=$HOME/${d#'~/'} ;; esac\n", dir);
    const sched_ops_t *ops;
    for (size_t i = 0; (ops = sched_at(i)); i++)
        fprintf(f,
                "if p=$(command -v %s); then\n"
                "  echo \"ddpjob-probe: scheduler %s %s at $p\"\n"
                "  v=$(%s 2>&1) && echo \"ddpjob-probe: answers %s\"\n"
                "  echo \"ddpjob-probe: version %s $(printf '%%s\\n' \"$v\" | head -n 1)\"\n"
                "fi\n",
                ops->submit_program, ops->display, ops->submit_program, ops->version_command,
                ops->display, ops->display);
    fputs(probe_rest, f);
    free(dir);
    if (fclose(f) != 0) {
        free(input);
        return NULL;
    }
    return input;
}

/* The value after "ddpjob-probe: KEY " on one of the probe's lines; "" when none. The lines
 * found are each printed by the caller, not copied whole: a hostile host's words stay words. */
static const char *probe_value(const char *out, const char *key, char *value, size_t size)
{
    char tag[64];
    snprintf(tag, sizeof tag, "ddpjob-probe: %s", key);
    size_t n = strlen(tag);
    value[0] = '\0';
    for (const char *line = out; line && *line;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        if (strncmp(line, tag, n) || (line[n] != ' ' && line[n] != '\n' && line[n]))
            continue;
        const char *v = line[n] == ' ' ? line + n + 1 : line + n;
        size_t len = strcspn(v, "\n");
        len = len < size - 1 ? len : size - 1;
        memcpy(value, v, len);
        value[len] = '\0';
        for (char *s = value; *s; s++)
            if ((unsigned char)*s < 0x20)
                *s = '?';
        return value;
    }
    return value;
}

/* Every scheduler's submit program, "qsub or sbatch". */
static const char *submit_programs(void)
{
    static char names[256];
    const sched_ops_t *ops;
    size_t len = 0;
    for (size_t i = 0; (ops = sched_at(i)) && len < sizeof names; i++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", i ? " or " : "",
                                ops->submit_program);
    return names;
}

/* Whether the probe says scheduler `ops` answered its version command. */
static int answers(const char *out, const sched_ops_t *ops)
{
    char tag[128];
    snprintf(tag, sizeof tag, "ddpjob-probe: answers %s\n", ops->display);
    return strstr(out, tag) != NULL;
}

/* Whether another scheduler of the same submit program (PBS's and Grid Engine's qsub) answered:
 * then this one's failed version command only says the login is not its. */
static int other_answers(const char *out, const sched_ops_t *ops)
{
    const sched_ops_t *other;
    for (size_t i = 0; (other = sched_at(i)); i++)
        if (other != ops && !strcmp(other->submit_program, ops->submit_program) &&
            answers(out, other))
            return 1;
    return 0;
}

/* Each scheduler found, with its own word on its version; a problem when none answers. */
static void say_schedulers(const char *out, int *problem)
{
    char tag[64], where[1024], version[1024];
    int answered = 0, found = 0;
    const sched_ops_t *ops;
    for (size_t i = 0; (ops = sched_at(i)); i++) {
        const char *name = ops->display;
        snprintf(tag, sizeof tag, "scheduler %s", name);
        if (!*probe_value(out, tag, where, sizeof where) ||
            (!answers(out, ops) && other_answers(out, ops)))
            continue;
        found = 1;
        snprintf(tag, sizeof tag, "version %s", name);
        probe_value(out, tag, version, sizeof version);
        if (answers(out, ops)) {
            printf("  scheduler: %s, %s (%s)\n", name, where, version);
            answered = 1;
        } else {
            printf("  scheduler: %s, %s, but asked its version it says: %s\n", name, where,
                   version);
        }
    }
    if (!found)
        printf("  scheduler: none (no %s on a login shell's PATH)\n", submit_programs());
    *problem |= !answered;
}

/* The login node's architecture, and whether this install holds the cluster build submit --on
 * sends there. */
static void say_arch(const char *out, int *problem)
{
    char arch[64], tree[4096], prefix[4096];
    ddp_error_t err;
    probe_value(out, "arch", arch, sizeof arch);
    if (datafile_prefix(prefix, sizeof prefix, &err) ||
        remote_install_build_for(prefix, arch, tree, sizeof tree, &err)) {
        printf("  architecture: %s\n", err.msg);
        *problem = 1;
    } else {
        printf(
            "  architecture: %s (this ddpjob holds its cluster build, which submit --on sends)\n",
            arch);
    }
}

static void say_found(const cluster_profile_t *c, const remote_result_t *r, int *problem)
{
    char v[1024];
    say_schedulers(r->out, problem);
    say_arch(r->out, problem);
    int any = 0;
    for (const char *line = strstr(r->out, "ddpjob-probe: ddpjob "); line;
         line = strstr(line + 1, "ddpjob-probe: ddpjob ")) {
        probe_value(line, "ddpjob", v, sizeof v);
        printf("  ddpjob: %s\n", v);
        any = 1;
    }
    if (!any)
        printf("  ddpjob: none installed (submit --on %s installs this one, %s)\n", c->name,
               DDPJOB_VERSION);
    char dir[1024], existing[1024], kib[64];
    probe_value(r->out, "dir", dir, sizeof dir);
    probe_value(r->out, "existing", existing, sizeof existing);
    probe_value(r->out, "free_kib", kib, sizeof kib);
    long long free_kib = atoll(kib);
    int writable = strstr(r->out, "ddpjob-probe: writable") != NULL;
    if (!strcmp(dir, existing))
        printf("  remote_dir %s: there", dir);
    else
        printf("  remote_dir %s: not there yet (made under %s)", dir, existing);
    printf(", %.1f GiB free, %s\n", (double)free_kib / (1024.0 * 1024.0),
           writable ? "writable" : "NOT writable by this user");
    *problem |= !writable;
}

static int cluster_check(const cluster_profile_t *c, const host_options_t *ho)
{
    ddp_error_t err;
    ssh_target_t t;
    int64_t deadline = ddp_deadline_in(ho->connect_s * 1000);
    ssh_session_t *s = cluster_login(c, ho, &t, &err);
    if (!s) {
        fprintf(stderr, "ddpjob cluster check: %s: %s\n", c->name, err.msg);
        return EXIT_CLUSTER_PROBLEM;
    }
    printf("%s: logged in as %s at %s:%d; its host key is in %s\n", c->name, t.user, t.hostname,
           t.port, ho->known_hosts);
    char *command = shquote_for_any_shell("exec bash -l -s"), *input = probe_input(c);
    remote_result_t *r = malloc(sizeof *r);
    int rc = EXIT_OK, problem = 0;
    if (!command || !input || !r) {
        fprintf(stderr, "ddpjob cluster check: out of memory\n");
        rc = EXIT_SYSTEM;
    } else if (remote_command_run(s, command, input, strlen(input), deadline, r, &err)) {
        fprintf(stderr, "ddpjob cluster check: %s: %s\n", c->name, err.msg);
        rc = EXIT_CLUSTER_PROBLEM;
    } else {
        say_found(c, r, &problem);
        rc = problem ? EXIT_CLUSTER_PROBLEM : EXIT_OK;
    }
    free(command);
    free(input);
    free(r);
    ssh_session_close(s);
    return rc;
}

static int check_command(int argc, char **argv)
{
    static const struct option opts[] = {HOST_OPTIONS_LONGOPTS, {0}};
    host_options_t ho;
    host_options_init(&ho);
    int o;
    while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        int taken = host_options_take(&ho, o, optarg, "cluster check");
        if (taken <= 0 || ho.list || ho.file) {
            if (taken >= 0)
                fputs(cluster_help, stderr);
            return EXIT_USAGE;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "ddpjob cluster check: one NAME\n%s", cluster_help);
        return EXIT_USAGE;
    }
    char path[4096];
    cluster_profile_t c;
    ddp_error_t err;
    if (cluster_profile_load(argv[optind], &c, path, sizeof path, &err)) {
        fprintf(stderr, "ddpjob cluster%s: %s\n", err.code == ENOENT ? " check" : "", err.msg);
        return err.code == ENOENT ? EXIT_USAGE : EXIT_SYSTEM;
    }
    return cluster_check(&c, &ho);
}

int cmd_cluster(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(cluster_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : EXIT_OK;
    }
    if (!strcmp(argv[1], "add"))
        return cluster_add(argc - 1, argv + 1);
    if (!strcmp(argv[1], "list") && argc == 2)
        return cluster_list();
    if (!strcmp(argv[1], "check"))
        return check_command(argc - 1, argv + 1);
    fprintf(stderr, "ddpjob cluster: unknown \"%s\"\n%s", argv[1], cluster_help);
    return EXIT_USAGE;
}
