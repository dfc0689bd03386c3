/* pg_reduce: element-wise reductions on host memory, for the tcp backend and the CPU model code.
 *
 * Integer sums and products wrap (two's complement) instead of being undefined on overflow. AVG
 * is reduced as SUM and divided once (pg_reduce_divide), as DDP does: at the end, or by whoever
 * reduced a piece, right after (the shared-memory all_reduce: no second pass over the buffer). */
#ifndef DDP_PG_REDUCE_H
#define DDP_PG_REDUCE_H

#include <stddef.h>

#include "runtime/pg/pg.h"

/* dst[i] = a[i] OP b[i] for count elements; dst is either a itself or disjoint from a and b (so
 * a reduction can land in a buffer other than its input without a copy first). */
typedef void (*pg_reduce_fn)(void *dst, const void *a, const void *b, size_t count);

/* NULL for a type the host kernels do not handle (float16, bfloat16). */
pg_reduce_fn pg_reducer(pg_dtype_t t, pg_op_t op);

/* memcpy with stores that bypass the caches (where the CPU has them): for results of buffers
 * larger than the caches, which nobody reads before they are evicted anyway. */
void pg_stream_copy(void *dst, const void *src, size_t bytes);

/* buf[i] /= n (integer division for integer types). */
typedef void (*pg_divide_fn)(void *buf, size_t count, int n);

/* AVG's divide for type t, for a collective that applies it where it reduced (NULL: none). */
pg_divide_fn pg_divider(pg_dtype_t t);

/* The whole buffer divided by n with t's divide (nothing for n <= 1 or a type without one). */
void pg_reduce_divide(void *buf, size_t count, pg_dtype_t t, int n);

#endif
