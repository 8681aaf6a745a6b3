/* bench/gpu_softmax.c — workload 10 of ANCHORS.md: softmax over the rows
 * of an 8192 × 8192 f32 matrix on the GPU, in GB/s of compulsory traffic
 * (one read, one write: 512 MiB), against PyTorch eager (torch_anchors.py,
 * same run) and a device-to-device copy measured here.
 *
 * What is measured: as in gpu_chain.c, the GPU part of braid's plan alone
 * (input already on the device): braid's generated kernels for the
 * softmax plan (chunking off), launched in schedule order with braid's
 * geometry, CUDA events around each pass, median of 20 after 3. Checked:
 * every 97th row sums to 1 and matches softmax in double.
 *
 * Prints "RESULT softmax braid_ms=… bound_ms=… braid_gbps=… d2d_gbps=…". */
#define _POSIX_C_SOURCE 200809L
#include "bench/graphs.h"

#define R 8192
#define C 8192

int main(void) {
    bn_prog = "gpu_softmax";
    braid_graph *g = bg_bench_softmax(R, C);
    bn_graph_ok(g, "building the softmax");
#ifndef BRAID_HAVE_CUDA
    printf("SKIP softmax: built without CUDA\n");
    braid_graph_free(g);
    return 0;
#else
    braid_compile_options o = bn_options("cpu,cuda:0");
    o.disable_passes = BRAID_PASS_CHUNK;
    braid_plan *p = bn_compile(g, &o);
    bn_kernels_check(p, "softmax");
    bn_require_gpu("softmax");
    size_t n = (size_t)R * C, bytes = n * sizeof(float);
    double d2d_ms = bn_d2d_ms((size_t)1 << 30);
    double d2d_bps = 2.0 * (double)(1u << 30) / (d2d_ms * 1e-3);
    float *x = bn_malloc(bytes), *out = bn_malloc(bytes);
    bn_fill(x, n, 7, -4, 4);
    const char *names[1] = {"x"};
    const void *data[1] = {x};
    bn_kernels k;
    bn_kernels_init(&k, p, 1, names, data);
    double ms = bn_event_ms(bn_kernels_pass, &k, 0, 3, 20);
    bn_kernels_output(&k, "out", out, bytes);
    int bad = 0;
    double worst = 0;
    for (int r = 0; r < R; r += 97) {
        const float *xr = x + (size_t)r * C, *yr = out + (size_t)r * C;
        double mx = -INFINITY, sum = 0, got = 0;
        for (int c = 0; c < C; c++)
            mx = xr[c] > mx ? xr[c] : mx;
        for (int c = 0; c < C; c++)
            sum += exp(xr[c] - mx);
        for (int c = 0; c < C; c++) {
            double ref = exp(xr[c] - mx) / sum, err = fabs(yr[c] - ref);
            worst = err > worst ? err : worst;
            if (!(err <= 1e-6 + 1e-4 * ref)) bad++;
            got += yr[c];
        }
        if (!(fabs(got - 1.0) < 1e-3)) bad++;
    }
    double traffic = 2.0 * (double)bytes;
    double bound_ms = traffic / d2d_bps * 1e3;
    printf("softmax rows %dx%d: %u kernel(s), %.4f ms = %.0f GB/s; max abs "
           "error %.3g%s\n",
           R, C, (unsigned)k.nkernels, ms, traffic / (ms * 1e-3) * 1e-9, worst,
           bad ? " — MISMATCH" : "");
    printf("RESULT softmax braid_ms=%.4f bound_ms=%.4f braid_gbps=%.1f "
           "d2d_gbps=%.1f kernels=%u check=%s\n",
           ms, bound_ms, traffic / (ms * 1e-3) * 1e-9, d2d_bps * 1e-9,
           (unsigned)k.nkernels, bad ? "FAIL" : "ok");
    bn_kernels_free(&k);
    braid_plan_free(p);
    braid_graph_free(g);
    free(x);
    free(out);
    return bad ? 1 : 0;
#endif
}
