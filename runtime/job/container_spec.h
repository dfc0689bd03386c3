/* container_spec: what a job's container is, as the spec (ddpjob validate) and the agent's
 * --container-* options both read it: the runtimes by name, and a mount's SRC[:DST[:ro]] form.
 * One parser, so that validate refuses exactly what the agent would. */
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
} container_runtime_t;

/* The runtimes' names in container_runtime_t's order from CONTAINER_PYXIS, NULL-terminated;
 * container_runtime_parse gives CONTAINER_NONE for any other word. */
extern const char *const container_runtime_words[];
container_runtime_t container_runtime_parse(const char *word);
const char *container_runtime_name(container_runtime_t runtime);

/* A mount as SRC[:DST[:ro]]: both absolute paths, DST defaulting to SRC; the text is split in
 * place into the pointers (it must outlive them; src is its start). Commas are refused (pyxis
 * separates mounts with them), as are blanks and control characters (enroot's fstab lines) and ".."
 * (a mount point made in a Charliecloud image must stay in it). -1 with why filled. */
typedef struct {
    const char *src, *dst;
    bool read_only;
} container_mount_t;
int container_mount_parse(char *text, container_mount_t *m, char *why, size_t why_size);

/* The image's kind a runtime takes, for messages and checks: ".sqsh" (pyxis, enroot), ".sif",
 * ".sqsh" or ".img" (apptainer, singularity), a folder (charliecloud). Whether path's name fits
 * it. */
bool container_image_fits(container_runtime_t runtime, const char *path, const char **wanted);

#endif
