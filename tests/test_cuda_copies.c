/* tests/test_cuda_copies.c — host ↔ device copies through every path:
 * pageable buffers larger than a staging slot (chunked staging both ways,
 * the D2H deferred), pinned buffers (direct DMA), misaligned host data,
 * device pointers bound as inputs and outputs (and the error when the CPU
 * would read one; tests/test_cuda_bindings.c goes further), buffers that change between runs, output subsets, and a
 * GPU result read both by the caller and by a CPU node. Skipped without a
 * CUDA device.
 *
 * The computation is y = x·2 + 1 in f32 (exact up to one rounding, the same
 * on every device), so results are compared bit for bit with the CPU
 * executor's. */
#include "tests/test_cuda_common.h"

#include <math.h>

/* y = x·2 + 1 on cuda:0 for n floats; z = sum(y) on the cpu if with_cpu. */
static braid_graph *affine_graph(int64_t n, bool with_cpu) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, TC_DIMS(n));
    braid_tensor two = braid_fill(g, BRAID_F32, 0, NULL, 2.0);
    braid_tensor one = braid_fill(g, BRAID_F32, 0, NULL, 1.0);
    braid_tensor y = braid_add(g, braid_mul(g, x, two), one);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    tc_hint_all(g, "cuda:0");
    if (with_cpu) {
        braid_tensor z = braid_sum(g, braid_neg(g, y), 0, NULL, false);
        braid_set_device(g, z, "cpu");
        cr_assert_eq(braid_output(g, "z", z), BRAID_OK);
    }
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

static braid_exec *new_exec(const braid_graph *g, braid_plan **p) {
    braid_compile_options o = tc_options();
    braid_exec *e = NULL;
    cr_assert_eq(braid_compile(g, &o, p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_exec_new(*p, &e), BRAID_OK, "%s", braid_last_error());
    return e;
}

static void fill_x(float *x, int64_t n, uint64_t seed) {
    ts_fill_random(BRAID_F32, x, n, seed, -1000, 1000);
}

/* Checks y[i] == x[i]*2 + 1 exactly. */
static void check_affine(const float *x, const float *y, int64_t n,
                         const char *what) {
    for (int64_t i = 0; i < n; i++)
        if (y[i] != x[i] * 2.0f + 1.0f)
            cr_assert_fail("%s: y[%lld] = %.9g, expected %.9g", what,
                           (long long)i, y[i], x[i] * 2.0f + 1.0f);
}

/* Runs the executor on x → y `runs` times with buffers from alloc. */
static void run_with(void *(*alloc)(size_t), void (*release)(void *), int64_t n,
                     int runs, const char *what) {
    braid_graph *g = affine_graph(n, false);
    braid_plan *p = NULL;
    braid_exec *e = new_exec(g, &p);
    size_t bytes = (size_t)n * sizeof(float);
    for (int r = 0; r < runs; r++) { /* fresh buffers each run */
        float *x = alloc(bytes), *y = alloc(bytes);
        cr_assert(x && y, "%s: allocation failed", what);
        fill_x(x, n, (uint64_t)r + 1);
        memset(y, 0xA5, bytes);
        braid_input_binding in = {"x", x, bytes};
        braid_output_binding out = {"y", y, bytes};
        cr_assert_eq(braid_run(e, &in, 1, &out, 1), BRAID_OK, "%s run %d: %s",
                     what, r, braid_last_error());
        check_affine(x, y, n, what);
        release(x);
        release(y);
    }
    cr_log_info("%s: log:\n%s", what, br_cuda_log(br_exec_cuda(e)));
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

static void *pageable_alloc(size_t n) {
    return malloc(n);
}
static void *pinned_alloc(size_t n) {
    return br_cuda_pinned_alloc(n);
}

Test(cuda_copies, pageable_larger_than_staging_slots) {
    TC_REQUIRE_GPU();
    run_with(pageable_alloc, free, (int64_t)21 << 20, 3, "pageable 84 MiB");
    run_with(pageable_alloc, free, 1000, 3, "pageable 4 kB");
}

Test(cuda_copies, pinned_buffers) {
    TC_REQUIRE_GPU();
    run_with(pinned_alloc, br_cuda_pinned_free, (int64_t)21 << 20, 3,
             "pinned 84 MiB");
    run_with(pinned_alloc, br_cuda_pinned_free, 1000, 4, "pinned 4 kB");
}

/* Constants of more than 32 MiB in all are uploaded at creation through
 * pinned staging slots (8 MiB each, several constants per slot, constants
 * split across slots): y = (x + c1) + c3 with c1, c3 of 20 MiB + 12 bytes,
 * and a small constant c2 read on the GPU (v = u * c2) and by a CPU node
 * (s = sum(u + c2)), compared bit for bit with the host's arithmetic. */
Test(cuda_copies, large_constants_through_pinned_staging) {
    TC_REQUIRE_GPU();
    int64_t n = ((int64_t)5 << 20) + 3, m = 1000;
    if (tc_under_sanitizer()) n = ((int64_t)4 << 20) + 3;
    size_t bytes = (size_t)n * sizeof(float);
    float *c1 = malloc(bytes), *c3 = malloc(bytes), *c2 = malloc(4 * m);
    float *x = malloc(bytes), *y = malloc(bytes), *u = malloc(4 * m),
          *v = malloc(4 * m);
    cr_assert(c1 && c2 && c3 && x && y && u && v);
    ts_fill_random(BRAID_F32, c1, n, 11, -1, 1);
    ts_fill_random(BRAID_F32, c3, n, 13, -1, 1);
    ts_fill_random(BRAID_F32, c2, m, 12, -1, 1);
    ts_fill_random(BRAID_F32, u, m, 14, -1, 1);
    fill_x(x, n, 5);
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor xt = braid_input(g, "x", BRAID_F32, 1, TC_DIMS(n));
    braid_tensor ut = braid_input(g, "u", BRAID_F32, 1, TC_DIMS(m));
    braid_tensor k1 = braid_constant(g, BRAID_F32, 1, TC_DIMS(n), c1);
    braid_tensor k2 = braid_constant(g, BRAID_F32, 1, TC_DIMS(m), c2);
    braid_tensor k3 = braid_constant(g, BRAID_F32, 1, TC_DIMS(n), c3);
    cr_assert_eq(braid_output(g, "y", braid_add(g, braid_add(g, xt, k1), k3)),
                 BRAID_OK);
    cr_assert_eq(braid_output(g, "v", braid_mul(g, ut, k2)), BRAID_OK);
    tc_hint_all(g, "cuda:0");
    braid_tensor st = braid_sum(g, braid_add(g, ut, k2), 0, NULL, false);
    braid_set_device(g, st, "cpu");
    cr_assert_eq(braid_output(g, "s", st), BRAID_OK);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    braid_plan *p = NULL;
    braid_exec *e = new_exec(g, &p);
    float s = 0;
    braid_input_binding in[2] = {{"x", x, bytes}, {"u", u, 4 * m}};
    braid_output_binding out[3] = {
        {"y", y, bytes}, {"v", v, 4 * m}, {"s", &s, sizeof s}};
    for (int r = 0; r < 2; r++) {
        memset(y, 0xA5, bytes);
        memset(v, 0xA5, 4 * m);
        cr_assert_eq(braid_run(e, in, 2, out, 3), BRAID_OK, "run %d: %s", r,
                     braid_last_error());
        for (int64_t i = 0; i < n; i++)
            if (y[i] != (x[i] + c1[i]) + c3[i])
                cr_assert_fail("y[%lld] = %.9g, expected %.9g", (long long)i,
                               y[i], (x[i] + c1[i]) + c3[i]);
        double want = 0;
        for (int64_t i = 0; i < m; i++) {
            cr_assert_eq(v[i], u[i] * c2[i], "v[%lld]", (long long)i);
            want += (double)(u[i] + c2[i]);
        }
        cr_assert(fabs(s - want) <= 1e-3, "s = %.9g, expected %.9g", s, want);
    }
    const char *log = br_cuda_log(br_exec_cuda(e));
    cr_log_info("log:\n%s", log);
    cr_assert(strstr(log, "through pinned staging"), "%s", log);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    free(c1);
    free(c2);
    free(c3);
    free(x);
    free(y);
    free(u);
    free(v);
}

Test(cuda_copies, misaligned_host_data) {
    TC_REQUIRE_GPU();
    int64_t n = 100003;
    braid_graph *g = affine_graph(n, false);
    braid_plan *p = NULL;
    braid_exec *e = new_exec(g, &p);
    size_t bytes = (size_t)n * sizeof(float);
    char *xb = malloc(bytes + 16), *yb = malloc(bytes + 16);
    float *x = malloc(bytes), *y = malloc(bytes);
    fill_x(x, n, 7);
    for (int off = 1; off < 8; off += 3) { /* 1, 4, 7 bytes in */
        memcpy(xb + off, x, bytes);
        braid_input_binding in = {"x", xb + off, bytes};
        braid_output_binding out = {"y", yb + off, bytes};
        cr_assert_eq(braid_run(e, &in, 1, &out, 1), BRAID_OK, "%s",
                     braid_last_error());
        memcpy(y, yb + off, bytes);
        check_affine(x, y, n, "misaligned");
    }
    free(xb);
    free(yb);
    free(x);
    free(y);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_copies, device_pointers) {
    TC_REQUIRE_GPU();
    int64_t n = 1 << 20;
    size_t bytes = (size_t)n * sizeof(float);
    braid_graph *g = affine_graph(n, false);
    braid_plan *p = NULL;
    braid_exec *e = new_exec(g, &p);
    float *x = malloc(bytes), *y = malloc(bytes);
    void *dx = br_cuda_device_alloc(0, bytes),
         *dy = br_cuda_device_alloc(0, bytes);
    cr_assert(dx && dy);
    fill_x(x, n, 3);
    cr_assert_eq(br_cuda_memcpy(dx, x, bytes), BRAID_OK);
    for (int r = 0; r < 3; r++) {
        braid_input_binding in = {"x", dx, bytes};
        braid_output_binding out = {"y", dy, bytes};
        cr_assert_eq(braid_run(e, &in, 1, &out, 1), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert_eq(br_cuda_memcpy(y, dy, bytes), BRAID_OK);
        check_affine(x, y, n, "device pointers");
    }
    br_cuda_device_free(dx);
    br_cuda_device_free(dy);
    free(x);
    free(y);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_copies, device_pointer_read_on_cpu_is_refused) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, TC_DIMS(64));
    braid_tensor c = braid_exp(g, x); /* on the cpu: reads x there */
    braid_set_device(g, c, "cpu");
    braid_tensor d = braid_neg(g, x);
    braid_set_device(g, d, "cuda:0");
    cr_assert_eq(braid_output(g, "c", c), BRAID_OK);
    cr_assert_eq(braid_output(g, "d", d), BRAID_OK);
    braid_plan *p = NULL;
    braid_exec *e = new_exec(g, &p);
    void *dx = br_cuda_device_alloc(0, 256);
    float out1[64], out2[64];
    braid_input_binding in = {"x", dx, 256};
    braid_output_binding out[2] = {{"c", out1, 256}, {"d", out2, 256}};
    braid_status s = braid_run(e, &in, 1, out, 2);
    cr_assert_eq(s, BRAID_ERR_INVALID_ARGUMENT, "%s", braid_last_error());
    cr_assert(strstr(braid_last_error(), "device memory"), "%s",
              braid_last_error());
    /* an output bound to device memory that the CPU computes is copied
       there with cudaMemcpy (exp(0) = 1 everywhere) */
    float host_x[64] = {0}, back[64];
    braid_input_binding hin = {"x", host_x, 256};
    braid_output_binding dout[1] = {{"c", dx, 256}};
    s = braid_run(e, &hin, 1, dout, 1);
    cr_assert_eq(s, BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(br_cuda_memcpy(back, dx, 256), BRAID_OK);
    for (int i = 0; i < 64; i++)
        cr_assert_eq(back[i], 1.0f, "c[%d] = %.9g", i, back[i]);
    br_cuda_device_free(dx);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_copies, gpu_result_read_by_caller_and_cpu_node) {
    /* y goes to the caller (pageable, written in place, deferred) and to a
       CPU reduction that must wait for it */
    TC_REQUIRE_GPU();
    int64_t n = (int64_t)2 << 20; /* partial sums stay below 2^24: exact */
    size_t bytes = (size_t)n * sizeof(float);
    braid_graph *g = affine_graph(n, true);
    braid_plan *p = NULL;
    braid_exec *e = new_exec(g, &p);
    float *x = malloc(bytes), *y = malloc(bytes), z = 0;
    for (int r = 0; r < 3; r++) {
        /* small integers: the sum is exact in any order */
        for (int64_t i = 0; i < n; i++)
            x[i] = (float)((i * 7 + r) % 5) - 2;
        braid_input_binding in = {"x", x, bytes};
        braid_output_binding out[2] = {{"y", y, bytes}, {"z", &z, 4}};
        cr_assert_eq(braid_run(e, &in, 1, out, 2), BRAID_OK, "%s",
                     braid_last_error());
        check_affine(x, y, n, "caller and cpu");
        double want = 0;
        for (int64_t i = 0; i < n; i++)
            want -= x[i] * 2.0 + 1.0;
        cr_assert_eq((double)z, want, "z = %.9g, expected %.9g", z, want);
        /* only z this time: y is computed but not returned */
        cr_assert_eq(braid_run(e, &in, 1, &out[1], 1), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert_eq((double)z, want);
    }
    free(x);
    free(y);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_copies, round_trip_through_the_cpu) {
    /* GPU → CPU → GPU → CPU with copies both ways on each side */
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, TC_DIMS(512, 300));
    braid_tensor a = braid_exp(g, braid_mul(g, x, x));
    braid_set_device(g, a, "cuda:0");
    braid_tensor b = braid_sqrt(g, a);
    braid_set_device(g, b, "cpu");
    braid_tensor c = braid_add(g, b, x);
    braid_set_device(g, c, "cuda:0");
    braid_tensor d = braid_sum(g, c, 1, (int[]){1}, true);
    braid_set_device(g, d, "cpu");
    braid_tensor y = braid_div(g, c, d);
    braid_set_device(g, y, "cuda:0");
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    cr_assert_eq(braid_output(g, "b", b), BRAID_OK);
    ts_io *io = ts_io_new(g, 21);
    ts_fill_input(io, 0, BRAID_F32, TS_RANGE(0.1, 1), 21);
    braid_compile_options o = tc_options();
    cr_assert_eq(tc_run(g, &o, io, 3, NULL), BRAID_OK, "%s",
                 braid_last_error());
    char msg[512];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    ts_io_free(io);
    braid_graph_free(g);
}
