/* remote_steps: what the commands run on a cluster from a laptop share (cmd_remote.c owns them;
 * cmd_remote_dev.c uses them for a held allocation): a command line for this version's ddpjob
 * there, a cluster's profile loaded, a job's folder planned and sent, a command run there with
 * its output passed on. */
#ifndef DDPJOB_REMOTE_STEPS_H
#define DDPJOB_REMOTE_STEPS_H

#include <stdint.h>

#include "cli/commands/host_options.h"
#include "cli/laptop/cluster_profiles.h"
#include "cli/ssh/ssh_session.h"
#include "cli/laptop/upload.h"
#include "cli/spec/spec.h"

/* What a login shell there runs: bash -l running this version's ddpjob with words[0..n) (in
 * `dir` when given), `tail` (bash words of the script's own, "$PWD" expanded there) put before
 * the workload's arguments (the words from "--" on). The version missing there is said, exit 3.
 * malloc'd; NULL when out of memory. */
char *remote_ddpjob_command(const char *cluster, const char *dir, char **words, int n,
                            const char *tail);

/* The profile `name` into *c: EXIT_OK, else the exit code with the problem said as `ddpjob
 * COMMAND: ...`. */
int remote_load_profile(const char *command, const char *name, cluster_profile_t *c);

/* A job's folder here and there, its spec's path there, and what of the folder is sent. */
typedef struct {
    char folder[256], remote_dir[2048];
    char *local_dir, *spec_real, *spec_there;
    int spec_inside; /* the spec lies in the uploaded folder (else it is sent beside it) */
    upload_plan_t plan;
} job_files_t;

/* spec's folders (where its workdir is a folder here, else the current one) and what of it
 * would be sent (no more than max_upload bytes); -1 with the problem said. */
int remote_job_files(const char *command, const cluster_profile_t *c, const job_spec_t *spec,
                     uint64_t max_upload, job_files_t *f);
/* The folder local_dir, sent to remote_dir as a job's (no spec of its own in it named). */
int remote_folder_files(const char *command, const char *local_dir, const char *remote_dir,
                        uint64_t max_upload, job_files_t *f);
void remote_job_files_free(job_files_t *f);

/* This ddpjob installed there where missing, then the job's folder sent: what changed. EXIT_OK,
 * else the exit code with the problem said. */
int remote_send_job(const char *command, ssh_session_t *s, const cluster_profile_t *c,
                    job_files_t *f);

/* An allocation's commands from a laptop (cmd_remote_dev.c): the allocation a command line of
 * run (--in), shell or dev (stop, --port) names, NULL where it names none (dev SPEC submits, run
 * without --in runs here); and the command run there. */
const char *remote_dev_target(int argc, char **argv);
int remote_dev_command(int argc, char **argv, const cluster_profile_t *c, const host_options_t *ho);

/* What submit --on sends at most unless told (--max-upload). */
#define MAX_UPLOAD_DEFAULT (1ULL << 30)
/* How long submit's install and upload, and fetch's download, may take in all. */
#define TRANSFER_MS (60 * 60 * 1000)

#endif
