#include "cli/laptop/upload.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <libssh2.h>
#include <libssh2_sftp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/ddp_file.h"
#include "cli/laptop/ignore_rules.h"
#include "cli/ssh/sftp_error.h"

/* A .ddpjobignore is a few lines: anything near this is not one. A job's folder nests a few
 * levels: a tree deeper than this is no job's (or a loop through a mount). */
enum { IGNORE_FILE_MAX = 1 << 20, COPY_CHUNK = 1 << 16, UPLOAD_DEPTH_MAX = 64 };

/* Credentials, at any depth: folders or files by their name, and folders by their path's end. */
static const char *const never_names[] = {
    ".ssh",    ".gnupg", ".aws",    ".azure",           ".kube",
    ".docker", ".netrc", ".pgpass", ".git-credentials", NULL};
static const char *const never_paths[] = {".config/ddpjob", ".config/gcloud", ".local/state/ddpjob",
                                          NULL};

bool upload_never(const char *rel)
{
    const char *base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
    for (const char *const *n = never_names; *n; n++)
        if (!strcmp(base, *n))
            return true;
    size_t len = strlen(rel);
    for (const char *const *p = never_paths; *p; p++) {
        size_t plen = strlen(*p);
        if (len >= plen && !strcmp(rel + len - plen, *p) &&
            (len == plen || rel[len - plen - 1] == '/'))
            return true;
    }
    return false;
}

/* ---- the plan, here --------------------------------------------------------------------- */

typedef struct {
    upload_plan_t *p;
    ignore_rules_t rules;
    size_t cap;
    ddp_error_t *err;
} planner_t;

static int plan_add(planner_t *w, const char *rel, const struct stat *st)
{
    if (w->p->count == w->cap) {
        size_t cap = w->cap ? 2 * w->cap : 64;
        upload_entry_t *grown = realloc(w->p->entries, cap * sizeof *grown);
        if (!grown)
            return ddp_error_set(w->err, "out of memory");
        w->p->entries = grown;
        w->cap = cap;
    }
    upload_entry_t *e = &w->p->entries[w->p->count];
    *e = (upload_entry_t){.rel = strdup(rel),
                          .is_dir = S_ISDIR(st->st_mode),
                          .size = S_ISDIR(st->st_mode) ? 0 : (uint64_t)st->st_size};
    if (!e->rel)
        return ddp_error_set(w->err, "out of memory");
    w->p->count++;
    w->p->bytes += e->size;
    return 0;
}

/* The folder open at dir_fd (taken over: closed here), `local` in messages. */
static int plan_dir(planner_t *w, int dir_fd, const char *local, const char *rel, int depth)
{
    DIR *d = fdopendir(dir_fd);
    if (!d) {
        close(dir_fd);
        return ddp_error_set(w->err, "%s: %s", local, strerror(errno));
    }
    if (depth > UPLOAD_DEPTH_MAX) {
        closedir(d);
        return ddp_error_set(w->err,
                             "%s: folders nested deeper than %d: not a job's folder (a "
                             "mount of the remote folder inside it?)",
                             local, UPLOAD_DEPTH_MAX);
    }
    int rc = 0;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat st;
        char sub_rel[4096], sub_local[4096];
        if (snprintf(sub_rel, sizeof sub_rel, "%s%s%s", rel, *rel ? "/" : "", e->d_name) >=
                (int)sizeof sub_rel ||
            snprintf(sub_local, sizeof sub_local, "%s/%s", local, e->d_name) >=
                (int)sizeof sub_local) {
            rc = ddp_error_set(w->err, "%s/%s: path too long", local, e->d_name);
        } else if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
            rc = ddp_error_set(w->err, "%s: %s", sub_local, strerror(errno));
        } else if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            w->p->left.not_regular++;
        } else if (upload_never(sub_rel)) {
            w->p->left.credentials++;
        } else if (ignore_rules_skip(&w->rules, sub_rel, S_ISDIR(st.st_mode))) {
            w->p->left.ignored++;
        } else if ((rc = plan_add(w, sub_rel, &st)) == 0 && S_ISDIR(st.st_mode)) {
            int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            rc = fd < 0 ? ddp_error_set(w->err, "%s: %s", sub_local, strerror(errno))
                        : plan_dir(w, fd, sub_local, sub_rel, depth + 1);
        }
    }
    closedir(d);
    return rc;
}

static int read_rules(const char *local_dir, ignore_rules_t *rules, ddp_error_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/.ddpjobignore", local_dir);
    char *text =
        access(path, F_OK) == 0 ? ddp_read_file_max(path, IGNORE_FILE_MAX, NULL, err) : NULL;
    if (!text && access(path, F_OK) == 0)
        return -1;
    int rc = ignore_rules_parse(text, rules, err);
    free(text);
    return rc;
}

/* A home folder holds the user's keys and everything else: never sent whole. */
static int holds_home(const char *local_dir, ddp_error_t *err)
{
    const char *home = getenv("HOME");
    struct passwd *pw = getpwuid(getuid());
    const char *homes[] = {home, pw ? pw->pw_dir : NULL};
    char *local = realpath(local_dir, NULL);
    int rc = 0;
    for (size_t i = 0; local && !rc && i < 2; i++) {
        char *h = homes[i] && *homes[i] ? realpath(homes[i], NULL) : NULL;
        size_t len = strlen(local);
        if (h && !strncmp(h, local, len) && (h[len] == '\0' || h[len] == '/' || len == 1))
            rc = ddp_error_set(err,
                               "%s is %s: the upload would send all of it (keys among it); run "
                               "from the job's own folder, or give the spec a workdir: that is a "
                               "folder here",
                               local,
                               h[len] ? "a folder above your home folder" : "your home folder");
        free(h);
    }
    free(local);
    return rc;
}

int upload_plan(const char *local_dir, upload_plan_t *p, ddp_error_t *err)
{
    memset(p, 0, sizeof *p);
    planner_t w = {.p = p, .err = err};
    if (holds_home(local_dir, err) || read_rules(local_dir, &w.rules, err))
        return -1;
    int fd = open(local_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = fd < 0 ? ddp_error_set(err, "%s: %s", local_dir, strerror(errno))
                    : plan_dir(&w, fd, local_dir, "", 0);
    ignore_rules_free(&w.rules);
    if (rc)
        upload_plan_free(p);
    return rc ? -1 : 0;
}

void upload_plan_free(upload_plan_t *p)
{
    for (size_t i = 0; i < p->count; i++)
        free(p->entries[i].rel);
    free(p->entries);
    p->entries = NULL;
    p->count = 0;
}

/* ---- the transfer, there ---------------------------------------------------------------- */

typedef struct {
    ssh_session_t *s;
    LIBSSH2_SESSION *session;
    LIBSSH2_SFTP *sftp;
    const upload_place_t *place;
    const char *trusted; /* place->trusted as SFTP takes it */
    unsigned long uid;   /* the login's, as its home's owner */
    transfer_summary_t *sum;
    ddp_error_t *err;
} uploader_t;

static int refused(uploader_t *u, int rc, const char *what, const char *path)
{
    return sftp_refused(ssh_session_where(u->s), u->session, u->sftp, rc, what, path, u->err);
}

/* Whether `remote` is the trusted folder or lies in it. */
static int under_trusted(const uploader_t *u, const char *remote)
{
    size_t len = strlen(u->trusted);
    return !strncmp(remote, u->trusted, len) && (remote[len] == '\0' || remote[len] == '/');
}

/* A folder found there, in the place: the login's own, closed to others (a team's trusted
 * folder: group-writable only when setgid and sticky); nothing is sent into one that is not. */
static int trust_dir(uploader_t *u, const char *remote, const LIBSSH2_SFTP_ATTRIBUTES *a)
{
    int root = !strcmp(remote, u->trusted);
    return sftp_trusted_dir(
        ssh_session_where(u->s), remote, a, u->uid, u->place->group && root,
        !u->place->group && root ? "; a team's shared folder: --remote-share group" : "", u->err);
}

/* remote's folder, made with the place's mode where missing; a link there is not written
 * through; one found in the place is trusted or refused. */
static int ensure_dir(uploader_t *u, const char *remote)
{
    LIBSSH2_SFTP_ATTRIBUTES a;
    int in_place = under_trusted(u, remote);
    int rc = libssh2_sftp_lstat(u->sftp, remote, &a);
    if (rc == 0) {
        if (!LIBSSH2_SFTP_S_ISDIR(a.permissions))
            return ddp_error_set(u->err, "%s: %s is there and is no folder%s: not written through",
                                 ssh_session_where(u->s), remote,
                                 LIBSSH2_SFTP_S_ISLNK(a.permissions) ? " (a link)" : "");
        return in_place ? trust_dir(u, remote, &a) : 0;
    }
    if (libssh2_sftp_last_error(u->sftp) != LIBSSH2_FX_NO_SUCH_FILE)
        return refused(u, rc, "cannot look at", remote);
    unsigned mode = in_place && u->place->group ? 02750 : 0700;
    if ((rc = libssh2_sftp_mkdir(u->sftp, remote, (long)mode)))
        return refused(u, rc, "cannot make the folder", remote);
    /* mkdir there is under the server's umask; a team's folder hands its setgid bit down, which
     * a chmod by a user outside its group would drop: the mode is set only where it differs. */
    LIBSSH2_SFTP_ATTRIBUTES set = {.flags = LIBSSH2_SFTP_ATTR_PERMISSIONS, .permissions = mode};
    if ((rc = libssh2_sftp_lstat(u->sftp, remote, &a)))
        return refused(u, rc, "cannot look at", remote);
    return (a.permissions & 0777) != (mode & 0777) &&
                   (rc = libssh2_sftp_setstat(u->sftp, remote, &set))
               ? refused(u, rc, "cannot set the mode of", remote)
               : 0;
}

/* mkdir -p of the remote root, component by component. */
static int ensure_root(uploader_t *u, const char *root)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", root);
    for (char *slash = path + 1; (slash = strchr(slash, '/')); slash++) {
        *slash = '\0';
        if (ensure_dir(u, path))
            return -1;
        *slash = '/';
    }
    return ensure_dir(u, path);
}

static unsigned file_mode(const uploader_t *u, mode_t local)
{
    return (unsigned)((local & u->place->keep) | S_IRUSR | S_IWUSR);
}

static int unchanged(uploader_t *u, const char *remote, const struct stat *st)
{
    LIBSSH2_SFTP_ATTRIBUTES a;
    return libssh2_sftp_lstat(u->sftp, remote, &a) == 0 && LIBSSH2_SFTP_S_ISREG(a.permissions) &&
           a.filesize == (uint64_t)st->st_size && a.mtime == (unsigned long)st->st_mtime &&
           (a.permissions & 07777) == file_mode(u, st->st_mode);
}

static int copy_to(uploader_t *u, int fd, LIBSSH2_SFTP_HANDLE *h, const char *remote)
{
    static char chunk[COPY_CHUNK];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) > 0)
        for (ssize_t done = 0; done < n;) {
            ssize_t w = libssh2_sftp_write(h, chunk + done, (size_t)(n - done));
            if (w < 0)
                return refused(u, (int)w, "cannot write", remote);
            done += w;
        }
    return n < 0
               ? ddp_error_set(u->err, "reading the local file for %s: %s", remote, strerror(errno))
               : 0;
}

/* One file, `local` opened without following a link: written under a temporary name (made
 * fresh: a link there is removed, not followed), given its mode and times on that handle, then put
 * in place. */
static int send_file(uploader_t *u, const char *local, const char *remote)
{
    int fd = open(local, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        int rc = ddp_error_set(u->err, "%s: %s", local,
                               fd < 0 ? strerror(errno) : "no longer a regular file");
        if (fd >= 0)
            close(fd);
        return rc;
    }
    if (unchanged(u, remote, &st)) {
        close(fd);
        u->sum->unchanged++;
        return 0;
    }
    char part[4200];
    snprintf(part, sizeof part, "%s.ddpjob-upload", remote);
    libssh2_sftp_unlink(u->sftp, part);
    LIBSSH2_SFTP_HANDLE *h = libssh2_sftp_open_ex(
        u->sftp, part, (unsigned)strlen(part),
        LIBSSH2_FXF_WRITE | LIBSSH2_FXF_CREAT | LIBSSH2_FXF_EXCL, 0600, LIBSSH2_SFTP_OPENFILE);
    int rc = h ? copy_to(u, fd, h, remote) : refused(u, 0, "cannot create", part);
    close(fd);
    LIBSSH2_SFTP_ATTRIBUTES a = {
        .flags = LIBSSH2_SFTP_ATTR_PERMISSIONS | LIBSSH2_SFTP_ATTR_ACMODTIME,
        .permissions = file_mode(u, st.st_mode),
        .atime = (unsigned long)st.st_atime,
        .mtime = (unsigned long)st.st_mtime,
    };
    int step;
    if (!rc && (step = libssh2_sftp_fsetstat(h, &a)))
        rc = refused(u, step, "cannot set the mode and time of", remote);
    if (h && libssh2_sftp_close(h) && !rc)
        rc = refused(u, 0, "cannot finish writing", remote);
    /* SFTP's rename keeps an existing target (OpenSSH), and libssh2 1.10 has no posix-rename. */
    libssh2_sftp_unlink(u->sftp, remote);
    if (!rc && (step = libssh2_sftp_rename_ex(
                    u->sftp, part, (unsigned)strlen(part), remote, (unsigned)strlen(remote),
                    LIBSSH2_SFTP_RENAME_OVERWRITE | LIBSSH2_SFTP_RENAME_ATOMIC |
                        LIBSSH2_SFTP_RENAME_NATIVE)))
        rc = refused(u, step, "cannot put in place", remote);
    if (rc) {
        libssh2_sftp_unlink(u->sftp, part);
        return -1;
    }
    u->sum->sent++;
    u->sum->sent_bytes += (uint64_t)st.st_size;
    return 0;
}

/* SFTP started on s's login, the login's uid learnt; *root is remote_dir as SFTP takes it (paths
 * without a leading '/' are from the login's home), made or trusted. */
static int start(uploader_t *u, const char *remote_dir, int64_t deadline, const char **root)
{
    *root = sftp_path(remote_dir);
    u->trusted = sftp_path(u->place->trusted);
    u->session = ssh_session_libssh2(u->s, deadline);
    u->sftp = libssh2_sftp_init(u->session);
    if (!u->sftp)
        return refused(u, 0, "cannot start SFTP for", *root);
    return sftp_login_uid(ssh_session_where(u->s), u->session, u->sftp, &u->uid, u->err) ||
                   ensure_root(u, *root)
               ? -1
               : 0;
}

int upload_tree(ssh_session_t *s, const char *local_dir, const upload_plan_t *p,
                const char *remote_dir, const upload_place_t *place, int64_t deadline,
                transfer_summary_t *sum, ddp_error_t *err)
{
    *sum = p->left;
    sum->sent = sum->unchanged = 0;
    sum->sent_bytes = 0;
    uploader_t u = {.s = s, .place = place, .sum = sum, .err = err};
    const char *root;
    int rc = start(&u, remote_dir, deadline, &root);
    for (size_t i = 0; !rc && i < p->count; i++) {
        const upload_entry_t *e = &p->entries[i];
        char local[8192], remote[8192];
        if (snprintf(local, sizeof local, "%s/%s", local_dir, e->rel) >= (int)sizeof local ||
            snprintf(remote, sizeof remote, "%s/%s", root, e->rel) >= (int)sizeof remote)
            rc = ddp_error_set(err, "%s: path too long", e->rel);
        else
            rc = e->is_dir ? ensure_dir(&u, remote) : send_file(&u, local, remote);
    }
    if (u.sftp)
        libssh2_sftp_shutdown(u.sftp);
    return rc ? -1 : 0;
}

/* One listed file: its folders made, then the file itself. */
static int send_listed(uploader_t *u, const char *local_root, const char *path, const char *root)
{
    if (!*path || path[0] == '/' || strstr(path, "..") || strstr(path, "//"))
        return ddp_error_set(u->err, "\"%s\": not a path inside %s", path, local_root);
    char local[4096], remote[4096];
    if (snprintf(local, sizeof local, "%s/%s", local_root, path) >= (int)sizeof local ||
        snprintf(remote, sizeof remote, "%s/%s", root, path) >= (int)sizeof remote)
        return ddp_error_set(u->err, "%s: path too long", path);
    for (char *slash = strchr(remote + strlen(root) + 1, '/'); slash;
         slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        int rc = ensure_dir(u, remote);
        *slash = '/';
        if (rc)
            return -1;
    }
    return send_file(u, local, remote);
}

int upload_files(ssh_session_t *s, const char *local_root, char *const *paths, size_t n,
                 const char *remote_dir, const upload_place_t *place, int64_t deadline,
                 transfer_summary_t *sum, ddp_error_t *err)
{
    memset(sum, 0, sizeof *sum);
    uploader_t u = {.s = s, .place = place, .sum = sum, .err = err};
    const char *root;
    int rc = start(&u, remote_dir, deadline, &root);
    for (size_t i = 0; !rc && i < n; i++)
        rc = send_listed(&u, local_root, paths[i], root);
    if (u.sftp)
        libssh2_sftp_shutdown(u.sftp);
    return rc ? -1 : 0;
}

void transfer_summary_text(const transfer_summary_t *sum, const char *verb, char *out, size_t size)
{
    int n = snprintf(out, size, "%s %zu file%s, %llu KiB; %zu unchanged", verb, sum->sent,
                     sum->sent == 1 ? "" : "s",
                     (unsigned long long)((sum->sent_bytes + 1023) / 1024), sum->unchanged);
    if (n > 0 && (size_t)n < size && (sum->ignored || sum->not_regular || sum->credentials))
        n += snprintf(out + n, size - (size_t)n,
                      "; left behind: %zu ignored, %zu links or other files", sum->ignored,
                      sum->not_regular);
    if (n > 0 && (size_t)n < size && sum->credentials)
        n += snprintf(out + n, size - (size_t)n, ", %zu of credentials (never sent)",
                      sum->credentials);
    if (n > 0 && (size_t)n < size && sum->missing)
        n += snprintf(out + n, size - (size_t)n, "; %zu not there", sum->missing);
    if (n > 0 && (size_t)n < size && sum->untrusted)
        snprintf(out + n, size - (size_t)n, "; %zu folder%s others can write left there",
                 sum->untrusted, sum->untrusted == 1 ? "" : "s");
}
