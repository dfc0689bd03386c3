/* ddp_file's promises where other users share the folders: a private folder is made fresh or
 * reused only when it is the user's own and closed to others; an atomic write never follows a
 * link planted where its temporary file or its file goes; a capped read refuses a larger file; a
 * file of the user's own is read only when it is theirs, no link, and closed as asked. */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/base/ddp_file.h"
#include "tests/unit/tap.h"

static char root[] = "/tmp/test_file.XXXXXX";

static char *at(const char *name)
{
    static char path[4][512];
    static int next;
    char *p = path[next++ % 4];
    snprintf(p, sizeof path[0], "%s/%s", root, name);
    return p;
}

static void private_dirs(void)
{
    ddp_error_t err = {0};
    struct stat st;
    ok(ddp_private_dir(at("fresh"), &err) == 0 && stat(at("fresh"), &st) == 0 &&
           (st.st_mode & 07777) == 0700,
       "a private folder is made 0700 (%s)", err.msg);
    ok(ddp_private_dir(at("fresh"), &err) == 0, "and reused: it is ours and closed to others");
    mkdir(at("open"), 0700);
    chmod(at("open"), 0777);
    ok(ddp_private_dir(at("open"), &err) == -1 && strstr(err.msg, "others can write (mode 0777)"),
       "one others can write is refused: %s", err.msg);
    ok(symlink(at("fresh"), at("link")) == 0 && ddp_private_dir(at("link"), &err) == -1 &&
           strstr(err.msg, "symbolic link"),
       "a link to a folder of ours is refused: %s", err.msg);
    struct passwd *nobody = getpwnam("nobody");
    mkdir(at("theirs"), 0700);
    if (!nobody || geteuid() != 0) {
        ok(1, "# SKIP another user's folder needs root to make (euid %d)", (int)geteuid());
        return;
    }
    ok(chown(at("theirs"), nobody->pw_uid, nobody->pw_gid) == 0 &&
           ddp_private_dir(at("theirs"), &err) == -1 && strstr(err.msg, "owned by nobody"),
       "a folder another user (nobody) owns is refused, naming them: %s", err.msg);
}

static void atomic_writes(void)
{
    ddp_error_t err = {0};
    FILE *f = fopen(at("victim"), "w");
    fputs("keep me", f);
    fclose(f);
    /* The names an earlier version used for its temporary file (PATH.tmp.PID) and the file
     * itself: links to the victim. */
    char old_tmp[64];
    snprintf(old_tmp, sizeof old_tmp, "out.tmp.%d", (int)getpid());
    symlink(at("victim"), at(old_tmp));
    symlink(at("victim"), at("out"));
    ok(ddp_write_file_atomic(at("out"), "new", 3, 0600, &err) == 0, "an atomic write (%s)",
       err.msg);
    size_t len;
    char *victim = ddp_read_file(at("victim"), &len, &err),
         *out = ddp_read_file(at("out"), NULL, &err);
    struct stat st;
    ok(victim && !strcmp(victim, "keep me"), "the file planted links point to is untouched");
    ok(out && !strcmp(out, "new") && lstat(at("out"), &st) == 0 && S_ISREG(st.st_mode) &&
           (st.st_mode & 0777) == 0600,
       "the link at the file's name is replaced by the file, 0600");
    free(victim);
    free(out);
}

static void capped_reads(void)
{
    ddp_error_t err = {0};
    FILE *f = fopen(at("big"), "w");
    for (int i = 0; i < 100000; i++)
        fputs("0123456789", f);
    fclose(f);
    size_t len = 0;
    char *text = ddp_read_file_max(at("big"), 1 << 20, &len, &err);
    ok(text && len == 1000000, "a file under the cap is read whole");
    free(text);
    ok(ddp_read_file_max(at("big"), 65536, &len, &err) == NULL &&
           strstr(err.msg, "larger than 65536 bytes"),
       "one over it is refused: %s", err.msg);
}

/* A file of the user's own: read only when it is theirs, no link, closed as asked. */
static void own_files(void)
{
    ddp_error_t err = {0};
    size_t len = 0;
    char *text;
    ddp_write_file_atomic(at("conf"), "a: 1\n", 5, 0600, &err);
    text = ddp_read_own_file(at("conf"), S_IRWXG | S_IRWXO, 4096, &len, &err);
    ok(text && len == 5 && !strcmp(text, "a: 1\n"), "an own file closed to others is read");
    free(text);
    chmod(at("conf"), 0644);
    text = ddp_read_own_file(at("conf"), S_IWGRP | S_IWOTH, 4096, &len, &err);
    ok(text != NULL, "one others may read is a configuration's right (%s)", err.msg);
    free(text);
    ok(!ddp_read_own_file(at("conf"), S_IRWXG | S_IRWXO, 4096, &len, &err) && err.code == EPERM &&
           strstr(err.msg, "others can read it (mode 0644): not trusted"),
       "but not a secret's: %s", err.msg);
    chmod(at("conf"), 0620);
    ok(!ddp_read_own_file(at("conf"), S_IWGRP | S_IWOTH, 4096, &len, &err) &&
           strstr(err.msg, "others can write it (mode 0620)"),
       "one the group may write is refused: %s", err.msg);
    chmod(at("conf"), 0600);
    ok(symlink(at("conf"), at("conf-link")) == 0 &&
           !ddp_read_own_file(at("conf-link"), S_IRWXG | S_IRWXO, 4096, &len, &err) &&
           err.code == EPERM && strstr(err.msg, "a symbolic link: not trusted"),
       "a link to it is refused: %s", err.msg);
    ok(!ddp_read_own_file(at("conf"), S_IRWXG | S_IRWXO, 4, &len, &err) &&
           strstr(err.msg, "larger than 4 bytes"),
       "one over the cap is refused: %s", err.msg);
    ok(!ddp_read_own_file(at("none"), S_IRWXG | S_IRWXO, 4096, &len, &err) && err.code == ENOENT,
       "none there: ENOENT");
    struct passwd *nobody = getpwnam("nobody");
    ok(nobody && chown(at("conf"), nobody->pw_uid, nobody->pw_gid) == 0 &&
           !ddp_read_own_file(at("conf"), S_IRWXG | S_IRWXO, 4096, &len, &err) &&
           strstr(err.msg, "not by this user: not trusted"),
       "one another user owns is refused: %s", err.msg);
}

/* A folder held open: what is reached through the hold is the folder checked, whatever is
 * renamed and planted under its name after. */
static void held_dirs(void)
{
    ddp_error_t err = {0};
    char held[64], path[128];
    mkdir(at("team"), 0700);
    int fd = ddp_hold_own_dir(at("team"), held, sizeof held, &err);
    ok(fd >= 0 && !strncmp(held, "/proc/self/fd/", 14), "a folder of ours is held: %s", held);
    ok(rename(at("team"), at("team.gone")) == 0 && mkdir(at("team"), 0777) == 0 &&
           chmod(at("team"), 0777) == 0,
       "it is renamed and another planted under its name");
    snprintf(path, sizeof path, "%s/written", held);
    FILE *f = fopen(path, "w");
    ok(f && fclose(f) == 0 && access(at("team.gone/written"), F_OK) == 0 &&
           access(at("team/written"), F_OK) != 0,
       "what is written through the hold lands in the folder held");
    if (fd >= 0)
        close(fd);
    ok(ddp_hold_own_dir(at("team"), held, sizeof held, &err) == -1 && err.code == EPERM &&
           strstr(err.msg, "others can write (mode 0777)"),
       "the planted folder, open to others, is refused: %s", err.msg);
}

int main(void)
{
    if (!mkdtemp(root))
        return 1;
    private_dirs();
    held_dirs();
    atomic_writes();
    capped_reads();
    own_files();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    ok(system(cmd) == 0, "cleaned up");
    return done_testing();
}
