/* sweep_record: what `ddpjob submit` of a sweep leaves for the commands after it (ddpjob(1),
 * SWEEPS). The layout:
 *
 *   WORKDIR/.ddpjob/sweeps/NAME.YYYYMMDD-HHMMSS.XXXXXX/
 *     sweep.json   version, name, scheduler, spec, submitted, parallel, how ("array": one array
 *                  job; "lanes": one job per trial, `parallel` chains of depend=afterany;
 *                  "packed": run inside held allocations, pack {"nodes", "allocations"};
 *                  "job": a one-trial sweep), objective {"metric", "goal"} where the spec names
 *                  one, trials: [{"params": {...}}] in trial order
 *     pack-J/      packed: allocation J's record, as `ddpjob dev` holds one (dev_record.h);
 *                  each trial's record is a run of one (held_in), its links carry that job's id;
 *                  --retry-failed holds one more
 *     NAME.array.sbatch|.pbs  the array job's script, as submitted
 *     NAME-ARRAY_K.out, ARRAY[K].server.OU  each array task's output file, unless others could
 *                  change a folder on the way here (job_output.h)
 *     trial-K/     trial K's job record (job_record.h): an array task's links carry its task id
 *                  (Slurm ARRAY_K, PBS ARRAY[K].server), a lane trial's its own job's
 *     trial-K.try-N/  trial K's record before its Nth --retry-failed
 *
 * The index (job_record.h) has one line per sweep, its record this folder. */
#ifndef DDPJOB_SWEEP_RECORD_H
#define DDPJOB_SWEEP_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/base/ddp_error.h"

#define SWEEP_RECORD_VERSION 1

typedef struct {
    char *dir;
    int version;
    char name[256], scheduler[16], spec[4096], how[16];
    int64_t submitted;
    long parallel;
    char objective[64];    /* the metric the spec judges the best trial by; "": none named */
    int maximize;          /* ... the highest of it (else the lowest) */
    long pack_nodes;       /* packed: the nodes each allocation holds; 0 not packed */
    long pack_allocations; /* ... and how many were held at once */
    size_t ntrials;
    char **params; /* [trial]: its parameters as JSON text, {"lr": 0.1} */
} sweep_record_t;

/* Makes the sweep's folder under workdir with its sweep.json (the fields of s but dir); *dir
 * malloc'd. Private unless group_readable (as a job record). */
int sweep_record_create(const sweep_record_t *s, const char *workdir, int group_readable,
                        char **dir, ddp_error_t *err);
/* Reads the sweep in dir; -1 when dir holds no sweep.json or is not the user's own, closed to
 * others (err says which). A params entry that is not valid JSON becomes "{}". */
int sweep_record_read(const char *dir, sweep_record_t *s, ddp_error_t *err);
void sweep_record_free(sweep_record_t *s);
/* Whether dir holds a sweep (a sweep.json). */
int sweep_record_is(const char *dir);
/* Trial k's record folder, DIR/trial-K, into out. */
void sweep_trial_dir(const char *dir, size_t k, char *out, size_t size);

#endif
