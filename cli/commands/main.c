/* ddpjob: from a YAML job spec to a running multi-node data-parallel job.
 * This file holds the command table and dispatches to the subcommands (commands.h). */
#include <stdio.h>
#include <string.h>

#include "cli/commands/commands.h"
#include "runtime/base/ddp_portable.h"

/* The command table: each command's name, its function, its line in `ddpjob --help` and what it
 * is (commands.h's CMD_ flags). To add a command: a row here, its cmd_NAME in commands.h, its file
 * in cli/commands/ (with its --help), its completion (share/completions/ddpjob.bash) and its part
 * of ddpjob(1). */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    unsigned flags;
} commands[] = {
    {"validate", cmd_validate, "check a job spec and report every problem", 0},
    {"render", cmd_render, "print the job script for a spec (the dry run)", 0},
    {"submit", cmd_submit, "write the script into the job directory and submit it",
     CMD_ON | CMD_SUBMITS},
    {"status", cmd_status, "the state of submitted jobs: scheduler and job record together",
     CMD_ON},
    {"logs", cmd_logs, "a submitted job's per-rank output, across requeues (-f follows)",
     CMD_ON | CMD_FOLLOWS_WITH_F},
    {"report", cmd_report, "a job as one HTML page: chain, attempts, ranks' steps, causes",
     CMD_ON | CMD_BRINGS_BACK},
    {"cancel", cmd_cancel, "end a job and its queued successors (--checkpoint: stop and save)",
     CMD_ON},
    {"list", cmd_list, "this user's submitted jobs, newest first, with their state",
     CMD_ON | CMD_ALL_CLUSTERS},
    {"wait", cmd_wait, "block until a job's whole chain has ended; exit with its status",
     CMD_ON | CMD_FOLLOWS},
    {"run", cmd_run, "run a spec's workload here (one node), or in a held allocation (--in)",
     CMD_ON | CMD_HELD},
    {"dev", cmd_dev, "hold a spec's nodes as one allocation for runs (run --in), until idle",
     CMD_ON | CMD_HELD | CMD_HOLDS},
    {"shell", cmd_shell, "a terminal or a command on a node of a held allocation (ddpjob dev)",
     CMD_ON | CMD_HELD},
    {"launch", cmd_launch, "run a spec's job on hosts reached by SSH (no scheduler)", 0},
    {"cluster", cmd_cluster, "the clusters reached from this laptop: add, list, check", 0},
    {"fetch", cmd_fetch, "bring a job's files back from its cluster (checkpoints, logs)", 0},
    {"setup-nodes", cmd_setup_nodes, "check (and set up) key logins from this head to each host",
     0},
    {"doctor", cmd_doctor, "compare the nodes a job would run on (over SSH, in a batch job, here)",
     0},
    {"nodes", cmd_nodes, "list a job's nodes from a Slurm hostlist or a PBS node file", 0},
    {"notify", cmd_notify, "send a job's events to its webhook (run by the job's batch shell)", 0},
    {"pbs-agents", cmd_pbs_agents, "start and watch a PBS job's agents (run by the PBS script)", 0},
    {"node-agents", cmd_pbs_agents,
     "start and watch a job's agents as its tasks (run by the Grid Engine script)", 0},
    {"dev-hold", cmd_dev_hold, "hold an allocation for runs (run by `ddpjob dev`'s job script)", 0},
    {"dev-shell-serve", cmd_dev_shell_serve, "a shell's node side (started by dev-hold)", 0},
    {"pipeline-next", cmd_pipeline_next,
     "start a pipeline's stages that can (run by a stage's batch shell as it ends)", 0},
    {NULL, NULL, NULL, 0},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: ddpjob COMMAND [OPTIONS] ...\n\ncommands:\n");
    for (size_t i = 0; commands[i].name; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`ddpjob COMMAND --help` describes each. Exit codes: 0 success, 1 invalid spec,\n"
               "2 usage error, 3 file or template error, 4 submitter missing or failed.\n");
}

int main(int argc, char **argv)
{
    ddp_self_exe_note(argv[0]);
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("ddpjob %s\n", DDPJOB_VERSION);
        return EXIT_OK;
    }
    for (size_t i = 0; commands[i].name; i++) {
        if (strcmp(argv[1], commands[i].name))
            continue;
        unsigned flags = commands[i].flags;
        int rc = flags & CMD_ON ? remote_dispatch(flags, argc - 1, argv + 1) : -1;
        return rc >= 0 ? rc : commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "ddpjob: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
