/* The workers' environment contract (worker_env.h): what torchrun gives each worker, what the
 * agent keeps from its own environment, and what it never passes on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/tap.h"
#include "runtime/job/job_contract.h"
#include "runtime/job/worker_env.h"

/* The value of name in env, or NULL. */
static const char *value_of(char **env, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; env && env[i]; i++)
        if (!strncmp(env[i], name, len) && env[i][len] == '=')
            return env[i] + len + 1;
    return NULL;
}

static size_t count_of(char **env, const char *name)
{
    size_t len = strlen(name), n = 0;
    for (size_t i = 0; env && env[i]; i++)
        n += !strncmp(env[i], name, len) && env[i][len] == '=';
    return n;
}

int main(void)
{
    ddp_worker_env_t w = {.rank = 5,
                          .local_rank = 1,
                          .world_size = 8,
                          .local_world_size = 4,
                          .group_rank = 1,
                          .group_world_size = 2,
                          .restart_count = 3,
                          .max_restarts = 4,
                          .master_addr = "gpu01",
                          .master_port = 29500,
                          .run_id = "job-7",
                          .error_file = "/tmp/e.json",
                          .worker_token = "abc"};
    char *base[] = {"RANK=99",
                    "MASTER_PORT=1",
                    "DDPJOB_TOKEN=secret",
                    "USER_VAR=kept",
                    "CUDA_VISIBLE_DEVICES=0,1",
                    NULL};
    ddp_error_t err;
    char **env = ddp_worker_env_build(&w, base, &err);
    ok(env != NULL, "the environment is built");
    static const struct {
        const char *name, *want;
    } torchrun[] = {
        {"RANK", "5"},
        {"LOCAL_RANK", "1"},
        {"WORLD_SIZE", "8"},
        {"LOCAL_WORLD_SIZE", "4"},
        {"GROUP_RANK", "1"},
        {"GROUP_WORLD_SIZE", "2"},
        {"ROLE_RANK", "5"},
        {"ROLE_WORLD_SIZE", "8"},
        {"ROLE_NAME", "default"},
        {"MASTER_ADDR", "gpu01"},
        {"MASTER_PORT", "29500"},
        {"TORCHELASTIC_RESTART_COUNT", "3"},
        {"TORCHELASTIC_MAX_RESTARTS", "4"},
        {"TORCHELASTIC_RUN_ID", "job-7"},
        {"TORCHELASTIC_USE_AGENT_STORE", "False"},
        {"TORCHELASTIC_ERROR_FILE", "/tmp/e.json"},
        {"DDPJOB_WORKER_TOKEN", "abc"},
        {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "1"},
        {"OMP_NUM_THREADS", "1"},
        {"PYTHONUNBUFFERED", "1"},
    };
    for (size_t i = 0; i < sizeof torchrun / sizeof *torchrun; i++) {
        is_str(value_of(env, torchrun[i].name), torchrun[i].want, "%s=%s", torchrun[i].name,
               torchrun[i].want);
        ok(count_of(env, torchrun[i].name) == 1, "... set once");
    }
    ok(value_of(env, "DDPJOB_TOKEN") == NULL, "the job token is never passed on");
    ok(value_of(env, "NCCL_ASYNC_ERROR_HANDLING") == NULL,
       "nor the name PyTorch 2.2 and later warn about on every rank");
    is_str(value_of(env, "USER_VAR"), "kept", "the agent's other variables pass through");
    is_str(value_of(env, "CUDA_VISIBLE_DEVICES"), "0,1", "CUDA_VISIBLE_DEVICES passes through");
    ddp_worker_env_free(env);

    /* The user's own choices win over the defaults; one worker gets no OMP_NUM_THREADS; a
     * worker's own GPU replaces the inherited list. */
    char *chosen[] = {"OMP_NUM_THREADS=6", "PYTHONUNBUFFERED=0",
                      "TORCH_NCCL_ASYNC_ERROR_HANDLING=0", "CUDA_VISIBLE_DEVICES=0,1", NULL};
    w.local_world_size = 1;
    w.cuda_visible_devices = "1";
    env = ddp_worker_env_build(&w, chosen, &err);
    is_str(value_of(env, "OMP_NUM_THREADS"), "6", "an inherited OMP_NUM_THREADS stays");
    is_str(value_of(env, "PYTHONUNBUFFERED"), "0", "an inherited PYTHONUNBUFFERED stays");
    is_str(value_of(env, "TORCH_NCCL_ASYNC_ERROR_HANDLING"), "0", "... and NCCL's error handling");
    is_str(value_of(env, "CUDA_VISIBLE_DEVICES"), "1", "a worker's own GPU replaces the list");
    ok(count_of(env, "CUDA_VISIBLE_DEVICES") == 1, "... once");
    ddp_worker_env_free(env);
    char *empty[] = {NULL};
    env = ddp_worker_env_build(&w, empty, &err);
    ok(value_of(env, "OMP_NUM_THREADS") == NULL, "one worker on the node: OMP_NUM_THREADS unset");
    ddp_worker_env_free(env);

    ok(ddp_worker_env_owns("RANK=3") && ddp_worker_env_owns("MASTER_PORT"),
       "the contract owns RANK and MASTER_PORT");
    ok(!ddp_worker_env_owns("RANKS=3") && !ddp_worker_env_owns("USER_VAR"),
       "... and nothing that merely starts like them");

    char t1[WORKER_TOKEN_HEX + 1], t2[WORKER_TOKEN_HEX + 1], t3[WORKER_TOKEN_HEX + 1];
    ddp_worker_token_derive("job", 3, "run", 0, t1);
    ddp_worker_token_derive("job", 3, "run", 0, t2);
    ddp_worker_token_derive("job", 3, "run", 1, t3);
    ok(!strcmp(t1, t2) && strlen(t1) == WORKER_TOKEN_HEX,
       "every agent derives the same worker token");
    ok(strcmp(t1, t3) != 0, "... and another attempt's differs");

    /* The master port a scheduler job derives from its id (job_contract.h). */
    ok(ddp_job_port_from_id("123") == 10246 && ddp_job_port_from_id("123.pbs") == 10246,
       "job 123: 10000 + 2 x 123, whatever the server");
    ok(ddp_job_port_from_id("124.pbs") != ddp_job_port_from_id("123.pbs"), "the next job differs");
    int seen[64], distinct = 1;
    for (int k = 0; k < 64; k++) {
        char id[32];
        snprintf(id, sizeof id, "7[%d].pbshead", k);
        seen[k] = ddp_job_port_from_id(id);
        for (int j = 0; j < k; j++)
            distinct &= seen[j] != seen[k];
        distinct &= seen[k] != ddp_job_port_from_id("7.pbshead") && seen[k] % 2 == 0;
    }
    ok(distinct, "a PBS array's 64 subjobs each derive their own even port, not the array's");
    ok(ddp_job_port_from_id("7[1].pbshead") != ddp_job_port_from_id("8.pbshead") &&
           ddp_job_port_from_id("7[0].pbshead") != ddp_job_port_from_id("8.pbshead"),
       "... nor the next job's");
    return done_testing();
}
