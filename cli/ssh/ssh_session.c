#include "cli/ssh/ssh_session.h"

#include <errno.h>
#include <libssh2.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_file.h"
#include "runtime/base/ddp_hmac.h"
#include "runtime/base/ddp_net.h"
#include "runtime/base/ddp_parse.h"
#include "runtime/base/ddp_portable.h"

struct ssh_session {
    int fd;
    LIBSSH2_SESSION *session;
    LIBSSH2_CHANNEL *channel;
    char where[800]; /* alias (user@hostname:port) for messages */
    /* Reached through a jump host: `via`'s session carries this one's bytes in `tunnel` (a
     * direct-tcpip channel), which a thread of its own bridges to this session's socket (one
     * end of a socketpair, bridge_fd the other). */
    ssh_session_t *via;
    LIBSSH2_CHANNEL *tunnel;
    int bridge_fd;
    pthread_t bridge;
    int bridging;
};

int ssh_session_init(ddp_error_t *err)
{
    if (libssh2_init(0))
        return ddp_error_set(err, "libssh2 cannot start");
    return 0;
}

/* Blocking libssh2 calls give up at the deadline (at least 1 ms from now). */
static void set_deadline(ssh_session_t *s, int64_t deadline)
{
    int64_t left = ddp_ms_left(deadline);
    libssh2_session_set_timeout(s->session, left > 0 ? left : 1);
}

/* libssh2's last error, behind what failed; code as ddp_error_code's. */
static int session_error(ssh_session_t *s, int code, const char *what, ddp_error_t *err)
{
    char *msg = NULL;
    libssh2_session_last_error(s->session, &msg, NULL, 0);
    return ddp_error_code(err, code, "%s: %s: %s", s->where, what, msg && *msg ? msg : "failed");
}

/* OpenSSH's form: "SHA256:" and the base64 of the 32 bytes, without padding. */
static void fingerprint(ssh_session_t *s, char *out, size_t size)
{
    const char *h = libssh2_hostkey_hash(s->session, LIBSSH2_HOSTKEY_HASH_SHA256);
    char b64[4 * ((DDP_SHA256_LEN + 2) / 3) + 1] = "?";
    if (h)
        ddp_base64(h, DDP_SHA256_LEN, b64, 0);
    snprintf(out, size, "SHA256:%s", b64);
}

/* Each host key type libssh2 reports: its known_hosts mask, and OpenSSH's name for it. */
static const struct {
    int type, mask;
    const char *name;
} key_types[] = {
    {LIBSSH2_HOSTKEY_TYPE_RSA, LIBSSH2_KNOWNHOST_KEY_SSHRSA, "ssh-rsa"},
    {LIBSSH2_HOSTKEY_TYPE_DSS, LIBSSH2_KNOWNHOST_KEY_SSHDSS, "ssh-dss"},
    {LIBSSH2_HOSTKEY_TYPE_ECDSA_256, LIBSSH2_KNOWNHOST_KEY_ECDSA_256, "ecdsa-sha2-nistp256"},
    {LIBSSH2_HOSTKEY_TYPE_ECDSA_384, LIBSSH2_KNOWNHOST_KEY_ECDSA_384, "ecdsa-sha2-nistp384"},
    {LIBSSH2_HOSTKEY_TYPE_ECDSA_521, LIBSSH2_KNOWNHOST_KEY_ECDSA_521, "ecdsa-sha2-nistp521"},
    {LIBSSH2_HOSTKEY_TYPE_ED25519, LIBSSH2_KNOWNHOST_KEY_ED25519, "ssh-ed25519"},
};

static int key_type_mask(int type)
{
    for (size_t i = 0; i < sizeof key_types / sizeof key_types[0]; i++)
        if (key_types[i].type == type)
            return key_types[i].mask;
    return LIBSSH2_KNOWNHOST_KEY_UNKNOWN;
}

static const char *key_type_name(int type)
{
    for (size_t i = 0; i < sizeof key_types / sizeof key_types[0]; i++)
        if (key_types[i].type == type)
            return key_types[i].name;
    return "?";
}

/* How known_hosts holds `key` under any of the host's names: a mismatch under one name is a
 * mismatch whatever another says, and a host known only with keys of another type has changed
 * too (an attacker offers the type it holds). */
enum { KEY_UNKNOWN, KEY_KNOWN, KEY_CHANGED, KEY_OTHER_TYPE };

static int known_as(LIBSSH2_KNOWNHOSTS *kh, const char *const *names, int port, const char *key,
                    size_t len, int type, struct libssh2_knownhost **differing)
{
    int verdict = KEY_UNKNOWN, plain = LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW;
    for (int i = 0; names[i]; i++) {
        int typed = libssh2_knownhost_checkp(kh, names[i], port, key, len, plain | type, differing);
        if (typed == LIBSSH2_KNOWNHOST_CHECK_MISMATCH)
            return KEY_CHANGED;
        if (typed == LIBSSH2_KNOWNHOST_CHECK_MATCH)
            verdict = KEY_KNOWN;
    }
    for (int i = 0; verdict == KEY_UNKNOWN && names[i]; i++)
        if (libssh2_knownhost_checkp(kh, names[i], port, key, len, plain, differing) ==
            LIBSSH2_KNOWNHOST_CHECK_MISMATCH)
            return KEY_OTHER_TYPE;
    return verdict;
}

/* Whether the comma-separated host field of a known_hosts line names `want` exactly. */
static int field_names(const char *field, size_t field_len, const char *want)
{
    size_t n = strlen(want);
    for (const char *p = field, *end = field + field_len; p < end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t item = (size_t)((comma ? comma : end) - p);
        if (item == n && !memcmp(p, want, n))
            return 1;
        p += item + 1;
    }
    return 0;
}

/* The number of known_hosts' line holding `entry`, for the user who must mend it: its key type
 * and key as libssh2 writes them back, under its host field (hashed: the same; plain: a
 * comma-separated field that names the entry's one name). 0 when none is found. */
static int line_of_entry(const char *path, LIBSSH2_KNOWNHOSTS *kh, struct libssh2_knownhost *entry)
{
    char want[8192];
    size_t n = 0;
    if (!entry || libssh2_knownhost_writeline(kh, entry, want, sizeof want, &n,
                                              LIBSSH2_KNOWNHOST_FILE_OPENSSH))
        return 0;
    size_t host_len = strcspn(want, " "), key_len = host_len;
    if (want[key_len])
        key_len += 1 + strcspn(want + key_len + 1, " \n");
    if (want[key_len] == ' ')
        key_len += 1 + strcspn(want + key_len + 1, " \n");
    want[host_len] = '\0';
    const char *key = want + host_len + 1;
    size_t type_key_len = key_len - host_len - 1;
    ddp_error_t err;
    char *text = ddp_read_file_max(path, 64 << 20, NULL, &err);
    int found = 0, number = 0;
    for (char *line = text, *next; line && !found; line = next) {
        number++;
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        line += strspn(line, " \t");
        size_t field = strcspn(line, " \t");
        const char *rest = line + field + strspn(line + field, " \t");
        int host_ok = want[0] == '|' ? field == host_len && !memcmp(line, want, host_len)
                                     : field_names(line, field, want);
        found = host_ok && !strncmp(rest, key, type_key_len) &&
                (!rest[type_key_len] || rest[type_key_len] == ' ' || rest[type_key_len] == '\t');
    }
    free(text);
    return found ? number : 0;
}

/* libssh2 1.10 reads no known_hosts line whose one name is shorter than 3 characters (its
 * PR #1500), so for such a name the file's plain lines are read here, as OpenSSH reads them: a
 * line with this key is a match; else one of the key's type is a changed key, else one of
 * another type. */
static int known_as_short(const char *path, const char *const *names, int port, const char *key,
                          size_t len, int type, int *line_number)
{
    int number = 0;
    int verdict = KEY_UNKNOWN, any_short = 0;
    for (int i = 0; names[i]; i++)
        any_short |= strlen(names[i]) < 3;
    if (!any_short)
        return verdict;
    ddp_error_t err;
    char *text = ddp_read_file_max(path, 64 << 20, NULL, &err);
    char *b64 = text ? malloc(4 * ((len + 2) / 3) + 1) : NULL;
    if (!b64) {
        free(text);
        return verdict;
    }
    ddp_base64(key, len, b64, 1);
    const char *type_name = key_type_name(type);
    for (char *line = text, *next; line && verdict != KEY_KNOWN; line = next) {
        number++;
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        char *host = line + strspn(line, " \t"), *kind, *blob;
        size_t host_len = strcspn(host, " \t");
        if (*host == '#' || *host == '@' || *host == '|' || !host[host_len])
            continue;
        kind = host + host_len + strspn(host + host_len, " \t");
        blob = kind + strcspn(kind, " \t");
        blob += strspn(blob, " \t");
        for (int i = 0; names[i]; i++) {
            char want[300];
            if (strlen(names[i]) >= 3)
                continue;
            if (port == 22)
                snprintf(want, sizeof want, "%s", names[i]);
            else
                snprintf(want, sizeof want, "[%s]:%d", names[i], port);
            if (!field_names(host, host_len, want))
                continue;
            size_t kind_len = strcspn(kind, " \t"), blob_len = strcspn(blob, " \t\r");
            int same_type = kind_len == strlen(type_name) && !memcmp(kind, type_name, kind_len);
            if (same_type && blob_len == strlen(b64) && !memcmp(blob, b64, blob_len))
                verdict = KEY_KNOWN;
            else if (same_type)
                verdict = KEY_CHANGED, *line_number = number;
            else if (verdict == KEY_UNKNOWN)
                verdict = KEY_OTHER_TYPE, *line_number = number;
        }
    }
    free(b64);
    free(text);
    return verdict;
}

/* Appends the new key's line to known_hosts (open on fd, locked), on a line of its own. */
static int append_known_host(ssh_session_t *s, LIBSSH2_KNOWNHOSTS *kh, int fd, const char *path,
                             const char *name, const char *key, size_t len, int mask,
                             ddp_error_t *err)
{
    struct libssh2_knownhost *added = NULL;
    char line[8192 + 1];
    size_t n = 0;
    struct stat st;
    char last = '\n';
    if (libssh2_knownhost_addc(kh, name, NULL, key, len, NULL, 0, mask, &added) ||
        libssh2_knownhost_writeline(kh, added, line + 1, sizeof line - 1, &n,
                                    LIBSSH2_KNOWNHOST_FILE_OPENSSH))
        return session_error(s, 0, "cannot add the new host key", err);
    if (fstat(fd, &st) == 0 && st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) != 1)
        last = '\n';
    line[0] = '\n';
    const char *from = last == '\n' ? line + 1 : line;
    n += last != '\n';
    if (write(fd, from, n) != (ssize_t)n)
        return ddp_error_set(err, "cannot append to %s: %s", path, strerror(errno));
    return 0;
}

/* known_hosts is read, checked and added to under one lock (a mutex for this process's launch
 * threads, flock for other processes): each adds its own line to the file as it is, and none
 * loses another's or decides on half of it. */
static pthread_mutex_t known_hosts_lock = PTHREAD_MUTEX_INITIALIZER;

static int check_host_key(ssh_session_t *s, const char *alias, const ssh_target_t *t,
                          const char *known_hosts, int accept_new, int64_t deadline,
                          ddp_error_t *err)
{
    size_t len;
    int type;
    const char *key = libssh2_session_hostkey(s->session, &len, &type);
    if (!key)
        return session_error(s, 0, "no host key", err);
    LIBSSH2_KNOWNHOSTS *kh = libssh2_knownhost_init(s->session);
    if (!kh)
        return ddp_error_set(err, "out of memory");
    char fp[80];
    fingerprint(s, fp, sizeof fp);
    pthread_mutex_lock(&known_hosts_lock);
    int fd = accept_new
                 ? open(known_hosts, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600)
                 : open(known_hosts, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int rc = 0;
    if (fd < 0 && (accept_new || errno != ENOENT)) {
        rc = ddp_error_set(err, "%s: %s", known_hosts, strerror(errno));
        goto out;
    }
    /* Another process holds the file no longer than the caller's deadline allows. */
    while (fd >= 0 && flock(fd, (accept_new ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
        if (ddp_ms_left(deadline) == 0) {
            rc =
                ddp_error_set(err, "%s: locked by another process until the deadline", known_hosts);
            goto out;
        }
        ddp_sleep_ms(10);
    }
    libssh2_knownhost_readfile(kh, known_hosts, LIBSSH2_KNOWNHOST_FILE_OPENSSH);
    const char *names[] = {t->hostname, strcmp(alias, t->hostname) ? alias : NULL, NULL};
    int mask = key_type_mask(type), short_line = 0;
    struct libssh2_knownhost *differing = NULL;
    int verdict = known_as(kh, names, t->port, key, len, mask, &differing),
        short_names = known_as_short(known_hosts, names, t->port, key, len, type, &short_line);
    int line = verdict == KEY_CHANGED || verdict == KEY_OTHER_TYPE
                   ? line_of_entry(known_hosts, kh, differing)
                   : 0;
    /* A changed key under either reading is a changed key. */
    if (short_names == KEY_CHANGED || short_names == KEY_OTHER_TYPE ||
        (short_names == KEY_KNOWN && verdict == KEY_UNKNOWN)) {
        verdict = short_names;
        line = line ? line : short_line;
    }
    if (verdict == KEY_CHANGED || verdict == KEY_OTHER_TYPE) {
        char at[32] = "";
        if (line)
            snprintf(at, sizeof at, ":%d", line);
        rc = ddp_error_set(
            err,
            "%s: the host key CHANGED (now %s%s): not what %s%s says; if the host was "
            "reinstalled, remove that line (ssh-keygen -R %s), else someone may be in the middle",
            s->where, fp,
            verdict == KEY_OTHER_TYPE ? ", of a type the host was not known with" : "", known_hosts,
            at, alias);
    } else if (verdict == KEY_UNKNOWN && !accept_new) {
        rc = ddp_error_set(err,
                           "%s: unknown host key %s (not in %s): check it, then add it "
                           "(ssh-keyscan, or --accept-new-host-keys)",
                           s->where, fp, known_hosts);
    } else if (verdict == KEY_UNKNOWN) {
        char name[300];
        if (t->port == 22)
            snprintf(name, sizeof name, "%s", alias);
        else
            snprintf(name, sizeof name, "[%s]:%d", alias, t->port);
        rc = append_known_host(s, kh, fd, known_hosts, name, key, len,
                               LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | mask,
                               err);
        if (rc == 0)
            fprintf(stderr, "ddpjob launch: %s: added host key %s to %s\n", s->where, fp,
                    known_hosts);
    }
out:
    if (fd >= 0)
        close(fd);
    pthread_mutex_unlock(&known_hosts_lock);
    libssh2_knownhost_free(kh);
    return rc;
}

static int authenticate(ssh_session_t *s, const ssh_target_t *t, ddp_error_t *err)
{
    LIBSSH2_AGENT *agent = getenv("SSH_AUTH_SOCK") ? libssh2_agent_init(s->session) : NULL;
    char tried[2048] = "";
    size_t at = 0;
    int agent_keys = 0;
    if (agent && libssh2_agent_connect(agent) == 0 && libssh2_agent_list_identities(agent) == 0) {
        struct libssh2_agent_publickey *id = NULL, *prev = NULL;
        while (libssh2_agent_get_identity(agent, &id, prev) == 0) {
            agent_keys++;
            if (libssh2_agent_userauth(agent, t->user, id) == 0) {
                libssh2_agent_disconnect(agent);
                libssh2_agent_free(agent);
                return 0;
            }
            prev = id;
        }
        libssh2_agent_disconnect(agent);
    }
    if (agent)
        libssh2_agent_free(agent);
    if (agent_keys)
        at += (size_t)snprintf(tried, sizeof tried, "%d key%s of ssh-agent", agent_keys,
                               agent_keys == 1 ? "" : "s");
    int files = 0;
    for (int i = 0; i < t->nidentities; i++) {
        if (access(t->identities[i], R_OK))
            continue;
        files++;
        if (at < sizeof tried)
            at += (size_t)snprintf(tried + at, sizeof tried - at, "%s%s", at ? ", " : "",
                                   t->identities[i]);
        if (libssh2_userauth_publickey_fromfile_ex(s->session, t->user, strlen(t->user), NULL,
                                                   t->identities[i], "") == 0)
            return 0;
    }
    if (!agent_keys && !files)
        return ddp_error_code(err, EACCES,
                              "%s: no ssh-agent key and no identity file (%s...) to log in with",
                              s->where, t->identities[0]);
    char what[2200];
    snprintf(what, sizeof what, "login refused (public keys tried: %s)", tried);
    return session_error(s, EACCES, what, err);
}

/* The SSH protocol on s->fd: handshake, the host's key checked, the login. */
static int start_session(ssh_session_t *s, const char *alias, const ssh_target_t *t,
                         const char *known_hosts, int accept_new_keys, const char *password,
                         int64_t deadline, ddp_error_t *err)
{
    s->session = libssh2_session_init();
    if (!s->session)
        return ddp_error_set(err, "out of memory");
    libssh2_session_set_blocking(s->session, 1);
    set_deadline(s, deadline);
    if (libssh2_session_handshake(s->session, s->fd))
        return session_error(s, 0, "SSH handshake", err);
    /* The host is known to be itself before any credential goes to it. */
    int failed = check_host_key(s, alias, t, known_hosts, accept_new_keys, deadline, err);
    if (!failed && password)
        failed = libssh2_userauth_password(s->session, t->user, password)
                     ? session_error(s, EACCES, "password login refused", err)
                     : 0;
    else if (!failed)
        failed = authenticate(s, t, err);
    return failed ? -1 : 0;
}

static ssh_session_t *new_session(const char *alias, const ssh_target_t *t, const char *via,
                                  ddp_error_t *err)
{
    ssh_session_t *s = calloc(1, sizeof *s);
    if (!s) {
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    s->fd = s->bridge_fd = -1;
    snprintf(s->where, sizeof s->where, "%s (%s@%s:%d%s%s)", alias, t->user, t->hostname, t->port,
             via ? " through " : "", via ? via : "");
    return s;
}

ssh_session_t *ssh_session_open(const char *alias, const ssh_target_t *t, const char *known_hosts,
                                int accept_new_keys, const char *password, int64_t deadline,
                                ddp_error_t *err)
{
    ssh_session_t *s = new_session(alias, t, NULL, err);
    if (!s)
        return NULL;
    s->fd = ddp_net_connect(t->hostname, t->port, deadline, err);
    if (s->fd < 0) {
        ddp_error_prefix(err, "%s", alias);
        free(s);
        return NULL;
    }
    if (start_session(s, alias, t, known_hosts, accept_new_keys, password, deadline, err)) {
        ssh_session_close(s);
        return NULL;
    }
    return s;
}

/* The bridge: bytes from the session's socket into the tunnel and from the tunnel into the
 * socket, until either side ends (the session closed its end; the jump host's connection lost).
 * Neither side ever blocks the other: each direction holds one chunk until it is taken. The jump
 * host's session is this thread's alone from the start. */
static void *bridge_main(void *arg)
{
    ssh_session_t *s = arg;
    LIBSSH2_SESSION *jump = s->via->session;
    char up[32768], down[32768];
    size_t up_len = 0, down_len = 0, down_at = 0;
    int ended = 0, tunnel_done = 0;
    libssh2_session_set_blocking(jump, 0);
    libssh2_keepalive_config(jump, 1, SSH_KEEPALIVE_S);
    unsigned lost_after = SSH_LOST_AFTER_MS;
    setsockopt(s->via->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &lost_after, sizeof lost_after);
    fcntl(s->bridge_fd, F_SETFL, fcntl(s->bridge_fd, F_GETFL) | O_NONBLOCK);
    while (!ended) {
        int progress = 0;
        ssize_t n;
        if (down_at == down_len && !tunnel_done) {
            down_at = down_len = 0;
            n = libssh2_channel_read(s->tunnel, down, sizeof down);
            if (n > 0)
                down_len = (size_t)n, progress = 1;
            else if ((n < 0 && n != LIBSSH2_ERROR_EAGAIN) || libssh2_channel_eof(s->tunnel))
                tunnel_done = 1;
        }
        if (down_at < down_len) {
            n = write(s->bridge_fd, down + down_at, down_len - down_at);
            if (n > 0)
                down_at += (size_t)n, progress = 1;
            else if (n < 0 && errno != EAGAIN && errno != EINTR)
                ended = 1;
        }
        if (!up_len) {
            n = recv(s->bridge_fd, up, sizeof up, 0);
            if (n > 0)
                up_len = (size_t)n, progress = 1;
            else if (n == 0 || (errno != EAGAIN && errno != EINTR))
                ended = 1;
        }
        if (up_len && !tunnel_done) {
            n = libssh2_channel_write(s->tunnel, up, up_len);
            if (n > 0) {
                memmove(up, up + n, up_len - (size_t)n);
                up_len -= (size_t)n;
                progress = 1;
            } else if (n != LIBSSH2_ERROR_EAGAIN) {
                tunnel_done = 1;
            }
        }
        int next_keepalive_s, sent = libssh2_keepalive_send(jump, &next_keepalive_s);
        if (sent < 0 && sent != LIBSSH2_ERROR_EAGAIN)
            tunnel_done = 1;
        ended |= tunnel_done && down_at == down_len;
        if (ended || progress)
            continue;
        struct pollfd pfd[2] = {
            {.fd = s->via->fd, .events = POLLIN},
            {.fd = s->bridge_fd,
             .events = (short)((up_len ? 0 : POLLIN) | (down_at < down_len ? POLLOUT : 0))}};
        if (libssh2_session_block_directions(jump) & LIBSSH2_SESSION_BLOCK_OUTBOUND)
            pfd[0].events |= POLLOUT;
        poll(pfd, 2, 1000);
    }
    /* The session's reads end at once, as on a connection that closed. */
    shutdown(s->bridge_fd, SHUT_RDWR);
    return NULL;
}

ssh_session_t *ssh_session_open_via(ssh_session_t *via, const char *alias, const ssh_target_t *t,
                                    const char *known_hosts, int accept_new_keys, int64_t deadline,
                                    ddp_error_t *err)
{
    ssh_session_t *s = new_session(alias, t, via->where, err);
    if (!s) {
        ssh_session_close(via);
        return NULL;
    }
    s->via = via;
    set_deadline(via, deadline);
    s->tunnel =
        libssh2_channel_direct_tcpip_ex(via->session, t->hostname, t->port, "127.0.0.1", 22);
    int sv[2];
    if (!s->tunnel) {
        char *msg = NULL;
        libssh2_session_last_error(via->session, &msg, NULL, 0);
        ddp_error_set(err, "%s: the jump host %s opened no way to %s:%d: %s", alias, via->where,
                      t->hostname, t->port, msg && *msg ? msg : "refused");
    } else if (ddp_socketpair_cloexec(AF_UNIX, SOCK_STREAM, sv)) {
        ddp_error_set(err, "socketpair: %s", strerror(errno));
    } else {
        s->fd = sv[0];
        s->bridge_fd = sv[1];
        s->bridging = pthread_create(&s->bridge, NULL, bridge_main, s) == 0;
        if (s->bridging &&
            start_session(s, alias, t, known_hosts, accept_new_keys, NULL, deadline, err) == 0)
            return s;
        if (!s->bridging)
            ddp_error_set(err, "cannot start a thread for the jump host's tunnel");
    }
    ssh_session_close(s);
    return NULL;
}

/* A session channel, with a terminal of rows x cols when term is given. */
static int open_channel(ssh_session_t *s, const char *term, int rows, int cols, int64_t deadline,
                        ddp_error_t *err)
{
    libssh2_session_set_blocking(s->session, 1);
    set_deadline(s, deadline);
    s->channel = libssh2_channel_open_session(s->session);
    if (!s->channel)
        return session_error(s, 0, "cannot open a channel", err);
    if (term && libssh2_channel_request_pty_ex(s->channel, term, (unsigned)strlen(term), NULL, 0,
                                               cols, rows, 0, 0))
        return session_error(s, 0, "cannot have a terminal", err);
    return 0;
}

/* Starts command on s's open channel, then writes input to its stdin. */
static int exec_on_channel(ssh_session_t *s, const char *command, const char *input, size_t len,
                           int64_t deadline, ddp_error_t *err)
{
    set_deadline(s, deadline);
    if (libssh2_channel_exec(s->channel, command))
        return session_error(s, 0, "cannot start the command", err);
    for (size_t done = 0; done < len;) {
        ssize_t n = libssh2_channel_write(s->channel, input + done, len - done);
        if (n < 0)
            return session_error(s, 0, "cannot write to the command", err);
        done += (size_t)n;
    }
    libssh2_session_set_blocking(s->session, 0);
    /* A host that vanishes (link cut, machine off) sends no FIN: keepalives give the connection
     * traffic, and data unacknowledged for SSH_LOST_AFTER_MS fails the socket, so pump reports
     * the connection lost rather than waiting out TCP's quarter of an hour. */
    libssh2_keepalive_config(s->session, 1, SSH_KEEPALIVE_S);
    unsigned lost_after = SSH_LOST_AFTER_MS;
    setsockopt(s->fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &lost_after, sizeof lost_after);
    return 0;
}

int ssh_session_exec_terminal(ssh_session_t *s, const char *command, const char *term, int rows,
                              int cols, int64_t deadline, ddp_error_t *err)
{
    if (open_channel(s, term, rows, cols, deadline, err))
        return -1;
    return exec_on_channel(s, command, NULL, 0, deadline, err);
}

int ssh_session_exec(ssh_session_t *s, const char *command, const char *input, size_t len,
                     int64_t deadline, ddp_error_t *err)
{
    if (open_channel(s, NULL, 0, 0, deadline, err))
        return -1;
    return exec_on_channel(s, command, input, len, deadline, err);
}

int ssh_session_pump(ssh_session_t *s, int timeout_ms, ssh_output_fn fn, void *arg,
                     ddp_error_t *err)
{
    char buf[32768];
    int got_any = 0;
    for (int stream = 0; stream < 2; stream++) {
        for (;;) {
            ssize_t n = libssh2_channel_read_ex(s->channel, stream, buf, sizeof buf);
            if (n > 0) {
                fn(arg, stream, buf, (size_t)n);
                got_any = 1;
                continue;
            }
            if (n == LIBSSH2_ERROR_EAGAIN || n == 0)
                break;
            /* A command that ended at once may have its channel closed before we read. */
            if (n == LIBSSH2_ERROR_CHANNEL_CLOSED || libssh2_channel_eof(s->channel))
                return 1;
            return session_error(s, 0, "connection lost", err);
        }
    }
    if (libssh2_channel_eof(s->channel))
        return 1;
    int next_keepalive_s;
    if (libssh2_keepalive_send(s->session, &next_keepalive_s) < 0)
        return session_error(s, 0, "connection lost", err);
    if (got_any)
        return 0;
    int dir = libssh2_session_block_directions(s->session);
    struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
    if (dir & LIBSSH2_SESSION_BLOCK_OUTBOUND)
        pfd.events |= POLLOUT;
    if (poll(&pfd, 1, timeout_ms) < 0 && errno != EINTR)
        return ddp_error_set(err, "%s: poll: %s", s->where, strerror(errno));
    return 0;
}

void ssh_session_eof(ssh_session_t *s)
{
    if (!s->channel)
        return;
    libssh2_session_set_blocking(s->session, 1);
    libssh2_session_set_timeout(s->session, 2000);
    libssh2_channel_send_eof(s->channel);
    libssh2_session_set_blocking(s->session, 0);
}

int ssh_session_write(ssh_session_t *s, const void *data, size_t len, ddp_error_t *err)
{
    libssh2_session_set_blocking(s->session, 1);
    libssh2_session_set_timeout(s->session, SSH_LOST_AFTER_MS);
    int rc = 0;
    for (size_t done = 0; done < len && !rc;) {
        ssize_t n = libssh2_channel_write(s->channel, (const char *)data + done, len - done);
        if (n < 0)
            rc = session_error(s, 0, "cannot write to the command", err);
        else
            done += (size_t)n;
    }
    libssh2_session_set_blocking(s->session, 0);
    return rc;
}

void ssh_session_window(ssh_session_t *s, int rows, int cols)
{
    libssh2_session_set_blocking(s->session, 1);
    libssh2_session_set_timeout(s->session, 2000);
    libssh2_channel_request_pty_size(s->channel, cols, rows);
    libssh2_session_set_blocking(s->session, 0);
}

int ssh_session_socket(const ssh_session_t *s)
{
    return s->fd;
}

int ssh_session_exit_status(ssh_session_t *s)
{
    char *sig = NULL;
    libssh2_session_set_blocking(s->session, 1);
    libssh2_session_set_timeout(s->session, 2000);
    libssh2_channel_close(s->channel);
    libssh2_channel_wait_closed(s->channel);
    libssh2_channel_get_exit_signal(s->channel, &sig, NULL, NULL, NULL, NULL, NULL);
    int status = libssh2_channel_get_exit_status(s->channel);
    if (sig) {
        /* The name as sshd sends it ("KILL"); 128+N as a shell reports it. */
        for (int n = 1; n < 65; n++)
            if (ddp_signal_name(n) && !strcmp(ddp_signal_name(n), sig))
                status = 128 + n;
        libssh2_free(s->session, sig);
    }
    return status;
}

void ssh_session_close(ssh_session_t *s)
{
    if (!s)
        return;
    if (s->channel)
        libssh2_channel_free(s->channel);
    if (s->session) {
        libssh2_session_set_blocking(s->session, 1);
        libssh2_session_set_timeout(s->session, 1000);
        libssh2_session_disconnect(s->session, "done");
        libssh2_session_free(s->session);
    }
    if (s->fd >= 0)
        close(s->fd);
    if (s->bridging)
        pthread_join(s->bridge, NULL);
    if (s->bridge_fd >= 0)
        close(s->bridge_fd);
    if (s->tunnel) {
        libssh2_session_set_blocking(s->via->session, 1);
        libssh2_session_set_timeout(s->via->session, 1000);
        libssh2_channel_free(s->tunnel);
    }
    ssh_session_close(s->via);
    free(s);
}

LIBSSH2_SESSION *ssh_session_libssh2(ssh_session_t *s, int64_t deadline)
{
    libssh2_session_set_blocking(s->session, 1);
    set_deadline(s, deadline);
    return s->session;
}

const char *ssh_session_where(const ssh_session_t *s)
{
    return s->where;
}
