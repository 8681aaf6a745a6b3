/* tests/cuda_mock/cublaslt_mock.c — the part of cuBLASLt braid's CUDA
 * backend uses, emulated on the host for tests/cuda_mock/run.sh: opaque
 * descriptors, layouts and preferences keep their attributes (a wrong
 * attribute size aborts); the heuristic checks that the layouts describe
 * one consistent product and records the alignments it was asked for;
 * cublasLtMatmul checks dimensions, leading dimensions, the bias (device
 * memory, one value per row of D), the workspace and the pointers'
 * alignment against the algorithm's, then enqueues the naive gemm of
 * cudart_mock.c with the BIAS / RELU_BIAS epilogue. Development tool only,
 * never part of braid. */
#define _GNU_SOURCE
#include <cublasLt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cuda_mock/mock.h"

struct cublasLtContext {
    int live;
};

/* What the opaque descriptors hold here. */
typedef struct mock_desc {
    int32_t compute, scale, transa, transb, bias_type;
    uint32_t epi;
    const void *bias;
} mock_desc;
typedef struct mock_layout {
    int32_t type, batch;
    uint64_t rows, cols;
    int64_t ld, stride;
} mock_layout;
typedef struct mock_pref {
    uint64_t workspace;
    uint32_t align[4]; /* A, B, C, D */
} mock_pref;
typedef struct mock_algo {
    uint64_t magic;
    uint32_t align[4];
} mock_algo;
#define MOCK_ALGO_MAGIC 0x6d6f636b616c676full

_Static_assert(sizeof(mock_desc) <= sizeof(cublasLtMatmulDescOpaque_t), "");
_Static_assert(sizeof(mock_layout) <= sizeof(cublasLtMatrixLayoutOpaque_t), "");
_Static_assert(sizeof(mock_pref) <= sizeof(cublasLtMatmulPreferenceOpaque_t),
               "");
_Static_assert(sizeof(mock_algo) <= sizeof(cublasLtMatmulAlgo_t), "");

static void lt_abort(const char *what) {
    fprintf(stderr, "cuda mock: cuBLASLt: %s\n", what);
    abort();
}

static void want_size(size_t got, size_t want, const char *attr) {
    if (got != want) {
        fprintf(stderr,
                "cuda mock: cuBLASLt attribute %s set with %zu bytes, "
                "expected %zu\n",
                attr, got, want);
        abort();
    }
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
    *h = calloc(1, sizeof **h);
    (*h)->live = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
    free(h);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d,
                                        cublasComputeType_t compute,
                                        cudaDataType_t scale) {
    *d = calloc(1, sizeof **d);
    mock_desc *m = (mock_desc *)*d;
    m->compute = (int32_t)compute;
    m->scale = (int32_t)scale;
    m->bias_type = -1;
    m->epi = CUBLASLT_EPILOGUE_DEFAULT;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
    free(d);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t a,
                                              const void *buf, size_t n) {
    mock_desc *m = (mock_desc *)d;
    switch (a) {
    case CUBLASLT_MATMUL_DESC_TRANSA:
        want_size(n, 4, "TRANSA");
        memcpy(&m->transa, buf, 4);
        break;
    case CUBLASLT_MATMUL_DESC_TRANSB:
        want_size(n, 4, "TRANSB");
        memcpy(&m->transb, buf, 4);
        break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
        want_size(n, 4, "EPILOGUE");
        memcpy(&m->epi, buf, 4);
        break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
        want_size(n, sizeof(void *), "BIAS_POINTER");
        memcpy(&m->bias, buf, sizeof(void *));
        break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
        want_size(n, 4, "BIAS_DATA_TYPE");
        memcpy(&m->bias_type, buf, 4);
        break;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l,
                                          cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
    *l = calloc(1, sizeof **l);
    mock_layout *m = (mock_layout *)*l;
    *m = (mock_layout){(int32_t)type, 1, rows, cols, ld, 0};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
    free(l);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                 cublasLtMatrixLayoutAttribute_t a,
                                 const void *buf, size_t n) {
    mock_layout *m = (mock_layout *)l;
    switch (a) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
        want_size(n, 4, "BATCH_COUNT");
        memcpy(&m->batch, buf, 4);
        break;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
        want_size(n, 8, "STRIDED_BATCH_OFFSET");
        memcpy(&m->stride, buf, 8);
        break;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
    *p = calloc(1, sizeof **p);
    mock_pref *m = (mock_pref *)*p;
    for (int i = 0; i < 4; i++)
        m->align[i] = 256;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
    free(p);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t
cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                     cublasLtMatmulPreferenceAttributes_t a,
                                     const void *buf, size_t n) {
    mock_pref *m = (mock_pref *)p;
    switch (a) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
        want_size(n, 8, "MAX_WORKSPACE_BYTES");
        memcpy(&m->workspace, buf, 8);
        break;
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
        want_size(n, 4, "MIN_ALIGNMENT_*");
        memcpy(&m->align[a - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf,
               4);
        break;
    default:
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

/* The product the layouts describe, checked for consistency: D is m×n,
 * op(A) m×k, op(B) k×n; every layout of one type and batch. */
static cublasStatus_t lt_shape(const mock_desc *d, const mock_layout *A,
                               const mock_layout *B, const mock_layout *C,
                               const mock_layout *D, gemm_args *g) {
    if (C != D && memcmp(C, D, sizeof *C) != 0) lt_abort("C and D differ");
    if (A->type != B->type || B->type != D->type) lt_abort("mixed types");
    if (A->batch != D->batch || B->batch != D->batch)
        lt_abort("batch counts differ");
    if (d->epi != CUBLASLT_EPILOGUE_DEFAULT &&
        d->epi != CUBLASLT_EPILOGUE_BIAS &&
        d->epi != CUBLASLT_EPILOGUE_RELU_BIAS)
        return CUBLAS_STATUS_NOT_SUPPORTED;
    if ((d->epi & CUBLASLT_EPILOGUE_BIAS) &&
        (!d->bias || (d->bias_type != -1 && d->bias_type != D->type)))
        lt_abort("bias epilogue without a bias of D's type");
    int64_t m = (int64_t)D->rows, n = (int64_t)D->cols;
    bool ta = d->transa != CUBLAS_OP_N, tb = d->transb != CUBLAS_OP_N;
    int64_t am = (int64_t)(ta ? A->cols : A->rows);
    int64_t k = (int64_t)(ta ? A->rows : A->cols);
    int64_t bk = (int64_t)(tb ? B->cols : B->rows);
    int64_t bn = (int64_t)(tb ? B->rows : B->cols);
    if (am != m || bk != k || bn != n) lt_abort("inconsistent dimensions");
    if (A->ld < (int64_t)A->rows || B->ld < (int64_t)B->rows ||
        D->ld < (int64_t)D->rows)
        lt_abort("leading dimension below the row count");
    *g = (gemm_args){.ta = ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                     .tb = tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                     .m = m,
                     .n = n,
                     .k = k,
                     .lda = A->ld,
                     .ldb = B->ld,
                     .ldc = D->ld,
                     .sa = A->stride,
                     .sb = B->stride,
                     .sc = D->stride,
                     .count = D->batch,
                     .type = (cudaDataType)D->type,
                     .epi = d->epi,
                     .bias = d->bias};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t A,
    cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C,
    cublasLtMatrixLayout_t D, cublasLtMatmulPreference_t pref, int want,
    cublasLtMatmulHeuristicResult_t res[], int *count) {
    if (!h || want < 1) return CUBLAS_STATUS_INVALID_VALUE;
    gemm_args g;
    *count = 0;
    cublasStatus_t st =
        lt_shape((const mock_desc *)desc, (mock_layout *)A, (mock_layout *)B,
                 (mock_layout *)C, (mock_layout *)D, &g);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    memset(&res[0], 0, sizeof res[0]);
    mock_algo *a = (mock_algo *)&res[0].algo;
    a->magic = MOCK_ALGO_MAGIC;
    memcpy(a->align, ((const mock_pref *)pref)->align, sizeof a->align);
    res[0].state = CUBLAS_STATUS_SUCCESS;
    res[0].workspaceSize = 0;
    res[0].wavesCount = 1.0f;
    *count = 1;
    return CUBLAS_STATUS_SUCCESS;
}

static void check_align(const void *p, uint32_t align, const char *what) {
    if ((uintptr_t)p % align != 0) {
        fprintf(stderr,
                "cuda mock: cublasLtMatmul: %s %p is less aligned "
                "than the %u bytes its algorithm was chosen for\n",
                what, p, align);
        abort();
    }
}

/* p .. p + bytes lies in one device allocation. */
static void check_device(const void *p, size_t bytes, const char *what) {
    region *r = mock_find_region(p);
    if (!r || r->kind != 1 || (const char *)p + bytes > r->base + r->size) {
        fprintf(stderr,
                "cuda mock: cublasLtMatmul: %s is not %zu bytes of "
                "device memory\n",
                what, bytes);
        abort();
    }
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                              const void *alpha, const void *A,
                              cublasLtMatrixLayout_t Adesc, const void *B,
                              cublasLtMatrixLayout_t Bdesc, const void *beta,
                              const void *C, cublasLtMatrixLayout_t Cdesc,
                              void *D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t *algo, void *ws,
                              size_t wsbytes, cudaStream_t s) {
    (void)alpha;
    if (!h || !h->live) lt_abort("bad handle");
    const mock_algo *al = (const mock_algo *)algo;
    if (!algo || al->magic != MOCK_ALGO_MAGIC)
        lt_abort("an algorithm the heuristic did not return");
    float b1 = 0;
    memcpy(&b1, beta, sizeof b1); /* braid's compute types scale in f32 */
    if (b1 != 0 && b1 != 1) lt_abort("beta is neither 0 nor 1");
    if (b1 == 0 && C != D) lt_abort("beta 0 with C and D apart");
    gemm_args g;
    cublasStatus_t st = lt_shape((const mock_desc *)desc, (mock_layout *)Adesc,
                                 (mock_layout *)Bdesc, (mock_layout *)Cdesc,
                                 (mock_layout *)Ddesc, &g);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    check_align(A, al->align[0], "A");
    check_align(B, al->align[1], "B");
    check_align(C, al->align[2], "C");
    check_align(D, al->align[3], "D");
    size_t es = mock_type_size(g.type);
    if (g.bias) check_device(g.bias, (size_t)g.m * es, "the bias");
    if (wsbytes) check_device(ws, wsbytes, "the workspace");
    g.A = A;
    g.B = B;
    g.C = D;
    g.addend = b1 != 0 ? C : NULL; /* C == D: the queued gemm reads it
                                      before writing (one element at a
                                      time, same index) */
    if (g.addend)
        check_device(
            C, (size_t)((g.count - 1) * g.sc + (g.n - 1) * g.ldc + g.m) * es,
            "C");
    mock_enqueue_gemm(s, &g);
    return CUBLAS_STATUS_SUCCESS;
}
