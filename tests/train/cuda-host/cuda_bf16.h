/* cuda_bf16.h for the host: bfloat16 as the GPU stores it (float32's top 16 bits) and converts
 * it (rounded to nearest, ties to even; a NaN stays a NaN), for device_cuda.cu's mixed-precision
 * kernels run on the CPU (tests/train/cuda-host/cuda_runtime.h). */
#ifndef DDP_CUDA_HOST_BF16_H
#define DDP_CUDA_HOST_BF16_H

#include <stdint.h>
#include <string.h>

struct __nv_bfloat16 {
    uint16_t bits;
};

inline __nv_bfloat16 __float2bfloat16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return __nv_bfloat16{(uint16_t)((u >> 16) | 0x40)};
    u += 0x7fffu + ((u >> 16) & 1);
    return __nv_bfloat16{(uint16_t)(u >> 16)};
}

inline float __bfloat162float(__nv_bfloat16 h)
{
    uint32_t u = (uint32_t)h.bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#endif
