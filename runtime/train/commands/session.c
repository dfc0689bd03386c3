#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/train/commands/commands.h"
#include "runtime/base/ddp_parse.h"

int session_parse(int *argc, char **argv, session_options_t *o)
{
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *arg = argv[i];
        if ((!strcmp(arg, "--backend") || !strcmp(arg, "--timeout")) && i + 1 < *argc) {
            const char *val = argv[++i];
            if (arg[2] == 'b') {
                o->backend = val;
            } else {
                if (ddp_parse_double(val, 0, 1e9, &o->timeout_s) || !(o->timeout_s > 0)) {
                    fprintf(stderr, "ddp-train: --timeout %s: expected seconds > 0\n", val);
                    return -1;
                }
            }
            continue;
        }
        argv[out++] = argv[i];
    }
    *argc = out;
    argv[out] = NULL;
    return 0;
}

int session_no_arguments(const char *prog, int argc, char **argv)
{
    if (argc <= 1)
        return 0;
    fprintf(stderr,
            "ddp-train %s: unexpected argument \"%s\"\n"
            "usage: ddp-train %s [--backend tcp|nccl] [--timeout SECONDS]\n",
            prog, argv[1], prog);
    return -1;
}

pg_t *session_open(const char *prog, const session_options_t *o)
{
    ddp_error_t err;
    pg_world_t world;
    if (pg_world_from_env(&world, &err)) {
        fprintf(stderr, "ddp-train %s: %s\n", prog, err.msg);
        return NULL;
    }
    pg_options_t opt = {.backend = o->backend, .timeout_ms = (int64_t)(o->timeout_s * 1000)};
    pg_t *pg = pg_create(&world, &opt, &err);
    if (!pg)
        fprintf(stderr, "ddp-train %s: rank %d of %d (from %s): %s\n", prog, world.rank, world.size,
                world.source, err.msg);
    return pg;
}

int session_close(const char *prog, pg_t *pg, int status)
{
    ddp_error_t err;
    int rank = pg_rank(pg);
    if (pg_destroy(pg, &err)) {
        fprintf(stderr, "ddp-train %s: rank %d: closing the group: %s\n", prog, rank, err.msg);
        return 1;
    }
    return status;
}
