/* container_spec: what a job's container is, as the spec (ddpjob validate) and the agent's
 * --container-* options both read it: one row per runtime with what ddpjob knows of it, and a
 * mount's SRC[:DST[:ro]] form. One table and one parser, so that validate refuses exactly what
 * the agent would.
 *
 * To add a runtime:
 *   1. its value in container_runtime_t, before CONTAINER_RUNTIMES_END;
 *   2. its word in container_runtime_words and its row in container_spec.c's table (its program,
 *      version probe, image kind, what it cannot do and why);
 *   3. its command line in agent/workers/container.c (container_command, add_mount);
 *   4. its case in tests/agent/container.sh (or container_slurm.sh for a scheduler's own). */
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
