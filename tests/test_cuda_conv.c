/* tests/test_cuda_conv.c — the conv ops on a GPU against the reference
 * evaluator, through both paths: cuDNN (runtime/cuda/cuda_conv.c, when it
 * loads) and braid's own kernel (codegen/conv.c, forced with
 * BRAID_CONV=braid). Random shapes (1-D, 2-D, 3-D, strides, dilations,
 * asymmetric pads — braid's kernel on the cuDNN path too —, groups and
 * depthwise, bias, output_padding), f32 and f64, a few f16; ResNet-18
 * shapes at batch 2; each plan run twice (the second run may replay a CUDA
 * graph). The executor log must say which path ran each node. Skipped
 * without a CUDA device.
 *
 * Tolerances: ts_tolerance per dtype (f32 1e-4, f16 1e-2, f64 1e-9, atol
 * and rtol alike); f32 runs without TF32 (the default). Weights are drawn
 * in ±1/sqrt(K) for sums of K > 64 products (ResNet's 3×3×256 is 2304):
 * with x in [-1, 1] and w in [-1, 1] such a sum's rounding in f32 alone
 * reaches 1e-4. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/exec_impl.h"

#include <math.h>
#include "tests/support/conv_cases.h"
#include "tests/test_cuda_common.h"

/* Runs g hinted to cuda:0 with BRAID_CONV=braid (braid) or unset, twice,
 * against the reference; checks the log names the path. */
static void check_path(braid_graph *g, bool braid_kernel, uint64_t seed,
                       const char *what) {
    if (braid_kernel)
        setenv("BRAID_CONV", "braid", 1);
    else
        unsetenv("BRAID_CONV");
    tc_hint_all(g, "cuda:0");
    braid_compile_options o = tc_options();
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s: %s", what,
                 braid_last_error());
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s: %s", what,
                 braid_last_error());
    const char *log = br_cuda_log(br_exec_cuda(e));
    if (braid_kernel)
        cr_assert(strstr(log, "BRAID_CONV=braid"), "%s: log:\n%s", what, log);
    else if (braid_cudnn_version() > 0)
        cr_assert(strstr(log, "conv node"), "%s: log:\n%s", what, log);
    ts_io *io = ts_io_new(g, seed);
    cr_assert(io);
    /* w in ±1/sqrt(K) (K = C/groups · kernel taps, as networks initialise
     * it): outputs stay O(1), so f32 sums of thousands of products in
     * another order than the reference's stay within the tolerance */
    const bg_node *wn = bg_node_at(g, g->nodes[g->nnodes - 1].inputs[1]);
    double K = (double)bg_numel(wn) / (double)wn->dims[0];
    double lim = K > 64 ? 1 / sqrt(K) : 1;
    for (uint32_t i = 0; i < io->ninputs; i++)
        if (strcmp(io->in[i].name, "w") == 0)
            ts_fill_input(io, i, wn->dtype, TS_RANGE(-lim, lim), seed + 9);
    for (int r = 0; r < 2; r++)
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "%s (run %d): %s", what, r, braid_last_error());
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s: %s", what, braid_last_error());
    char msg[512];
    bool ok = ts_io_compare(io, msg, sizeof msg);
    if (!ok) tc_log_graph(g);
    cr_assert(ok, "%s (%s): %s\nlog:\n%s", what,
              braid_kernel ? "braid's kernel" : "cuDNN", msg, log);
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    unsetenv("BRAID_CONV");
}

static void random_cases(bool braid_kernel, uint64_t st, int n) {
    for (int t = 0; t < n; t++) {
        ts_conv_case c = ts_conv_random_case(&st, t % 2 == 1);
        braid_dtype dt = t % 5 == 4   ? BRAID_F64
                         : t % 7 == 6 ? BRAID_F16
                                      : BRAID_F32;
        braid_graph *g = ts_conv_case_graph(&c, dt);
        char buf[400], what[460];
        snprintf(what, sizeof what, "%s %s", braid_dtype_name(dt),
                 ts_conv_case_str(&c, buf, sizeof buf));
        check_path(g, braid_kernel, 200 + (uint64_t)t, what);
        braid_graph_free(g);
    }
}

Test(cuda_conv, random_shapes_cudnn, .timeout = 600) {
    TC_REQUIRE_GPU();
    cr_log_info("cudnn: %s", braid_cudnn_status());
    random_cases(false, 3, tc_under_sanitizer() ? 8 : 40);
}

Test(cuda_conv, random_shapes_braid_kernel, .timeout = 600) {
    TC_REQUIRE_GPU();
    random_cases(true, 4, tc_under_sanitizer() ? 8 : 40);
}

/* Symmetric pads: cuDNN takes the node (when it loads); the cases of
 * ResNet-18 at batch 2, with bias, and a stride-2 conv_transpose with
 * output_padding. */
Test(cuda_conv, resnet_shapes_both_paths, .timeout = 600) {
    TC_REQUIRE_GPU();
    static const int64_t shapes[][5] = {
        /* C, OC, HW, k, stride */
        {3, 64, 224, 7, 2},  {64, 64, 56, 3, 1},   {64, 128, 56, 3, 2},
        {64, 128, 56, 1, 2}, {128, 128, 28, 3, 1}, {256, 512, 14, 3, 2},
        {512, 512, 7, 3, 1},
    };
    int n = tc_under_sanitizer() ? 2 : 7;
    for (int i = 0; i < n; i++) {
        const int64_t *s = shapes[i];
        ts_conv_case c = {.s = 2,
                          .N = 2,
                          .G = 1,
                          .Cg = s[0],
                          .OCg = s[1],
                          .in = {s[2], s[2], 1},
                          .k = {s[3], s[3], 1},
                          .bias = i % 2 == 0};
        c.p.strides[0] = c.p.strides[1] = s[4];
        for (int a = 0; a < 4; a++)
            c.p.pads[a] = s[3] / 2;
        for (int path = 0; path < 2; path++) {
            braid_graph *g = ts_conv_case_graph(&c, BRAID_F32);
            char buf[400];
            check_path(g, path == 1, 50 + (uint64_t)i,
                       ts_conv_case_str(&c, buf, sizeof buf));
            braid_graph_free(g);
        }
    }
    ts_conv_case t = {.transpose = true,
                      .s = 2,
                      .N = 2,
                      .G = 2,
                      .Cg = 8,
                      .OCg = 4,
                      .in = {9, 9, 1},
                      .k = {3, 3, 1},
                      .bias = true,
                      .p = {.strides = {2, 2},
                            .pads = {1, 1, 1, 1},
                            .output_padding = {1, 1},
                            .groups = 2}};
    for (int path = 0; path < 2; path++) {
        braid_graph *g = ts_conv_case_graph(&t, BRAID_F32);
        check_path(g, path == 1, 77, "conv_transpose stride 2 groups 2");
        braid_graph_free(g);
    }
}
