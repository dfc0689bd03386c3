/* ddpjob: from a YAML job spec to a running multi-node data-parallel job.
 * This file only dispatches to the subcommands (commands.h). */
#include <stdio.h>
#include <string.h>

#include "cli/commands/commands.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"validate", cmd_validate, "check a job spec and report every problem"},
    {"render", cmd_render, "print the PBS or Slurm script for a spec (the dry run)"},
    {"submit", cmd_submit, "write the script into the job directory and qsub/sbatch it"},
    {"status", cmd_status, "the state of submitted jobs: scheduler and job record together"},
    {"logs", cmd_logs, "a submitted job's per-rank output, across requeues (-f follows)"},
    {"report", cmd_report, "a job as one HTML page: chain, attempts, ranks' steps, causes"},
    {"cancel", cmd_cancel, "end a job and its queued successors (--checkpoint: stop and save)"},
    {"list", cmd_list, "this user's submitted jobs, newest first, with their state"},
    {"wait", cmd_wait, "block until a job's whole chain has ended; exit with its status"},
    {"run", cmd_run, "run a spec's workload on this machine under a local agent (one node)"},
    {"launch", cmd_launch, "run a spec's job on hosts reached by SSH (no scheduler)"},
    {"cluster", cmd_cluster, "the clusters reached from this laptop: add, list, check"},
    {"fetch", cmd_fetch, "bring a job's files back from its cluster (checkpoints, logs)"},
    {"setup-nodes", cmd_setup_nodes, "check (and set up) key logins from this head to each host"},
    {"doctor", cmd_doctor, "compare the nodes a job would run on (over SSH, in a batch job, here)"},
    {"nodes", cmd_nodes, "list a job's nodes from a Slurm hostlist or a PBS node file"},
    {"notify", cmd_notify, "send a job's events to its webhook (run by the job's batch shell)"},
    {"pbs-agents", cmd_pbs_agents, "start and watch a PBS job's agents (run by the PBS script)"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: ddpjob COMMAND [OPTIONS] ...\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n`ddpjob COMMAND --help` describes each. Exit codes: 0 success, 1 invalid spec,\n"
               "2 usage error, 3 file or template error, 4 submitter missing or failed.\n");
}

int main(int argc, char **argv)
{
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
    int rc = remote_dispatch(argc - 1, argv + 1);
    if (rc >= 0)
        return rc;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "ddpjob: unknown command \"%s\"\n", argv[1]);
    usage(stderr);
    return EXIT_USAGE;
}
