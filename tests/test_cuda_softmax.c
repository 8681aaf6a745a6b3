/* tests/test_cuda_softmax.c — the softmax op's kernel (codegen/softmax.c)
 * on a GPU against the reference evaluator: f32, f16, bf16, f64; rows of
 * 1, 7, 33, 1000, 8192 (register path: sub-warp groups, warps, blocks) and
 * 20000 / 20001 (online path, vector and scalar); values in [-4, 4] and in
 * [1000, 1100] (a naive exp overflows); an elementwise producer (fused
 * apart); an input 4 bytes off 16-byte alignment (the element-by-element
 * path); -inf entries and an all -inf row. Every plan is checked to hold
 * one softmax node on cuda:0. Skipped without a CUDA device.
 *
 * Tolerances: ts_tolerance per dtype (f32 1e-4, f16 1e-2, bf16 5e-2, f64
 * 1e-9, atol and rtol alike). */
#include <math.h>

#include "passes/passes.h"
#include "tests/test_cuda_common.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

static void one_case(braid_dtype dt, int64_t rows, int64_t C, bool prologue,
                     ts_range r, uint64_t seed) {
    char what[160];
    snprintf(what, sizeof what, "softmax %s [%lld, %lld]%s in [%g, %g]",
             braid_dtype_name(dt), (long long)rows, (long long)C,
             prologue ? " producer" : "", r.lo, r.hi);
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", dt, 2, DIMS(rows, C));
    ts_range ranges[2] = {r, TS_RANGE(-1, 1)};
    if (prologue) {
        braid_tensor b = braid_input(g, "b", dt, 1, &C);
        x = braid_add(g, braid_mul(g, x, braid_fill(g, dt, 0, NULL, 0.5)), b);
    }
    braid_tensor y = braid_softmax(g, x, 1);
    TC_CHECK(g, y, ranges, seed, what);
    tc_assert_one_on_gpu(g, BRAID_OP_SOFTMAX, what);
    braid_graph_free(g);
}

static const int64_t lengths[] = {1, 7, 33, 1000, 8192, 20000, 20001};

Test(cuda_softmax, every_dtype_and_row_length, .timeout = 600) {
    TC_REQUIRE_GPU();
    uint64_t seed = 1;
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
        int64_t C = lengths[i], rows = C >= 8192 ? 5 : 67;
        one_case(dt, rows, C, false, TS_RANGE(-4, 4), seed++);
        one_case(dt, rows, C, true, TS_RANGE(-4, 4), seed++);
        one_case(dt, rows, C, false, TS_RANGE(1000, 1100), seed++);
    }
    cr_assert_gt(tc_gpu_cases, 0, "no case ran on the GPU");
}

/* The benchmark's shape, fewer rows: one read and one write per element. */
Test(cuda_softmax, wide_rows, .timeout = 600) {
    TC_REQUIRE_GPU();
    one_case(BRAID_F32, 512, 8192, false, TS_RANGE(-4, 4), 77);
    one_case(BRAID_F16, 512, 8192, false, TS_RANGE(-4, 4), 78);
}

/* x a view 4 bytes into its input: 16-byte accesses are not possible. */
Test(cuda_softmax, misaligned_input) {
    TC_REQUIRE_GPU();
    const int64_t lens[] = {64, 8192, 20000};
    for (int i = 0; i < 3; i++) {
        int64_t C = lens[i], n = 3 * C + 1;
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor flat = braid_input(g, "flat", BRAID_F32, 1, &n);
        braid_tensor sl = braid_slice(g, flat, DIMS(1), &n, NULL);
        braid_tensor x = braid_reshape(g, sl, 2, DIMS(3, C));
        braid_tensor y = braid_softmax(g, x, 1);
        ts_range r = TS_RANGE(-4, 4);
        char what[64];
        snprintf(what, sizeof what, "misaligned [3, %lld]", (long long)C);
        TC_CHECK(g, y, &r, 9 + (uint64_t)i, what);
        braid_graph_free(g);
    }
}

/* -inf entries give 0, an all -inf row NaN, as the reference. */
Test(cuda_softmax, infinities) {
    TC_REQUIRE_GPU();
    const int64_t lens[] = {37, 8192, 20000};
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (int i = 0; i < 3; i++) {
        int64_t C = lens[i];
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor y =
            braid_softmax(g, braid_input(g, "x", dt, 2, DIMS(3, C)), 1);
        braid_output(g, "y", y);
        tc_hint_all(g, "cuda:0");
        ts_io *io = ts_io_new(g, 5);
        cr_assert(io);
        void *x = (void *)io->in[0].data;
        for (int64_t k = 0; k < C; k += 3)
            bg_store(dt, x, k, -INFINITY);
        for (int64_t k = 0; k < C; k++)
            bg_store(dt, x, C + k, -INFINITY);
        braid_compile_options o = tc_options();
        cr_assert_eq(tc_run(g, &o, io, 1, NULL), BRAID_OK, "%s",
                     braid_last_error());
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "%s [3, %lld]: %s",
                  braid_dtype_name(dt), (long long)C, msg);
        cr_assert(isnan(bg_load(dt, io->out[0].data, C)));
        ts_io_free(io);
        braid_graph_free(g);
    }
}
