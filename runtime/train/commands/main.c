/* ddp-train: the training core's entry point. Every worker of a job runs one; the ranks meet
 * through the environment their launcher set (ddpjob-agent, mpirun, srun, or by hand). */
#include <stdio.h>
#include <string.h>

#include "runtime/train/commands/commands.h"
#include "runtime/train/options/train_options.h"

static const char usage_text[] =
    "usage: ddp-train COMMAND [OPTIONS]\n"
    "\n"
    "Commands (each rank of the job runs the same one):\n"
    "  hello         rank 0 sends a tensor to every other rank (message passing)\n"
    "  collectives   every operation once with known inputs; each rank prints its results\n"
    "  bench         an nccl-tests-style bandwidth sweep of one or all operations\n"
    "  train         data-parallel training (mlp or resnet; synthetic or CIFAR-10 data)\n"
    "  inspect CKPT  a checkpoint's metadata and per-tensor checksums (no process group)\n"
    "  diff A B      the largest relative difference between two checkpoints\n"
    "  make-data DIR the synthetic data set written as CIFAR-10 files\n"
    "\n"
    "Options every command takes:\n"
    "  --backend tcp|nccl   tcp: CPU buffers over TCP (default); nccl: GPU buffers over NCCL\n"
    "  --timeout SECONDS    deadline of every operation (default: $DDP_PG_TIMEOUT, else 300)\n"
    "\n"
    "The ranks come from RANK/WORLD_SIZE/LOCAL_RANK (ddpjob-agent, torchrun), from\n"
    "OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK (mpirun) or SLURM_PROCID/NTASKS/LOCALID (srun); rank 0\n"
    "serves the group's store at MASTER_ADDR:MASTER_PORT. Exit status: 0; 1 when an operation\n"
    "failed or gave a wrong result; 2 for a usage error; 75 when train was stopped by SIGTERM,\n"
    "SIGUSR1 or SIGUSR2 after writing its checkpoint (run again with --resume).\n"
    "`ddp-train COMMAND --help` shows a command's options; `ddp-train --version` the version.\n";

#define SESSION_USAGE "[--backend tcp|nccl] [--timeout SECONDS]\n"

static int is_help(const char *arg)
{
    return !strcmp(arg, "--help") || !strcmp(arg, "-h");
}

int main(int argc, char **argv)
{
    const struct {
        const char *name;
        int (*run)(int, char **);
        const char *usage;
    } commands[] = {
        {"hello", cmd_hello, "usage: ddp-train hello " SESSION_USAGE},
        {"collectives", cmd_collectives, "usage: ddp-train collectives " SESSION_USAGE},
        {"bench", cmd_bench, bench_usage},
        {"train", cmd_train, train_usage()},
        {"inspect", cmd_inspect, "usage: ddp-train inspect CHECKPOINT\n"},
        {"diff", cmd_diff, "usage: ddp-train diff A B [--tolerance T]\n"},
        {"make-data", cmd_make_data,
         "usage: ddp-train make-data DIR [--size TRAIN,TEST] [--seed S]\n"},
    };
    if (argc < 2 || is_help(argv[1])) {
        fputs(usage_text, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("ddp-train %s\n", DDPJOB_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        if (strcmp(argv[1], commands[i].name))
            continue;
        /* --help anywhere after the command: its usage, not a run. */
        for (int k = 2; k < argc; k++)
            if (is_help(argv[k])) {
                fputs(commands[i].usage, stdout);
                return 0;
            }
        return commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "ddp-train: unknown command \"%s\" (try --help)\n", argv[1]);
    return 2;
}
