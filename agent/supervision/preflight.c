#include "agent/supervision/preflight.h"

#include <arpa/inet.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/supervision/agent_state.h"
#include "runtime/base/ddp_alloc.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_parse.h"
#include "agent/supervision/fingerprint.h"
#include "agent/workers/output.h"

#define PREFIX "ddpjob-agent: preflight: "
#define VALUE_MAX 2048
/* A list of nodes names this many, then counts the rest. */
#define NODES_NAMED 8

typedef struct {
    char **names;
    size_t count;
} names_t;

/* Every fact name in the fingerprints, in the order first seen. */
static int fact_names(char *const *fp, int nnodes, names_t *out)
{
    *out = (names_t){0};
    for (int i = 0; i < nnodes; i++) {
        for (const char *line = fp[i]; line && *line;) {
            const char *tab = strchr(line, '\t'), *end = strchr(line, '\n');
            if (!end)
                end = line + strlen(line);
            if (tab && tab < end) {
                size_t len = (size_t)(tab - line), j = 0;
                while (j < out->count &&
                       (strlen(out->names[j]) != len || strncmp(out->names[j], line, len)))
                    j++;
                if (j == out->count) {
                    char **grown = realloc(out->names, (out->count + 1) * sizeof *grown);
                    if (!grown || !(grown[out->count] = strndup(line, len))) {
                        out->names = grown ? grown : out->names;
                        return -1;
                    }
                    out->names = grown;
                    out->count++;
                }
            }
            line = *end ? end + 1 : end;
        }
    }
    return 0;
}

static void names_free(names_t *n)
{
    for (size_t i = 0; i < n->count; i++)
        free(n->names[i]);
    free(n->names);
}

/* Node i's value of fact `name`; what an absent fact reads as. */
static const char *value_of(char *const *fp, int i, const char *name, char *buf)
{
    const char *v = fp[i] ? fingerprint_get(fp[i], name, buf, VALUE_MAX) : NULL;
    return v ? v : name[0] == '$' ? "(unset)" : "(unknown)";
}

/* "node 1 (n2)", "nodes 0, 2 (n1, n3)": the nodes whose `mark` is set. */
static void print_nodes(FILE *out, char *const *fp, int nnodes, const char *mark)
{
    int count = 0, named = 0;
    for (int i = 0; i < nnodes; i++)
        count += mark[i];
    fprintf(out, "%s ", count == 1 ? "node" : "nodes");
    for (int i = 0; i < nnodes && named < NODES_NAMED; i++)
        if (mark[i])
            fprintf(out, "%s%d", named++ ? ", " : "", i);
    if (count > named)
        fprintf(out, " and %d more", count - named);
    fputs(" (", out);
    named = 0;
    for (int i = 0; i < nnodes && named < NODES_NAMED; i++) {
        char host[VALUE_MAX];
        if (mark[i])
            fprintf(out, "%s%s", named++ ? ", " : "", value_of(fp, i, FP_HOST, host));
    }
    fputs(count > named ? ", ...)" : ")", out);
}

/* The fact's distinct values, each with its nodes: "v1 on node 0 (n1); v2 on nodes 1, 2 (...)".
 * Returns the number of distinct values. */
static int print_values(FILE *out, char *const *fp, int nnodes, const char *name, char *mark)
{
    char *done = calloc((size_t)nnodes, 1);
    int distinct = 0;
    for (int i = 0; done && i < nnodes; i++) {
        if (done[i])
            continue;
        char first[VALUE_MAX], other[VALUE_MAX];
        const char *v = value_of(fp, i, name, first);
        memset(mark, 0, (size_t)nnodes);
        for (int j = i; j < nnodes; j++)
            if (!done[j] && !strcmp(value_of(fp, j, name, other), v))
                mark[j] = done[j] = 1;
        if (out) {
            int everywhere = nnodes > 1 && !distinct && !memchr(mark, 0, (size_t)nnodes);
            fprintf(out, "%s%s %s", distinct ? "; " : "", v, everywhere ? "on every node" : "on ");
            if (!everywhere)
                print_nodes(out, fp, nnodes, mark);
        }
        distinct++;
    }
    free(done);
    return distinct;
}

int preflight_differences(char *const *fp, int nnodes)
{
    names_t names = {0};
    char *mark = calloc((size_t)nnodes, 1);
    int differ = 0;
    if (mark && fact_names(fp, nnodes, &names) == 0)
        for (size_t k = 0; k < names.count; k++)
            differ += fingerprint_compared(names.names[k]) &&
                      print_values(NULL, fp, nnodes, names.names[k], mark) > 1;
    names_free(&names);
    free(mark);
    return differ;
}

/* Whether an interface name matches NCCL_SOCKET_IFNAME's list (prefixes; "=" exact names). */
static int ifname_matches(const char *ifname_spec, const char *name)
{
    int exact = ifname_spec[0] == '=';
    char list[VALUE_MAX], *save = NULL;
    snprintf(list, sizeof list, "%s", ifname_spec + exact);
    for (char *want = strtok_r(list, ",", &save); want; want = strtok_r(NULL, ",", &save))
        if (exact ? !strcmp(want, name) : !strncmp(want, name, strlen(want)))
            return 1;
    return 0;
}

/* Whether a node's interfaces ("eth0 10.0.0.5/24, ...") include one NCCL_SOCKET_IFNAME names. */
static int has_named_interface(const char *interfaces, const char *ifname_spec)
{
    char list[VALUE_MAX], *save = NULL;
    snprintf(list, sizeof list, "%s", interfaces);
    for (char *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char name[64];
        if (sscanf(item, " %63s", name) == 1 && ifname_matches(ifname_spec, name))
            return 1;
    }
    return 0;
}

/* The IPv4 network (address & mask, as "a.b.c.d/len") of each address of a node. */
static int networks(const char *interfaces, char nets[][32], int max)
{
    char list[VALUE_MAX], *save = NULL;
    int n = 0;
    snprintf(list, sizeof list, "%s", interfaces);
    for (char *item = strtok_r(list, ",", &save); item && n < max;
         item = strtok_r(NULL, ",", &save)) {
        char name[64], addr[64];
        int len;
        struct in_addr a;
        if (sscanf(item, " %63s %63[^/]/%d", name, addr, &len) != 3 || len <= 0 || len > 32 ||
            inet_pton(AF_INET, addr, &a) != 1)
            continue;
        a.s_addr &= htonl(len == 32 ? 0xffffffffu : ~(0xffffffffu >> len));
        char net[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &a, net, sizeof net);
        snprintf(nets[n++], sizeof nets[0], "%s/%d", net, len);
    }
    return n;
}

/* Whether some IPv4 network holds an address of every node. */
static int common_network(char *const *fp, int nnodes)
{
    char buf[VALUE_MAX], first[64][32], other[64][32];
    int n0 = networks(value_of(fp, 0, FP_INTERFACES, buf), first, 64);
    for (int k = 0; k < n0; k++) {
        int everywhere = 1;
        for (int i = 1; i < nnodes && everywhere; i++) {
            int n = networks(value_of(fp, i, FP_INTERFACES, buf), other, 64), found = 0;
            for (int j = 0; j < n && !found; j++)
                found = !strcmp(other[j], first[k]);
            everywhere = found;
        }
        if (everywhere)
            return 1;
    }
    return 0;
}

/* A count from a fingerprint: 0 where it holds none ("none", or nothing). */
static long count_of(const char *value)
{
    long n;
    return ddp_parse_long(value, 0, LONG_MAX, &n) ? 0 : n;
}

/* Prints the advice whose condition holds on some nodes (marked), naming them. */
static void advise(FILE *out, char *const *fp, int nnodes)
{
    char *mark = calloc((size_t)nnodes, 1), v[VALUE_MAX], w[VALUE_MAX];
    if (!mark)
        return;
    int any = 0;
    for (int i = 0; i < nnodes; i++)
        any |= mark[i] = count_of(value_of(fp, i, FP_GPU_COUNT, v)) > 0 &&
                         !strcmp(value_of(fp, i, FP_INFINIBAND, w), "none") &&
                         !fingerprint_get(fp[i], "$NCCL_IB_DISABLE", v, sizeof v);
    if (any) {
        fputs(PREFIX "advice: GPUs, no InfiniBand device and NCCL_IB_DISABLE unset on ", out);
        print_nodes(out, fp, nnodes, mark);
        fputs(": NCCL may try InfiniBand first; put NCCL_IB_DISABLE: \"1\" in the spec's env\n",
              out);
    }
    for (int i = 0; i < nnodes; i++) {
        memset(mark, 0, (size_t)nnodes);
        const char *spec = fingerprint_get(fp[i], "$NCCL_SOCKET_IFNAME", v, sizeof v);
        if (!spec || spec[0] == '^' || has_named_interface(value_of(fp, i, FP_INTERFACES, w), spec))
            continue;
        mark[i] = 1;
        fprintf(out, PREFIX "advice: NCCL_SOCKET_IFNAME=%s names no interface of ", spec);
        print_nodes(out, fp, nnodes, mark);
        fprintf(out, ", which has %s: NCCL will find no socket to use there\n",
                value_of(fp, i, FP_INTERFACES, w));
    }
    if (nnodes > 1 && !common_network(fp, nnodes))
        fputs(PREFIX "advice: no IPv4 network holds an address of every node (see their "
                     "interfaces): the workers may not reach each other or node 0's store\n",
              out);
    any = 0;
    for (int i = 0; i < nnodes; i++) {
        long gpus = count_of(value_of(fp, i, FP_GPU_COUNT, v));
        any |= mark[i] = gpus > 0 && gpus < count_of(value_of(fp, i, FP_WORKERS, w));
    }
    if (any) {
        fputs(PREFIX "advice: fewer GPUs than workers on ", out);
        print_nodes(out, fp, nnodes, mark);
        fputs(": ranks will share a GPU (or fail to get one)\n", out);
    }
    free(mark);
}

void preflight_report(FILE *out, char *const *fp, int nnodes, int all)
{
    names_t names;
    char *mark = calloc((size_t)nnodes, 1);
    if (!mark || fact_names(fp, nnodes, &names)) {
        free(mark);
        fputs(PREFIX "out of memory\n", out);
        return;
    }
    size_t width = 0;
    for (size_t k = 0; k < names.count; k++)
        if (strlen(names.names[k]) > width)
            width = strlen(names.names[k]);
    int differ = preflight_differences(fp, nnodes);
    if (all)
        fprintf(out, PREFIX "%d node(s); %d fact(s) that must agree differ\n", nnodes, differ);
    else if (differ)
        fprintf(out, PREFIX "the %d nodes differ in %d fact(s):\n", nnodes, differ);
    for (size_t k = 0; k < names.count; k++) {
        const char *name = names.names[k];
        int distinct = print_values(NULL, fp, nnodes, name, mark);
        /* The host names every node already. */
        if (!strcmp(name, FP_HOST) || (!all && (distinct < 2 || !fingerprint_compared(name))))
            continue;
        fprintf(out, "  %-*s  ", (int)width, name);
        print_values(out, fp, nnodes, name, mark);
        fputc('\n', out);
    }
    advise(out, fp, nnodes);
    names_free(&names);
    free(mark);
}

/* ---- the store side: the nodes' fingerprints through the job's store ---- */

/* Whether the preflight comes before the workers: doctor's (only), and strict on several nodes,
 * whose verdict may stop the job. report on several nodes runs beside the workers, which never
 * wait for it; one node has nothing to compare. */
int preflight_first(const agent_options_t *o)
{
    return o->preflight == PREFLIGHT_ONLY || (o->preflight == PREFLIGHT_STRICT && o->nnodes > 1);
}

/* This node's fingerprint into the store, counted in (fp NULL: out of memory). */
int preflight_publish_fingerprint(agent_t *a, const char *fp, ddp_error_t *err)
{
    char key[128], name[64];
    snprintf(name, sizeof name, "fingerprint/%d", a->node_rank);
    ddp_rdzv_key(key, sizeof key, 0, name);
    int rc = !fp ? ddp_error_set(err, "out of memory")
                 : ddp_store_set(a->client, key, fp, strlen(fp), err);
    ddp_rdzv_key(key, sizeof key, 0, "fingerprints");
    rc = rc || ddp_store_add(a->client, key, 1, NULL, err);
    return rc ? ddp_error_prefix(err, "node %d: publishing its fingerprint", a->node_rank) : 0;
}

/* Every node's fingerprint into fp[0..nnodes) (malloc'd; the caller frees them); 0, or -1 with
 * err set. */
static int read_fingerprints(agent_t *a, char **fp, ddp_error_t *err)
{
    int n = a->nnodes, rc = 0;
    char **keys = ddp_xcalloc((size_t)n, sizeof *keys);
    for (int i = 0; i < n; i++) {
        char name[64], key[128];
        snprintf(name, sizeof name, "fingerprint/%d", i);
        ddp_rdzv_key(key, sizeof key, 0, name);
        keys[i] = ddp_xstrdup(key);
    }
    rc = ddp_store_get_many(a->client, (const char *const *)keys, (size_t)n, fp, err);
    for (int i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    return rc;
}

static void free_fingerprints(char **fp, int n)
{
    for (int i = 0; i < n; i++)
        free(fp[i]);
    free(fp);
}

/* Node 0's report of the nodes' fingerprints, on its stderr. */
static void print_preflight(const agent_t *a, char **fp)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (f) {
        preflight_report(f, fp, a->nnodes, a->o->preflight == PREFLIGHT_ONLY);
        fclose(f);
        output_write(STDERR_FILENO, OUTPUT_AGENT, text, len);
    }
    free(text);
}

preflight_verdict_t preflight_verdict(int mode, int read, int differ, failure_t *f)
{
    if (mode == PREFLIGHT_ONLY)
        return PREFLIGHT_NO_WORKERS;
    if (read && !differ)
        return PREFLIGHT_RUN_WORKERS;
    *f = read ? node_failure(FAIL_PREFLIGHT, 1, -1, "-",
                             "preflight: strict, and the nodes differ in %d fact(s) (node 0's "
                             "output lists them): no worker was started",
                             differ)
              : node_failure(FAIL_PREFLIGHT, 1, -1, "-",
                             "preflight: strict, and the nodes' fingerprints could not be read: "
                             "no worker was started");
    return PREFLIGHT_FAILS_JOB;
}

preflight_verdict_t preflight_before_workers(agent_t *a, failure_t *f)
{
    const agent_options_t *o = a->o;
    char **fp = ddp_xcalloc((size_t)a->nnodes, sizeof *fp);
    ddp_error_t err = {0};
    int read = read_fingerprints(a, fp, &err) == 0;
    if (!read)
        agent_say("preflight: cannot read the nodes' fingerprints: %s", err.msg);
    if (read && a->node_rank == 0)
        print_preflight(a, fp);
    int differ = read ? preflight_differences(fp, a->nnodes) : 0;
    free_fingerprints(fp, a->nnodes);
    return preflight_verdict(o->preflight, read, differ, f);
}

/* The preflight beside the workers (report on several nodes). Each node publishes its
 * fingerprint once its probe is done (wait_ms: how long to wait for that now; the probe's own
 * deadlines bound it); node 0 prints the report once every node's is in. A store that fails
 * here is the heartbeat's to notice. */
void preflight_beside(agent_t *a, int64_t wait_ms)
{
    if (!a->probe && !a->preflight_pending)
        return;
    ddp_error_t err;
    int64_t give_up = ddp_deadline_in(wait_ms);
    char *mine = fingerprint_take(&a->probe);
    while (a->probe && !mine && ddp_now_ms() < give_up) {
        ddp_sleep_ms(20);
        mine = fingerprint_take(&a->probe);
    }
    if (mine && preflight_publish_fingerprint(a, mine, &err))
        agent_say("preflight: %s", err.msg);
    free(mine);
    if (!a->preflight_pending || a->store_lost)
        return;
    char key[128];
    int64_t published = 0;
    ddp_rdzv_key(key, sizeof key, 0, "fingerprints");
    if (ddp_store_add(a->client, key, 0, &published, &err) || published < a->nnodes)
        return;
    a->preflight_pending = 0;
    char **fp = ddp_xcalloc((size_t)a->nnodes, sizeof *fp);
    if (read_fingerprints(a, fp, &err))
        agent_say("preflight: cannot read the nodes' fingerprints: %s", err.msg);
    else
        print_preflight(a, fp);
    free_fingerprints(fp, a->nnodes);
}
