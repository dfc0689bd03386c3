/* The PBS supervisor's decisions: pbsdsh's task status lines as the real OpenPBS prints them,
 * how long node 0 may go on after a node's agent ended, and the job's status. */
#include "cli/sched/sched_pbs_tasks.h"
#include "tests/unit/tap.h"

static int status_of(const char *text)
{
    int status = -1;
    return pbs_task_status(text, &status) ? status : -1;
}

int main(void)
{
    /* pbsdsh prints nothing for a task that exits 0, and "task 0x... exit status N" otherwise. */
    ok(status_of("") == -1, "no output: no status");
    ok(status_of("hello from the task\n") == -1, "a task's own lines: no status");
    ok(status_of("pbsdsh: task 0x00000000 exit status 127\n") == 127, "the real line: 127");
    ok(status_of("pbsdsh: task 0x00000001 exit status 3") == 3, "without a final newline: 3");
    ok(status_of("ddpjob: node 1 (n1): ...\npbsdsh: task 0x00000000 exit status 265\n") == 265,
       "after other lines; a signal's 256+S kept as PBS says it");
    ok(status_of("pbsdsh: task 0x0 exit status 2\npbsdsh: task 0x0 exit status 9\n") == 2,
       "the first status counts");
    ok(status_of("pbsdsh: task 0x0 exit status \n") == -1, "no number: no status");
    ok(status_of("pbsdsh: task 0x0 exit status 3x\n") == -1, "trailing junk: no status");
    ok(status_of("  pbsdsh: task 0x0 exit status 3\n") == -1, "only at a line's start");
    ok(status_of("echo pbsdsh: task 0x0 exit status 3\n") == -1, "a worker quoting it is not it");

    char why[256];
    ok(pbs_task_grace_ms(127, true, why, sizeof why) == 0, "127 (command not found): stop at once");
    is_str(why, "could not start (status 127; its output is above)", "127's words");
    ok(pbs_task_grace_ms(126, true, why, sizeof why) == 0, "126 (not executable): stop at once");
    ok(pbs_task_grace_ms(254, true, why, sizeof why) == 0,
       "254 (PBS could not start it): stop at once");
    ok(pbs_task_grace_ms(1, true, why, sizeof why) == PBS_TASK_FOLLOW_MS,
       "1: node 0's agent may follow by itself first");
    is_str(why, "ended with status 1, yet node 0's did not follow", "1's words");
    ok(PBS_TASK_FOLLOW_MS > 10000, "the follow time is past the agent's 10 s worker grace");

    ok(pbs_job_status(0, -1, 0) == 0, "node 0 ended 0, no task failed: 0");
    ok(pbs_job_status(75, -1, 0) == 75, "node 0's 75 (checkpointed) is the job's");
    ok(pbs_job_status(143, 127, 1) == 127, "stopped for a node that could not start: its status");
    ok(pbs_job_status(0, 3, 0) == 3, "node 0 ended 0 though a node failed: the node's status");
    ok(pbs_job_status(1, 3, 0) == 1, "node 0 followed by itself: its own status");
    ok(pbs_job_status(0, 265, 1) == 137, "a task killed by SIGKILL (256+9) reads as 128+9");
    ok(pbs_shell_status(255) == 255 && pbs_shell_status(256 + 15) == 143,
       "255 stays; 256+15 becomes 143");
    return done_testing();
}
