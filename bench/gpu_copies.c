/* bench/gpu_copies.c — workloads 2 and 3 of ANCHORS.md.
 *
 * pipeline: 1 GiB of pinned f32 → GPU sqrt(sin² + cos²) + x → pinned,
 *   compiled from the plain unchunked graph with default options (the
 *   chunking pass decides), timed around braid_run (host clock: the run
 *   returns when the output is in place), median of 5 after 2 (the first
 *   run is reported apart). Bound: max(H2D, D2H) of 1 GiB between the same
 *   kind of pinned buffers and the GPU, cudaMemcpyAsync timed with CUDA
 *   events in this run, median of 5. Target braid ≤ 1.10 × bound.
 * pageable_h2d: 1 GiB in malloc memory moved to the GPU by a plan (the
 *   input, then its max on the GPU: the reduction reads 1 GiB on the GPU,
 *   about 0.3 ms, counted against braid) against plain cudaMemcpy from the
 *   same buffer (host clock, median of 5 after 1). Target ≥ 3× faster.
 *
 * Prints "RESULT pipeline …" and "RESULT pageable_h2d …". */
#define _POSIX_C_SOURCE 200809L
#include "bench/graphs.h"

#ifdef BRAID_HAVE_CUDA
/* H2D of `bytes` and D2H of `bytes` at the same time on two streams, as a
 * pipeline moves them: the median wall time of 5 (host clock around both,
 * after one warm-up), in ms. The pipeline's true floor: PCIe carries both
 * directions at once, but not each at its one-way speed. */
static double bidir_ms(void *dev_in, const void *host_in, void *host_out,
                       const void *dev_out, size_t bytes) {
    cudaStream_t a, b;
    BN_CUDA(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    BN_CUDA(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    double t[6];
    for (int r = 0; r < 6; r++) {
        double t0 = bn_now();
        BN_CUDA(cudaMemcpyAsync(dev_in, host_in, bytes,
                                cudaMemcpyHostToDevice, a));
        BN_CUDA(cudaMemcpyAsync(host_out, dev_out, bytes,
                                cudaMemcpyDeviceToHost, b));
        BN_CUDA(cudaStreamSynchronize(a));
        BN_CUDA(cudaStreamSynchronize(b));
        t[r] = (bn_now() - t0) * 1e3;
    }
    BN_CUDA(cudaStreamDestroy(a));
    BN_CUDA(cudaStreamDestroy(b));
    return bn_median(t + 1, 5);
}

/* The same pipeline with the chunk count forced, for the evidence behind
 * the cost model's choice: "SWEEP pipeline chunks=N braid_ms=…". */
static void chunk_sweep(const braid_graph *g, float *in, float *out,
                        size_t bytes) {
    static const int counts[] = {4, 8, 16, 32, 64};
    for (size_t c = 0; c < sizeof counts / sizeof *counts; c++) {
        braid_compile_options o = bn_options("cpu,cuda:0");
        o.chunks = counts[c];
        braid_plan *p = bn_compile(g, &o);
        braid_exec *e = NULL;
        BN_OK(braid_exec_new(p, &e));
        braid_input_binding ib = {"x", in, bytes};
        braid_output_binding ob = {"y", out, bytes};
        double first = 0;
        double t = bn_time_runs(e, &ib, 1, &ob, 1, 2, 5, &first);
        printf("SWEEP pipeline chunks=%d braid_ms=%.3f\n", counts[c], t * 1e3);
        braid_exec_free(e);
        braid_plan_free(p);
    }
}

static void pipeline(void) {
    size_t n = (size_t)BG_PIPE_N, bytes = n * sizeof(float);
    braid_graph *g = bg_bench_pipeline(BG_PIPE_N);
    bn_graph_ok(g, "building the pipeline");
    braid_compile_options o = bn_options("cpu,cuda:0");
    braid_plan *p = bn_compile(g, &o);
    braid_plan_summary s;
    BN_OK(braid_plan_summary_get(p, &s));
    float *in = bn_pinned_alloc(bytes), *out = bn_pinned_alloc(bytes);
    void *dev = bn_dev_alloc(bytes);
    bn_fill(in, n, 11, -3, 3);
    memset(out, 0, bytes);
    bn_copy_args h2d = {dev, in, bytes, cudaMemcpyHostToDevice};
    bn_copy_args d2h = {out, dev, bytes, cudaMemcpyDeviceToHost};
    double h2d_ms = bn_event_ms(bn_copy_fn, &h2d, 0, 1, 5);
    double d2h_ms = bn_event_ms(bn_copy_fn, &d2h, 0, 1, 5);
    void *dev2 = bn_dev_alloc(bytes);
    double both_ms = bidir_ms(dev, in, out, dev2, bytes);
    BN_CUDA(cudaFree(dev2));
    BN_CUDA(cudaFree(dev));
    braid_exec *e = NULL;
    BN_OK(braid_exec_new(p, &e));
    braid_input_binding ib = {"x", in, bytes};
    braid_output_binding ob = {"y", out, bytes};
    double first = 0;
    double t = bn_time_runs(e, &ib, 1, &ob, 1, 2, 5, &first);
    int bad = 0;
    for (size_t i = 0; i < n; i += 10007)
        if (!(fabsf(out[i] - (1.0f + in[i])) <= 1e-5f + 1e-5f * fabsf(in[i])))
            bad++;
    double bound = h2d_ms > d2h_ms ? h2d_ms : d2h_ms;
    printf("pipeline 1 GiB pinned: braid %.2f ms (first run %.2f ms), "
           "%u chunk nodes, %u copies; cudaMemcpyAsync H2D %.2f ms (%.1f "
           "GB/s), D2H %.2f ms (%.1f GB/s)%s\n",
           t * 1e3, first * 1e3, (unsigned)s.chunk_nodes, (unsigned)s.copies,
           h2d_ms, (double)bytes / h2d_ms * 1e-6, d2h_ms,
           (double)bytes / d2h_ms * 1e-6, bad ? " — MISMATCH" : "");
    printf("H2D and D2H of 1 GiB at once (two streams): %.2f ms\n",
           both_ms);
    printf("RESULT pipeline braid_ms=%.3f bound_ms=%.3f h2d_ms=%.3f "
           "d2h_ms=%.3f bidir_ms=%.3f first_ms=%.3f chunk_nodes=%u "
           "check=%s\n",
           t * 1e3, bound, h2d_ms, d2h_ms, both_ms, first * 1e3,
           (unsigned)s.chunk_nodes, bad ? "FAIL" : "ok");
    chunk_sweep(g, in, out, bytes);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    BN_CUDA(cudaFreeHost(in));
    BN_CUDA(cudaFreeHost(out));
    if (bad) exit(1);
}

static void pageable(void) {
    size_t n = (size_t)BG_PIPE_N, bytes = n * sizeof(float);
    float *x = bn_malloc(bytes);
    bn_fill(x, n, 12, -1, 1);
    x[n / 3] = 2.0f; /* the max */
    void *dev = bn_dev_alloc(bytes);
    double tb[5];
    BN_CUDA(cudaMemcpy(dev, x, bytes, cudaMemcpyHostToDevice));
    for (int r = 0; r < 5; r++) {
        double t0 = bn_now();
        BN_CUDA(cudaMemcpy(dev, x, bytes, cudaMemcpyHostToDevice));
        tb[r] = bn_now() - t0;
    }
    double base = bn_median(tb, 5);
    BN_CUDA(cudaFree(dev));
    braid_graph *g = bg_bench_h2d(BG_PIPE_N);
    bn_graph_ok(g, "building the h2d graph");
    braid_compile_options o = bn_options("cpu,cuda:0");
    braid_plan *p = bn_compile(g, &o);
    braid_exec *e = NULL;
    BN_OK(braid_exec_new(p, &e));
    float m = 0;
    braid_input_binding ib = {"x", x, bytes};
    braid_output_binding ob = {"m", &m, sizeof m};
    double first = 0;
    double t = bn_time_runs(e, &ib, 1, &ob, 1, 2, 5, &first);
    printf("pageable 1 GiB H2D: braid %.2f ms (%.1f GB/s, first run %.2f "
           "ms), cudaMemcpy %.2f ms (%.1f GB/s): %.2fx%s\n",
           t * 1e3, (double)bytes / t * 1e-9, first * 1e3, base * 1e3,
           (double)bytes / base * 1e-9, base / t,
           m == 2.0f ? "" : " — WRONG MAX");
    printf("RESULT pageable_h2d braid_ms=%.3f bound_ms=%.3f speedup=%.3f "
           "first_ms=%.3f check=%s\n",
           t * 1e3, base * 1e3, base / t, first * 1e3,
           m == 2.0f ? "ok" : "FAIL");
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    free(x);
    if (m != 2.0f) exit(1);
}
#endif

int main(void) {
    bn_prog = "gpu_copies";
#ifndef BRAID_HAVE_CUDA
    printf("SKIP pipeline: built without CUDA\n");
    printf("SKIP pageable_h2d: built without CUDA\n");
    return 0;
#else
    if (braid_cuda_device_count() == 0) {
        printf("SKIP pipeline: %s\n", braid_cuda_status());
        printf("SKIP pageable_h2d: %s\n", braid_cuda_status());
        return 0;
    }
    pipeline();
    pageable();
    return 0;
#endif
}
