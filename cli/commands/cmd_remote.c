/* remote: the commands for a cluster reached from this laptop over SSH, one login each.
 *
 * `submit --on NAME SPEC`: the spec checked and rendered here (the site profile is known here);
 * then, in one login, this version of ddpjob installed there where missing (remote_install.h),
 * the spec's workdir (where it is a folder here, else the current one) uploaded to
 * REMOTE_DIR/JOBNAME/ sending only what changed (upload.h), and the job submitted there by that
 * ddpjob, with that folder its workdir, which makes the job's record and token there. A line
 * in the local remote index (remote_index.h) says where the job went.
 *
 * status, logs, cancel, list, wait and report with --on NAME, or for a job the index places on a
 * cluster: run there by this version's ddpjob in a login shell (where sites put their scheduler),
 * the output relayed. A connection lost during `logs -f` or `wait` is said and tried again with
 * backoff, and never taken for the job's end.
 *
 * `fetch JOB [PATHS]`: the job's files brought back over SFTP (download.h), by default what the
 * upload leaves behind (its checkpoints and its records, logs among them), into the folder it was
 * submitted from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands/cluster_login.h"
#include "cli/commands/commands.h"
#include "cli/commands/remote_steps.h"
#include "cli/jobs/job_record.h"
#include "cli/jobs/remote_index.h"
#include "cli/jobs/term_text.h"
#include "cli/laptop/download.h"
#include "cli/spec/units.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"

/* How long a short command there (submit's qsub or sbatch) may run. */
#define SHORT_COMMAND_MS (10 * 60 * 1000)
/* `logs -f` and `wait` try again for this long without a connection before they give up. */
#define RECONNECT_FOR_MS (10 * 60 * 1000)
#define BACKOFF_MAX_MS 30000
/* The host's unanswered connect fails within this by default (--connect-timeout). */
#define REMOTE_CONNECT_S 15

typedef struct {
    const char *cluster; /* --on */
    host_options_t ho;
} remote_opts_t;

/* Takes --on and the host options out of argv (argc updated); -1 on a bad one (said). */
static int take_remote_options(const char *command, int *argc, char **argv, remote_opts_t *o)
{
    static const struct {
        const char *name;
        int code, has_arg;
    } known[] = {{"--on", 'o', 1},
                 {"--accept-new-host-keys", 'a', 0},
                 {"--connect-timeout", 't', 1},
                 {"--ssh-config", 'c', 1},
                 {"--known-hosts", 'k', 1}};
    host_options_init(&o->ho);
    o->ho.connect_s = REMOTE_CONNECT_S;
    o->cluster = NULL;
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        int taken = 0;
        for (size_t k = 0; !taken && k < sizeof known / sizeof known[0]; k++) {
            size_t len = strlen(known[k].name);
            const char *value = NULL;
            if (strncmp(argv[i], known[k].name, len) ||
                (argv[i][len] && (argv[i][len] != '=' || !known[k].has_arg)))
                continue;
            if (known[k].has_arg) {
                value = argv[i][len] ? argv[i] + len + 1 : i + 1 < *argc ? argv[++i] : NULL;
                if (!value) {
                    fprintf(stderr, "ddpjob %s: %s needs a value\n", command, known[k].name);
                    return -1;
                }
            }
            if (known[k].code == 'o')
                o->cluster = value;
            else if (host_options_take(&o->ho, known[k].code, value, command) < 0)
                return -1;
            taken = 1;
        }
        if (!taken)
            argv[out++] = argv[i];
    }
    argv[out] = NULL;
    *argc = out;
    return 0;
}

/* The first word of the command line that is no option nor an option's value: the job. */
static const char *job_word(int argc, char **argv)
{
    static const char *const valued[] = {"--rank",    "--node", "--attempt", "--link",   "--trial",
                                         "--timeout", "--sort", "-o",        "--output", NULL};
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] != '-')
            return argv[i];
        for (const char *const *v = valued; *v; v++)
            if (!strcmp(argv[i], *v)) {
                i++;
                break;
            }
    }
    return NULL;
}

/* The output of a command there, passed on: stdout's first `printed` bytes of a run again after
 * a reconnect are skipped (logs -f prints its job's logs from their start each time). */
typedef struct {
    FILE *out;
    uint64_t printed, run_bytes;
} relay_t;

static void relay(void *arg, int stream, const char *data, size_t len)
{
    relay_t *r = arg;
    if (stream == 1) {
        fwrite(data, 1, len, stderr);
        return;
    }
    uint64_t skip = r->run_bytes < r->printed ? r->printed - r->run_bytes : 0;
    r->run_bytes += len;
    if (skip < len) {
        term_text_write(r->out, data + skip, len - skip);
        fflush(r->out);
        r->printed += len - skip;
    }
}

/* One run of `command` there to its end: its exit status, or -1 with err set when the
 * connection failed first (*connected says whether the login had succeeded). */
static int run_once(const cluster_profile_t *c, const host_options_t *ho, const char *command,
                    relay_t *r, int *connected, ddp_error_t *err)
{
    ssh_target_t t;
    ssh_session_t *s = cluster_login(c, ho, &t, err);
    *connected = s != NULL;
    if (!s)
        return -1;
    r->run_bytes = 0;
    int rc = ssh_session_exec(s, command, NULL, 0, ddp_deadline_in(ho->connect_s * 1000), err);
    if (rc == 0) {
        ssh_session_eof(s);
        while ((rc = ssh_session_pump(s, 1000, relay, r, err)) == 0)
            ;
    }
    int status = rc == 1 ? ssh_session_exit_status(s) : -1;
    ssh_session_close(s);
    return status;
}

/* Runs `command` there until it ends; where keep_trying, a connection lost after the first
 * login is tried again with backoff, for RECONNECT_FOR_MS without one. */
static int run_there(const cluster_profile_t *c, const host_options_t *ho, const char *command,
                     int keep_trying, FILE *out)
{
    relay_t r = {.out = out};
    int64_t lost_since = 0;
    int backoff_ms = 1000, ever_connected = 0;
    for (;;) {
        ddp_error_t err;
        int connected;
        int status = run_once(c, ho, command, &r, &connected, &err);
        if (status >= 0)
            return status;
        ever_connected |= connected;
        if (connected)
            lost_since = 0;
        if (!keep_trying || !ever_connected) {
            fprintf(stderr, "ddpjob: %s: %s%s\n", c->name, err.msg,
                    ever_connected ? " (the connection was lost: the job there is not affected)"
                                   : "");
            return EXIT_NO_LINK;
        }
        int64_t now = ddp_now_ms();
        if (!lost_since)
            lost_since = now;
        if (now - lost_since >= RECONNECT_FOR_MS) {
            fprintf(stderr,
                    "ddpjob: %s: no connection for %d minutes: giving up here; the job there goes "
                    "on (ddpjob status --on %s)\n",
                    c->name, RECONNECT_FOR_MS / 60000, c->name);
            return EXIT_NO_LINK;
        }
        fprintf(stderr,
                "ddpjob: %s: the connection was lost (%s); the job there goes on: trying again in "
                "%d s\n",
                c->name, err.msg, backoff_ms / 1000);
        ddp_sleep_ms(backoff_ms);
        backoff_ms = backoff_ms * 2 < BACKOFF_MAX_MS ? backoff_ms * 2 : BACKOFF_MAX_MS;
    }
}

/* report there writes its page to its stdout, kept here in the file -o names (default
 * JOB.report.html, as report's own). */
static int report_there(const cluster_profile_t *c, const host_options_t *ho, int argc, char **argv)
{
    const char *file = NULL, *job = job_word(argc, argv);
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            file = argv[++i];
        else
            argv[n++] = argv[i];
    }
    char name[512], *page = NULL, *command = NULL;
    size_t len = 0;
    snprintf(name, sizeof name, "%s.report.html", job ? job : "job");
    if (!file)
        file = name;
    argv[n++] = "-o";
    argv[n++] = "-";
    int to_stdout = !strcmp(file, "-");
    FILE *out = to_stdout ? stdout : open_memstream(&page, &len);
    int rc = out && (command = remote_ddpjob_command(c->name, NULL, argv, n, NULL))
                 ? run_there(c, ho, command, 0, out)
                 : EXIT_SYSTEM;
    if (!to_stdout && out)
        fclose(out);
    ddp_error_t err;
    if (rc == EXIT_OK && !to_stdout) {
        /* A job's page holds its logs and spec: private, as a local `report -o` writes it. */
        if (ddp_write_file_atomic(file, page, len, 0600, &err)) {
            fprintf(stderr, "ddpjob report: %s\n", err.msg);
            rc = EXIT_SYSTEM;
        } else {
            fprintf(stderr, "wrote %s (from %s)\n", file, c->name);
        }
    }
    free(page);
    free(command);
    return rc;
}

/* dst = src when it fits: 1, else 0 (dst emptied). */
static int set_field(char *dst, size_t size, const char *src)
{
    size_t len = strlen(src);
    if (len >= size) {
        dst[0] = '\0';
        return 0;
    }
    memcpy(dst, src, len + 1);
    return 1;
}

/* The job in the laptop's remote index, with the id submit printed there last (kept only when
 * it has an id's shape). */
static void note_job(const char *command, const cluster_profile_t *c, const job_files_t *f,
                     const char *last_line)
{
    remote_job_t j = {.submitted = time(NULL)};
    ddp_error_t err;
    int fits = set_field(j.cluster, sizeof j.cluster, c->name) &&
               set_field(j.name, sizeof j.name, f->folder) &&
               set_field(j.remote_dir, sizeof j.remote_dir, f->remote_dir) &&
               set_field(j.local_dir, sizeof j.local_dir, f->local_dir);
    if (!set_field(j.id, sizeof j.id, last_line) || !remote_job_valid(&j))
        j.id[0] = '\0';
    if (!fits)
        ddp_error_set(&err, "a folder's name is too long for it");
    if (!fits || remote_index_add(&j, &err))
        fprintf(stderr,
                "ddpjob %s: the job was submitted on %s, but this laptop's index could not "
                "note it (%s): use --on %s\n",
                command, c->name, err.msg, c->name);
}

/* --dry-run: what would be sent and run there, with no connection made. */
static void say_dry_run(const char *command, const cluster_profile_t *c, const job_files_t *f)
{
    char text[256];
    transfer_summary_t would = f->plan.left;
    for (size_t i = 0; i < f->plan.count; i++)
        would.sent += !f->plan.entries[i].is_dir;
    would.sent_bytes = f->plan.bytes;
    transfer_summary_text(&would, "would upload (what changed of)", text, sizeof text);
    printf("%s: %s from %s to %s\n", c->name, text, f->local_dir, f->remote_dir);
    printf("%s: would install ddpjob %s in ~/.local/share/ddpjob/%s where missing, then %s "
           "%s there; nothing was sent\n",
           c->name, DDPJOB_VERSION, DDPJOB_VERSION, command, f->spec_there);
}

/* The command's output passed on as it comes, and the last line of its stdout kept. */
typedef struct {
    char last[256];
    size_t len;
    int line_ended;
} last_line_t;

static void pass_keeping_last(void *arg, int stream, const char *data, size_t len)
{
    last_line_t *l = arg;
    fwrite(data, 1, len, stream ? stderr : stdout);
    fflush(stream ? stderr : stdout);
    for (size_t i = 0; !stream && i < len; i++) {
        if (data[i] == '\n') {
            l->line_ended = 1;
            continue;
        }
        if (l->line_ended)
            l->len = 0;
        l->line_ended = 0;
        if (l->len + 1 < sizeof l->last)
            l->last[l->len++] = data[i];
    }
    l->last[l->len] = '\0';
}

/* Submit's steps there (or dev's), in one login: install, upload, the command, its output
 * passed on as it comes within wait_ms; then the local index. */
static int submit_there(const cluster_profile_t *c, const host_options_t *ho,
                        const job_spec_t *spec, char **words, int n, int dry_run,
                        uint64_t max_upload, int64_t wait_ms, int pipeline)
{
    const char *command = words[0];
    job_files_t f = {0};
    ddp_error_t err;
    ssh_target_t t;
    ssh_session_t *s = NULL;
    char *line = NULL;
    int rc = EXIT_SYSTEM;
    if (remote_job_files(command, c, spec, max_upload, &f)) {
        rc = EXIT_INVALID_SPEC;
    } else if (dry_run) {
        say_dry_run(command, c, &f);
        rc = EXIT_OK;
    } else if (!(s = cluster_login(c, ho, &t, &err))) {
        fprintf(stderr, "ddpjob %s: %s: %s\n", command, c->name, err.msg);
        rc = EXIT_NO_LINK;
    } else if ((rc = remote_send_job(command, s, c, &f)) == EXIT_OK) {
        words[n++] = f.spec_there;
        /* A pipeline's stages are submitted from its folder there: their workdir. */
        line = remote_ddpjob_command(c->name, f.remote_dir, words, n,
                                     pipeline ? "" : " --set \"workdir=$PWD\"");
        last_line_t last = {.line_ended = 1};
        int64_t deadline = ddp_deadline_in(wait_ms);
        int done = line ? ssh_session_exec(s, line, NULL, 0, deadline, &err) : -1;
        if (!line)
            ddp_error_set(&err, "out of memory");
        while (done == 0 && ddp_ms_left(deadline) > 0)
            done = ssh_session_pump(s, 1000, pass_keeping_last, &last, &err);
        if (done == 0)
            ddp_error_set(&err, "no answer within %lld s", (long long)wait_ms / 1000);
        if (done != 1) {
            fprintf(stderr,
                    "ddpjob %s: %s: %s (the job may have been submitted there: ddpjob list "
                    "--on %s)\n",
                    command, c->name, err.msg, c->name);
            rc = EXIT_NO_LINK;
        } else if ((rc = ssh_session_exit_status(s)) == EXIT_OK || rc == 124) {
            note_job(command, c, &f, last.last);
        }
    }
    free(line);
    if (s)
        ssh_session_close(s);
    remote_job_files_free(&f);
    return rc;
}

/* submit --on, and dev --on (the allocation submitted there, this waiting with it). */
static int remote_submit(unsigned flags, int argc, char **argv, const cluster_profile_t *c,
                         const host_options_t *ho)
{
    const char *command = argv[0];
    int n = 0, dry_run = 0, nkept = 0, is_dev = !!(flags & CMD_HOLDS);
    uint64_t max_upload = MAX_UPLOAD_DEFAULT;
    int64_t wait_ms = SHORT_COMMAND_MS;
    /* Words for the command there alone: --after names jobs on the cluster (the submit there
     * finds them, not the render here); dev's --idle and --wait-for are dev's. */
    static const char *const kept_there[] = {"--after", "--idle", "--wait-for"};
    char **kept = malloc(((size_t)argc + 1) * sizeof *kept);
    if (!kept)
        return EXIT_SYSTEM;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--template") || !strcmp(argv[i], "--bindir") ||
            !strcmp(argv[i], "--retry-failed") || !strncmp(argv[i], "--template=", 11) ||
            !strncmp(argv[i], "--bindir=", 9)) {
            fprintf(stderr, "ddpjob %s: %s names this machine's files: not with --on\n", command,
                    argv[i]);
            free(kept);
            return EXIT_USAGE;
        }
        const char *cap = NULL, *value = NULL;
        size_t k = 0, len = 0;
        for (; k < sizeof kept_there / sizeof *kept_there; k++)
            if (!strncmp(argv[i], kept_there[k], len = strlen(kept_there[k])) &&
                (argv[i][len] == '=' || !argv[i][len]) && (k == 0 || is_dev))
                break;
        if (!strncmp(argv[i], "--max-upload=", 13))
            cap = argv[i] + 13;
        else if (!strcmp(argv[i], "--max-upload"))
            cap = i + 1 < argc ? argv[++i] : "";
        if (cap) {
            if (units_parse_size(cap, &max_upload)) {
                fprintf(stderr, "ddpjob %s: --max-upload: \"%s\" is no size (e.g. 4GB)\n", command,
                        cap);
                free(kept);
                return EXIT_USAGE;
            }
        } else if (k < sizeof kept_there / sizeof *kept_there) {
            kept[nkept++] = argv[i];
            if (!argv[i][len] && i + 1 < argc)
                kept[nkept++] = argv[++i];
            value = argv[i][len] == '=' ? argv[i] + len + 1 : argv[i];
            int64_t wait_s;
            if (k == 2 && dev_parse_duration(value, &wait_s) == 0)
                wait_ms = SHORT_COMMAND_MS + wait_s * 1000;
        } else if (!strcmp(argv[i], "--dry-run")) {
            dry_run = 1;
        } else {
            argv[n++] = argv[i];
        }
    }
    argv[n] = NULL;
    if (is_dev && wait_ms == SHORT_COMMAND_MS)
        wait_ms += DEV_WAIT_DEFAULT_S * 1000;
    job_spec_t *spec = NULL;
    int pipeline = 0, rc = is_dev ? 0 : pipeline_submit_here(n, argv, &pipeline, &spec);
    if (!pipeline)
        rc = submit_render_here(n, argv, &spec);
    if (rc < 0) {
        /* getopt moved the spec, the one word that is no option, last: the kept words take its
         * place, and submit_there adds the spec's path there. */
        memcpy(argv + n - 1, kept, (size_t)nkept * sizeof *kept);
        argv[0] = (char *)command;
        rc = submit_there(c, ho, spec, argv, n - 1 + nkept, dry_run, max_upload, wait_ms, pipeline);
        spec_destroy(spec);
    }
    free(kept);
    return rc;
}

static const char fetch_help[] =
    "usage: ddpjob fetch JOB [PATH...] [--on NAME] [--to DIR]\n"
    "Brings a job submitted from here with `submit --on` back from its cluster over SFTP, getting\n"
    "only what changed: each PATH (a file or folder of the job's folder there; default: its\n"
    "checkpoints/ and .ddpjob/, the job records with their logs) into the same place in the\n"
    "folder it was submitted from (or DIR).\n"
    "  --on NAME    the cluster it must be on (default: the one the index names)\n"
    "  --accept-new-host-keys  --connect-timeout S (default 15)  --ssh-config FILE\n"
    "  --known-hosts FILE: as for cluster check\n"
    "Exit: 0 fetched, 2 usage, 3 not fetched (the job unknown here, a file not written),\n"
    "255 the cluster could not be reached or the connection was lost.\n";

int cmd_fetch(int argc, char **argv)
{
    remote_opts_t opts, *o = &opts;
    if (take_remote_options("fetch", &argc, argv, o))
        return EXIT_USAGE;
    const char *to = NULL, *job = NULL;
    char *paths[64];
    size_t n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return fputs(fetch_help, stdout), EXIT_OK;
        if (!strcmp(argv[i], "--to") && i + 1 < argc)
            to = argv[++i];
        else if (argv[i][0] == '-' || n == sizeof paths / sizeof paths[0])
            return fputs(fetch_help, stderr), EXIT_USAGE;
        else if (!job)
            job = argv[i];
        else
            paths[n++] = argv[i];
    }
    if (!job)
        return fputs(fetch_help, stderr), EXIT_USAGE;
    remote_job_t j;
    if (!remote_index_find(job, &j) || (o->cluster && strcmp(o->cluster, j.cluster))) {
        fprintf(stderr,
                "ddpjob fetch: no job \"%s\"%s%s submitted from here (`ddpjob submit --on` notes "
                "each in ~/.local/state/ddpjob/remote-jobs)\n",
                job, o->cluster ? " on " : "", o->cluster ? o->cluster : "");
        return EXIT_SYSTEM;
    }
    static char *const defaults[] = {"checkpoints", ".ddpjob"};
    cluster_profile_t c;
    int rc = remote_load_profile("fetch", j.cluster, &c);
    if (rc)
        return rc;
    ddp_error_t err;
    ssh_target_t t;
    ssh_session_t *s = cluster_login(&c, &o->ho, &t, &err);
    if (!s) {
        fprintf(stderr, "ddpjob fetch: %s: %s\n", c.name, err.msg);
        return EXIT_NO_LINK;
    }
    transfer_summary_t sum;
    char text[256];
    const char *local = to ? to : j.local_dir;
    rc = download_paths(s, j.remote_dir, n ? paths : defaults, n ? n : 2, local,
                        ddp_deadline_in(TRANSFER_MS), &sum, &err);
    transfer_summary_text(&sum, "fetched", text, sizeof text);
    if (rc)
        fprintf(stderr, "ddpjob fetch: %s: %s (%s)\n", c.name, err.msg, text);
    else
        printf("%s: %s into %s\n", c.name, text, local);
    ssh_session_close(s);
    return rc ? EXIT_SYSTEM : EXIT_OK;
}

/* One of the commands after submit, run there; `logs -f` and `wait` through a lost link. */
static int forward(unsigned flags, const cluster_profile_t *c, const host_options_t *ho, int argc,
                   char **argv)
{
    int follow = !!(flags & CMD_FOLLOWS);
    for (int i = 1; i < argc; i++)
        follow |= (flags & CMD_FOLLOWS_WITH_F) &&
                  (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--follow"));
    char *command = remote_ddpjob_command(c->name, NULL, argv, argc, NULL);
    int rc = command ? run_there(c, ho, command, follow, stdout) : EXIT_SYSTEM;
    free(command);
    return rc;
}

/* `list` on a laptop: this machine's jobs, then the jobs on each cluster it submitted to with
 * --on (those of the last day, or --all's), each cluster's under a line naming it, as `status`
 * and `logs` find them without --on. The list there is --here's, so that it goes no further. */
static int list_here_and_there(unsigned flags, int argc, char **argv, const host_options_t *ho)
{
    int all = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        all |= !strcmp(argv[i], "--all");
        json |= !strcmp(argv[i], "--json") || !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help");
    }
    int rc = cmd_list(argc, argv);
    char clusters[32][64];
    size_t n =
        rc || json ? 0 : remote_index_clusters(all ? 0 : (int64_t)time(NULL) - 86400, clusters, 32);
    for (size_t i = 0; i < n; i++) {
        printf("\n== on cluster %s (submitted from here with --on) ==\n", clusters[i]);
        fflush(stdout);
        char *there[] = {"list", "--here", all ? "--all" : NULL, NULL};
        cluster_profile_t c;
        int one = remote_load_profile("list", clusters[i], &c);
        if (one == EXIT_OK)
            one = forward(flags, &c, ho, all ? 3 : 2, there);
        if (one && !rc)
            rc = one;
    }
    return rc;
}

int remote_dispatch(unsigned flags, int argc, char **argv)
{
    const char *command = argv[0];
    int is_submit = !!(flags & CMD_SUBMITS);
    char **words = malloc(((size_t)argc + 8) * sizeof *words);
    if (!words)
        return EXIT_SYSTEM;
    memcpy(words, argv, (size_t)argc * sizeof *words);
    int n = argc;
    remote_opts_t o;
    if (take_remote_options(command, &n, words, &o)) {
        free(words);
        return EXIT_USAGE;
    }
    int held = !!(flags & CMD_HELD);
    const char *cluster = o.cluster, *job = held ? remote_dev_target(n, words) : job_word(n, words);
    if (held && !job && !(flags & CMD_HOLDS)) {
        free(words);
        if (!cluster)
            return -1;
        fprintf(stderr,
                "ddpjob %s --on: runs in an allocation held there: ddpjob %s --in DEV "
                "--on %s (ddpjob dev SPEC --on %s holds one)\n",
                command, command, cluster, cluster);
        return EXIT_USAGE;
    }
    is_submit |= held && !job;
    if (is_submit && !cluster) {
        free(words);
        return -1;
    }
    if (!cluster && (flags & CMD_ALL_CLUSTERS)) {
        int here = 0;
        for (int i = 1; i < n; i++)
            here |= !strcmp(words[i], "--here");
        int rc = here ? -1 : list_here_and_there(flags, n, words, &o.ho);
        free(words);
        return rc;
    }
    remote_job_t j;
    if (!cluster && job && !is_submit && remote_index_find(job, &j)) {
        /* A job of this machine's own goes first. */
        char *dir = NULL;
        ddp_error_t err;
        if (job_record_find(job, &dir, &err) != 0)
            cluster = j.cluster;
        free(dir);
    }
    cluster_profile_t c;
    int rc = cluster ? remote_load_profile(command, cluster, &c) : -1;
    if (cluster && rc == EXIT_OK)
        rc = is_submit                 ? remote_submit(flags, n, words, &c, &o.ho)
             : flags & CMD_BRINGS_BACK ? report_there(&c, &o.ho, n, words)
             : held                    ? remote_dev_command(n, words, &c, &o.ho)
                                       : forward(flags, &c, &o.ho, n, words);
    free(words);
    return rc;
}
