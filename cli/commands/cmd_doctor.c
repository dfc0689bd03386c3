/* doctor: the preflight alone, where the job would run. Each node's agent reports its
 * fingerprint (driver, CUDA, NCCL, GPUs, InfiniBand, interfaces, NCCL_* env, python and torch)
 * and node 0 prints every fact across the nodes and advice for the known traps; no worker
 * starts. Over SSH (the hosts as `ddpjob launch` takes them), under the scheduler (--submit: the
 * spec's job script with the agents told so; the report is in the job's output), or on this
 * machine. */
#include <stdio.h>
#include <string.h>

#include "cli/commands/commands.h"

static const char doctor_help[] =
    "usage: ddpjob doctor [SPEC] (--hosts H,... | --hostfile FILE | --nodefile FILE) [LAUNCH "
    "OPTIONS]\n"
    "       ddpjob doctor SPEC --submit [SUBMIT OPTIONS]\n"
    "       ddpjob doctor SPEC [RUN OPTIONS]\n"
    "Compares the nodes a job would run on without starting its workload: every node's kernel,\n"
    "glibc, GPUs, NVIDIA driver and CUDA, NCCL, InfiniBand devices, interfaces, NCCL_* and\n"
    "CUDA_VISIBLE_DEVICES, and the python and torch of a python command; then advice (no\n"
    "InfiniBand without NCCL_IB_DISABLE, NCCL_SOCKET_IFNAME naming a missing interface, no\n"
    "network common to every node, fewer GPUs than workers).\n"
    "  with hosts   over SSH, as `ddpjob launch` (without SPEC: python3 on each host's PATH)\n"
    "  --submit     as a batch job through the spec's scheduler (`ddpjob submit`); the report\n"
    "               is in the job's output\n"
    "  otherwise    this machine, as `ddpjob run`\n"
    "Exit: 0 when every node reported; as launch, submit or run otherwise. A spec's\n"
    "`preflight: strict` makes a job fail, before any worker starts, when its nodes differ.\n";

static bool names_hosts(const char *arg)
{
    static const char *const options[] = {"--hosts", "--hostfile", "--nodefile"};
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        size_t n = strlen(options[i]);
        if (!strncmp(arg, options[i], n) && (arg[n] == '\0' || arg[n] == '='))
            return true;
    }
    return false;
}

int cmd_doctor(int argc, char **argv)
{
    bool hosts = false;
    int submit_at = 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(doctor_help, stdout);
            return EXIT_OK;
        }
        hosts |= names_hosts(argv[i]);
        if (!strcmp(argv[i], "--submit"))
            submit_at = i;
    }
    if (hosts && submit_at) {
        fprintf(stderr, "ddpjob doctor: --submit and hosts exclude each other\n%s", doctor_help);
        return EXIT_USAGE;
    }
    if (hosts)
        return launch_command(argc, argv, true);
    if (submit_at) {
        memmove(argv + submit_at, argv + submit_at + 1, (size_t)(argc - submit_at) * sizeof *argv);
        return submit_command(argc - 1, argv, true);
    }
    return run_command(argc, argv, true);
}
