/* submit_steps: the steps of a submit, shared by one job's and a sweep's: the script rendered into
 * memory (nothing is written unless the whole script came out), written into the job's folder,
 * the record made, the submitter run and its job id read. Each step says on stderr what went
 * wrong, as the command's own words, and returns an exit code (commands.h). */
#ifndef DDPJOB_SUBMIT_STEPS_H
#define DDPJOB_SUBMIT_STEPS_H

#include <stddef.h>

#include "cli/commands/commands.h"
#include "cli/script/render.h"
#include "cli/jobs/job_output.h"
#include "cli/sched/sched.h"

/* The script, malloc'd; NULL with *exit_code set. */
char *render_to_string(const job_spec_t *spec, const render_opts_t *ro, int *exit_code);

/* The script into jobdir as the scheduler's file name for the spec (into file); *script: its
 * path, malloc'd. */
int write_job_script(const job_spec_t *spec, const sched_ops_t *ops, const char *jobdir,
                     const char *text, char *file, size_t size, char **script);

/* The job's record (job_record.h) before it is submitted: a fresh folder in its workdir, or `at`
 * (a sweep's trial-K) when not NULL; *dir malloc'd. `held` (NULL: a batch job) gives the facts of
 * an allocation `ddpjob dev` holds or of a run in one: its held, idle_s, held_in and name. 0, or
 * -1 with err. */
int make_record(const job_spec_t *spec, const sched_ops_t *ops, const char *jobdir,
                const char *script_text, const char *at, const job_record_t *held, char **dir,
                ddp_error_t *err);

/* How a job finds its record: through its environment, set here, which a submitter without an
 * env_flag passes on from the submitter's; one with it passes only what the flag names: the flag
 * and VAR=RECORD (written into var) are added to extra at *n, with the folder of a moved output
 * file (`output` may be NULL), which a requeued job's successor is sent to as well. */
void record_handoff(const sched_ops_t *ops, const char *record, const job_output_t *output,
                    char *var, size_t size, char **extra, size_t *n);

/* Where the output file of a job that belongs in `wanted` goes (job_output.h). EXIT_OK, or
 * EXIT_SYSTEM said on stderr. */
int place_output(const char *wanted, job_output_t *out);

/* Runs the submitter (sub_argv, in jobdir) and reads the job id it prints into job_id. The
 * script, sub_argv's last word, reaches the submitter through a descriptor opened and checked
 * here (a file of this user's that others cannot write, holding `text` when not NULL), never by
 * its name again: in a team's workdir another member could swap the file. `script` names it in
 * messages. */
int run_submitter(const sched_ops_t *ops, char **sub_argv, const char *jobdir, const char *script,
                  const char *text, char *job_id, size_t size);

/* Runs (or, dry, shows as "would run in DIR: ...") the submitter on file in dir with the extra
 * arguments (NULL-terminated), the file checked to hold `text` (run_submitter); its id into id. */
int submit_script(const sched_ops_t *ops, const char *dir, const char *file, const char *text,
                  char **extra, int dry, char *id, size_t size);

/* The submitted job's first id into its record, and (when `indexed`) the job into the index: a
 * failure here leaves a job that runs, so it is a warning. */
void record_submitted(const char *record, const char *job_id, int indexed);

#endif
