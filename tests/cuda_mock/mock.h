/* tests/cuda_mock/mock.h — what tests/cuda_mock/cudart_mock.c (the CUDA
 * runtime and cuBLAS) shares with tests/cuda_mock/cublaslt_mock.c
 * (cuBLASLt). Development tool only, never part of braid. */
#ifndef BRAID_TESTS_CUDA_MOCK_MOCK_H
#define BRAID_TESTS_CUDA_MOCK_MOCK_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

/* An allocation the mock made. */
typedef struct region {
    char *base;  /* first byte */
    size_t size; /* mapped bytes (page multiple) */
    int kind;    /* 1 device, 2 pinned */
} region;

/* One column-major gemm (or a strided batch of them), with the cuBLASLt
 * epilogue when epi is not 0. */
typedef struct gemm_args {
    cublasOperation_t ta, tb;
    int64_t m, n, k, lda, ldb, ldc, sa, sb, sc, count;
    const void *A, *B;
    void *C;
    cudaDataType type;
    uint32_t epi;     /* cuBLASLt epilogue (0: none) */
    const void *bias; /* BIAS: one value per row of C */
    const void *addend; /* cuBLASLt with beta 1: C read before D (laid out
                           as D), or NULL (beta 0) */
    const void *const *arr_a, *const *arr_b; /* cublasGemmBatchedEx: each
                                                matrix's address, read from
                                                device memory when it runs
                                                (A, B, C unused); else NULL */
    void *const *arr_c;
} gemm_args;

/* The allocation holding p, or NULL (pageable host memory). */
region *mock_find_region(const void *p);
/* Bytes per element of t (f32, f64, f16, bf16). */
size_t mock_type_size(cudaDataType t);
/* Enqueues the gemm on stream s (or records it into a capture). */
void mock_enqueue_gemm(cudaStream_t s, const gemm_args *g);

#endif
