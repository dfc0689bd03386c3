#include "runtime/pg/pg_reduce.h"

#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "runtime/base/ddp_simd.h"

/* One kernel: dst = a OP b, with an in-place loop for dst == a so both forms vectorise. */
#define KERNEL(fn, T, EXPR)                                                                        \
    VECTOR_CLONES static void fn(void *d, const void *pa, const void *pb, size_t n)                \
    {                                                                                              \
        const T *restrict b = pb;                                                                  \
        if (d == pa) {                                                                             \
            T *restrict o = d;                                                                     \
            for (size_t i = 0; i < n; i++) {                                                       \
                T x = o[i], y = b[i];                                                              \
                o[i] = EXPR;                                                                       \
            }                                                                                      \
        } else {                                                                                   \
            T *restrict o = d;                                                                     \
            const T *restrict a = pa;                                                              \
            for (size_t i = 0; i < n; i++) {                                                       \
                T x = a[i], y = b[i];                                                              \
                o[i] = EXPR;                                                                       \
            }                                                                                      \
        }                                                                                          \
    }

/* Arithmetic type A does the sums and products of storage type T (unsigned for integers, so
 * that overflow wraps instead of being undefined). */
#define KERNELS(name, T, A)                                                                        \
    KERNEL(sum_##name, T, (T)((A)x + (A)y))                                                        \
    KERNEL(prod_##name, T, (T)((A)x * (A)y))                                                       \
    KERNEL(min_##name, T, y < x ? y : x)                                                           \
    KERNEL(max_##name, T, y > x ? y : x)                                                           \
    VECTOR_CLONES static void div_##name(void *d, size_t n, int by)                                \
    {                                                                                              \
        T *a = d;                                                                                  \
        for (size_t i = 0; i < n; i++)                                                             \
            a[i] = (T)(a[i] / (T)by);                                                              \
    }

KERNELS(f32, float, float)
KERNELS(f64, double, double)
KERNELS(i32, int32_t, uint32_t)
KERNELS(i64, int64_t, uint64_t)

static const struct {
    pg_reduce_fn fn[PG_OP_COUNT];
    void (*divide)(void *, size_t, int);
} kernels[PG_DTYPE_COUNT] = {
    [PG_FLOAT32] = {{sum_f32, prod_f32, min_f32, max_f32, sum_f32}, div_f32},
    [PG_FLOAT64] = {{sum_f64, prod_f64, min_f64, max_f64, sum_f64}, div_f64},
    [PG_INT32] = {{sum_i32, prod_i32, min_i32, max_i32, sum_i32}, div_i32},
    [PG_INT64] = {{sum_i64, prod_i64, min_i64, max_i64, sum_i64}, div_i64},
};

pg_reduce_fn pg_reducer(pg_dtype_t t, pg_op_t op)
{
    return kernels[t].fn[op];
}

pg_divide_fn pg_divider(pg_dtype_t t)
{
    return kernels[t].divide;
}

void pg_reduce_divide(void *buf, size_t count, pg_dtype_t t, int n)
{
    if (kernels[t].divide && n > 1)
        kernels[t].divide(buf, count, n);
}

void pg_stream_copy(void *dst, const void *src, size_t bytes)
{
#if defined(__SSE2__)
    unsigned char *d = dst;
    const unsigned char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (head > bytes)
        head = bytes;
    memcpy(d, s, head);
    d += head;
    s += head;
    bytes -= head;
    for (; bytes >= 16; d += 16, s += 16, bytes -= 16)
        _mm_stream_si128((__m128i *)d, _mm_loadu_si128((const __m128i *)s));
    memcpy(d, s, bytes);
    _mm_sfence();
#else
    memcpy(dst, src, bytes);
#endif
}
