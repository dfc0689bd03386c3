#include "cli/jobs/job_output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/jobs/job_record.h"
#include "runtime/base/ddp_file.h"

#define OUTPUT_NOTE "output-dir"

int job_output_place(const char *wanted, job_output_t *out, ddp_error_t *err)
{
    memset(out, 0, sizeof *out);
    ddp_error_t open_err;
    if (ddp_check_path_closed(wanted, &open_err) == 0) {
        snprintf(out->dir, sizeof out->dir, "%s", wanted);
        return 0;
    }
    snprintf(out->why, sizeof out->why, "%s", open_err.msg);
    char *own = job_state_path("output");
    if (!own)
        return ddp_error_set(err,
                             "%s, and neither XDG_STATE_HOME nor HOME is an absolute path for "
                             "a folder of your own to take the scheduler's output",
                             open_err.msg);
    int rc = 0;
    if (ddp_make_dirs(own, 0700, err) || ddp_check_private_dir(own, err) ||
        ddp_check_path_closed(own, err))
        rc = ddp_error_prefix(err, "%s, and so is your own output folder", open_err.msg);
    else if (strpbrk(own, "%,'\"\n"))
        rc = ddp_error_set(err,
                           "%s, and your output folder %s holds one of %%,'\" which a "
                           "scheduler's output option cannot carry",
                           open_err.msg, own);
    else
        snprintf(out->dir, sizeof out->dir, "%s", own);
    out->moved = 1;
    free(own);
    return rc;
}

void job_output_tell(const char *record, const job_output_t *out)
{
    if (!out->moved)
        return;
    fprintf(stderr,
            "ddpjob: note: %s: the scheduler, which follows links there, writes the job's output "
            "file into %s instead\n",
            out->why, out->dir);
    char path[8192], line[4200];
    snprintf(path, sizeof path, "%s/" OUTPUT_NOTE, record);
    snprintf(line, sizeof line, "%s\n", out->dir);
    ddp_error_t err;
    if (ddp_write_file_atomic(path, line, strlen(line), 0600, &err) < 0)
        fprintf(stderr, "ddpjob: warning: %s\n", err.msg);
}

char *job_output_moved(const char *record)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/" OUTPUT_NOTE, record);
    ddp_error_t err;
    char *text = ddp_read_file_max(path, 8192, NULL, &err);
    char *nl = text ? strchr(text, '\n') : NULL;
    if (!nl || *text != '/') {
        free(text);
        return NULL;
    }
    *nl = 0;
    return text;
}
