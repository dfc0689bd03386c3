/* ddp_parse: whole values only, within their bounds; signals by name or number. */
#include <limits.h>
#include <signal.h>
#include <string.h>

#include "runtime/base/ddp_parse.h"
#include "tests/unit/tap.h"

int main(void)
{
    int i = -7;
    long l = -7;
    double d = -7;
    ok(ddp_parse_int("42", 0, 100, &i) == 0 && i == 42, "42 in [0, 100]");
    ok(ddp_parse_int("100", 0, 100, &i) == 0 && i == 100, "the upper bound is inclusive");
    i = -7;
    ok(ddp_parse_int("101", 0, 100, &i) < 0 && i == -7, "101 is out of [0, 100], *out untouched");
    ok(ddp_parse_int("-1", 0, 100, &i) < 0, "-1 is below it");
    ok(ddp_parse_int("8x", 0, 100, &i) < 0, "8x: trailing text is an error");
    ok(ddp_parse_int("", 0, 100, &i) < 0, "an empty value is an error");
    ok(ddp_parse_int(NULL, 0, 100, &i) < 0, "so is no value");
    ok(ddp_parse_int("99999999999999999999", 0, INT_MAX, &i) < 0, "overflow is an error");
    ok(ddp_parse_long("9000000000", 0, LONG_MAX, &l) == 0 && l == 9000000000L, "a long beyond int");
    ok(ddp_parse_double("0.25", 0, 1, &d) == 0 && d == 0.25, "0.25 in [0, 1]");
    ok(ddp_parse_double("1.5", 0, 1, &d) < 0, "1.5 is out of [0, 1]");
    ok(ddp_parse_double("nan", 0, 1, &d) < 0, "nan is no number in range");
    ok(ddp_parse_signal("USR1") == SIGUSR1, "USR1");
    ok(ddp_parse_signal("SIGUSR2") == SIGUSR2, "SIGUSR2");
    ok(ddp_parse_signal("15") == SIGTERM, "15");
    ok(ddp_parse_signal("NOPE") < 0, "an unknown name is refused");
    /* Our own names (any C library) against glibc's, where this test runs. */
    int same = 0;
    for (int sig = 1; sig <= SIGSYS; sig++)
        same += ddp_signal_name(sig) && sigabbrev_np(sig) &&
                !strcmp(ddp_signal_name(sig), sigabbrev_np(sig));
    ok(same == SIGSYS, "signals 1..%d are named as glibc names them (%d)", SIGSYS, same);
    ok(!ddp_signal_name(0) && !ddp_signal_name(SIGRTMIN) && !ddp_signal_name(-1),
       "0, the real-time ones and -1 have no name");
    return done_testing();
}
