/* bench/gpu_mlp.c — workload 6 of ANCHORS.md: the fp32 MLP, batch 8192,
 * 4 × (4096 × 4096 matmul + bias + GELU), TF32 off, against torch.compile
 * (torch_anchors.py, same run).
 *
 * braid: x, the weights and biases are constants (uploaded to the GPU
 * once per executor, as torch's tensors sit on the device); the output is
 * the sum of the last activation (a scalar out: 128 MiB read once on the
 * GPU, about 0.05 ms, counted against braid). Host clock around
 * braid_run, median of 10 after 2; first run reported apart. Bound: the
 * four 8192 × 4096 × 4096 sgemms alone, cuBLAS called directly (events,
 * median of 10 after 2). Target: braid ≤ 1.00 × torch.compile.
 *
 * Prints "RESULT mlp braid_ms=… bound_ms=<cuBLAS matmuls> first_ms=…". */
#define _POSIX_C_SOURCE 200809L
#include "bench/graphs.h"

#ifdef BRAID_HAVE_CUDA
typedef struct mm4 {
    cublasHandle_t h;
    float *x, *w, *y; /* x [B, W], w [W, W], y [B, W] */
} mm4;

static void mm4_fn(void *arg, cudaStream_t st) {
    mm4 *m = arg;
    const float one = 1, zero = 0;
    BN_BLAS(cublasSetStream(m->h, st));
    for (int l = 0; l < BG_MLP_LAYERS; l++) /* row-major y = x @ w */
        BN_BLAS(cublasSgemm(m->h, CUBLAS_OP_N, CUBLAS_OP_N, BG_MLP_WIDTH,
                            BG_MLP_BATCH, BG_MLP_WIDTH, &one, m->w,
                            BG_MLP_WIDTH, l % 2 ? m->y : m->x, BG_MLP_WIDTH,
                            &zero, l % 2 ? m->x : m->y, BG_MLP_WIDTH));
}

static double matmuls_ms(void) {
    size_t xb = (size_t)BG_MLP_BATCH * BG_MLP_WIDTH * sizeof(float);
    size_t wb = (size_t)BG_MLP_WIDTH * BG_MLP_WIDTH * sizeof(float);
    mm4 m = {NULL, bn_dev_alloc(xb), bn_dev_alloc(wb), bn_dev_alloc(xb)};
    BN_CUDA(cudaMemset(m.x, 0, xb));
    BN_CUDA(cudaMemset(m.w, 0, wb));
    BN_BLAS(cublasCreate(&m.h));
    BN_BLAS(cublasSetMathMode(m.h, CUBLAS_DEFAULT_MATH));
    double ms = bn_event_ms(mm4_fn, &m, 0, 2, 10);
    BN_BLAS(cublasDestroy(m.h));
    BN_CUDA(cudaFree(m.x));
    BN_CUDA(cudaFree(m.w));
    BN_CUDA(cudaFree(m.y));
    return ms;
}
#endif

int main(void) {
    bn_prog = "gpu_mlp";
    bn_require_gpu("mlp");
#ifdef BRAID_HAVE_CUDA
    size_t nx = (size_t)BG_MLP_BATCH * BG_MLP_WIDTH;
    size_t nw = (size_t)BG_MLP_WIDTH * BG_MLP_WIDTH;
    float *x = bn_malloc(nx * sizeof(float)), *w[BG_MLP_LAYERS],
          *b[BG_MLP_LAYERS];
    float s = 0.02f * sqrtf(3.0f); /* uniform with stddev 0.02 */
    bn_fill(x, nx, 31, -1.7f, 1.7f);
    for (int l = 0; l < BG_MLP_LAYERS; l++) {
        w[l] = bn_malloc(nw * sizeof(float));
        b[l] = bn_malloc(BG_MLP_WIDTH * sizeof(float));
        bn_fill(w[l], nw, 40 + (uint64_t)l, -s, s);
        bn_fill(b[l], BG_MLP_WIDTH, 50 + (uint64_t)l, -s, s);
    }
    double bound = matmuls_ms();
    braid_graph *g = bg_bench_mlp(true, x, (const float *const *)w,
                                  (const float *const *)b);
    bn_graph_ok(g, "mlp");
    braid_compile_options o = bn_options("cpu,cuda:0");
    braid_plan *p = bn_compile(g, &o);
    braid_exec *e = NULL;
    BN_OK(braid_exec_new(p, &e));
    float sum = 0;
    braid_output_binding ob = {"s", &sum, sizeof sum};
    double first = 0;
    double t = bn_time_runs(e, NULL, 0, &ob, 1, 2, 10, &first);
    printf("mlp fp32 8192 x 4 x 4096: braid %.3f ms per forward (first run "
           "%.1f ms), the 4 sgemms alone (cuBLAS) %.3f ms; sum %g\n",
           t * 1e3, first * 1e3, bound, sum);
    printf("RESULT mlp braid_ms=%.4f bound_ms=%.4f first_ms=%.2f check=%s\n",
           t * 1e3, bound, first * 1e3, isfinite(sum) ? "ok" : "FAIL");
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    free(x);
    for (int l = 0; l < BG_MLP_LAYERS; l++) {
        free(w[l]);
        free(b[l]);
    }
    return isfinite(sum) ? 0 : 1;
#endif
}
