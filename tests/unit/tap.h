/* tap: the few TAP helpers our C unit tests use (meson reads the output with protocol: 'tap'). */
#ifndef DDPJOB_TAP_H
#define DDPJOB_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_count, tap_failed;

#define ok(cond, ...)                                                                              \
    do {                                                                                           \
        int tap_ok_ = (cond);                                                                      \
        tap_count++;                                                                               \
        if (!tap_ok_)                                                                              \
            tap_failed++;                                                                          \
        printf("%s %d - ", tap_ok_ ? "ok" : "not ok", tap_count);                                  \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        if (!tap_ok_)                                                                              \
            printf("#   failed at %s:%d\n", __FILE__, __LINE__);                                   \
    } while (0)

#define is_str(got, want, ...)                                                                     \
    do {                                                                                           \
        const char *tap_g_ = (got), *tap_w_ = (want);                                              \
        int tap_same_ = tap_g_ && tap_w_ ? !strcmp(tap_g_, tap_w_) : tap_g_ == tap_w_;             \
        ok(tap_same_, __VA_ARGS__);                                                                \
        if (!tap_same_)                                                                            \
            printf("#   got:  \"%s\"\n#   want: \"%s\"\n", tap_g_ ? tap_g_ : "(null)",             \
                   tap_w_ ? tap_w_ : "(null)");                                                    \
    } while (0)

static inline int done_testing(void)
{
    printf("1..%d\n", tap_count);
    return tap_failed ? 1 : 0;
}

#endif
