/* tests/test_cuda_axis.c — the index ops' kernels (codegen/axis.c) and
 * reduce_prod / log-sum-exp (codegen/reduce.c) on a GPU against the
 * reference evaluator:
 *   - the random cases of tests/support/axis_cases.c (every dtype, shapes
 *     of rank 1..4, long axes up to 20000, inner runs >= 32 that take the
 *     thread-per-line kernels, ties, i32 wrapping);
 *   - the NaN and tie rules by literal values (the same indices as the
 *     CPU and the reference);
 *   - long axes: cumsum over 1,000,000 elements (the block scan's carry
 *     across 3907 chunks), exclusive and reverse, f32 and wrapping i32;
 *     cumsum down axis 0 of [5000, 1000] (a thread per line); argmax and
 *     topk (k rounds of a warp) over vocabulary-sized rows [8, 50257] and
 *     down [50257, 64], and topk of sorted rows (the rank kernel's worst
 *     order) with k = 100.
 * Skipped without a CUDA device. Tolerances: ts_tolerance per dtype (f32
 * 1e-4, f16 1e-2, bf16 5e-2, f64 1e-9); indices exact. The GPU sums
 * cumsum in double in another order than the reference (a scan), and
 * reduce_prod of f16/bf16/f32 in float. */
#include <math.h>

#include "tests/support/axis_cases.h"
#include "tests/test_cuda_common.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

Test(cuda_axis, random_cases, .timeout = 600) {
    TC_REQUIRE_GPU();
    int seeds = tc_under_sanitizer() ? 6 : 40;
    for (int op = 0; op < TS_AX_COUNT_; op++)
        for (uint64_t seed = 1; seed <= (uint64_t)seeds; seed++) {
            ts_axis_case c = ts_axis_case_make((ts_axis_op)op, seed, 20000);
            TC_CHECK(c.g, c.y, &c.range, seed, c.what);
            braid_graph_free(c.g);
        }
    cr_assert_gt(tc_gpu_cases, TS_AX_COUNT_ * seeds / 2,
                 "only %d cases ran on the GPU", tc_gpu_cases);
}

Test(cuda_axis, nan_and_tie_rules) {
    TC_REQUIRE_GPU();
    for (int k = 0; k < TS_AXIS_LITERALS; k++) {
        ts_axis_literal l = ts_axis_literal_make(k);
        tc_hint_all(l.g, "cuda:0");
        ts_io *io = ts_io_new(l.g, 1);
        cr_assert(io);
        memcpy((void *)io->in[0].data, l.x, (size_t)l.n * sizeof *l.x);
        braid_compile_options o = tc_options();
        uint32_t gpu = 0;
        cr_assert_eq(tc_run(l.g, &o, io, 1, &gpu), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert_gt(gpu, 0);
        char msg[512];
        cr_assert(ts_axis_literal_check(&l, io, msg, sizeof msg), "case %d: %s",
                  k, msg);
        ts_io_free(io);
        braid_graph_free(l.g);
    }
}

/* cumsum along axis of x [rows, len] (dt, values from r). */
static void long_cumsum(braid_dtype dt, int64_t rows, int64_t len, int axis,
                        ts_range r, uint64_t seed) {
    for (int f = 0; f < 4; f++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", dt, 2, DIMS(rows, len));
        braid_tensor y = braid_cumsum(g, x, axis, f & 1, f & 2);
        char what[128];
        snprintf(what, sizeof what, "cumsum %s[%lld,%lld] axis=%d%s%s",
                 braid_dtype_name(dt), (long long)rows, (long long)len, axis,
                 f & 1 ? " exclusive" : "", f & 2 ? " reverse" : "");
        TC_CHECK(g, y, &r, seed + (uint64_t)f, what);
        braid_graph_free(g);
    }
}

Test(cuda_axis, long_axes, .timeout = 600) {
    TC_REQUIRE_GPU();
    int64_t n = tc_under_sanitizer() ? 100000 : 1000000;
    long_cumsum(BRAID_F32, 2, n, 1, TS_RANGE(-1, 1), 1);
    long_cumsum(BRAID_I32, 2, n, 1, TS_I32_FULL, 2);
    long_cumsum(BRAID_F64, 1, n, 1, TS_RANGE(-1, 1), 3);
    long_cumsum(BRAID_F32, 5000, 1000, 0, TS_RANGE(-1, 1), 4);
    const int64_t vocab = 50257;
    for (int k = 0; k < 4; k++) {
        braid_graph *g = braid_graph_new(NULL);
        bool down = k & 1; /* [50257, 64] along axis 0: inner 64 */
        braid_tensor x =
            down ? braid_input(g, "x", BRAID_F32, 2, DIMS(vocab, 64))
                 : braid_input(g, "x", BRAID_F32, 2, DIMS(8, vocab));
        int axis = down ? 0 : 1;
        ts_range r = k & 2 ? TS_SMALL_INTS : TS_RANGE(-4, 4);
        braid_tensor idx;
        braid_tensor v = braid_topk(g, x, k & 2 ? 50 : 10, axis, !down, &idx);
        braid_tensor am = braid_argmax(g, x, axis, false, k & 2);
        braid_output(g, "v", v);
        braid_output(g, "i", idx);
        TC_CHECK(g, am, &r, 10 + (uint64_t)k,
                 down ? "topk/argmax down 50257" : "topk/argmax 8 x 50257");
        braid_graph_free(g);
    }
}

/* Rows sorted ascending ([4, 3000] iota plus a fill): the rank kernel
 * (k = 100 > 64) scans most of the row per element; the result is still
 * the reference's. */
Test(cuda_axis, topk_of_sorted_rows) {
    TC_REQUIRE_GPU();
    for (int largest = 0; largest < 2; largest++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(4, 1));
        braid_tensor up = braid_iota(g, BRAID_F32, 2, DIMS(4, 3000), 1);
        braid_tensor idx;
        braid_tensor v = braid_topk(g, braid_add(g, up, x), 100, 1, largest,
                                    &idx);
        braid_output(g, "v", v);
        ts_range r = TS_RANGE(-1, 1);
        TC_CHECK(g, idx, &r, 20 + (uint64_t)largest, "topk of sorted rows");
        braid_graph_free(g);
    }
}

Test(cuda_axis, reduce_prod_and_logsumexp) {
    TC_REQUIRE_GPU();
    TS_FOR_DTYPES(dt, TS_NUMS) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", dt, 3, DIMS(5, 37, 300));
        braid_tensor h = braid_add(g, x, braid_fill(g, dt, 0, NULL, 1));
        braid_tensor y = braid_reduce_prod(g, h, 2, (int[]){0, 2}, true);
        ts_range r = dt == BRAID_I32 ? TS_I32_FULL : TS_RANGE(-0.3, 0.3);
        TC_CHECK(g, y, &r, 3, braid_dtype_name(dt));
        braid_graph_free(g);
    }
    TS_FOR_DTYPES(dt, TS_FLOATS) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", dt, 2, DIMS(64, 5000));
        braid_tensor y = braid_reduce_logsumexp(g, x, 1, (int[]){1}, false);
        ts_range r = TS_RANGE(-20, 20);
        TC_CHECK(g, y, &r, 4, braid_dtype_name(dt));
        braid_graph_free(g);
    }
}
