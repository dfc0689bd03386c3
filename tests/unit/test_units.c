#include <stdint.h>

#include "tests/unit/tap.h"
#include "cli/spec/units.h"

static void size_ok(const char *text, uint64_t want)
{
    uint64_t got = 0;
    ok(units_parse_size(text, &got) == 0 && got == want, "size %s = %llu (got %llu)", text,
       (unsigned long long)want, (unsigned long long)got);
}

static void size_bad(const char *text)
{
    uint64_t got;
    ok(units_parse_size(text, &got) < 0, "size \"%s\" is rejected", text);
}

static void wall_ok(const char *text, uint64_t want)
{
    uint64_t got = 0;
    ok(units_parse_walltime(text, &got) == 0 && got == want, "walltime %s = %llu s (got %llu)",
       text, (unsigned long long)want, (unsigned long long)got);
}

static void wall_bad(const char *text)
{
    uint64_t got;
    ok(units_parse_walltime(text, &got) < 0, "walltime \"%s\" is rejected", text);
}

int main(void)
{
    size_ok("380GB", 380ULL << 30);
    size_ok("16G", 16ULL << 30);
    size_ok("512MiB", 512ULL << 20);
    size_ok("1TB", 1ULL << 40);
    size_ok("100 KB", 100ULL << 10);
    size_ok("2gb", 2ULL << 30);
    size_bad("380");
    size_bad("GB");
    size_bad("0GB");
    size_bad("-1GB");
    size_bad("1.5GB");
    size_bad("10PB");
    size_bad("99999999999999999999GB");
    /* 2^64 + 3 wraps to 3 in a check that misses the last digit's carry. */
    size_bad("18446744073709551619K");
    size_bad("18446744073709551615");
    size_ok("64TB", 64ULL << 40);
    size_bad("65TB");

    wall_ok("02:00:00", 7200);
    wall_ok("90", 90);
    wall_ok("10:00", 600);
    wall_ok("48:00:00", 172800);
    wall_ok("1-00:00:00", 86400);
    wall_ok("2-12:30:05", 2 * 86400 + 12 * 3600 + 30 * 60 + 5);
    wall_bad("2h");
    wall_bad("");
    wall_bad("00:00:00");
    wall_bad("1:60:00");
    wall_bad("1-24:00:00");
    wall_bad("1-10:00");
    wall_bad("1:2:3:4");
    wall_bad("1::2");
    wall_bad(":10");

    char buf[64];
    units_format_size(760ULL << 30, 1, buf, sizeof buf);
    is_str(buf, "760GB", "PBS size");
    units_format_size(380ULL << 30, 0, buf, sizeof buf);
    is_str(buf, "380G", "Slurm size");
    units_format_size(1536ULL << 20, 0, buf, sizeof buf);
    is_str(buf, "1536M", "a size that is not whole GiB stays in MiB");
    units_format_size(2ULL << 40, 1, buf, sizeof buf);
    is_str(buf, "2TB", "TB");
    units_format_hms(172800 + 61, buf, sizeof buf);
    is_str(buf, "48:01:01", "hours are not wrapped at a day for PBS");
    units_format_days_hms(86400 + 3600 + 1, buf, sizeof buf);
    is_str(buf, "1-01:00:01", "Slurm days");
    units_format_days_hms(600, buf, sizeof buf);
    is_str(buf, "00:10:00", "Slurm under a day");
    return done_testing();
}
