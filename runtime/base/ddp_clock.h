/* ddp_clock: the monotonic clock every deadline in ddpjob is measured on.
 *
 * A deadline is an absolute time in milliseconds on CLOCK_MONOTONIC, so that it survives being
 * passed down through helpers and is immune to wall-clock jumps. */
#ifndef DDP_CLOCK_H
#define DDP_CLOCK_H

#include <stdint.h>

/* Milliseconds on the monotonic clock (arbitrary origin). */
int64_t ddp_now_ms(void);

/* Microseconds on the monotonic clock: for when something happened, finer than a step. */
int64_t ddp_now_us(void);

/* Seconds on the monotonic clock, to the nanosecond: for measuring (benchmarks, epochs). */
double ddp_now_s(void);

/* The deadline `ms` from now. */
int64_t ddp_deadline_in(int64_t ms);

/* Milliseconds left until `deadline`, never negative, and clamped to what poll() accepts. */
int ddp_ms_left(int64_t deadline);

/* Sleeps `ms` milliseconds (restarting after signals). */
void ddp_sleep_ms(int64_t ms);

#endif
