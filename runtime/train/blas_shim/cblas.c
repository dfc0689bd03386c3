/* A plain C cblas_sgemm for builds on machines without a BLAS package (a GPU machine with only
 * the CUDA toolkit). Correct, not fast: the CPU layers are not what the GPU checks measure; the
 * build links OpenBLAS where it is. */
#include <cblas.h>

void openblas_set_num_threads(int n)
{
    (void)n;
}

void cblas_sgemm(const enum CBLAS_ORDER order, const enum CBLAS_TRANSPOSE ta,
                 const enum CBLAS_TRANSPOSE tb, const int m, const int n, const int k,
                 const float alpha, const float *a, const int lda, const float *b, const int ldb,
                 const float beta, float *c, const int ldc)
{
    /* Column-major C = op(A) op(B) is row-major C' = op(B)' op(A)'. */
    if (order == CblasColMajor) {
        cblas_sgemm(CblasRowMajor, tb, ta, n, m, k, alpha, b, ldb, a, lda, beta, c, ldc);
        return;
    }
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float sum = 0;
            for (int p = 0; p < k; p++)
                sum += (ta == CblasNoTrans ? a[i * lda + p] : a[p * lda + i]) *
                       (tb == CblasNoTrans ? b[p * ldb + j] : b[j * ldb + p]);
            c[i * ldc + j] = alpha * sum + (beta == 0 ? 0 : beta * c[i * ldc + j]);
        }
}
