#include "runtime/job/worker_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/base/ddp_hmac.h"

/* Set by the contract: any inherited value is replaced. */
static const char *const owned[] = {
    "RANK",
    "LOCAL_RANK",
    "WORLD_SIZE",
    "LOCAL_WORLD_SIZE",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "ROLE_RANK",
    "ROLE_WORLD_SIZE",
    "ROLE_NAME",
    "MASTER_ADDR",
    "MASTER_PORT",
    DDP_RESTART_COUNT_ENV,
    "TORCHELASTIC_MAX_RESTARTS",
    "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_USE_AGENT_STORE",
    "TORCHELASTIC_ERROR_FILE",
    "DDPJOB_TOKEN",
    "DDPJOB_WORKER_TOKEN",
    "DDPJOB_RESTART_COUNT",
    DDP_PROGRESS_ENV,
    DDP_METRICS_ENV,
    NULL,
};

int ddp_worker_env_owns(const char *entry)
{
    size_t len = strcspn(entry, "=");
    for (int i = 0; owned[i]; i++)
        if (strlen(owned[i]) == len && !strncmp(entry, owned[i], len))
            return 1;
    return 0;
}

static int inherited(char *const *base, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; base && base[i]; i++)
        if (!strncmp(base[i], name, len) && base[i][len] == '=')
            return 1;
    return 0;
}

char **ddp_worker_env_build(const ddp_worker_env_t *w, char *const *base, ddp_error_t *err)
{
    size_t nbase = 0;
    while (base && base[nbase])
        nbase++;
    enum { MAX_ADDED = 32 }; /* more than the ADDs below */
    char **env = calloc(nbase + MAX_ADDED + 1, sizeof *env);
    if (!env) {
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    size_t n = 0;
    int rc = 0;
    for (size_t i = 0; i < nbase && !rc; i++)
        if (!ddp_worker_env_owns(base[i]) &&
            !(w->cuda_visible_devices && !strncmp(base[i], "CUDA_VISIBLE_DEVICES=", 21)))
            rc = !(env[n++] = strdup(base[i]));
#define ADD(...) (rc = rc || asprintf(&env[n++], __VA_ARGS__) < 0)
    ADD("RANK=%d", w->rank);
    ADD("LOCAL_RANK=%d", w->local_rank);
    ADD("WORLD_SIZE=%d", w->world_size);
    ADD("LOCAL_WORLD_SIZE=%d", w->local_world_size);
    ADD("GROUP_RANK=%d", w->group_rank);
    ADD("GROUP_WORLD_SIZE=%d", w->group_world_size);
    ADD("ROLE_RANK=%d", w->rank);
    ADD("ROLE_WORLD_SIZE=%d", w->world_size);
    ADD("ROLE_NAME=default");
    ADD("MASTER_ADDR=%s", w->master_addr);
    ADD("MASTER_PORT=%d", w->master_port);
    ADD(DDP_RESTART_COUNT_ENV "=%d", w->restart_count);
    ADD("DDPJOB_RESTART_COUNT=%d", w->restart_count);
    ADD("TORCHELASTIC_MAX_RESTARTS=%d", w->max_restarts);
    ADD("TORCHELASTIC_RUN_ID=%s", w->run_id);
    /* Our store speaks its own protocol: PyTorch must make its own TCPStore at MASTER_PORT. */
    ADD("TORCHELASTIC_USE_AGENT_STORE=False");
    if (w->error_file)
        ADD("TORCHELASTIC_ERROR_FILE=%s", w->error_file);
    if (w->worker_token)
        ADD("DDPJOB_WORKER_TOKEN=%s", w->worker_token);
    if (w->progress_file)
        ADD(DDP_PROGRESS_ENV "=%s", w->progress_file);
    if (w->metrics_file)
        ADD(DDP_METRICS_ENV "=%s", w->metrics_file);
    if (w->cuda_visible_devices)
        ADD("CUDA_VISIBLE_DEVICES=%s", w->cuda_visible_devices);
    /* Only the name PyTorch reads since 2.2, as torchrun sets it: from 2.2 on, the older
     * NCCL_ASYNC_ERROR_HANDLING set makes every rank print a deprecation warning. */
    if (!inherited(base, "TORCH_NCCL_ASYNC_ERROR_HANDLING"))
        ADD("TORCH_NCCL_ASYNC_ERROR_HANDLING=1");
    /* torchrun runs python -u; this reaches a python started any other way (a spec's command,
     * a shell script), so a worker's prints reach the log as it runs and survive a SIGTERM. */
    if (!inherited(base, "PYTHONUNBUFFERED"))
        ADD("PYTHONUNBUFFERED=1");
    /* As torchrun: several workers on a node each running all cores' threads would thrash. */
    if (w->local_world_size > 1 && !inherited(base, "OMP_NUM_THREADS"))
        ADD("OMP_NUM_THREADS=1");
#undef ADD
    if (rc) {
        ddp_worker_env_free(env);
        ddp_error_set(err, "out of memory");
        return NULL;
    }
    return env;
}

void ddp_worker_token_derive(const void *job_token, size_t len, const char *run_id, int attempt,
                             char out[WORKER_TOKEN_HEX + 1])
{
    char msg[512];
    snprintf(msg, sizeof msg, "ddpjob workers %s %d", run_id, attempt);
    unsigned char mac[DDP_SHA256_LEN];
    ddp_hmac_sha256(job_token, len, msg, strlen(msg), mac);
    ddp_hex(mac, sizeof mac, out);
}

void ddp_worker_env_free(char **env)
{
    for (size_t i = 0; env && env[i]; i++)
        free(env[i]);
    free(env);
}
