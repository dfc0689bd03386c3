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
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands/cluster_login.h"
#include "cli/commands/commands.h"
#include "cli/jobs/job_record.h"
#include "cli/jobs/remote_index.h"
#include "cli/jobs/term_text.h"
#include "cli/remote/download.h"
#include "cli/remote/remote_command.h"
#include "cli/remote/remote_install.h"
#include "cli/remote/upload.h"
#include "cli/spec/datafile.h"
#include "cli/spec/shquote.h"
#include "cli/spec/units.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"

/* How long submit's install and upload, and fetch's download, may take in all. */
#define TRANSFER_MS (60 * 60 * 1000)
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

/* What a login shell there runs: bash -l running this version's ddpjob with words[0..n) (in
 * `dir` when given, then `tail`, bash words of the script's own). The version missing there is
 * said, exit 3. */
static char *remote_ddpjob_command(const char *cluster, const char *dir, char **words, int n,
                                   const char *tail)
{
    char *dir_q = dir ? shquote(dir) : NULL, *script = NULL, *command = NULL;
    if ((dir && !dir_q) ||
        asprintf(&script,
                 "b=$HOME/.local/share/ddpjob/%s/bin/ddpjob\n"
                 "if [ ! -x \"$b\" ]; then echo \"ddpjob: ddpjob %s is not installed on %s "
                 "(~/.local/share/ddpjob/%s): ddpjob submit --on %s installs it\" >&2; exit 3; fi\n"
                 "%s%s%s"
                 "exec \"$b\" \"$@\"%s\n",
                 DDPJOB_VERSION, DDPJOB_VERSION, cluster, DDPJOB_VERSION, cluster, dir ? "d=" : "",
                 dir ? dir_q : "",
                 dir ? "\ncase $d in '~/'*) d=$HOME/${d#'~/'} ;; esac\ncd -- \"$d\" || exit 3\n"
                     : "",
                 tail ? tail : "") < 0)
        script = NULL;
    free(dir_q);
    char *script_q = script ? shquote(script) : NULL;
    free(script);
    size_t len = script_q ? strlen(script_q) + 64 : 0;
    for (int i = 0; script_q && i < n; i++)
        len += 4 * strlen(words[i]) + 3;
    char *bash = script_q ? malloc(len) : NULL;
    if (bash) {
        size_t at = (size_t)snprintf(bash, len, "exec bash -lc %s ddpjob", script_q);
        for (int i = 0; i < n; i++) {
            char *w = shquote(words[i]);
            if (!w) {
                free(bash);
                bash = NULL;
                break;
            }
            at += (size_t)snprintf(bash + at, len - at, " %s", w);
            free(w);
        }
    }
    free(script_q);
    command = bash ? shquote_for_any_shell(bash) : NULL;
    free(bash);
    return command;
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

static int load_profile(const char *command, const char *name, cluster_profile_t *c)
{
    char path[4096];
    ddp_error_t err;
    if (cluster_profile_load(name, c, path, sizeof path, &err) == 0)
        return EXIT_OK;
    fprintf(stderr, "ddpjob %s: %s\n", command, err.msg);
    return err.code == ENOENT ? EXIT_USAGE : EXIT_SYSTEM;
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

/* The spec's name as a folder's: the job's name, else the file's name less its extension. */
static int job_folder_name(const job_spec_t *spec, char *out, size_t size)
{
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", spec->path);
    snprintf(out, size, "%s", spec->name ? spec->name : basename(copy));
    if (!spec->name) {
        char *dot = strrchr(out, '.');
        if (dot && dot != out)
            *dot = '\0';
    }
    if (!*out || *out == '.' || *out == '-' ||
        strspn(out, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
            strlen(out))
        return -1;
    return 0;
}

/* What submit --on works with: the job's folder here and there, and its spec's path there; what
 * of the folder is sent. */
typedef struct {
    char folder[256], remote_dir[2048];
    char *local_dir, *spec_real, *spec_there;
    int spec_inside; /* the spec lies in the uploaded folder (else it is sent beside it) */
    upload_plan_t plan;
} job_files_t;

/* This ddpjob installed there where missing, then the job's folder sent: what changed. */
static int send_job(ssh_session_t *s, const cluster_profile_t *c, const char *prefix,
                    job_files_t *f)
{
    int64_t deadline = ddp_deadline_in(TRANSFER_MS);
    transfer_summary_t sum = {0};
    ddp_error_t err;
    char text[256];
    int installed = 0;
    if (remote_install(s, prefix, DDPJOB_VERSION, deadline, &installed, &sum, &err)) {
        fprintf(stderr, "ddpjob submit: %s: installing ddpjob %s there: %s\n", c->name,
                DDPJOB_VERSION, err.msg);
        return EXIT_SYSTEM;
    }
    if (installed)
        fprintf(stderr, "%s: installed ddpjob %s in ~/.local/share/ddpjob/%s\n", c->name,
                DDPJOB_VERSION, DDPJOB_VERSION);
    /* The user's alone there, or the team's to read (remote_share: group). */
    int group = cluster_profile_shared(c);
    const upload_place_t place = {
        .trusted = c->remote_dir, .keep = group ? 0750 : 0700, .group = group};
    char *base = f->spec_there;
    base[-1] = '\0';
    int failed =
        upload_tree(s, f->local_dir, &f->plan, f->remote_dir, &place, deadline, &sum, &err) ||
        (!f->spec_inside && upload_files(s, f->spec_real, &base, 1, f->remote_dir, &place, deadline,
                                         &(transfer_summary_t){0}, &err));
    base[-1] = '/';
    transfer_summary_text(&sum, "uploaded", text, sizeof text);
    if (failed) {
        fprintf(stderr, "ddpjob submit: %s: %s (%s); nothing submitted\n", c->name, err.msg, text);
        return EXIT_SYSTEM;
    }
    fprintf(stderr, "%s: %s to %s\n", c->name, text, f->remote_dir);
    return EXIT_OK;
}

/* The job in the laptop's remote index, with the id submit printed there last (kept only when
 * it has an id's shape). */
static void note_job(const cluster_profile_t *c, const job_files_t *f, remote_result_t *r)
{
    remote_job_t j = {.submitted = time(NULL)};
    char *last = r->out + r->out_len;
    while (last > r->out && last[-1] == '\n')
        *--last = '\0';
    last = strrchr(r->out, '\n') ? strrchr(r->out, '\n') + 1 : r->out;
    ddp_error_t err;
    int fits = set_field(j.cluster, sizeof j.cluster, c->name) &&
               set_field(j.name, sizeof j.name, f->folder) &&
               set_field(j.remote_dir, sizeof j.remote_dir, f->remote_dir) &&
               set_field(j.local_dir, sizeof j.local_dir, f->local_dir);
    if (!set_field(j.id, sizeof j.id, last) || !remote_job_valid(&j))
        j.id[0] = '\0';
    if (!fits)
        ddp_error_set(&err, "a folder's name is too long for it");
    if (!fits || remote_index_add(&j, &err))
        fprintf(stderr,
                "ddpjob submit: the job was submitted on %s, but this laptop's index could not "
                "note it (%s): use --on %s\n",
                c->name, err.msg, c->name);
}

/* The job's folders and spec, and what of the folder would be sent (no more than max_upload
 * bytes); -1 with the problem said. */
static int job_files(const cluster_profile_t *c, const job_spec_t *spec, uint64_t max_upload,
                     job_files_t *f)
{
    if (job_folder_name(spec, f->folder, sizeof f->folder)) {
        fprintf(stderr,
                "ddpjob submit: %s: the job's name \"%s\" cannot name its folder on %s (letters, "
                "digits, '.', '_' and '-')\n",
                spec->path, f->folder, c->name);
        return -1;
    }
    snprintf(f->remote_dir, sizeof f->remote_dir, "%s/%s", c->remote_dir, f->folder);
    /* A workdir the spec names for the cluster (/scratch/...) is no folder here: then this one. */
    struct stat st;
    int workdir_here = spec->workdir && stat(spec->workdir, &st) == 0 && S_ISDIR(st.st_mode);
    f->local_dir = realpath(workdir_here ? spec->workdir : ".", NULL);
    f->spec_real = realpath(spec->path, NULL);
    if (!f->local_dir || !f->spec_real) {
        fprintf(stderr, "ddpjob submit: %s: %s\n", spec->path, strerror(errno));
        return -1;
    }
    size_t dir_len = strlen(f->local_dir);
    f->spec_inside = !strncmp(f->spec_real, f->local_dir, dir_len) && f->spec_real[dir_len] == '/';
    f->spec_there = f->spec_inside ? f->spec_real + dir_len + 1 : strrchr(f->spec_real, '/') + 1;
    ddp_error_t err;
    if (upload_plan(f->local_dir, &f->plan, &err)) {
        fprintf(stderr, "ddpjob submit: %s: %s; nothing sent\n", spec->path, err.msg);
        return -1;
    }
    if (f->plan.bytes > max_upload) {
        char size[32], cap[32];
        units_format_size(f->plan.bytes, 0, size, sizeof size);
        units_format_size(max_upload, 0, cap, sizeof cap);
        fprintf(stderr,
                "ddpjob submit: %s: %s holds %s to send (%zu files and folders), over "
                "--max-upload %s: nothing sent; leave data behind in %s/.ddpjobignore, or say "
                "--max-upload %s\n",
                spec->path, f->local_dir, size, f->plan.count, cap, f->local_dir, size);
        return -1;
    }
    return 0;
}

/* --dry-run: what would be sent and run there, with no connection made. */
static void say_dry_run(const cluster_profile_t *c, const job_files_t *f)
{
    char text[256];
    transfer_summary_t would = f->plan.left;
    for (size_t i = 0; i < f->plan.count; i++)
        would.sent += !f->plan.entries[i].is_dir;
    would.sent_bytes = f->plan.bytes;
    transfer_summary_text(&would, "would upload (what changed of)", text, sizeof text);
    printf("%s: %s from %s to %s\n", c->name, text, f->local_dir, f->remote_dir);
    printf("%s: would install ddpjob %s in ~/.local/share/ddpjob/%s where missing, then submit "
           "%s there; nothing was sent\n",
           c->name, DDPJOB_VERSION, DDPJOB_VERSION, f->spec_there);
}

/* Submit's steps there, in one login: install, upload, submit; then the local index. */
static int submit_there(const cluster_profile_t *c, const host_options_t *ho,
                        const job_spec_t *spec, char **words, int n, int dry_run,
                        uint64_t max_upload)
{
    job_files_t f = {0};
    char prefix[PATH_MAX];
    ddp_error_t err;
    ssh_target_t t;
    ssh_session_t *s = NULL;
    remote_result_t *r = malloc(sizeof *r);
    char *command = NULL;
    int rc = EXIT_SYSTEM;
    if (job_files(c, spec, max_upload, &f)) {
        rc = EXIT_INVALID_SPEC;
    } else if (dry_run) {
        say_dry_run(c, &f);
        rc = EXIT_OK;
    } else if (!r || datafile_prefix(prefix, sizeof prefix, &err)) {
        fprintf(stderr, "ddpjob submit: %s\n", r ? err.msg : "out of memory");
    } else if (!(s = cluster_login(c, ho, &t, &err))) {
        fprintf(stderr, "ddpjob submit: %s: %s\n", c->name, err.msg);
        rc = EXIT_NO_LINK;
    } else if ((rc = send_job(s, c, prefix, &f)) == EXIT_OK) {
        words[n++] = f.spec_there;
        command = remote_ddpjob_command(c->name, f.remote_dir, words, n, " --set \"workdir=$PWD\"");
        if (!command) {
            fprintf(stderr, "ddpjob submit: out of memory\n");
            rc = EXIT_SYSTEM;
        } else if (remote_command_run(s, command, NULL, 0, ddp_deadline_in(SHORT_COMMAND_MS), r,
                                      &err)) {
            fprintf(stderr,
                    "ddpjob submit: %s: %s (the job may have been submitted there: ddpjob list "
                    "--on %s)\n",
                    c->name, err.msg, c->name);
            rc = EXIT_NO_LINK;
        } else {
            fputs(r->out, stdout);
            fputs(r->err, stderr);
            rc = r->status;
            if (rc == EXIT_OK)
                note_job(c, &f, r);
        }
    }
    free(command);
    free(r);
    if (s)
        ssh_session_close(s);
    upload_plan_free(&f.plan);
    free(f.local_dir);
    free(f.spec_real);
    return rc;
}

/* What submit --on sends at most unless told (--max-upload). */
#define MAX_UPLOAD_DEFAULT (1ULL << 30)

static int remote_submit(int argc, char **argv, const cluster_profile_t *c,
                         const host_options_t *ho)
{
    int n = 0, dry_run = 0, nafter = 0;
    uint64_t max_upload = MAX_UPLOAD_DEFAULT;
    /* --after names jobs on the cluster: the submit there finds them, not the render here. */
    char **after = malloc(((size_t)argc + 1) * sizeof *after);
    if (!after)
        return EXIT_SYSTEM;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--template") || !strcmp(argv[i], "--bindir") ||
            !strcmp(argv[i], "--retry-failed") || !strncmp(argv[i], "--template=", 11) ||
            !strncmp(argv[i], "--bindir=", 9)) {
            fprintf(stderr, "ddpjob submit: %s names this machine's files: not with --on\n",
                    argv[i]);
            free(after);
            return EXIT_USAGE;
        }
        const char *cap = NULL;
        if (!strncmp(argv[i], "--max-upload=", 13))
            cap = argv[i] + 13;
        else if (!strcmp(argv[i], "--max-upload"))
            cap = i + 1 < argc ? argv[++i] : "";
        if (cap) {
            if (units_parse_size(cap, &max_upload)) {
                fprintf(stderr, "ddpjob submit: --max-upload: \"%s\" is no size (e.g. 4GB)\n", cap);
                free(after);
                return EXIT_USAGE;
            }
        } else if (!strncmp(argv[i], "--after=", 8)) {
            after[nafter++] = argv[i];
        } else if (!strcmp(argv[i], "--after") && i + 1 < argc) {
            after[nafter++] = argv[i];
            after[nafter++] = argv[++i];
        } else if (!strcmp(argv[i], "--dry-run")) {
            dry_run = 1;
        } else {
            argv[n++] = argv[i];
        }
    }
    argv[n] = NULL;
    job_spec_t *spec;
    int rc = submit_render_here(n, argv, &spec);
    if (rc < 0) {
        /* getopt moved the spec, the one word that is no option, last: the --after words take
         * its place, and submit_there adds the spec's path there. */
        memcpy(argv + n - 1, after, (size_t)nafter * sizeof *after);
        rc = submit_there(c, ho, spec, argv, n - 1 + nafter, dry_run, max_upload);
        spec_destroy(spec);
    }
    free(after);
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
    int rc = load_profile("fetch", j.cluster, &c);
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
static int forward(const cluster_profile_t *c, const host_options_t *ho, int argc, char **argv)
{
    int follow = !strcmp(argv[0], "wait");
    for (int i = 1; i < argc; i++)
        follow |=
            !strcmp(argv[0], "logs") && (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--follow"));
    char *command = remote_ddpjob_command(c->name, NULL, argv, argc, NULL);
    int rc = command ? run_there(c, ho, command, follow, stdout) : EXIT_SYSTEM;
    free(command);
    return rc;
}

/* `list` on a laptop: this machine's jobs, then the jobs on each cluster it submitted to with
 * --on (those of the last day, or --all's), each cluster's under a line naming it, as `status`
 * and `logs` find them without --on. The list there is --here's, so that it goes no further. */
static int list_here_and_there(int argc, char **argv, const host_options_t *ho)
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
        int one = load_profile("list", clusters[i], &c);
        if (one == EXIT_OK)
            one = forward(&c, ho, all ? 3 : 2, there);
        if (one && !rc)
            rc = one;
    }
    return rc;
}

int remote_dispatch(int argc, char **argv)
{
    const char *command = argv[0];
    int is_submit = !strcmp(command, "submit");
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
    const char *cluster = o.cluster, *job = job_word(n, words);
    if (!cluster && !strcmp(command, "list")) {
        int here = 0;
        for (int i = 1; i < n; i++)
            here |= !strcmp(words[i], "--here");
        int rc = here ? -1 : list_here_and_there(n, words, &o.ho);
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
    int rc = cluster ? load_profile(command, cluster, &c) : -1;
    if (cluster && rc == EXIT_OK)
        rc = is_submit                    ? remote_submit(n, words, &c, &o.ho)
             : !strcmp(command, "report") ? report_there(&c, &o.ho, n, words)
                                          : forward(&c, &o.ho, n, words);
    free(words);
    return rc;
}
