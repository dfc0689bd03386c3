/* ddp-train's subcommands, and what they share: opening the process group from the worker's
 * environment with the --backend and --timeout every subcommand takes.
 *
 * Each command returns the program's exit status and prints its own errors (it is the caller
 * that knows the context); status 1 is a failed operation or a wrong result, 2 a usage error. */
#ifndef DDP_TRAIN_COMMANDS_H
#define DDP_TRAIN_COMMANDS_H

#include "runtime/pg/pg.h"

typedef struct {
    const char *backend;
    double timeout_s;
} session_options_t;

/* Takes --backend NAME and --timeout SECONDS out of argv (compacting it; *argc shrinks).
 * Returns -1 with a message on stderr for a malformed value. */
int session_parse(int *argc, char **argv, session_options_t *o);

/* For commands that take no arguments beyond the session's: -1 after printing the usage when
 * argv holds one. */
int session_no_arguments(const char *prog, int argc, char **argv);

/* Opens the group from the environment; NULL after printing why. */
pg_t *session_open(const char *prog, const session_options_t *o);

/* Destroys the group; a failure is printed and turns `status` into 1. */
int session_close(const char *prog, pg_t *pg, int status);

/* Each command's usage (what `ddp-train COMMAND --help` prints). */
extern const char bench_usage[];

int cmd_hello(int argc, char **argv);
int cmd_collectives(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_make_data(int argc, char **argv);

#endif
