#include "runtime/job/job_contract.h"

#include <ctype.h>
#include <stdlib.h>

const char *const job_gpu_binding_words[] = {"per-rank", "none", NULL};
const char *const job_cpu_binding_words[] = {"cores", "numa", "none", NULL};
const char *const job_preflight_words[] = {"report", "strict", NULL};

/* Spans count port pairs (master, store). */
enum { DERIVED_PORT_BASE = 10000, DERIVED_PORT_PAIRS = 10000 };
enum { RANDOM_PORT_BASE = 20000, RANDOM_PORT_PAIRS = 6000 };
enum { SUBJOB_PORT_STRIDE = 1009 }; /* a prime, so coprime with the derived span */

int ddp_job_store_port(int master_port)
{
    return master_port < 65535 ? master_port + 1 : master_port - 1;
}

/* The number at p, mod the derived pairs; *end past it. */
static long leading_number(const char *p, const char **end)
{
    long n = 0;
    for (; *p && isdigit((unsigned char)*p); p++)
        n = (n * 10 + (*p - '0')) % DERIVED_PORT_PAIRS;
    *end = p;
    return n;
}

int ddp_job_port_from_id(const char *job_id)
{
    const char *p;
    long n = leading_number(job_id, &p);
    /* A PBS array's subjob N[K] (a sweep's trial): its own pair, K+1 strides of a prime away from
     * N's, so that the array's subjobs sharing a node differ (every K below the span does) and
     * the jobs submitted just after the array (N+1, N+2, ...) are unlikely to meet them. */
    if (*p == '[' && isdigit((unsigned char)p[1]))
        n = (n + (leading_number(p + 1, &p) + 1) * SUBJOB_PORT_STRIDE) % DERIVED_PORT_PAIRS;
    return DERIVED_PORT_BASE + 2 * (int)n;
}

int ddp_job_workers_port_from_id(const char *job_id)
{
    return ddp_job_store_port(ddp_job_port_from_id(job_id));
}

int ddp_job_port_random(uint16_t random_bits)
{
    return RANDOM_PORT_BASE + 2 * (random_bits % RANDOM_PORT_PAIRS);
}
