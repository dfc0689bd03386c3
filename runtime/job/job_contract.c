#include "runtime/job/job_contract.h"

#include <ctype.h>
#include <stdlib.h>

const char *const job_gpu_binding_words[] = {"per-rank", "none", NULL};
const char *const job_cpu_binding_words[] = {"cores", "numa", "none", NULL};
const char *const job_preflight_words[] = {"report", "strict", NULL};

/* Spans count port pairs (master, store). */
enum { DERIVED_PORT_BASE = 10000, DERIVED_PORT_PAIRS = 10000 };
enum { RANDOM_PORT_BASE = 20000, RANDOM_PORT_PAIRS = 6000 };

int ddp_job_store_port(int master_port)
{
    return master_port < 65535 ? master_port + 1 : master_port - 1;
}

int ddp_job_port_from_id(const char *job_id)
{
    long n = 0;
    for (const char *p = job_id; *p && isdigit((unsigned char)*p); p++)
        n = (n * 10 + (*p - '0')) % DERIVED_PORT_PAIRS;
    return DERIVED_PORT_BASE + 2 * (int)n;
}

int ddp_job_workers_port_from_id(const char *job_id)
{
    return ddp_job_store_port(ddp_job_port_from_id(job_id));
}

const char *ddp_job_scheduler_id(void)
{
    const char *id = getenv("SLURM_JOB_ID");
    return id && *id ? id : getenv("PBS_JOBID");
}

int ddp_job_port_random(uint16_t random_bits)
{
    return RANDOM_PORT_BASE + 2 * (random_bits % RANDOM_PORT_PAIRS);
}
