/* container_spec: what a job's container is, as the spec (ddpjob validate) and the agent's
 * --container-* options both read it: one row per runtime with what ddpjob knows of it, and a
 * mount's SRC[:DST[:ro]] form. One table and one parser, so that validate refuses exactly what
 * the agent would.
 *
 * To add a runtime:
 *   1. its value in container_runtime_t, before CONTAINER_RUNTIMES_END;
 *   2. its word in container_runtime_words and its row in container_spec.c's table: its
 *      program, version probe, image kind, what it cannot do and why, and how the agent runs a
 *      worker in it (container_exec_t; agent/workers/container.c reads only the row);
 *   3. its case in tests/agent/container.sh (or container_slurm.sh for a scheduler's own). */
#ifndef DDP_CONTAINER_SPEC_H
#define DDP_CONTAINER_SPEC_H

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    CONTAINER_NONE = 0,
    CONTAINER_PYXIS, /* srun's --container-image: the agent itself runs inside (templates) */
    CONTAINER_ENROOT,
    CONTAINER_APPTAINER,
    CONTAINER_SINGULARITY,
    CONTAINER_CHARLIECLOUD,
    CONTAINER_RUNTIMES_END
} container_runtime_t;

/* The runtimes' words (the spec's and --container-runtime's) in container_runtime_t's order from
 * CONTAINER_PYXIS, NULL-terminated. */
extern const char *const container_runtime_words[];
/* Their values, in the same order (for option tables that map a word to a value). */
extern const int container_runtime_values[];

/* How the worker's environment reaches the program inside. */
typedef enum {
    CONTAINER_ENV_WHOLE,  /* the runtime passes it all (ch-run) */
    CONTAINER_ENV_FORCED, /* passed, but the host-layout names set from the image: given again
                             as the runtime's env option where --container-env names them */
    CONTAINER_ENV_CONFIG, /* only what a config file written beside the attempt prints (enroot's
                             environ()); the GPUs by NVIDIA_VISIBLE_DEVICES there */
} container_env_t;

/* How the agent runs a worker in a runtime: PROGRAM START... [ENV] [BIND_FLAG BIND]...
 * [WORKDIR_FLAG CWD] IMAGE [AFTER_IMAGE] COMMAND..., where a bind is its pattern with {src} and
 * {dst} filled in. */
typedef struct {
    const char *start[3];     /* the words after the program ("exec"), NULL-ended */
    container_env_t env;      /* how the environment reaches the program */
    const char *env_flag;     /* joined to its value: FORCED's NAME=VALUE ("--env="), CONFIG's
                                 file ("--conf=") */
    const char *config_file;  /* CONFIG's file, written in the attempt's folder */
    const char *gpu_flag;     /* given where the node has NVIDIA GPUs ("--nv"); NULL: none */
    const char *bind_flag;    /* before each bind ("--bind") */
    const char *bind_rw;      /* a read-write bind's pattern ("{src}:{dst}") */
    const char *bind_ro;      /* a read-only bind's; NULL: none (no_read_only_why says why) */
    bool binds_any_name;      /* a name with ':', ',' or a blank can be bound */
    bool binds_onto_image;    /* binds only onto folders the image has: they are made first */
    bool shares_tmp;          /* the host's /tmp is the container's already: not bound */
    const char *workdir_flag; /* the working folder's option; NULL: a shell changes into it */
    const char *after_image;  /* a word between the image and the command ("--"); NULL: none */
    bool needs_user;          /* refuses to start without $USER (set from the password entry) */
} container_exec_t;

/* What ddpjob knows of a runtime. */
typedef struct {
    const char *program;        /* what the agent runs */
    const char *version_arg;    /* the program's argument that prints its version */
    const char *image_suffixes; /* the image files it takes, blank-separated; NULL: a folder */
    const char *image_kind;     /* what it takes, as messages say it */
    /* Why it cannot do each of these; NULL: it can. */
    const char *no_agent_why;     /* the agent runs it (pyxis: srun does, the agent inside) */
    const char *no_stage_why;     /* container.stage: the image copied to node-local disk */
    const char *no_read_only_why; /* a mount's :ro */
    container_exec_t exec;        /* how the agent runs a worker in it (not pyxis: srun does) */
} container_runtime_info_t;

/* runtime's row; NULL for CONTAINER_NONE or a value that is none. */
const container_runtime_info_t *container_runtime_info(container_runtime_t runtime);
/* The runtime a word names; CONTAINER_NONE for any other word, or for NULL. */
container_runtime_t container_runtime_parse(const char *word);
const char *container_runtime_name(container_runtime_t runtime);
/* The runtimes' words as a list for messages, "pyxis, enroot, ... or charliecloud": every one, or
 * only those the agent runs itself (agent_runs). */
const char *container_runtime_choices(int agent_runs);

/* A mount as SRC[:DST[:ro]]: both absolute paths, DST defaulting to SRC; the text is split in
 * place into the pointers (it must outlive them; src is its start). Commas are refused (pyxis
 * separates mounts with them), as are blanks and control characters (enroot's fstab lines) and ".."
 * (a mount point made in a Charliecloud image must stay in it). -1 with why filled. */
typedef struct {
    const char *src, *dst;
    bool read_only;
} container_mount_t;
int container_mount_parse(char *text, container_mount_t *m, char *why, size_t why_size);

/* Whether path's name fits the image kind runtime takes (its row's suffixes; a folder: none of
 * any runtime's image files); *wanted: that kind, for messages. */
bool container_image_fits(container_runtime_t runtime, const char *path, const char **wanted);

#endif
