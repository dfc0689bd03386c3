/* options: what one agent is told to do, from its command line and its environment.
 *
 * Flags win; what they leave open comes from the scheduler's environment (Slurm, then PBS,
 * then mpirun with one agent per node), as docs/design.md's job contract says. A multi-node agent
 * that cannot tell its rank, its master or its token fails with the reason: it never forms a
 * world of one on localhost. torchrun's underscore spellings are accepted. */
#ifndef AGENT_OPTIONS_H
#define AGENT_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "agent/workers/container.h"
#include "runtime/base/ddp_error.h"

typedef struct {
    int nnodes, node_rank, nproc; /* node_rank -1: handed out at the rendezvous (rdzv_c10d) */
    /* Spares and elastic worlds (membership.h): nnodes is the most nodes that run workers,
     * min_nodes the fewest; spares more agents stand by. Each attempt's node rank and node count
     * are the agent's (agent_state.h): the options stay as parsed. */
    int min_nodes, spares;
    int elastic;      /* spares, or min_nodes below nnodes (agent_options_elastic) */
    int last_call_ms; /* --rdzv-conf last_call_timeout: more nodes' time once min_nodes joined */
    int rdzv_c10d;    /* --rdzv-backend c10d */
    char *master_addr;
    int master_port; /* the workers' MASTER_PORT; 0 with --standalone: any free one */
    int store_port;  /* where node 0's store listens (job_contract.h); 0 with --standalone: any */
    int max_restarts;
    int rdzv_timeout_s;
    int heartbeat_ms;                    /* an agent silent for two of these is lost */
    int grace_ms;                        /* between SIGTERM and SIGKILL when workers are stopped */
    int hang_timeout_ms;                 /* a worker silent and idle this long is hung; 0: never */
    double slow_factor;                  /* progress.h: a slow rank's busy time over the median's */
    int slow_window_ms;                  /* progress.h: the window of the busy time per step */
    int exit_timeout_s;                  /* how long a finished node waits for the others */
    int output_stall_ms;                 /* output.h's stall deadline */
    char *log_dir, *run_id, *error_file; /* error_file: as given (agent_options_error_file) */
    char *progress_file;                 /* node 0's report of every rank's progress */
    char *history_file;                  /* node 0's history of the link (history.h) */
    /* console.h's: torchrun's --redirects, --tee and --local-ranks-filter (NULL: none), the
     * lines' prefix template (NULL: the default). Strings of args or the environment. */
    const char *redirects, *tee, *local_ranks_filter, *prefix_template;
    int standalone;
    char *token;
    size_t token_len;
    char **hosts; /* the job's nodes when the environment names them, else NULL */
    size_t nhosts;
    const char *identity;  /* where node rank and master came from, for messages */
    char **command;        /* what each worker runs (the interpreter first, as torchrun adds it) */
    int local_rank_arg;    /* append --local_rank=N, as torch.distributed.launch does */
    int64_t deadline_ms;   /* when the scheduler ends the job (ddp_now_ms clock); 0: unknown */
    int checkpoint_signal; /* sent once to every worker before the deadline; 0: none */
    int checkpoint_before_ms;     /* how long before the deadline */
    int requeue_count;            /* this job's place in a chain of requeued jobs (0: the first) */
    int gpu_binding, cpu_binding; /* binding.h's gpu_binding_t and cpu_binding_t */
    int preflight;                /* preflight.h's preflight_mode_t */
    container_t container;        /* the image the workers run in (container.h) */
    int container_exec;           /* --container-exec: the command alone, once, in the image */
    const char *ignored_notes[2]; /* torchrun options taken that change nothing: said once */
    char **args; /* the command line after the PET_* defaults; the command points into it */
} agent_options_t;

/* Fills o from argv and the environment. Returns 0, 1 when --help or --version was printed,
 * or -1 with err set (a usage error). */
int agent_options_parse(int argc, char **argv, agent_options_t *o, ddp_error_t *err);
/* Whether agents beyond the node count may join: spares, or an elastic MIN:MAX range. */
int agent_options_elastic(const agent_options_t *o);
/* --error-file for node `node_rank` (its %n replaced), malloc'd; NULL without one. */
char *agent_options_error_file(const agent_options_t *o, int node_rank);
void agent_options_free(agent_options_t *o);

#endif
