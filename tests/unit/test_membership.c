/* Who runs workers in each round of a job with spares or an elastic world (membership.h): a
 * standby takes the lost node's node rank, a shrinking world moves ranks into the holes, a
 * growing one appends, a lost slot never comes back, and too few nodes is refused with m left
 * as it was. */
#include <stdio.h>
#include <string.h>

#include "runtime/job/membership.h"
#include "tests/unit/tap.h"

/* "0 1 S X -" for roles 0, 1, standby, excluded, absent. */
static const char *roles(const ddp_members_t *m)
{
    static char buf[256];
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->nslots && used + 8 < sizeof buf; i++) {
        int r = m->role[i];
        used += (size_t)(r >= 0                 ? snprintf(buf + used, 8, "%s%d", i ? " " : "", r)
                         : r == MEMBER_STANDBY  ? snprintf(buf + used, 8, "%sS", i ? " " : "")
                         : r == MEMBER_EXCLUDED ? snprintf(buf + used, 8, "%sX", i ? " " : "")
                                                : snprintf(buf + used, 8, "%s-", i ? " " : ""));
    }
    return buf;
}

int main(void)
{
    ddp_members_t m = {0};
    ddp_error_t err;
    /* Two active nodes and one spare. */
    const unsigned char all3[] = {1, 1, 1};
    ok(ddp_members_form(&m, all3, 3, 2, 2, &err) == 2, "round 0: 2 of 3 slots active");
    is_str(roles(&m), "0 1 S", "slots 0 and 1 take node ranks 0 and 1, slot 2 stands by");
    ok(ddp_members_expected(&m) == 3, "all three are expected at the next round");
    /* Slot 1 lost: the spare takes node rank 1. */
    ddp_members_exclude(&m, ddp_members_slot_of(&m, 1));
    ok(ddp_members_expected(&m) == 2, "the lost slot is no longer expected");
    const unsigned char but1[] = {1, 0, 1};
    ok(ddp_members_form(&m, but1, 3, 2, 2, &err) == 2, "round 1: still 2 active");
    is_str(roles(&m), "0 X 1", "the standby takes the lost node's rank 1");
    /* The lost slot comes back: it stays out; with no standby left, too few. */
    ok(ddp_members_form(&m, all3, 3, 2, 2, &err) == 2,
       "the lost slot joining again changes nothing");
    is_str(roles(&m), "0 X 1", "it stays excluded");
    const unsigned char only0[] = {1, 0, 0};
    ok(ddp_members_form(&m, only0, 3, 2, 2, &err) < 0, "one node left of two needed: refused");
    ok(strstr(err.msg, "1 node(s) can run workers, and the job needs 2") &&
           strstr(err.msg, "no standby left"),
       "saying so: %s", err.msg);
    is_str(roles(&m), "0 X 1", "and the membership is as it was");
    ddp_members_free(&m);

    /* Elastic 1:3: rank-stable survivors, a hole filled by the highest rank, growth appended. */
    const unsigned char three[] = {1, 1, 1};
    ok(ddp_members_form(&m, three, 3, 1, 3, &err) == 3, "three of 1:3 active");
    const unsigned char four[] = {1, 0, 1, 1};
    ddp_members_exclude(&m, 1);
    ok(ddp_members_form(&m, four, 4, 1, 3, &err) == 3, "slot 1 lost, slot 3 new: still 3");
    is_str(roles(&m), "0 X 2 1", "slot 2 keeps rank 2, the newcomer fills rank 1");
    ddp_members_exclude(&m, 2);
    const unsigned char shrink[] = {1, 0, 0, 1};
    ok(ddp_members_form(&m, shrink, 4, 1, 3, &err) == 2, "slot 2 lost too: 2 active");
    is_str(roles(&m), "0 X X 1", "rank 1 stays within the smaller world");
    const unsigned char five[] = {1, 0, 0, 1, 1, 1};
    ok(ddp_members_form(&m, five, 6, 1, 3, &err) == 3, "two newcomers, room for one");
    is_str(roles(&m), "0 X X 1 2 S", "the first newcomer is rank 2, the second stands by");
    /* A member that did not come back is lost; the standby fills its place. */
    const unsigned char no4[] = {1, 0, 0, 1, 0, 1};
    ok(ddp_members_form(&m, no4, 6, 1, 3, &err) == 3, "rank 2's slot did not rejoin");
    is_str(roles(&m), "0 X X 1 X 2", "it is excluded and the standby takes rank 2");
    const unsigned char no0[] = {0, 0, 0, 1, 0, 1};
    ok(ddp_members_form(&m, no0, 6, 1, 3, &err) < 0 && strstr(err.msg, "node 0"),
       "without node 0 (the store's) no round forms: %s", err.msg);
    ddp_members_free(&m);
    return done_testing();
}
