/* bench/gpu_conv.c — every convolution shape of ResNet-18 at batch 8, f32
 * without TF32, on the GPU: braid's conv node as braid runs it by default
 * (cuDNN's algorithm, or braid's own kernel where the executor's timing
 * found it faster: runtime/cuda/cuda_conv.c) and always through braid's
 * own kernel (BRAID_CONV=braid), against PyTorch's cuDNN
 * convolution measured in the same run by bench/conv_torch.py (the table:
 * bench/conv_table.py).
 *
 * What is measured: the conv node alone, as braid's profiler times it
 * (CUDA events around the node on its stream; the plan's copies of x and
 * w are separate nodes and not counted), median of 20 runs after 3, one
 * profile reset per run. PyTorch is timed the same way: events around one
 * F.conv2d call. Checked: 64 output elements against the convolution
 * computed here in double.
 *
 * Second figure, as plans run: a plan's run is a CUDA-graph replay, where
 * cuDNN's host-side work per call (tens of microseconds in cuDNN 9's
 * legacy API, counted by events around one call) is not paid. The
 * executor times its candidates exactly so when it chooses (5 back-to-back
 * calls captured in a CUDA graph, events around each replay, median of 7:
 * runtime/cuda/cuda_conv.c, refine) and logs the fastest's time; that
 * figure is read from the executor log as graph_ms, and bench/conv_torch.py
 * times PyTorch the same way (graph_ms there).
 *
 * Prints per shape "CONV name=… count=… cudnn_ms=… kernel_ms=… graph_ms=…"
 * and
 * "RESULT conv shapes=… cudnn_set_ms=… kernel_set_ms=… check=ok|FAIL"
 * (a set is the network's 20 convolutions: each shape times its count). */
#define _POSIX_C_SOURCE 200809L
#include "bench/bench.h"
#include "bench/conv_shapes.h"
#include "runtime/exec_impl.h"

#include <string.h>

#define BATCH 8
#define WARM 3
#define REPS 20

/* y = conv(x, w) of shape s as a graph hinted to cuda:0. */
static braid_graph *conv_graph(const bn_conv_shape *s) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t xd[4] = {BATCH, s->C, s->HW, s->HW};
    int64_t wd[4] = {s->OC, s->C, s->k, s->k};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 4, xd);
    braid_tensor w = braid_input(g, "w", BRAID_F32, 4, wd);
    braid_conv_params p = {.strides = {s->stride, s->stride},
                           .pads = {s->pad, s->pad, s->pad, s->pad}};
    braid_tensor y = braid_conv(g, x, w, BRAID_NONE, &p);
    braid_output(g, "y", y);
    bn_graph_ok(g, s->name);
    bn_hint_from(g, 0, "cuda:0");
    return g;
}

/* The conv node's median milliseconds per run, profiled. */
static double conv_ms(braid_exec *e, const braid_input_binding *in,
                      const braid_output_binding *out) {
    double t[REPS];
    BN_OK(braid_exec_set_profiling(e, true));
    for (int r = 0; r < WARM + REPS; r++) {
        BN_OK(braid_exec_profile_reset(e));
        BN_OK(braid_run(e, in, 2, out, 1));
        braid_profile *pr = NULL;
        BN_OK(braid_exec_profile(e, &pr));
        double ms = -1;
        for (uint32_t i = 0; i < pr->nnodes; i++)
            if (strcmp(pr->nodes[i].op, "conv") == 0)
                ms = pr->nodes[i].total_ms;
        braid_profile_free(pr);
        if (ms < 0) bn_die("no conv node in the profile");
        if (r >= WARM) t[r - WARM] = ms;
    }
    return bn_median(t, REPS);
}

/* The executor's graph-replay time of the candidate it chose for the conv
 * node (its log: "conv node N: timed … fastest … (median T ms)"); NAN
 * when it did not time candidates (no cuDNN, or a cached choice). */
static double chosen_graph_ms(braid_exec *e) {
    double ms = NAN;
#ifdef BRAID_HAVE_CUDA
    const br_cuda *c = br_exec_cuda(e);
    const char *l = c ? strstr(br_cuda_log(c), ": timed ") : NULL;
    const char *m = l ? strstr(l, "(median ") : NULL;
    if (m && m < l + strcspn(l, "\n")) ms = strtod(m + 8, NULL);
#else
    (void)e;
#endif
    return ms;
}

/* Worst relative error of 64 outputs against the sum in double. */
static double check(const bn_conv_shape *s, const float *x, const float *w,
                    const float *y, int OH) {
    double worst = 0;
    uint64_t st = 99;
    for (int t = 0; t < 64; t++) {
        st = st * 6364136223846793005u + 1442695040888963407u;
        int n = (int)((st >> 33) % BATCH),
            oc = (int)((st >> 20) % (unsigned)s->OC);
        int oh = (int)((st >> 40) % (unsigned)OH),
            ow = (int)((st >> 50) % (unsigned)OH);
        double sum = 0, mag = 0;
        for (int c = 0; c < s->C; c++)
            for (int i = 0; i < s->k; i++)
                for (int j = 0; j < s->k; j++) {
                    int h = oh * s->stride - s->pad + i;
                    int v = ow * s->stride - s->pad + j;
                    if (h < 0 || h >= s->HW || v < 0 || v >= s->HW) continue;
                    double a =
                        x[(((size_t)n * s->C + c) * s->HW + h) * s->HW + v];
                    double b =
                        w[(((size_t)oc * s->C + c) * s->k + i) * s->k + j];
                    sum += a * b;
                    mag += fabs(a * b);
                }
        double got = y[(((size_t)n * s->OC + oc) * OH + oh) * OH + ow];
        double err = fabs(got - sum) / (mag + 1e-30);
        worst = err > worst ? err : worst;
    }
    return worst;
}

int main(void) {
    bn_prog = "gpu_conv";
    bn_require_gpu("conv");
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines reach the log as they come */
    printf("cudnn: %s\n", braid_cudnn_status());
    double set_dnn = 0, set_k = 0, worst = 0;
    for (size_t i = 0; i < BN_RESNET18_NCONV; i++) {
        const bn_conv_shape *s = &bn_resnet18_convs[i];
        int OH = (s->HW + 2 * s->pad - s->k) / s->stride + 1;
        size_t nx = (size_t)BATCH * s->C * s->HW * s->HW;
        size_t nw = (size_t)s->OC * s->C * s->k * s->k;
        size_t ny = (size_t)BATCH * s->OC * OH * OH;
        float *x = bn_malloc(nx * 4), *w = bn_malloc(nw * 4);
        float *y = bn_malloc(ny * 4);
        bn_fill(x, nx, 1 + i, -1, 1);
        bn_fill(w, nw, 100 + i, -0.1f, 0.1f);
        braid_input_binding in[2] = {{"x", x, nx * 4}, {"w", w, nw * 4}};
        braid_output_binding out = {"y", y, ny * 4};
        double ms[2], graph_ms = NAN;
        for (int path = 0; path < 2; path++) { /* cuDNN, braid's kernel */
            if (path)
                setenv("BRAID_CONV", "braid", 1);
            else
                unsetenv("BRAID_CONV");
            braid_graph *g = conv_graph(s);
            braid_compile_options o = bn_options("cpu,cuda:0");
            braid_plan *p = bn_compile(g, &o);
            braid_exec *e = NULL;
            BN_OK(braid_exec_new(p, &e));
            ms[path] = conv_ms(e, in, &out);
            if (path == 0) graph_ms = chosen_graph_ms(e);
            double err = check(s, x, w, y, OH);
            worst = err > worst ? err : worst;
            braid_exec_free(e);
            braid_plan_free(p);
            braid_graph_free(g);
        }
        unsetenv("BRAID_CONV");
        set_dnn += s->count * ms[0];
        set_k += s->count * ms[1];
        printf("CONV name=%s count=%d cudnn_ms=%.5f kernel_ms=%.5f "
               "graph_ms=%.5f\n",
               s->name, s->count, ms[0], ms[1], graph_ms);
        free(x), free(w), free(y);
    }
    bool ok = worst < 1e-4;
    printf("RESULT conv shapes=%zu cudnn_set_ms=%.4f kernel_set_ms=%.4f "
           "worst_rel_err=%.3g check=%s\n",
           BN_RESNET18_NCONV, set_dnn, set_k, worst, ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}
