/* ddpjob-agent: the per-node agent of a ddpjob job (see agent.h and --help). */
#include <stdio.h>

#include "agent/supervision/agent.h"
#include "agent/supervision/options.h"

int main(int argc, char **argv)
{
    agent_options_t o;
    ddp_error_t err = {0};
    int rc = agent_options_parse(argc, argv, &o, &err);
    if (rc != 0) {
        if (rc < 0)
            fprintf(stderr, "ddpjob-agent: %s\n", err.msg);
        agent_options_free(&o);
        return rc < 0 ? 2 : 0;
    }
    int status = agent_run(&o);
    agent_options_free(&o);
    return status;
}
