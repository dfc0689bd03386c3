/* The agent's checks decide without processes or a store: a silent node (liveness), a hung
 * worker (liveness), a world that grows (standby), the preflight's verdict. */
#include <stdlib.h>
#include <string.h>

#include "agent/supervision/liveness.h"
#include "agent/supervision/preflight.h"
#include "agent/supervision/standby.h"
#include "tests/unit/tap.h"

static void test_heartbeats(void)
{
    char *hb_value[3] = {NULL, NULL, NULL};
    int64_t hb_since[3] = {0, 1000, 1000};
    attempt_t t = {.hb_value = hb_value, .hb_since = hb_since};
    int64_t silent_ms = 0;
    char *vals[2] = {strdup("1"), strdup("1")};
    ok(liveness_note_heartbeats(&t, vals, 3, 2000, 1000, &silent_ms) == 0 && !vals[0] &&
           hb_since[1] == 2000,
       "a node's new heartbeat count is kept, its time now");
    vals[0] = strdup("1");
    vals[1] = strdup("2");
    ok(liveness_note_heartbeats(&t, vals, 3, 3900, 1000, &silent_ms) == 0,
       "a count unchanged for under two intervals is not silence");
    free(vals[0]);
    vals[0] = strdup("1");
    vals[1] = strdup("3");
    ok(liveness_note_heartbeats(&t, vals, 3, 4100, 1000, &silent_ms) == 1 && silent_ms == 2100,
       "over two intervals, node 1 is silent (for 2.1 s)");
    ok(hb_since[2] == 4100, "while node 2's count moved on");
    free(vals[0]);
    vals[0] = NULL;
    vals[1] = NULL;
    ok(liveness_note_heartbeats(&t, vals, 3, 9000, 1000, &silent_ms) == 1,
       "a node with no count at all is silent too, the lowest named first");
    for (int i = 0; i < 3; i++)
        free(hb_value[i]);
}

static void test_hangs(void)
{
    worker_t w = {.active_at = 0, .output_at = 0, .cpu_ticks = 100};
    worker_activity_t act = {.cpu_ticks = 100};
    /* 10 s timeout at 100 ticks/s: 1% of a CPU allows 10 ticks. */
    ok(liveness_hung_for(&w, &act, 0, 9999, 10000, 100) == 0, "silent and idle under the timeout");
    ok(liveness_hung_for(&w, &act, 0, 10000, 10000, 100) == 10000, "hung at the timeout");
    act.cpu_ticks = 105;
    ok(liveness_hung_for(&w, &act, 0, 12000, 10000, 100) == 12000,
       "a few ticks (under 1%% of a CPU) do not count as work");
    act.cpu_ticks = 120;
    ok(liveness_hung_for(&w, &act, 0, 12000, 10000, 100) == 0 && w.active_at == 12000 &&
           w.cpu_ticks == 120,
       "more CPU than that restarts its silence");
    w.output_at = 13000;
    ok(liveness_hung_for(&w, &act, 0, 30000, 10000, 100) == 0 && w.active_at == 30000,
       "so does output");
    ok(liveness_hung_for(&w, &act, 1, 50000, 10000, 100) == 0,
       "one held back by the agent's output waits for the reader, not hung");
    act.stopped = 1;
    ok(liveness_hung_for(&w, &act, 0, 55000, 10000, 100) == 5000,
       "a stopped one is hung after half the timeout");
}

static void test_growth(void)
{
    failure_t f;
    ok(!standby_growth_failure(0, 2, 4, 1, &f), "not elastic: never");
    ok(!standby_growth_failure(1, 4, 4, 1, &f), "a world at its most does not grow");
    ok(!standby_growth_failure(1, 2, 4, 0, &f), "nobody waiting: no change");
    ok(!standby_growth_failure(1, 2, 4, -1, &f), "the store unread: no change");
    ok(standby_growth_failure(1, 2, 4, 1, &f) && f.kind == FAIL_MEMBERSHIP &&
           strstr(f.what, "1 node(s) wait to join a world of 2 (at most 4)"),
       "one waiting for a world of 2 below 4 ends the attempt: %s", f.what);
}

static void test_preflight(void)
{
    failure_t f;
    ok(preflight_verdict(PREFLIGHT_ONLY, 1, 3, &f) == PREFLIGHT_NO_WORKERS,
       "doctor: no worker, whatever differs");
    ok(preflight_verdict(PREFLIGHT_STRICT, 1, 0, &f) == PREFLIGHT_RUN_WORKERS,
       "strict, alike: the workers run");
    ok(preflight_verdict(PREFLIGHT_STRICT, 1, 2, &f) == PREFLIGHT_FAILS_JOB &&
           f.kind == FAIL_PREFLIGHT && strstr(f.what, "differ in 2 fact(s)"),
       "strict, two facts differ: the job fails (%s)", f.what);
    ok(preflight_verdict(PREFLIGHT_STRICT, 0, 0, &f) == PREFLIGHT_FAILS_JOB &&
           strstr(f.what, "could not be read"),
       "strict, unread: the job fails");
}

int main(void)
{
    test_heartbeats();
    test_hangs();
    test_growth();
    test_preflight();
    return done_testing();
}
