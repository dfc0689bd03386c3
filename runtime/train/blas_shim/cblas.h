/* The slice of the CBLAS interface ddp-train's CPU layers use, for builds on machines without a
 * BLAS package, as a GPU machine with only the CUDA toolkit (cblas.c beside it implements it
 * plainly). */
#ifndef DDP_BLAS_SHIM_CBLAS_H
#define DDP_BLAS_SHIM_CBLAS_H

#ifdef __cplusplus
extern "C" {
#endif

enum CBLAS_ORDER { CblasRowMajor = 101, CblasColMajor = 102 };
enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112 };

void openblas_set_num_threads(int n);
void cblas_sgemm(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE ta,
                 const enum CBLAS_TRANSPOSE tb, const int m, const int n, const int k,
                 const float alpha, const float *a, const int lda, const float *b, const int ldb,
                 const float beta, float *c, const int ldc);

#ifdef __cplusplus
}
#endif

#endif
