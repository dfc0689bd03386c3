/* Node 0's judgement of the ranks' progress: the figures as agents send them, the median that
 * makes the measure, slow / slower / recovered said once each, a rank that reaches each step
 * late while idle (its data, a sleep), and the rank the others wait for when no step moves. */
#include <stdio.h>

#include "agent/findings/progress.h"
#include "tests/unit/tap.h"

/* Sets every rank's figures through the agents' text, as node `node` sends them. */
static void figures(progress_job_t *j, int node, const char *text, int64_t now)
{
    progress_job_update(j, node, text, now, 0);
}

int main(void)
{
    progress_job_t j;
    progress_event_t ev[8];
    ok(progress_job_init(&j, 4, 0) == 0, "a job of 4 ranks");
    figures(&j, 0, "0/0:100:10000 1/1:100:11000", 1000);
    figures(&j, 1, "2/0:100:10500 3/1:99:30000", 1000);
    ok(j.ranks[3].node == 1 && j.ranks[3].local_rank == 1 && j.ranks[3].fig.step == 99 &&
           j.ranks[3].fig.busy_us == 30000,
       "rank 3's node, local rank, step and busy time read back");
    ok(j.max_step == 100, "the highest step is 100");
    int n = progress_judge(&j, 1.5, 1, ev, 8);
    ok(n == 1 && ev[0].kind == PROGRESS_SLOW && ev[0].rank == 3, "rank 3 at 3x is slow");
    ok(ev[0].median_us == 10500,
       "the measure is the lower middle rank (10.5 ms of 10, 10.5, 11, 30)");
    ok(progress_judge(&j, 1.5, 1, ev, 8) == 0, "said once");
    figures(&j, 1, "2/0:101:10500 3/1:100:40000", 2000);
    ok(progress_judge(&j, 1.5, 1, ev, 8) == 0, "3.8x after 2.9x: not yet half as much again");
    figures(&j, 1, "2/0:102:10500 3/1:101:50000", 3000);
    n = progress_judge(&j, 1.5, 1, ev, 8);
    ok(n == 1 && ev[0].kind == PROGRESS_SLOWER, "4.8x after 2.9x: slower still");
    figures(&j, 1, "2/0:103:10500 3/1:102:12000", 4000);
    n = progress_judge(&j, 1.5, 1, ev, 8);
    ok(n == 1 && ev[0].kind == PROGRESS_RECOVERED && ev[0].rank == 3, "1.1x: recovered");
    ok(progress_judge(&j, 0, 1, ev, 8) == 0, "factor 0: never");
    progress_job_free(&j);

    ok(progress_job_init(&j, 2, 0) == 0, "a job of 2 ranks");
    figures(&j, 0, "0/0:5:1000", 0);
    figures(&j, 1, "1/0:5:2500", 0);
    n = progress_judge(&j, 1.5, 1, ev, 8);
    ok(n == 1 && ev[0].rank == 1 && ev[0].ratio > 2.4,
       "of two ranks the faster is the measure: the slow one is 2.5x, not 1.4x of their mean");
    figures(&j, 0, "0/0:6:-1", 0);
    ok(progress_judge(&j, 1.5, 1, ev, 8) == 0, "a rank without a figure yet (-1) makes no measure");
    progress_job_free(&j);

    /* Steps of 150 ms: rank 0 reaches each 2 ms after the last collective ended, rank 1 (node 1,
     * its figures 100 ms in the store) 1 ms before the next ends, idle but for 2.5 ms. */
    ok(progress_job_init(&j, 2, 0) == 0, "a job of 2 ranks, one of them late to every step");
    figures(&j, 0, "0/0:10:2000:1648000", 0);
    progress_job_update(&j, 1, "1/0:10:2500:1401000", 0, 100000);
    figures(&j, 0, "0/0:20:2000:148000", 1500);
    progress_job_update(&j, 1, "1/0:19:2500:51000", 1500, 100000);
    n = progress_judge(&j, 1.5, 1, ev, 8);
    ok(n == 1 && ev[0].rank == 1 && ev[0].kind == PROGRESS_SLOW, "the late rank is slow");
    ok(ev[0].period_us > 149000 && ev[0].period_us < 151000,
       "the job's step, from the arrivals: 150 ms");
    ok(ev[0].late_us > 146000 && ev[0].late_us < 148000,
       "rank 1 reaches each step 147 ms after rank 0, though a step behind when seen");
    ok(!ev[0].by_busy && ev[0].ratio > 40,
       "not by its busy time (1.25x), by the step's waiting for it (50x)");
    progress_job_free(&j);
    ok(progress_job_init(&j, 2, 0) == 0, "a late rank whose busy time is not known yet");
    figures(&j, 0, "0/0:10:-1:1648000", 0);
    figures(&j, 1, "1/0:10:-1:1401000", 0);
    figures(&j, 0, "0/0:20:-1:148000", 1500);
    figures(&j, 1, "1/0:19:-1:151000", 1500);
    ok(progress_judge(&j, 1.5, 1, ev, 8) == 0,
       "is not judged until it is: it says whether the rank computes or waits");
    progress_job_free(&j);
    ok(progress_job_init(&j, 2, 0) == 0, "a job of 2 ranks arriving together");
    figures(&j, 0, "0/0:10:2000:1648000 1/1:10:2100:1647000", 0);
    figures(&j, 0, "0/0:20:2000:148000 1/1:20:2100:127000", 1500);
    ok(progress_judge(&j, 1.5, 1, ev, 8) == 0,
       "ranks 21 ms apart, under what file times resolve: none slow");
    figures(&j, 0, "0/0:21:2000:0 1/1:21:6000:0", 1650);
    n = progress_judge(&j, 1.5, 1, ev, 8);
    ok(n == 1 && ev[0].rank == 1 && ev[0].by_busy,
       "then busy time judges: the one busy 3x the other is slow");
    progress_job_free(&j);

    int rank;
    ok(progress_job_init(&j, 3, 0) == 0, "a job of 3 ranks");
    figures(&j, 0, "0/0:50:-1", 1000);
    figures(&j, 1, "1/0:49:-1", 1000);
    figures(&j, 2, "2/0:50:-1", 1000);
    ok(progress_stalled(&j, 3999, 3000, &rank) == 0, "no step for 2.999 s of 3: not yet");
    ok(progress_stalled(&j, 4000, 3000, &rank) == 1 && rank == 1,
       "no step for 3 s: rank 1, behind the others, is the one they wait for");
    figures(&j, 1, "1/0:50:-1", 4500);
    ok(progress_stalled(&j, 6000, 3000, &rank) == 2 && rank == -1,
       "catching up to the highest step is no new step; every rank at one step: hung as a "
       "whole, no rank named");
    figures(&j, 0, "0/0:51:-1", 7100);
    ok(progress_stalled(&j, 9000, 3000, &rank) == 0, "a step anywhere starts the count again");
    progress_job_free(&j);

    ok(progress_job_init(&j, 2, 0) == 0, "garbage from a node");
    figures(&j, 1, "7/0:1:1 x", 0);
    figures(&j, 1, "1:5:5", 0);
    ok(j.ranks[0].fig.step == -1 && j.ranks[1].fig.step == -1 && j.max_step == -1,
       "a rank outside the world and the wrong shape are passed over");
    progress_job_free(&j);
    return done_testing();
}
