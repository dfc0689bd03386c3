/* The nccl backend of a build without the CUDA toolkit: it exists so that `--backend nccl`
 * says why it cannot work instead of being an unknown name. */
#include "runtime/pg/pg_backend.h"

static void *none_create(const pg_world_t *w, ddp_store_client_t *store, int64_t timeout_ms,
                         ddp_error_t *err)
{
    ddp_error_set(err, "nccl backend: this build has no GPU support (the CUDA toolkit was not "
                       "found when it was configured; see meson option -Dcuda)");
    return NULL;
}

static int none_supports(pg_dtype_t t)
{
    return 0;
}

const pg_backend_t pg_nccl_backend = {
    .name = "nccl",
    .create = none_create,
    .supports = none_supports,
};
