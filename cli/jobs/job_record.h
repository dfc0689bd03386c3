/* job_record: what a submitted job leaves for the commands after submit (status, logs, cancel,
 * list, wait), and the per-user index that finds it from any directory. The layout (ddpjob(1),
 * JOB RECORD; version 1):
 *
 *   WORKDIR/.ddpjob/jobs/NAME.YYYYMMDD-HHMMSS.XXXXXX/   the record (its path: DDPJOB_RECORD)
 *     job.json           written by submit: version, name, scheduler, workdir, spec, submitted,
 *                        nodes, procs_per_node, walltime_s, requeue, checkpoint_signal,
 *                        checkpoint_dir (the workload's --checkpoint-dir, whole); "held"
 *                        and "idle_s" for an allocation `ddpjob dev` holds, "held_in" for a
 *                        run in one (dev_record.h)
 *     spec.yaml, script  the spec and the script as submitted
 *     links              "K JOBID" per line: link K of the chain (a requeue) is scheduler job
 *                        JOBID; written by submit (0), by a link submitting its successor and by
 *                        each link when it starts; the last line for a K counts
 *     cancelled          present once `ddpjob cancel` was asked: no link submits a successor
 *     checkpoint-request written by `ddpjob cancel --checkpoint` for a PBS job: the batch
 *                        script's supervisor then sends node 0's agent the checkpoint signal
 *     link-K/started     "EPOCH JOBID HOST", when the batch shell of link K started
 *     link-K/ended       "STATUS EPOCH [BY]": its final status; BY when a signal from outside
 *                        ended it: "sched=WORD" (the scheduler's state then), "walltime" (at
 *                        the walltime), "signal" (before it)
 *     link-K/final       "STATE EXIT SOURCE WORD": the final state as the scheduler first said
 *                        it, kept by the first ddpjob that saw it (job_view.h), so that what
 *                        status says never changes once the scheduler forgets the job
 *     link-K/holder      a run in a held allocation (dev_record.h), once the holder has taken
 *                        the run's end: "ended"; "again" (checkpointed at the allocation's
 *                        walltime, it goes on as link K+1 in the allocation's next link); "lost
 *                        HOST" or "lost HOST again" (a node lost under it; asked again as link
 *                        K+1, on other nodes)
 *     link-K/batch.log   what the batch shell and what it started (srun, pbsdsh, pyxis) said,
 *                        bar the ranks' own lines: each stream's first MiB
 *     link-K/error-node*.json   each failed node's agent report (--error-file)
 *     link-K/logs/       the agents' --log-dir: RUNID[.requeueK]/attempt_A/rank_R/std{out,err}.log
 *                        and order, the order their chunks arrived in (relay.h)
 *
 *   ${XDG_STATE_HOME:-~/.local/state}/ddpjob/jobs   the index: "SUBMITTED\tJOBID\tSCHEDULER\t
 *                        NAME\tRECORD" per submitted job, oldest first
 *
 * Every reader takes a record as far as it is valid: a file cut short (a node died while
 * writing), missing, too large, or a job id of the wrong shape leaves its facts unknown, never an
 * error. The record's folders are 0700 and its files 0600 (the spec's env: may hold secrets). */
#ifndef DDPJOB_JOB_RECORD_H
#define DDPJOB_JOB_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "cli/jobs/job_state.h"
#include "runtime/base/ddp_error.h"

#define JOB_RECORD_VERSION 1
/* The variable that names a job its record (the batch script reads it). */
#define JOB_RECORD_ENV "DDPJOB_RECORD"

typedef struct {
    char id[128]; /* the scheduler's job id; "" when unknown */
    int started;  /* link-K/started was written */
    int64_t start_time;
    char host[256]; /* where its batch shell ran */
    int ended;      /* link-K/ended was written */
    int status;     /* its final status, when ended */
    int64_t end_time;
    char ended_by[72]; /* ended's BY; "" none */
    /* link-K/final, when kept: the state, exit status (-1 unknown), the scheduler's command
     * and its own word ("" none). */
    int kept;
    job_state_t kept_state;
    int kept_exit;
    char kept_source[16], kept_word[64];
    /* link-K/holder, a held run's (dev_record.h): the holder took the link's end; the host of a
     * node it found lost in it ("" none), and whether it asked the run again, as link K+1 (its
     * node lost, or checkpointed at the allocation's walltime). */
    int holder_took;
    char lost_host[256];
    int asked_again;
} job_link_t;

typedef struct {
    char *dir; /* the record's folder */
    int version;
    char name[256], scheduler[16], workdir[4096], spec[4096];
    char checkpoint_signal[16]; /* the spec's, without SIG ("USR1"); "" when it names none */
    char checkpoint_dir[4096];  /* the workload's --checkpoint-dir, whole; "" none given */
    int64_t submitted;
    int nodes, procs_per_node, requeue;
    int64_t walltime_s;
    job_link_t *links; /* [0..nlinks): link K at index K */
    int nlinks;
    int cancelled;
    int group_readable; /* at create: the spec's share_record: group (not kept in job.json) */
    /* An allocation `ddpjob dev` holds (dev_record.h): idle_s, how long it stays held with
     * nothing to do (0: until its walltime); and a run in one: held_in, that allocation's
     * record folder, whose job its link names. Both absent from a batch job's job.json. */
    int held;
    int64_t idle_s;
    char held_in[4096];
} job_record_t;

/* At submit: makes the record under workdir for a job called name (its folder into *dir,
 * malloc'd), with job.json (the fields of `r` that submit knows), the spec and the script.
 * Private (folders 0700, files 0600) unless r->group_readable: then the job's group may read
 * it (0750, 0640, as far as the umask lets; a setgid workdir's bit kept, so the team's group owns
 * it), never write it, bar spec.yaml (the webhook's URL), which stays 0600. */
int job_record_create(const job_record_t *r, const char *spec_text, const char *script_text,
                      char **dir, ddp_error_t *err);
/* The same in `dir`, a folder not there yet (made 0700, or 0750 for a group's record) in one of
 * the user's own records (a sweep's trial). */
int job_record_create_at(const char *dir, const job_record_t *r, const char *spec_text,
                         const char *script_text, ddp_error_t *err);
/* A record's folder, made fresh: WORKDIR/.ddpjob/KIND/NAME.YYYYMMDD-HHMMSS.XXXXXX, KIND "jobs" or
 * "sweeps", with .ddpjob and KIND made or checked as the user's own and closed to others. */
int record_folder_make(const char *workdir, const char *kind, const char *name, int64_t submitted,
                       int group_readable, char **dir, ddp_error_t *err);
/* Removes a record that submit made for a job that was not submitted after all. */
void job_record_remove(const char *dir);
/* Appends "K JOBID" to the record's links. */
int job_record_add_link(const char *dir, int k, const char *id, ddp_error_t *err);
/* Marks the record cancelled (before its jobs are cancelled, so no link submits a successor). */
int job_record_mark_cancelled(const char *dir, ddp_error_t *err);
/* Keeps link k's final state as the scheduler said it (link-K/final), where none is kept yet. */
int job_record_keep_final(const char *dir, int k, job_state_t state, int exit_status,
                          const char *source, const char *word, ddp_error_t *err);

/* The holder's word on held run link k's end (link-K/holder): lost_host NULL when no node was
 * lost; again, whether the run was asked again (for a lost node, or the allocation's next link). */
int job_record_holder_took(const char *dir, int k, const char *lost_host, int again,
                           ddp_error_t *err);

/* 0 when dir is the user's own, closed to others, in a folder of the same kind or a sticky one;
 * else -1 with err saying which and why (EPERM). */
int record_dir_check(const char *dir, ddp_error_t *err);
/* Reads the record in dir; -1 when dir holds no record at all, or when it or the folder above it
 * is not the user's own, closed to others (err says which and why). */
int job_record_read(const char *dir, job_record_t *r, ddp_error_t *err);
void job_record_free(job_record_t *r);

/* ${XDG_STATE_HOME:-~/.local/state}/ddpjob/NAME (malloc'd): this user's own state beside the
 * index; NULL when neither variable is an absolute path. */
char *job_state_path(const char *name);
/* The index file's path (malloc'd). */
char *job_index_path(void);
/* Appends a submitted job to the index. */
int job_index_add(const job_record_t *r, const char *first_id, ddp_error_t *err);
/* Appends `line` to the file `name` beside the index (its folder made private where missing). */
int job_state_append(const char *name, const char *line, ddp_error_t *err);

/* The records of the index, newest first: each record's folder (malloc'd, NULL-terminated
 * array); records whose folder is gone are left out. */
char **job_index_records(void);
void job_index_free(char **dirs);

/* Whether `id` has the shape of a Slurm or PBS job id (digits first; letters, digits and
 * ._-[]+ after): what a record says reaches scancel, qdel and qstat only when it does. */
int job_id_valid(const char *id);

/* Whether the job id `asked` names the scheduler's `id` (its first id_len bytes): the same, or
 * its start before a '.' ("123" names PBS's 123.server, which qstat may print as
 * 123.server.domain when 123.server was asked). */
int job_id_names(const char *asked, const char *id, size_t id_len);

/* The record that `job` names: a record's folder, a scheduler job id of any link of its chain,
 * or a spec name (the newest job of that name); or a sweep's (sweep_record.h): its folder, its
 * name, its array job's id. Into *dir (malloc'd). -1 with err naming what
 * was looked for and where. */
int job_record_find(const char *job, char **dir, ddp_error_t *err);

#endif
