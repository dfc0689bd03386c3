/* run_dir: the run's two folders on this node. The log folder (--log-dir's DIR/RUN_ID, else a
 * temporary one) holds each attempt's rank folders with the logs the agent writes; it is held
 * open from when it is made and written only through that hold, since in a team's workdir a
 * folder above it may be renamed and planted meanwhile. The workers' folder holds the files each
 * worker opens by name (worker_env.h: its error, progress and metrics files; enroot's config):
 * a private folder in this node's temporary space, where nobody else can rename a folder above
 * it; what the record keeps of them the agent copies there through its hold. */
#include "agent/supervision/agent_state.h"

#include "agent/workers/output.h"
#include "runtime/base/ddp_file.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

/* A new private folder PREFIX.XXXXXX in $TMPDIR (else /tmp), into path. Only where nobody else
 * can rename it away: TMPDIR is this user's or root's, and sticky where others can write it. */
static int make_temp_dir(const char *prefix, char *path, size_t size, ddp_error_t *err)
{
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = "/tmp";
    struct stat st;
    if (stat(tmp, &st) != 0)
        return ddp_error_code(err, errno, "TMPDIR %s: %s", tmp, strerror(errno));
    if ((st.st_uid != geteuid() && st.st_uid != 0) ||
        ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX)))
        return ddp_error_code(err, EPERM,
                              "refusing TMPDIR %s (owner uid %u, mode %04o): others could rename "
                              "the workers' folder made there; set TMPDIR to a folder of your own "
                              "or a sticky one such as /tmp",
                              tmp, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
    snprintf(path, size, "%s/%s.XXXXXX", tmp, prefix);
    if (!mkdtemp(path))
        return ddp_error_code(err, errno, "cannot make a folder under %s: %s", tmp,
                              strerror(errno));
    return 0;
}

/* --log-dir's folder for this run, which never holds an earlier run's logs: DIR/RUN_ID (with
 * .requeueN for a requeued job, whose id is its predecessor's). A job's nodes share it (their
 * ranks' folders differ); a one-node run whose id was used before (`ddpjob run` again, a
 * standalone agent) takes the next free DIR/RUN_ID.K. */
static int make_log_run_dir(agent_t *a, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    char base[sizeof a->attempt_root - 16];
    if (o->requeue_count)
        snprintf(base, sizeof base, "%s/%s.requeue%d", o->log_dir, o->run_id, o->requeue_count);
    else
        snprintf(base, sizeof base, "%s/%s", o->log_dir, o->run_id);
    snprintf(a->attempt_root, sizeof a->attempt_root, "%s", base);
    for (int k = 1; mkdir(a->attempt_root, 0700) != 0; k++) {
        if (errno != EEXIST)
            return ddp_error_set(err, "cannot make %s: %s", a->attempt_root, strerror(errno));
        /* Another node of this job made it first (then checked as held: run_dir_make). */
        if (o->nnodes > 1)
            return 0;
        if (k > 9999)
            return ddp_error_set(err, "%s.1 to .9999 are all taken", base);
        snprintf(a->attempt_root, sizeof a->attempt_root, "%s.%d", base, k);
    }
    return 0;
}

int run_dir_make(agent_t *a, ddp_error_t *err)
{
    const agent_options_t *o = a->o;
    if (o->log_dir) {
        if (ddp_make_dirs(o->log_dir, 0700, err) || make_log_run_dir(a, err))
            return ddp_error_prefix(err, "--log-dir");
    } else {
        if (make_temp_dir("ddpjob-agent", a->attempt_root, sizeof a->attempt_root, err))
            return -1;
        /* As torchrun's, the log files asked for without a folder stay in a temporary one. */
        a->temp_root = !o->redirects && !o->tee;
        if (!a->temp_root)
            agent_say("the workers' log files: %s/attempt_N/rank_R/{stdout,stderr}.log",
                      a->attempt_root);
    }
    if ((a->attempt_root_fd =
             ddp_hold_private_dir_at(AT_FDCWD, a->attempt_root, a->attempt_root, err)) < 0)
        return o->log_dir ? ddp_error_prefix(err, "--log-dir") : -1;
    if (make_temp_dir("ddpjob-workers", a->worker_root, sizeof a->worker_root, err)) {
        a->worker_root[0] = '\0';
        return ddp_error_prefix(err, "the workers' own files");
    }
    return 0;
}

int run_dir_attempt(agent_t *a, int round, ddp_error_t *err)
{
    char name[32], shown[sizeof a->attempt_root + 32];
    snprintf(name, sizeof name, "attempt_%d", round);
    snprintf(shown, sizeof shown, "%s/%s", a->attempt_root, name);
    return ddp_hold_private_dir_at(a->attempt_root_fd, name, shown, err);
}

void run_dir_remove(agent_t *a)
{
    if (a->attempt_root_fd >= 0)
        close(a->attempt_root_fd);
    if (a->temp_root)
        nftw(a->attempt_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    if (a->worker_root[0])
        nftw(a->worker_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
