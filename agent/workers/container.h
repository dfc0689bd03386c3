/* container: each worker's command run inside the job's container image, the agent outside it.
 *
 * The agent stays on the node (its cgroup, /proc, the store, the record), and each worker's
 * command becomes the runtime's own start of the image (enroot start, apptainer/singularity
 * exec, ch-run), so every worker is the program inside, in the agent's process group rules, and
 * nothing of the container outlives it. What the program writes that the agent reads (its error
 * and progress files, the attempt's folder) and its working folder are bound at the same paths;
 * the mounts the spec names too. Its environment reaches the program whole, except the
 * variables that describe the host's own files (PATH, LD_LIBRARY_PATH, ...; the image has its
 * own), unless --container-env names them. Under pyxis the template runs the agent itself inside
 * the container (srun's --container-image): the agent is static, so any image can run it. */
#ifndef AGENT_CONTAINER_H
#define AGENT_CONTAINER_H

#include <stddef.h>

#include "runtime/base/ddp_error.h"
#include "runtime/job/container_spec.h"

typedef struct container {
    container_runtime_t runtime; /* CONTAINER_NONE: workers run on the host */
    char *image;
    /* The mounts as container_mount_parse split them: each src is the start of its own copy of
     * the text, which container_free frees. */
    container_mount_t *mounts;
    size_t nmounts;
    char **env_names; /* variables passed even when the host's layout would keep them out */
    size_t nenv_names;
    char *stage; /* copy the image here first, once per node: "jobfs" (container_stage_dir) or a
                    folder; NULL: run it where it is */
    int gpus;    /* a GPU job: the container must see the node's GPUs (container_check_gpus) */
} container_t;

/* The runtime's program: enroot, apptainer, singularity or ch-run. */
const char *container_program(container_runtime_t runtime);

/* The runtime's program on PATH and the image readable, on this node, before any worker starts
 * (and $USER set for ch-run, from the user database where the task lacks it); -1 with err naming
 * runtime, image and why. */
int container_check(const container_t *c, ddp_error_t *err);

/* Writes into dir (the attempt's folder, the agent's own) what the runtime reads there before
 * the attempt's workers start: enroot's config, whose environ() passes the environment. */
int container_prepare(const container_t *c, const char *dir, ddp_error_t *err);

/* A new argv: `command` run inside c's image, in the folder cwd, with env (the worker's
 * environment, which the runtime itself gets too), binding cwd and dir (the attempt's folder,
 * prepared by container_prepare; NULL: none, and enroot then passes no variable) at their own
 * paths. NULL with err set. Free with container_command_free. */
char **container_command(const container_t *c, char *const *command, char *const *env,
                         const char *cwd, const char *dir, ddp_error_t *err);
void container_command_free(char **argv);

/* Becomes `command` inside c's image, in the current folder, with this environment (a shell on
 * a held node): the runtime's checks first. Its runtime files go in a private folder made under
 * $TMPDIR (else /tmp), left for the job's end, as the program replaces this one. Returns only
 * on failure, with err set. */
void container_exec(const container_t *c, char *const *command, ddp_error_t *err);

/* The image copied into a private folder made fresh under c->stage (jobfs: $PBS_JOBFS, Gadi's
 * node-local disk, else $TMPDIR, else /tmp), so that every worker reads it from node-local
 * storage: *folder (to remove with container_unstage) and *image, malloc'd. -1 with err set;
 * nothing is left then. */
int container_stage(const container_t *c, char **folder, char **image, ddp_error_t *err);
void container_unstage(char *folder, char *image);

/* A GPU job's check, once per node before its first workers: `nvidia-smi -L` inside the image
 * must list a GPU (the runtime's GPU support: apptainer's --nv, enroot's NVIDIA hook, a
 * Charliecloud image given the driver by ch-fromhost). -1 with err naming the runtime, the image
 * and what it said. */
int container_check_gpus(const container_t *c, ddp_error_t *err);

void container_free(container_t *c);

#endif
