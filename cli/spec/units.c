#include "cli/spec/units.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
    const char *suffix;
    uint64_t factor;
} size_units[] = {
    {"KB", 1ULL << 10},  {"K", 1ULL << 10},   {"KIB", 1ULL << 10}, {"MB", 1ULL << 20},
    {"M", 1ULL << 20},   {"MIB", 1ULL << 20}, {"GB", 1ULL << 30},  {"G", 1ULL << 30},
    {"GIB", 1ULL << 30}, {"TB", 1ULL << 40},  {"T", 1ULL << 40},   {"TIB", 1ULL << 40},
};

int units_parse_size(const char *text, uint64_t *bytes)
{
    const char *p = text;
    uint64_t value = 0;
    if (!isdigit((unsigned char)*p))
        return -1;
    while (isdigit((unsigned char)*p)) {
        uint64_t digit = (uint64_t)(*p++ - '0');
        if (value > (UINT64_MAX - digit) / 10)
            return -1;
        value = value * 10 + digit;
    }
    while (*p == ' ')
        p++;
    for (size_t i = 0; i < sizeof size_units / sizeof size_units[0]; i++) {
        if (strcasecmp(p, size_units[i].suffix) == 0) {
            if (value == 0 || value > UNITS_SIZE_MAX / size_units[i].factor)
                return -1;
            *bytes = value * size_units[i].factor;
            return 0;
        }
    }
    return -1;
}

void units_format_size(uint64_t bytes, int byte_suffix, char *out, size_t outsize)
{
    static const char *names[] = {"K", "M", "G", "T"};
    uint64_t kib = (bytes + 1023) / 1024;
    int unit = 0;
    while (unit < 3 && kib % 1024 == 0) {
        kib /= 1024;
        unit++;
    }
    snprintf(out, outsize, "%llu%s%s", (unsigned long long)kib, names[unit],
             byte_suffix ? "B" : "");
}

/* Reads one decimal field of at most 9 digits. */
static int read_field(const char **p, uint64_t *v)
{
    const char *s = *p;
    *v = 0;
    if (!isdigit((unsigned char)*s))
        return -1;
    while (isdigit((unsigned char)*s)) {
        if (s - *p >= 9)
            return -1;
        *v = *v * 10 + (uint64_t)(*s++ - '0');
    }
    *p = s;
    return 0;
}

int units_parse_walltime(const char *text, uint64_t *seconds)
{
    const char *p = text;
    uint64_t fields[3];
    int n = 0;
    uint64_t days = 0;
    int has_days = strchr(text, '-') != NULL;
    if (has_days) {
        if (read_field(&p, &days) < 0 || *p++ != '-')
            return -1;
    }
    for (;;) {
        if (n == 3 || read_field(&p, &fields[n]) < 0)
            return -1;
        n++;
        if (*p == '\0')
            break;
        if (*p++ != ':')
            return -1;
    }
    if (has_days && n != 3)
        return -1;
    /* Every field but the leading one stays within its range; with days, hours do too. */
    for (int i = 1; i < n; i++)
        if (fields[i] >= 60)
            return -1;
    if (has_days && fields[0] >= 24)
        return -1;
    uint64_t total = days * 86400;
    uint64_t scale = 1;
    for (int i = n - 1; i >= 0; i--, scale *= 60)
        total += fields[i] * scale;
    if (total == 0)
        return -1;
    *seconds = total;
    return 0;
}

void units_format_hms(uint64_t seconds, char *out, size_t outsize)
{
    snprintf(out, outsize, "%02llu:%02llu:%02llu", (unsigned long long)(seconds / 3600),
             (unsigned long long)(seconds / 60 % 60), (unsigned long long)(seconds % 60));
}

void units_format_days_hms(uint64_t seconds, char *out, size_t outsize)
{
    if (seconds >= 86400)
        snprintf(out, outsize, "%llu-%02llu:%02llu:%02llu", (unsigned long long)(seconds / 86400),
                 (unsigned long long)(seconds / 3600 % 24), (unsigned long long)(seconds / 60 % 60),
                 (unsigned long long)(seconds % 60));
    else
        units_format_hms(seconds, out, outsize);
}
