/* ddp_simd: where a loop is compiled for more than the baseline.
 *
 * The build targets plain x86-64 (SSE2), so that one binary runs on any node of a cluster. The
 * loops that stream whole tensors (the process group's reductions, the optimizer step, the batch
 * norms, the element-wise layers) are cloned for AVX-512 and AVX2 as well; the loader picks the
 * widest the CPU has (glibc's loader; musl's runs the baseline). Every clone gives the same bits:
 * their loops are element-wise or sum in GCC's fixed-width vector types, and ISO C (as the build
 * is) forms no fused multiply-adds. */
#ifndef DDP_SIMD_H
#define DDP_SIMD_H

#include <limits.h> /* brings the C library's own macros: __GLIBC__ where it is glibc */

/* The clones are picked by an ifunc, which glibc resolves and musl (the cluster build's static
 * C library) does not: there the baseline alone. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__GLIBC__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

#endif
