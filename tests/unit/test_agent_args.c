/* One table from spec field to agent flag: every example spec's agent options (what each script
 * passes every agent, spec_agent_args) are taken by the agent's own option parser, and come out
 * as the spec's values; a spec that sets every field the agent reads too. Argument: the folder of
 * example specs. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/workers/binding.h"
#include "agent/supervision/options.h"
#include "agent/supervision/preflight.h"
#include "cli/spec/spec.h"
#include "tests/unit/tap.h"

/* The agent's options parsed from the spec's (with --standalone and a command). */
static int parse_agent_args(const job_spec_t *spec, agent_options_t *o, char *why, size_t size)
{
    strv_t args;
    if (spec_agent_args(spec, &args))
        return snprintf(why, size, "out of memory"), -1;
    char **argv = calloc(args.count + 5, sizeof *argv);
    int argc = 0;
    argv[argc++] = "ddpjob-agent";
    argv[argc++] = "--standalone";
    for (size_t i = 0; i < args.count; i++)
        argv[argc++] = args.items[i];
    argv[argc++] = "--";
    argv[argc++] = "true";
    ddp_error_t err = {0};
    int rc = agent_options_parse(argc, argv, o, &err);
    snprintf(why, size, "%s", rc ? err.msg : "");
    free(argv);
    spec_strv_free(&args);
    return rc;
}

/* Whether the agent took each of the spec's values (an error file with %n: the check below). */
static int same_values(const job_spec_t *s, const agent_options_t *o)
{
    return o->max_restarts == s->max_restarts && o->rdzv_timeout_s == s->rendezvous_timeout &&
           o->hang_timeout_ms == s->hang_timeout * 1000 &&
           (!s->grace || o->grace_ms == s->grace * 1000) &&
           (!s->output_stall_timeout || o->output_stall_ms == s->output_stall_timeout * 1000) &&
           (s->slow_factor < 0 || o->slow_factor == s->slow_factor) &&
           (!s->slow_window || o->slow_window_ms == s->slow_window * 1000) &&
           (!s->log_dir || !strcmp(o->log_dir, s->log_dir)) &&
           (!s->error_file || strstr(s->error_file, "%n") ||
            !strcmp(o->error_file, s->error_file)) &&
           o->local_rank_arg == s->local_rank_arg && o->checkpoint_signal == s->checkpoint.signal &&
           (!s->checkpoint.signal || o->checkpoint_before_ms == s->checkpoint.before_s * 1000);
}

static void check_spec(const char *path)
{
    diag_t *diag = diag_create(path);
    ddp_error_t err;
    job_spec_t *spec = spec_load(path, NULL, NULL, 0, diag, &err);
    if (!spec || diag->count) {
        ok(0, "%s loads: %s", path, spec ? diag->lines[0] : err.msg);
    } else {
        agent_options_t o;
        char why[1200];
        int rc = parse_agent_args(spec, &o, why, sizeof why);
        ok(rc == 0, "%s: the agent takes its options%s%s", path, rc ? ": " : "", why);
        if (rc == 0)
            ok(same_values(spec, &o), "%s: with the spec's values", path);
        agent_options_free(&o);
    }
    spec_destroy(spec);
    diag_destroy(diag);
}

static const char every_field[] = "name: every-agent-field\n"
                                  "nodes: 1\n"
                                  "max_restarts: 2\n"
                                  "rendezvous_timeout: 45\n"
                                  "hang_timeout: 90\n"
                                  "grace: 25\n"
                                  "output_stall_timeout: 7\n"
                                  "slow_factor: 2.5\n"
                                  "slow_window: 12\n"
                                  "log_dir: logs with blanks\n"
                                  "error_file: \"err-%n.json\"\n"
                                  "gpu_binding: per-rank\n"
                                  "cpu_binding: numa\n"
                                  "preflight: strict\n"
                                  "local_rank_arg: true\n"
                                  "checkpoint: {signal: USR2, before: 120}\n"
                                  "command: [python3, train.py]\n";

static void check_every_field(void)
{
    char path[] = "/tmp/test_agent_args.XXXXXX";
    int fd = mkstemp(path);
    ok(fd >= 0 && write(fd, every_field, sizeof every_field - 1) == sizeof every_field - 1,
       "a spec that sets every field the agent reads");
    close(fd);
    char yaml[sizeof path + 5];
    snprintf(yaml, sizeof yaml, "%s.yaml", path);
    rename(path, yaml);
    check_spec(yaml);
    diag_t *diag = diag_create(yaml);
    ddp_error_t err;
    job_spec_t *spec = spec_load(yaml, NULL, NULL, 0, diag, &err);
    agent_options_t o;
    char why[1200], *error_file = NULL;
    ok(spec && parse_agent_args(spec, &o, why, sizeof why) == 0 &&
           o.gpu_binding == GPU_BINDING_PER_RANK && o.cpu_binding == CPU_BINDING_NUMA &&
           o.preflight == PREFLIGHT_STRICT && (error_file = agent_options_error_file(&o, 3)) &&
           !strcmp(error_file, "err-3.json"),
       "the choices too (gpu per-rank, cpu numa, preflight strict), %%n as node 3's rank");
    free(error_file);
    agent_options_free(&o);
    spec_destroy(spec);
    diag_destroy(diag);
    unlink(yaml);
}

int main(int argc, char **argv)
{
    ok(argc == 2, "the folder of example specs is given");
    if (argc != 2)
        return done_testing();
    DIR *d = opendir(argv[1]);
    ok(d != NULL, "%s opens", argv[1]);
    int count = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".yaml"))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[1], e->d_name);
        check_spec(path);
        count++;
    }
    if (d)
        closedir(d);
    ok(count >= 5, "every example spec was checked (%d)", count);
    check_every_field();
    return done_testing();
}
