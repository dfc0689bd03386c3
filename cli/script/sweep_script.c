#include "cli/script/sweep_script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/sched/sched.h"
#include "cli/script/shell_hold.h"
#include "cli/spec/shquote.h"

/* Trial 0's leading comment and directive lines: up to its first line not starting with '#'. */
static void write_directives(FILE *f, const char *text)
{
    const char *line = text;
    while (*line == '#') {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        fwrite(line, 1, len, f);
        if (!end)
            fputc('\n', f);
        line += len;
    }
}

static void write_list(FILE *f, const char *var, const sweep_trial_script_t *trials, size_t n,
                       int records)
{
    fprintf(f, "%s=(\n", var);
    for (size_t k = 0; k < n; k++) {
        fputs("    ", f);
        shquote_write(f, records ? trials[k].record : trials[k].script);
        fputc('\n', f);
    }
    fputs(")\n", f);
}

char *sweep_array_script(const sched_ops_t *sched, const char *trial0_text,
                         const sweep_trial_script_t *trials, size_t ntrials, long parallel)
{
    char *text = NULL, range[128];
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    const sched_ops_t *ops = sched;
    write_directives(f, trial0_text);
    ops->array_range(ntrials, parallel, range, sizeof range);
    fprintf(f, "%s\n\n", range);
    fprintf(f,
            "# A sweep of %zu trials, at most %ld at once: this array task runs its trial's own "
            "job\n# script with the trial's record, as if the trial had been submitted alone from "
            "its folder.\nset -eo pipefail\n",
            ntrials, parallel > 0 && (size_t)parallel < ntrials ? parallel : (long)ntrials);
    if (ops->array_first_task)
        fprintf(f, "ddpjob_trial=$((${%s:?not a task of an array job} - %d))\n",
                ops->array_index_var, ops->array_first_task);
    else
        fprintf(f, "ddpjob_trial=${%s:?not a task of an array job}\n", ops->array_index_var);
    write_list(f, "ddpjob_trial_scripts", trials, ntrials, 0);
    int records = trials[0].record != NULL;
    if (records)
        write_list(f, "ddpjob_trial_records", trials, ntrials, 1);
    fputs("ddpjob_script=${ddpjob_trial_scripts[$ddpjob_trial]:-}\n"
          "[ -n \"$ddpjob_script\" ] || { echo \"ddpjob: array task $ddpjob_trial: the sweep has "
          "no such trial\" >&2; exit 1; }\n",
          f);
    /* A trial runs in its own folder, as if submitted from there (PBS's scripts start in
     * PBS_O_WORKDIR). */
    if (ops->task_workdir_var)
        fprintf(f, "%s=${ddpjob_script%%/*}\nexport %s\n", ops->task_workdir_var,
                ops->task_workdir_var);
    /* The script as submitted, from the trial's own record (the folder's copy may have been
     * written over since, by another sweep of the same spec), through a hold on that record: in
     * a team's workdir another member may rename .ddpjob and plant a script under its name. */
    if (records)
        fprintf(f,
                "ddpjob_fail() {\n    echo \"ddpjob: $*\" >&2\n    exit 1\n}\n%s"
                "export DDPJOB_RECORD=${ddpjob_trial_records[$ddpjob_trial]}\n"
                "ddpjob_hold_dir ddpjob_record \"$DDPJOB_RECORD\"\n"
                "ddpjob_script=$ddpjob_record/script\n",
                shell_hold_dir_function);
    fputs("exec /bin/bash \"$ddpjob_script\"\n", f);
    if (fclose(f)) {
        free(text);
        return NULL;
    }
    return text;
}
