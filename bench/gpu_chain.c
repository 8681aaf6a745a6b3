/* bench/gpu_chain.c — workload 1 of ANCHORS.md: the fused elementwise
 * chain on the GPU,
 *
 *   out = tanh(x * y + z) * sigmoid(x) + y * 0.5 - exp(-z)
 *
 * on 2^26 f32 (3 inputs, 1 output: 1 GiB of compulsory traffic), the same
 * expression as torch_anchors.py's chain.
 *
 * What is measured: braid's inputs are host memory, so a braid_run always
 * includes 768 MiB of host-to-device copies; torch.compile's figure starts
 * from tensors already on the GPU. So this program times the GPU part of
 * braid's plan alone: the graph compiled for cuda:0 (chunking off: one
 * kernel over the whole tensor, as an executor runs it for device-resident
 * data), braid's generated module for it compiled by bc_compile, each
 * kernel launched with braid's own launch geometry on device buffers
 * holding random inputs (bench.h, bn_kernels_*). Median of 20 passes after
 * 3, CUDA events around each pass. The same run measures a 1 GiB
 * device-to-device cudaMemcpy: the bound is 1 GiB of traffic at that
 * copy's read + write bandwidth. The result is checked against the chain
 * in double on every 4099th element.
 *
 * Prints "RESULT ew_chain braid_ms=… bound_ms=… d2d_gbps=… pct_of_d2d=…". */
#define _POSIX_C_SOURCE 200809L
#include "bench/graphs.h"

#define N ((int64_t)1 << 26)

#ifdef BRAID_HAVE_CUDA
/* Median time of the plan's fused node over 10 profiled braid_runs (after
 * one warm-up run), in ms; -1 when the profile has no fused node. */
static double exec_kernel_ms(const braid_plan *p, const float *x,
                             const float *y, const float *z, float *out,
                             size_t bytes) {
    braid_exec *e = NULL;
    BN_OK(braid_exec_new(p, &e));
    braid_input_binding in[3] = {{"x", x, bytes}, {"y", y, bytes},
                                 {"z", z, bytes}};
    braid_output_binding o = {"out", out, bytes};
    BN_OK(braid_run(e, in, 3, &o, 1));
    BN_OK(braid_exec_set_profiling(e, true));
    double t[10];
    int n = 0;
    for (int r = 0; r < 10; r++) {
        BN_OK(braid_exec_profile_reset(e));
        BN_OK(braid_run(e, in, 3, &o, 1));
        braid_profile *pr = NULL;
        BN_OK(braid_exec_profile(e, &pr));
        for (uint32_t i = 0; i < pr->nnodes; i++)
            if (strcmp(pr->nodes[i].op, "fused") == 0) {
                t[n++] = pr->nodes[i].total_ms;
                break;
            }
        braid_profile_free(pr);
    }
    braid_exec_free(e);
    return n ? bn_median(t, n) : -1;
}
#endif

int main(void) {
    bn_prog = "gpu_chain";
    braid_graph *g = bg_bench_chain(N, true);
    bn_graph_ok(g, "building the chain");
#ifndef BRAID_HAVE_CUDA
    printf("SKIP ew_chain: built without CUDA\n");
    braid_graph_free(g);
    return 0;
#else
    braid_compile_options o = bn_options("cpu,cuda:0");
    o.disable_passes = BRAID_PASS_CHUNK;
    braid_plan *p = bn_compile(g, &o);
    bn_kernels_check(p, "ew_chain");
    bn_require_gpu("ew_chain");
    char dev[256];
    bn_device_sm(dev, sizeof dev);
    printf("device: %s\n", dev);
    size_t bytes = (size_t)N * sizeof(float);
    double d2d_ms = bn_d2d_ms((size_t)1 << 30);
    double d2d_bps = 2.0 * (double)(1u << 30) / (d2d_ms * 1e-3);
    float *x = bn_malloc(bytes), *y = bn_malloc(bytes), *z = bn_malloc(bytes);
    float *out = bn_malloc(bytes);
    bn_fill(x, (size_t)N, 1, -1, 1);
    bn_fill(y, (size_t)N, 2, -1, 1);
    bn_fill(z, (size_t)N, 3, -1, 1);
    const char *names[3] = {"x", "y", "z"};
    const void *data[3] = {x, y, z};
    bn_kernels k;
    bn_kernels_init(&k, p, 3, names, data);
    double ms = bn_event_ms(bn_kernels_pass, &k, 0, 3, 20);
    bn_kernels_output(&k, "out", out, bytes);
    int64_t bad = 0;
    double worst = 0;
    for (int64_t i = 0; i < N; i += 4099) {
        double a = x[i], b = y[i], c = z[i];
        double ref = tanh(a * b + c) / (1.0 + exp(-a)) + b * 0.5 - exp(-c);
        double err = fabs(out[i] - ref);
        worst = err > worst ? err : worst;
        if (!(err <= 1e-4 + 1e-4 * fabs(ref))) bad++;
    }
    printf("checked every 4099th element against double: max abs error "
           "%.3g%s\n",
           worst, bad ? " — MISMATCH" : "");
    double traffic = 16.0 * (double)N; /* bytes: 3 reads + 1 write */
    double bound_ms = traffic / d2d_bps * 1e3;
    printf("fused chain, %u kernel(s): %.4f ms = %.0f GB/s of compulsory "
           "traffic; D2D copy 1 GiB %.4f ms = %.0f GB/s (read + write)\n",
           (unsigned)k.nkernels, ms, traffic / (ms * 1e-3) * 1e-9, d2d_ms,
           d2d_bps * 1e-9);
    /* The same kernel as braid's executor launches it inside a real run
     * (inputs copied from the host first), timed by braid's profiler:
     * CUDA events around the fused node on its stream. */
    double exec_ms = exec_kernel_ms(p, x, y, z, out, bytes);
    printf("executor's fused node (profiler, CUDA events): %.4f ms\n",
           exec_ms);
    printf("RESULT ew_chain braid_ms=%.4f bound_ms=%.4f d2d_gbps=%.1f "
           "braid_gbps=%.1f pct_of_d2d=%.1f kernels=%u exec_kernel_ms=%.4f "
           "check=%s\n",
           ms, bound_ms, d2d_bps * 1e-9, traffic / (ms * 1e-3) * 1e-9,
           100.0 * bound_ms / ms, (unsigned)k.nkernels, exec_ms,
           bad ? "FAIL" : "ok");
    bn_kernels_free(&k);
    braid_plan_free(p);
    braid_graph_free(g);
    free(x);
    free(y);
    free(z);
    free(out);
    return bad ? 1 : 0;
#endif
}
