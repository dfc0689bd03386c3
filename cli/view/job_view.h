/* job_view: a job as status, list, wait and cancel see it: its record, the scheduler's word on
 * its current link, and the state those two give together (the record alone when the scheduler
 * has forgotten the job). Many jobs cost one scheduler call per scheduler. */
#ifndef DDPJOB_JOB_VIEW_H
#define DDPJOB_JOB_VIEW_H

#include <stdio.h>

#include "cli/jobs/job_record.h"
#include "cli/sched/sched.h"

/* A node that joined the job's world at an attempt: in a lost node's place, or added. */
typedef struct {
    int attempt, node;
    char host[256], in_place_of[256]; /* in_place_of "": joined */
    char after[512];                  /* the failure that ended the attempt before */
} node_change_t;

typedef struct {
    int rank, node, exit_code;
    /* The agent's findings (its error file's "cause"): the kernel's OOM killer, the GPU's memory,
     * a peer that went first. */
    int out_of_memory, gpu_out_of_memory, consequence;
    char host[256], cause[512];
} failed_rank_t;

#define JOB_VIEW_BATCH_LINES 10

typedef struct {
    job_record_t rec;
    int link;          /* the current link: the chain's last */
    sched_job_t sched; /* the scheduler's word on it (sched.found 0: none) */
    job_state_t state;
    int exit_status;    /* -1 unknown */
    char elapsed[32];   /* the scheduler's, else the current link's from its record; "" unknown */
    const char *source; /* what decided the state: the scheduler's command, or "record" */
    /* A run in a held allocation (rec.held_in): the allocation still runs, so the run's own
     * record says whether it waits, runs or ended (the scheduler's word is the allocation's). */
    int allocation_alive;
    char allocation_id[128]; /* ... the allocation's current link's job id, asked of the scheduler
                                (a PBS allocation goes on in a successor job); "" unknown */
    failed_rank_t *failed;   /* the causes first, their consequences after */
    int nfailed;
    int killed_for_memory; /* the agents' first failure was an OOM kill */
    int node_lost;         /* ... node N > 0 lost (its agent silent or gone); 0: none */
    char lost_host[256], lost_what[512]; /* that node's host, and how it was lost */
    long long *last_steps; /* each rank's last reported step (-1: none), from node 0's report */
    int nsteps;            /* 0: no report */
    char steps_time[32];   /* when node 0 wrote it */
    node_change_t
        *changes; /* nodes that took a lost node's place or joined, from node 0's report */
    int nchanges;
    /* For a job that ended without completing and with no agent's report, the last lines of
     * the current link's batch.log (what its batch shell, srun, pbsdsh or pyxis said:
     * job_record.h), each malloc'd: the cause. */
    char *batch_tail[JOB_VIEW_BATCH_LINES];
    int nbatch_tail;
} job_view_t;

/* Reads the records in dirs[0..n) into views and asks each scheduler once for all of them. A
 * scheduler that cannot be asked leaves its jobs to their records, and its error in err (the
 * first one; -1). */
int job_views_load(char *const *dirs, size_t n, job_view_t *views, ddp_error_t *err);
void job_views_free(job_view_t *views, size_t n);

/* The state from what job_views_load read: the scheduler's word where it has one; the
 * record's end where the scheduler has forgotten the job or only says it ended (the record knows
 * a checkpointed link, a cancel, the agents' failed ranks). */
void job_view_decide(job_view_t *v);

/* The scheduler id of the current link ("" when unknown). */
const char *job_view_id(const job_view_t *v);

/* What status prints: a few lines for people, or one JSON object (stable field names,
 * ddpjob(1) STATUS JSON). */
void job_view_print(FILE *f, const job_view_t *v);
void job_view_json(FILE *f, const job_view_t *v);
/* What ended a job that did not complete, as status prints it: the agents' failed ranks, else,
 * where no agent reported, the last lines its batch shell's stream holds (`wait` prints it too). */
void job_view_print_cause(FILE *f, const job_view_t *v);

/* Its state in a few words: "failed: rank 1 exited with code 3", "cancelled", "running". */
void job_view_state_text(const job_view_t *v, char *out, size_t size);

/* The exit status `wait` gives for a job that ended: 0 when it completed, else its own non-zero
 * status where known (a cancelled job's signal death is not), else 1. */
int job_view_exit(const job_view_t *v);

#endif
