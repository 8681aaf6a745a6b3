/* bench/gpu_matmul.c — workload 5 of ANCHORS.md: braid's f32 matmul node
 * against cuBLAS sgemm called directly, at 4096³ and 10000³ (TF32 off on
 * both sides).
 *
 * braid: plans of k chained matmuls r = r @ b (constants a, b uploaded
 * once per executor; scaled so values stay bounded) ending in a sum (a
 * scalar out). The time of one matmul node is the difference of the
 * k = 11 and k = 1 plans divided by 10: what the sum, the launch and the
 * copies cost cancels out. Host clock around braid_run, medians of 3
 * after 1. cuBLAS: cublasSgemm on device buffers, CUDA events, median of
 * 10 after 2. Target: cuBLAS time / braid time ≥ 0.97.
 *
 * Prints "RESULT matmul_<n> braid_ms=… bound_ms=<cuBLAS> tflops=…". */
#define _POSIX_C_SOURCE 200809L
#include "bench/graphs.h"

#ifdef BRAID_HAVE_CUDA
typedef struct sgemm_args {
    cublasHandle_t h;
    int n;
    const float *a, *b;
    float *c;
} sgemm_args;

static void sgemm_fn(void *arg, cudaStream_t st) {
    sgemm_args *s = arg;
    const float one = 1, zero = 0;
    BN_BLAS(cublasSetStream(s->h, st));
    BN_BLAS(cublasSgemm(s->h, CUBLAS_OP_N, CUBLAS_OP_N, s->n, s->n, s->n, &one,
                        s->b, s->n, s->a, s->n, &zero, s->c, s->n));
}

static double cublas_ms(int n, const float *a, const float *b) {
    size_t bytes = (size_t)n * n * sizeof(float);
    sgemm_args s = {NULL, n, bn_dev_alloc(bytes), bn_dev_alloc(bytes),
                    bn_dev_alloc(bytes)};
    BN_CUDA(cudaMemcpy((void *)s.a, a, bytes, cudaMemcpyHostToDevice));
    BN_CUDA(cudaMemcpy((void *)s.b, b, bytes, cudaMemcpyHostToDevice));
    BN_BLAS(cublasCreate(&s.h));
    BN_BLAS(cublasSetMathMode(s.h, CUBLAS_DEFAULT_MATH)); /* no TF32 */
    double ms = bn_event_ms(sgemm_fn, &s, 0, 2, 10);
    BN_BLAS(cublasDestroy(s.h));
    BN_CUDA(cudaFree((void *)s.a));
    BN_CUDA(cudaFree((void *)s.b));
    BN_CUDA(cudaFree(s.c));
    return ms;
}

static double braid_ms(int n, int k, const float *a, const float *b) {
    braid_graph *g = braid_graph_new(NULL);
    bn_graph_ok(g, "matmul chain");
    braid_output(g, "s", bg_bench_mm_chain(g, n, k, a, b, "cuda:0"));
    bn_graph_ok(g, "matmul chain");
    braid_compile_options o = bn_options("cpu,cuda:0");
    braid_plan *p = bn_compile(g, &o);
    braid_exec *e = NULL;
    BN_OK(braid_exec_new(p, &e));
    float s = 0;
    braid_output_binding ob = {"s", &s, sizeof s};
    double t = bn_time_runs(e, NULL, 0, &ob, 1, 1, 3, NULL);
    if (!isfinite(s)) bn_die("matmul chain %d^3 x %d: sum %g", n, k, s);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    return t * 1e3;
}

static void one_size(int n) {
    size_t nn = (size_t)n * n;
    float *a = bn_malloc(nn * sizeof(float)), *b = bn_malloc(nn * sizeof(float));
    float s = (float)sqrt(3.0 / n);
    bn_fill(a, nn, 21, -s, s);
    bn_fill(b, nn, 22, -s, s);
    double cb = cublas_ms(n, a, b);
    double t1 = braid_ms(n, 1, a, b), t11 = braid_ms(n, 11, a, b);
    double per = (t11 - t1) / 10.0;
    double fl = 2.0 * (double)n * n * n;
    printf("matmul f32 %d^3: braid %.3f ms per node (%.1f TFLOP/s; plans of "
           "1 and 11 matmuls %.2f / %.2f ms), cuBLAS %.3f ms (%.1f TFLOP/s): "
           "%.3f x cuBLAS speed\n",
           n, per, fl / per * 1e-9, t1, t11, cb, fl / cb * 1e-9, cb / per);
    printf("RESULT matmul_%d braid_ms=%.4f bound_ms=%.4f tflops=%.2f "
           "cublas_tflops=%.2f plan1_ms=%.3f plan11_ms=%.3f\n",
           n, per, cb, fl / per * 1e-9, fl / cb * 1e-9, t1, t11);
    free(a);
    free(b);
}
#endif

int main(void) {
    bn_prog = "gpu_matmul";
#ifndef BRAID_HAVE_CUDA
    printf("SKIP matmul_4096: built without CUDA\nSKIP matmul_10000: built "
           "without CUDA\n");
    return 0;
#else
    if (braid_cuda_device_count() == 0) {
        printf("SKIP matmul_4096: %s\n", braid_cuda_status());
        printf("SKIP matmul_10000: %s\n", braid_cuda_status());
        return 0;
    }
    one_size(4096);
    one_size(10000);
    return 0;
#endif
}
