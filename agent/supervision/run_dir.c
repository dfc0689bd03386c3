#include "agent/supervision/agent_state.h"

#include "runtime/base/ddp_file.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(path);
}

/* --log-dir's folder for this run, which never holds an earlier run's logs: DIR/RUN_ID (with
 * .requeueN for a requeued job, whose id is its predecessor's). A job's nodes share it (their
 * ranks' folders differ); a one-node run whose id was used before (`ddpjob run` again, a
 * standalone agent) takes the next free DIR/RUN_ID.K. Whatever is made is 0700; a folder reused is
 * checked as ddp_private_dir checks it. */
int run_dir_make(agent_t *a, ddp_error_t *err)
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
        /* Another node of this job made it first, or someone else did to read or swap our
         * logs (a shared log_dir): only a folder of our own, closed to others, is taken. */
        if (o->nnodes > 1)
            return ddp_check_private_dir(a->attempt_root, err);
        if (k > 9999)
            return ddp_error_set(err, "%s.1 to .9999 are all taken", base);
        snprintf(a->attempt_root, sizeof a->attempt_root, "%s.%d", base, k);
    }
    return 0;
}

void run_dir_remove(agent_t *a)
{
    if (a->temp_root)
        nftw(a->attempt_root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
