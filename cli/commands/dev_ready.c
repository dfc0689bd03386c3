/* dev_ready: whether an allocation `ddpjob dev` holds has its nodes, said with why not (released,
 * ended, queued with its pending reason), and waiting for them when asked (--wait); dev's
 * durations and --port's value, read alike here and from a laptop (commands.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands/commands.h"
#include "cli/view/pending_reason.h"
#include "cli/spec/units.h"
#include "runtime/base/ddp_clock.h"
#include "runtime/base/ddp_parse.h"

/* How often a wait for the nodes looks again. */
#define READY_LOOK_MS 1000

int dev_parse_duration(const char *text, int64_t *seconds)
{
    if (!strcmp(text, "off")) {
        *seconds = 0;
        return 0;
    }
    size_t n = strlen(text);
    int unit = n ? strchr("smh", text[n - 1]) != NULL : 0;
    if (unit) {
        char number[32];
        long v;
        if (n - 1 >= sizeof number)
            return -1;
        memcpy(number, text, n - 1);
        number[n - 1] = 0;
        if (ddp_parse_long(number, 1, 1L << 30, &v))
            return -1;
        *seconds = v * (text[n - 1] == 'h' ? 3600 : text[n - 1] == 'm' ? 60 : 1);
        return 0;
    }
    uint64_t s;
    if (units_parse_walltime(text, &s))
        return -1;
    *seconds = (int64_t)s;
    return 0;
}

int dev_parse_wait(const char *command, const char *arg, int64_t *wait_s)
{
    *wait_s = DEV_WAIT_HELD_DEFAULT_S;
    if (!arg || (dev_parse_duration(arg, wait_s) == 0 && *wait_s > 0))
        return 0;
    fprintf(stderr, "ddpjob %s: --wait=%s: expected a duration (30m, 90s, 1h, HH:MM:SS)\n", command,
            arg);
    return -1;
}

int dev_ready(const char *command, const char *dev, char *dir, int64_t wait_s, dev_state_t *s)
{
    int64_t deadline = ddp_deadline_in(wait_s * 1000);
    for (;;) {
        /* A held allocation's own record says it is; the scheduler is asked only when it does
         * not, off a rerun's path. */
        dev_state_read(dir, s);
        if (s->ready && !s->released)
            return EXIT_OK;
        job_view_t v;
        ddp_error_t err;
        job_views_load(&dir, 1, &v, &err);
        char why[1100] = "";
        int rc = 1;
        if (s->released)
            snprintf(why, sizeof why, "was released (%s)", s->why);
        else if (job_state_final(v.state))
            snprintf(why, sizeof why, "has ended: %s", job_state_name(v.state));
        else if (!wait_s)
            pending_explain(&v.sched, job_view_id(&v), v.rec.name, why, sizeof why);
        else if (ddp_ms_left(deadline) == 0)
            rc = 124;
        else
            rc = -1;
        if (rc == 1 && (s->released || job_state_final(v.state)))
            fprintf(stderr, "ddpjob %s: %s (job %s) %s: `ddpjob dev SPEC` holds nodes again\n",
                    command, dev, job_view_id(&v), why);
        else if (rc > 0)
            fprintf(stderr, "ddpjob %s: %s (job %s) is %s: its nodes are not held yet%s%s%s\n",
                    command, dev, job_view_id(&v), job_state_name(v.state), why[0] ? ": " : "", why,
                    rc == 124 ? " (waited for them as long as --wait said)"
                              : " (--wait waits for them)");
        job_views_free(&v, 1);
        if (rc >= 0)
            return rc;
        ddp_sleep_ms(READY_LOOK_MS);
    }
}

int dev_parse_port(const char *what, int *port, int *node)
{
    const char *colon = strchr(what, ':');
    char number[16];
    *node = 0;
    snprintf(number, sizeof number, "%.*s", colon ? (int)(colon - what) : 15, what);
    if (ddp_parse_int(number, 1, 65535, port) ||
        (colon && ddp_parse_int(colon + 1, 0, 1 << 20, node))) {
        fprintf(stderr, "ddpjob dev: --port %s: expected PORT or PORT:NODE\n", what);
        return -1;
    }
    return 0;
}
