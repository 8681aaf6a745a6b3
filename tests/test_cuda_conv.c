/* tests/test_cuda_conv.c — the conv ops on a GPU against the reference
 * evaluator, through both paths: cuDNN (runtime/cuda/cuda_conv.c, when it
 * loads) and braid's own kernel (codegen/conv.c, forced with
 * BRAID_CONV=braid). Random shapes (1-D, 2-D, 3-D, strides, dilations,
 * asymmetric pads — braid's kernel on the cuDNN path too —, groups and
 * depthwise, bias, output_padding), f32 and f64, a few f16; ResNet-18
 * shapes at batch 2; each plan run twice (the second run may replay a CUDA
 * graph). The executor log must say which path ran each node; the choice
 * made for each node is kept in the plan file and used again from it.
 * Skipped without a CUDA device.
 *
 * Tolerances: ts_tolerance per dtype (f32 1e-4, f16 1e-2, f64 1e-9, atol
 * and rtol alike); f32 runs without TF32 (the default). Weights are drawn
 * in ±1/sqrt(K) for sums of K > 64 products (ResNet's 3×3×256 is 2304):
 * with x in [-1, 1] and w in [-1, 1] such a sum's rounding in f32 alone
 * reaches 1e-4. */
#define _POSIX_C_SOURCE 200809L
#include "runtime/exec_impl.h"

#include <math.h>
#include <time.h>
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
    const bg_node *wn = NULL;
    for (uint32_t id = 0; id < g->nnodes && !wn; id++)
        if (g->nodes[id].op == BRAID_OP_INPUT &&
            strcmp(g->nodes[id].name, "w") == 0)
            wn = &g->nodes[id];
    cr_assert(wn, "%s: an input named w", what);
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

/* A ResNet-18 convolution at batch 2: s = {C, OC, HW, k, stride}, pads
 * k / 2 at both ends. */
static ts_conv_case resnet_case(const int64_t *s, bool bias) {
    ts_conv_case c = {.s = 2,
                      .N = 2,
                      .G = 1,
                      .Cg = s[0],
                      .OCg = s[1],
                      .in = {s[2], s[2], 1},
                      .k = {s[3], s[3], 1},
                      .bias = bias};
    c.p.strides[0] = c.p.strides[1] = s[4];
    for (int a = 0; a < 4; a++)
        c.p.pads[a] = s[3] / 2;
    return c;
}

/* The channels-last form (passes/channels_last.c makes it from GPU
 * convolutions with TF32, f16 or bf16): random cases through both paths,
 * f32, f16 and f64, and ResNet-18's shapes through cuDNN's NHWC
 * descriptors. */
Test(cuda_conv, channels_last_both_paths, .timeout = 600) {
    TC_REQUIRE_GPU();
    uint64_t st = 5;
    int n = tc_under_sanitizer() ? 4 : 16;
    for (int t = 0; t < n; t++) {
        ts_conv_case c = ts_conv_random_case(&st, false);
        braid_dtype dt = t % 5 == 4   ? BRAID_F64
                         : t % 3 == 2 ? BRAID_F16
                                      : BRAID_F32;
        char buf[400], what[460];
        snprintf(what, sizeof what, "channels last %s %s", braid_dtype_name(dt),
                 ts_conv_case_str(&c, buf, sizeof buf));
        for (int path = 0; path < 2; path++) {
            braid_graph *g = ts_conv_case_graph_channels_last(&c, dt);
            check_path(g, path == 1, 300 + (uint64_t)t, what);
            braid_graph_free(g);
        }
    }
    static const int64_t shapes[][5] = {/* C, OC, HW, k, stride */
                                        {3, 64, 224, 7, 2},
                                        {64, 64, 56, 3, 1},
                                        {64, 128, 56, 1, 2},
                                        {256, 512, 14, 3, 2}};
    for (int i = 0; i < (tc_under_sanitizer() ? 1 : 4); i++) {
        ts_conv_case c = resnet_case(shapes[i], true);
        braid_graph *g = ts_conv_case_graph_channels_last(&c, BRAID_F32);
        char buf[400];
        check_path(g, false, 350 + (uint64_t)i,
                   ts_conv_case_str(&c, buf, sizeof buf));
        braid_graph_free(g);
    }
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
        ts_conv_case c = resnet_case(shapes[i], i % 2 == 0);
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

/* Runs plan p on the GPU against the reference (what names it in
 * messages); returns the executor log's copy (malloc'ed). */
static char *run_checked(const braid_plan *p, const braid_graph *g,
                         uint64_t seed, const char *what) {
    braid_exec *e = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s: %s", what,
                 braid_last_error());
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cr_log_info("%s: braid_exec_new %.2f ms", what,
                (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
                    (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6);
    char *log = strdup(br_cuda_log(br_exec_cuda(e)));
    cr_assert(log);
    ts_io *io = ts_io_new(g, seed);
    cr_assert(io);
    for (uint32_t i = 0; i < io->ninputs; i++)
        if (io->in[i].name[0] == 'w')
            ts_fill_input(io, i, BRAID_F32, TS_RANGE(-0.05, 0.05), seed + 9);
    cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_OK, "%s: %s", what, braid_last_error());
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s: %s", what, braid_last_error());
    char msg[512];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s: %s\nlog:\n%s", what, msg,
              log);
    ts_io_free(io);
    braid_exec_free(e);
    return log;
}

static int count_of(const char *s, const char *needle) {
    int n = 0;
    for (const char *at = s; (at = strstr(at, needle)) != NULL; at++)
        n++;
    return n;
}

/* The choice an executor makes for each conv node is kept in its plan
 * (passes/plan_tuning.c) and in the plan file: an executor of the loaded
 * plan on the same GPU model and cuDNN version times nothing; a record
 * cuDNN does not take (an algorithm it lacks) is chosen again. */
Test(cuda_conv, choices_kept_in_the_plan_file, .timeout = 600) {
    TC_REQUIRE_GPU();
    unsetenv("BRAID_CONV");
    if (braid_cudnn_version() == 0) {
        cr_log_info("cuDNN not loaded (%s): no choices to keep",
                    braid_cudnn_status());
        return;
    }
    braid_graph *g = braid_graph_new(NULL);
    const int64_t xd[4] = {2, 64, 28, 28}, wd[4] = {64, 64, 3, 3},
                  w2d[4] = {128, 64, 1, 1};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 4, xd);
    braid_tensor w = braid_input(g, "w", BRAID_F32, 4, wd);
    braid_tensor w2 = braid_input(g, "w2", BRAID_F32, 4, w2d);
    braid_conv_params p3 = {.pads = {1, 1, 1, 1}}, p1 = {.strides = {2, 2}};
    braid_tensor y = braid_relu(g, braid_conv(g, x, w, BRAID_NONE, &p3));
    braid_output(g, "z", braid_conv(g, y, w2, BRAID_NONE, &p1));
    tc_hint_all(g, "cuda:0");
    braid_compile_options o = tc_options();
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(p->tune.nconv, 0);
    char *log1 = run_checked(p, g, 61, "first executor");
    cr_assert_eq(p->tune.nconv, 2, "one record per conv node\nlog:\n%s", log1);
    cr_assert_eq(count_of(log1, "tuning record"), 0, "%s", log1);
    void *d = NULL;
    size_t n = 0;
    cr_assert_eq(braid_plan_save_memory(p, &d, &n), BRAID_OK, "%s",
                 braid_last_error());
    braid_plan *q = NULL;
    cr_assert_eq(braid_plan_load_memory(d, n, NULL, &q), BRAID_OK, "%s",
                 braid_last_error());
    char *log2 = run_checked(q, g, 62, "executor of the loaded plan");
    cr_assert_eq(count_of(log2, "from the plan's tuning record"), 2, "log:\n%s",
                 log2);
    cr_assert_eq(count_of(log2, "timed"), 2, "only \"nothing timed\":\n%s",
                 log2);
    /* a record naming an algorithm cuDNN lacks: chosen again */
    for (uint32_t i = 0; i < q->tune.nconv; i++)
        q->tune.conv[i].algo = 63;
    char *log3 = run_checked(q, g, 63, "records cuDNN refuses");
    cr_assert_eq(count_of(log3, "not used"), 2, "log:\n%s", log3);
    free(log1), free(log2), free(log3);
    free(d);
    braid_plan_free(q);
    braid_plan_free(p);
    braid_graph_free(g);
}
