/* device_cuda_none: the build had no CUDA toolkit, so there is no GPU device. */
#include "runtime/train/model/device.h"

const device_ops_t *device_cuda_open(int local_rank, gpu_math_t math, ddp_error_t *err)
{
    ddp_error_set(err, "this ddp-train was built without the CUDA toolkit (meson option cuda)");
    return NULL;
}
