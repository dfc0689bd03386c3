/* nodes: the job scripts' way to read the allocation with our own hostlist code. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands/commands.h"
#include "runtime/job/hostlist.h"

static const char nodes_help[] =
    "usage: ddpjob nodes (--slurm EXPR | --nodefile FILE) [--with-index | --compress]\n"
    "Prints the unique hosts, one per line, in order (the first is the job's master).\n"
    "  --slurm EXPR     a Slurm hostlist such as gpu[01-04,07],login1\n"
    "  --nodefile FILE  a PBS node file (one line per CPU or chunk)\n"
    "  --with-index     prefix each host with the 0-based line where it first appears\n"
    "                   (the vnode index pbsdsh -n takes)\n"
    "  --compress       print the list as one compact hostlist expression instead\n"
    "Exit: 0 ok, 2 usage, 3 malformed or unreadable input.\n";

int cmd_nodes(int argc, char **argv)
{
    static const struct option opts[] = {
        {"slurm", required_argument, NULL, 's'}, {"nodefile", required_argument, NULL, 'f'},
        {"with-index", no_argument, NULL, 'i'},  {"compress", no_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},        {0}};
    const char *expr = NULL, *nodefile = NULL;
    bool with_index = false, compress = false;
    int c;
    while ((c = getopt_long(argc, argv, "s:f:ich", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            expr = optarg;
            break;
        case 'f':
            nodefile = optarg;
            break;
        case 'i':
            with_index = true;
            break;
        case 'c':
            compress = true;
            break;
        case 'h':
            fputs(nodes_help, stdout);
            return EXIT_OK;
        default:
            fputs(nodes_help, stderr);
            return EXIT_USAGE;
        }
    }
    if (optind != argc || !expr == !nodefile || (with_index && compress)) {
        fputs(nodes_help, stderr);
        return EXIT_USAGE;
    }
    ddp_error_t err;
    ddp_hostlist_t *hl =
        expr ? ddp_hostlist_expand(expr, &err) : ddp_hostlist_from_nodefile(nodefile, &err);
    if (!hl) {
        fprintf(stderr, "ddpjob: %s\n", err.msg);
        return EXIT_SYSTEM;
    }
    if (compress) {
        char *text = ddp_hostlist_compress(hl);
        if (text)
            printf("%s\n", text);
        free(text);
    } else {
        for (size_t i = 0; i < hl->count; i++) {
            if (with_index)
                printf("%zu ", hl->first_line[i]);
            printf("%s\n", hl->hosts[i]);
        }
    }
    ddp_hostlist_destroy(hl);
    return fflush(stdout) == 0 ? EXIT_OK : EXIT_SYSTEM;
}
