/* ddp_simd: where a loop is compiled for more than the baseline.
 *
 * The build targets plain x86-64 (SSE2), so that one binary runs on any node of a cluster. The
 * loops that stream whole tensors (the process group's reductions, the optimizer step, the batch
 * norms, the element-wise layers) are cloned for AVX-512 and AVX2 as well; the loader picks the
 * widest the CPU has. Every clone gives the same bits: their loops are element-wise or sum in
 * GCC's fixed-width vector types, and ISO C (as the build is) forms no fused multiply-adds. */
#ifndef DDP_SIMD_H
#define DDP_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

#endif
