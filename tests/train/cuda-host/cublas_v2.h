/* cublas_v2.h for the host: cublasSgemm as CBLAS's column-major sgemm, with cuBLAS's argument
 * checks (so a wrong leading dimension fails as it would on the GPU). See cuda_runtime.h here. */
#ifndef DDP_CUDA_HOST_CUBLAS_H
#define DDP_CUDA_HOST_CUBLAS_H

#include <cblas.h>

#include "cuda_runtime.h"

enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cublasMath_t { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 };
typedef struct cuda_host_blas *cublasHandle_t;

inline cublasStatus_t cublasCreate(cublasHandle_t *handle)
{
    *handle = NULL;
    return CUBLAS_STATUS_SUCCESS;
}

inline cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t)
{
    return CUBLAS_STATUS_SUCCESS;
}

/* The host's GEMMs are float32 whatever the mode. */
inline cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t)
{
    return CUBLAS_STATUS_SUCCESS;
}

inline const char *cublasGetStatusString(cublasStatus_t s)
{
    return s == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_INVALID_VALUE";
}

/* C[m x n] = alpha op(A) op(B) + beta C, all column-major. */
inline cublasStatus_t cublasSgemm(cublasHandle_t, cublasOperation_t transa,
                                  cublasOperation_t transb, int m, int n, int k, const float *alpha,
                                  const float *a, int lda, const float *b, int ldb,
                                  const float *beta, float *c, int ldc)
{
    int a_rows = transa == CUBLAS_OP_N ? m : k, b_rows = transb == CUBLAS_OP_N ? k : n;
    if (m < 0 || n < 0 || k < 0 || lda < (a_rows > 1 ? a_rows : 1) ||
        ldb < (b_rows > 1 ? b_rows : 1) || ldc < (m > 1 ? m : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    cblas_sgemm(CblasColMajor, transa == CUBLAS_OP_N ? CblasNoTrans : CblasTrans,
                transb == CUBLAS_OP_N ? CblasNoTrans : CblasTrans, m, n, k, *alpha, a, lda, b, ldb,
                *beta, c, ldc);
    return CUBLAS_STATUS_SUCCESS;
}

#endif
