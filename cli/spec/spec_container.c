#include "cli/spec/spec_container.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_alloc.h"
#include "runtime/job/container_spec.h"

/* `ddpjob run` and `launch` start no srun, so pyxis cannot run there: the runtime that runs its
 * image, enroot (pyxis's own), does; else the scheduler's. Said, with why, where it differs. */
static const char *local_runtime(const job_spec_t *spec, const char *under_scheduler,
                                 diag_t *remarks)
{
    if (strcmp(under_scheduler, "pyxis"))
        return under_scheduler;
    spec_loc_t at = spec_field_loc(spec, "container");
    diag_add(remarks, at.line, at.col, "container.runtime",
             "note: not given, and pyxis (what the job's scheduler takes) runs only under srun: "
             "`ddpjob run` and `launch` run the image with enroot, pyxis's own runtime (set "
             "container.runtime to choose another)");
    return "enroot";
}

static void check_mounts(const job_spec_t *spec, container_runtime_t runtime, diag_t *diag)
{
    const container_runtime_info_t *info = container_runtime_info(runtime);
    spec_loc_t at = spec_field_loc(spec, "container.mounts");
    for (size_t i = 0; i < spec->container.mounts.count; i++) {
        const char *given = spec->container.mounts.items[i];
        char *text = ddp_xstrdup(given), why[256];
        container_mount_t m;
        if (container_mount_parse(text, &m, why, sizeof why))
            diag_add(diag, at.line, at.col, "container.mounts", "\"%s\": %s", given, why);
        else if (m.read_only && info && info->no_read_only_why)
            diag_add(diag, at.line, at.col, "container.mounts", "\"%s\": %s; drop :ro", given,
                     info->no_read_only_why);
        free(text);
    }
}

static void check_stage(const job_spec_t *spec, container_runtime_t runtime, diag_t *diag)
{
    const container_runtime_info_t *info = container_runtime_info(runtime);
    const char *stage = spec->container.stage;
    spec_loc_t at = spec_field_loc(spec, "container.stage");
    if (!stage)
        return;
    if (strcmp(stage, "jobfs") && stage[0] != '/')
        diag_add(diag, at.line, at.col, "container.stage",
                 "\"%s\": jobfs (the node's local disk: $PBS_JOBFS, else $TMPDIR) or an absolute "
                 "folder",
                 stage);
    else if (info && info->no_stage_why)
        diag_add(diag, at.line, at.col, "container.stage", "%s", info->no_stage_why);
}

/* A train: run's checkpoint folder outside the working folder is bound without being named: its
 * parent, which exists before ddp-train makes the folder inside. */
static void bind_checkpoint_dir(job_spec_t *spec)
{
    strv_t *mounts = &spec->container.mounts;
    for (size_t i = 0; spec->command_is_train && i + 1 < spec->command.count; i++) {
        const char *dir = spec->command.items[i + 1];
        if (strcmp(spec->command.items[i], "--checkpoint-dir") || dir[0] != '/')
            continue;
        size_t parent = (size_t)(strrchr(dir, '/') - dir);
        if (parent && spec_strv_push(mounts, dir, parent))
            return;
    }
}

void spec_container_settle(job_spec_t *spec, const char *site_default,
                           const container_sched_t *sched, bool local_run, diag_t *diag,
                           diag_t *remarks)
{
    if (!spec->container.present)
        return;
    if (!spec->container.runtime) {
        const char *runtime = site_default ? site_default : sched->runtime;
        spec->container.runtime =
            ddp_xstrdup(local_run ? local_runtime(spec, runtime, remarks) : runtime);
    }
    container_runtime_t runtime = container_runtime_parse(spec->container.runtime);
    spec_loc_t rt_at = spec_field_loc(spec, "container.runtime"),
               image_at = spec_field_loc(spec, "container.image");
    if (!rt_at.line)
        rt_at = spec_field_loc(spec, "container");
    const container_runtime_info_t *info = container_runtime_info(runtime);
    if (info && info->no_agent_why && (local_run || !sched->agent_inside)) {
        char why[128] = "this job names no scheduler";
        if (sched->name)
            snprintf(why, sizeof why, "this job is %s's", sched->name);
        diag_add(diag, rt_at.line, rt_at.col, "container.runtime", "%s: %s; use %s",
                 info->no_agent_why, local_run ? "`ddpjob run` and `launch` start no srun" : why,
                 container_runtime_choices(1));
    }
    const char *image = spec->container.image, *wanted;
    if (image && image[0] != '/')
        diag_add(diag, image_at.line, image_at.col, "container.image",
                 "\"%s\": give an absolute path (every node must find the same file)", image);
    else if (image && !container_image_fits(runtime, image, &wanted))
        diag_add(diag, image_at.line, image_at.col, "container.image",
                 "\"%s\" is not what %s runs: it takes %s", image, spec->container.runtime, wanted);
    check_mounts(spec, runtime, diag);
    check_stage(spec, runtime, diag);
    bind_checkpoint_dir(spec);
}
