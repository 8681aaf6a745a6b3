/* tests/test_cuda_perf.c — figures, not assertions: the throughput of
 * braid's copy paths against plain cudaMemcpy, per-node cost of a chain of
 * small GPU nodes with and without CUDA-graph replay, a large f32 matmul,
 * and how soon braid_run_async returns on it. Each figure is logged as a
 * line starting "perf:" (tools/gpu-check.sh collects them into its
 * summary); the tests fail only when a run fails or gives wrong values.
 * Medians of several warm runs, timed on the host around braid_run (which
 * returns after the GPU is done). Skipped without a CUDA device. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "tests/test_cuda_common.h"

#define REPS 5

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* Median seconds of braid_run over REPS runs after one warm-up. */
static double time_runs(braid_exec *e, const braid_input_binding *in,
                        size_t nin, const braid_output_binding *out,
                        size_t nout) {
    double t[REPS];
    int reps = tc_under_sanitizer() ? 1 : REPS; /* a sanitizer: no timing */
    cr_assert_eq(braid_run(e, in, nin, out, nout), BRAID_OK, "%s",
                 braid_last_error());
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        cr_assert_eq(braid_run(e, in, nin, out, nout), BRAID_OK, "%s",
                     braid_last_error());
        t[r] = now_s() - t0;
    }
    return median(t, reps);
}

static braid_exec *make_exec(braid_graph *g, braid_plan **p,
                             const braid_compile_options *o) {
    braid_exec *e = NULL;
    cr_assert_eq(braid_compile(g, o, p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_exec_new(*p, &e), BRAID_OK, "%s", braid_last_error());
    return e;
}

/* ---- copies -------------------------------------------------------------- */

#define GIB ((size_t)1 << 30)

/* 1 GiB host → GPU: max over the GPU (one scalar back). */
static double h2d_seconds(const float *x) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t n = (int64_t)(GIB / sizeof(float));
    braid_tensor t = braid_input(g, "x", BRAID_F32, 1, TC_DIMS(n));
    braid_tensor y = braid_reduce_max(g, t, 0, NULL, false);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    tc_hint_all(g, "cuda:0");
    braid_compile_options o = tc_options();
    o.num_threads = 0;
    braid_plan *p = NULL;
    braid_exec *e = make_exec(g, &p, &o);
    float m = 0;
    braid_input_binding in = {"x", x, GIB};
    braid_output_binding out = {"y", &m, sizeof m};
    double s = time_runs(e, &in, 1, &out, 1);
    cr_assert_eq(m, 1.0f, "max of the data is 1, got %g", m);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    return s;
}

/* 1 GiB GPU → host: a GPU-made tensor returned into y. */
static double d2h_seconds(float *y) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t n = (int64_t)(GIB / sizeof(float));
    braid_tensor t = braid_fill(g, BRAID_F32, 1, TC_DIMS(n), 0.5);
    braid_tensor x = braid_input(g, "s", BRAID_F32, 0, NULL);
    t = braid_mul(g, t, x);
    cr_assert_eq(braid_output(g, "y", t), BRAID_OK);
    tc_hint_all(g, "cuda:0");
    braid_compile_options o = tc_options();
    o.num_threads = 0;
    braid_plan *p = NULL;
    braid_exec *e = make_exec(g, &p, &o);
    float s2 = 4.0f;
    braid_input_binding in = {"s", &s2, sizeof s2};
    braid_output_binding out = {"y", y, GIB};
    double s = time_runs(e, &in, 1, &out, 1);
    cr_assert_eq(y[12345], 2.0f);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    return s;
}

static double memcpy_seconds(void *dst, const void *src, size_t bytes) {
    double t[REPS];
    int reps = tc_under_sanitizer() ? 1 : REPS;
    cr_assert_eq(br_cuda_memcpy(dst, src, bytes), BRAID_OK);
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        cr_assert_eq(br_cuda_memcpy(dst, src, bytes), BRAID_OK);
        t[r] = now_s() - t0;
    }
    return median(t, reps);
}

static void fill_ones(float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(i % 7) / 6.0f;
}

Test(cuda_perf, copies_1gib, .timeout = 300) {
    TC_REQUIRE_GPU();
    size_t n = GIB / sizeof(float);
    float *pageable = malloc(GIB), *pinned = br_cuda_pinned_alloc(GIB);
    void *dev = br_cuda_device_alloc(0, GIB);
    cr_assert(pageable && pinned && dev, "cannot allocate 1 GiB buffers");
    fill_ones(pageable, n);
    fill_ones(pinned, n);
    double gb = (double)GIB / 1e9;
    double base_h2d = memcpy_seconds(dev, pageable, GIB);
    double pin_h2d = memcpy_seconds(dev, pinned, GIB);
    double base_d2h = memcpy_seconds(pageable, dev, GIB);
    double pin_d2h = memcpy_seconds(pinned, dev, GIB);
    double b_h2d = h2d_seconds(pageable), b_h2d_pin = h2d_seconds(pinned);
    double b_d2h = d2h_seconds(pageable), b_d2h_pin = d2h_seconds(pinned);
    cr_log_info("perf: H2D 1 GiB pageable: braid %.1f GB/s, cudaMemcpy %.1f "
                "GB/s, ratio %.2fx (target >= 3x)",
                gb / b_h2d, gb / base_h2d, base_h2d / b_h2d);
    cr_log_info("perf: H2D 1 GiB pinned: braid %.1f GB/s, cudaMemcpy %.1f GB/s",
                gb / b_h2d_pin, gb / pin_h2d);
    cr_log_info("perf: D2H 1 GiB pageable: braid %.1f GB/s, cudaMemcpy %.1f "
                "GB/s, ratio %.2fx",
                gb / b_d2h, gb / base_d2h, base_d2h / b_d2h);
    cr_log_info("perf: D2H 1 GiB pinned: braid %.1f GB/s, cudaMemcpy %.1f GB/s",
                gb / b_d2h_pin, gb / pin_d2h);
    free(pageable);
    br_cuda_pinned_free(pinned);
    br_cuda_device_free(dev);
}

/* ---- small nodes --------------------------------------------------------- */

Test(cuda_perf, chain_of_100_small_nodes) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, TC_DIMS(1024));
    braid_tensor t = x;
    for (int i = 0; i < 100; i++)
        t = i % 2 ? braid_sin(g, t) : braid_add(g, t, x);
    cr_assert_eq(braid_output(g, "y", t), BRAID_OK);
    tc_hint_all(g, "cuda:0");
    braid_compile_options o = tc_options();
    o.disable_passes = BRAID_PASS_FUSE; /* 100 kernels */
    float xs[1024], y1[1024], y2[1024];
    ts_fill_random(BRAID_F32, xs, 1024, 3, -1, 1);
    braid_input_binding in = {"x", xs, sizeof xs};
    double per[2];
    for (int graphs = 0; graphs < 2; graphs++) {
        braid_plan *p = NULL;
        braid_exec *e = make_exec(g, &p, &o);
        br_cuda_set_graphs(br_exec_cuda(e), graphs);
        braid_output_binding out = {"y", graphs ? y2 : y1, sizeof y1};
        time_runs(e, &in, 1, &out, 1); /* warm-up, capture */
        double s = time_runs(e, &in, 1, &out, 1);
        uint32_t nodes = 0;
        for (uint32_t i = 0; i < p->res.nschedule; i++)
            nodes += br_node_on_device_queue(p, p->res.schedule[i]);
        per[graphs] = s / (nodes ? nodes : 1);
        if (graphs)
            cr_assert(br_cuda_last_run_used_graph(br_exec_cuda(e)), "log:\n%s",
                      br_cuda_log(br_exec_cuda(e)));
        braid_exec_free(e);
        braid_plan_free(p);
    }
    cr_assert(memcmp(y1, y2, sizeof y1) == 0, "graph replay changed results");
    cr_log_info("perf: 100-node chain of small GPU ops: %.2f us/node "
                "dispatched, %.2f us/node replayed as a CUDA graph (target "
                "<= 2.3)",
                1e6 * per[0], 1e6 * per[1]);
    braid_graph_free(g);
}

/* ---- matmul -------------------------------------------------------------- */

/* Logs how long braid_run_async and braid_wait take on a warm executor
 * whose run is mostly GPU time (medians of REPS): braid_run_async should
 * return long before the GPU is done. */
static void async_figure(braid_exec *e, const braid_input_binding *in,
                         const braid_output_binding *out) {
    double ta[REPS], tw[REPS];
    for (int r = 0; r < REPS; r++) {
        double t0 = now_s();
        cr_assert_eq(braid_run_async(e, in, 1, out, 1), BRAID_OK, "%s",
                     braid_last_error());
        double t1 = now_s();
        cr_assert_eq(braid_wait(e), BRAID_OK, "%s", braid_last_error());
        ta[r] = t1 - t0;
        tw[r] = now_s() - t1;
    }
    cr_log_info("perf: braid_run_async of that run returns after %.3f ms, "
                "braid_wait %.2f ms later (medians)",
                1e3 * median(ta, REPS), 1e3 * median(tw, REPS));
}

Test(cuda_perf, matmul_f32_4096) {
    TC_REQUIRE_GPU();
    int64_t n = tc_under_sanitizer() ? 512 : 4096; /* memcheck: every load */
    braid_graph *g = braid_graph_new(NULL);
    /* operands made on the GPU, result reduced there: the time is the
       matmul's (plus two generator kernels, ~1% of it) */
    braid_tensor a =
        braid_random_uniform(g, BRAID_F32, 2, TC_DIMS(n, n), 1, -1, 1);
    braid_tensor b =
        braid_random_uniform(g, BRAID_F32, 2, TC_DIMS(n, n), 2, -1, 1);
    braid_tensor s = braid_input(g, "s", BRAID_F32, 0, NULL);
    braid_tensor y =
        braid_sum(g, braid_matmul(g, braid_mul(g, a, s), b, 0), 0, NULL, false);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    tc_hint_all(g, "cuda:0");
    float one = 1, out = 0;
    braid_input_binding in = {"s", &one, sizeof one};
    braid_output_binding ob = {"y", &out, sizeof out};
    for (int tf32 = 0; tf32 < 2; tf32++) {
        braid_compile_options o = tc_options();
        o.allow_tf32 = tf32;
        braid_plan *p = NULL;
        braid_exec *e = make_exec(g, &p, &o);
        double t = time_runs(e, &in, 1, &ob, 1);
        cr_log_info("perf: matmul f32 %lld^3%s: %.2f ms per run, %.1f TFLOP/s "
                    "(incl. generators and the sum)",
                    (long long)n, tf32 ? " with TF32" : "", 1e3 * t,
                    2.0 * (double)n * n * n / t / 1e12);
        if (!tf32) async_figure(e, &in, &ob);
        braid_exec_free(e);
        braid_plan_free(p);
    }
    braid_graph_free(g);
}
