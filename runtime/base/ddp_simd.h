/* ddp_simd: where a loop is compiled for more than the baseline.
 *
 * The build targets plain x86-64 (SSE2), so that one binary runs on any node of a cluster. The
 * few loops that stream whole tensors (the reductions, the optimizer step, the element-wise
 * layers) are cloned for AVX-512 and AVX2 as well; the loader picks the widest the CPU has.
 * Without -ffp-contract=fast (ISO C, as the build is), the clones round exactly as the baseline:
 * no fused multiply-adds are formed, so every clone gives the same bits. */
#ifndef DDP_SIMD_H
#define DDP_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define VECTOR_CLONES
#endif

#endif
