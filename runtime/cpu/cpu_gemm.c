/* runtime/cpu/cpu_gemm.c — one row-major GEMM split over braid's pool.
 *
 * The CPU matmul and conv kernels call br_gemm for each product. A product
 * worth more than one thread is cut into blocks of output columns (or of
 * rows, when there are more rows than columns), the same blocks whatever
 * the thread count, and each block is one single-threaded OpenBLAS call on
 * a pool thread. So the executor's
 * num_threads is the number of threads the GEMMs use too, and between
 * GEMMs no BLAS thread spins beside the pool's (OpenBLAS's own workers
 * busy-wait after each call, which on a machine with few cores takes
 * time from the elementwise kernels that follow). OpenBLAS's thread count
 * is process-wide: br_gemm sets it to 1 (see docs/architecture.md).
 *
 * Why OpenBLAS and not BLIS or oneDNN: bench/gemm_libs measured all three
 * (and onnxruntime's GEMM) on GPT-2's and ResNet-18's shapes; single
 * threaded, no other one was faster by more than the load's noise
 * (bench/RESULTS.md, "CPU GEMM libraries"). */
#include "runtime/cpu/cpu_kernels.h"

#include <cblas.h>

/* OpenBLAS's own: not in every cblas.h. */
extern void openblas_set_num_threads(int num_threads);

/* Target block sizes (see br_gemm). */
#define GEMM_BLOCK_N 384
#define GEMM_BLOCK_M 128

typedef struct gemm_job {
    bool f64, ta, tb;
    bool split_n;     /* blocks of columns, else of rows */
    int M, N, K;
    int lda, ldb, ldc;
    int block;        /* columns (rows) per block */
    size_t esz;
    const char *A, *B;
    char *C;
} gemm_job;

static void gemm_call(const gemm_job *j, int M, int N, const char *A,
                      const char *B, char *C) {
    enum CBLAS_TRANSPOSE ta = j->ta ? CblasTrans : CblasNoTrans;
    enum CBLAS_TRANSPOSE tb = j->tb ? CblasTrans : CblasNoTrans;
    if (j->f64)
        cblas_dgemm(CblasRowMajor, ta, tb, M, N, j->K, 1.0,
                    (const double *)A, j->lda, (const double *)B, j->ldb, 0.0,
                    (double *)C, j->ldc);
    else
        cblas_sgemm(CblasRowMajor, ta, tb, M, N, j->K, 1.0f, (const float *)A,
                    j->lda, (const float *)B, j->ldb, 0.0f, (float *)C,
                    j->ldc);
}

/* Blocks [b, e), one call each (never one call for several: the sums
 * would change with how the pool hands blocks out); block i covers
 * columns (rows) [i·block, +block). */
static void gemm_blocks(void *ctx, int64_t b, int64_t e) {
    const gemm_job *j = ctx;
    int64_t D = j->split_n ? j->N : j->M;
    for (int64_t i = b; i < e; i++) {
        int64_t lo = i * j->block;
        int64_t hi = lo + j->block < D ? lo + j->block : D;
        if (j->split_n) { /* columns lo..hi of op(B) and C */
            size_t bo = (size_t)lo * (j->tb ? (size_t)j->ldb : 1);
            gemm_call(j, j->M, (int)(hi - lo), j->A, j->B + bo * j->esz,
                      j->C + (size_t)lo * j->esz);
        } else { /* rows lo..hi of op(A) and C */
            size_t ao = (size_t)lo * (j->ta ? 1 : (size_t)j->lda);
            gemm_call(j, (int)(hi - lo), j->N, j->A + ao * j->esz, j->B,
                      j->C + (size_t)lo * (size_t)j->ldc * j->esz);
        }
    }
}

void br_gemm(br_pool *pool, bool f64, bool ta, bool tb, int M, int N, int K,
             const void *A, int lda, const void *B, int ldb, void *C,
             int ldc) {
    gemm_job j = {.f64 = f64, .ta = ta, .tb = tb, .M = M, .N = N, .K = K,
                  .lda = lda > 0 ? lda : 1, .ldb = ldb > 0 ? ldb : 1,
                  .ldc = ldc > 0 ? ldc : 1,
                  .esz = f64 ? sizeof(double) : sizeof(float),
                  .A = A, .B = B, .C = C};
    /* Every call single-threaded; cheap when already 1. */
    openblas_set_num_threads(1);
    int64_t work = (int64_t)M * N * K;
    j.split_n = N >= M;
    int D = j.split_n ? N : M;
    /* The blocks depend on the shape alone, never on the thread count:
     * OpenBLAS's sums for an element change with the size of the call it
     * is in, so the same blocks on 1 or 8 threads (or, pool NULL, one
     * after another here) keep results identical for every num_threads.
     * About GEMM_BLOCK_N columns (GEMM_BLOCK_M rows) each, multiples of 16
     * (whole AVX-512 vectors of f32): wide enough that repacking the other
     * operand per block costs little, narrow enough that GPT-2's 768
     * columns make two blocks and the long ones several per thread, so a
     * thread slowed by other processes does not hold the rest up. */
    int target = j.split_n ? GEMM_BLOCK_N : GEMM_BLOCK_M;
    int64_t nblocks = (D + target / 2) / target;
    if (work <= BR_GEMM_SMALL || nblocks <= 1) {
        gemm_call(&j, M, N, j.A, j.B, j.C);
        return;
    }
    int64_t block = (D + nblocks - 1) / nblocks;
    j.block = (int)((block + 15) / 16 * 16);
    nblocks = (D + j.block - 1) / j.block;
    if (pool)
        br_parallel_for(pool, nblocks, 1, gemm_blocks, &j);
    else
        gemm_blocks(&j, 0, nblocks);
}
