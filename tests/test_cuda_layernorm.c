/* tests/test_cuda_layernorm.c — the layer_norm op's kernel
 * (codegen/layernorm.c) on a GPU against the reference evaluator: f32,
 * f16, bf16, f64; rows of 1, 7, 33 (sub-warp groups), 768, 1000 (a warp
 * per row), 8192 (a block per row, registers) and 20000 / 20001 (the
 * long-row path); with gamma and beta and without (fills of 1 and 0);
 * values offset from 0; an input 4 bytes off 16-byte alignment; GPT-2's
 * shape [128, 768]. Every plan is checked to hold one layer_norm node on
 * cuda:0. Skipped without a CUDA device.
 *
 * Tolerances: ts_tolerance per dtype (f32 1e-4, f16 1e-2, bf16 5e-2, f64
 * 1e-9, atol and rtol alike). */
#include <math.h>

#include "passes/passes.h"
#include "tests/test_cuda_common.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

static void one_case(braid_dtype dt, int64_t rows, int64_t C, bool affine,
                     ts_range r, uint64_t seed) {
    char what[160];
    snprintf(what, sizeof what, "layer_norm %s [%lld, %lld]%s in [%g, %g]",
             braid_dtype_name(dt), (long long)rows, (long long)C,
             affine ? " affine" : "", r.lo, r.hi);
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", dt, 2, DIMS(rows, C));
    braid_tensor gm = BRAID_NONE, bt = BRAID_NONE;
    ts_range ranges[3] = {r, TS_RANGE(0.5, 2), TS_RANGE(-1, 1)};
    if (affine) {
        gm = braid_input(g, "gamma", dt, 1, &C);
        bt = braid_input(g, "beta", dt, 1, &C);
    }
    braid_tensor y = braid_layer_norm(g, x, gm, bt, 1e-5);
    TC_CHECK(g, y, ranges, seed, what);
    tc_assert_one_on_gpu(g, BRAID_OP_LAYER_NORM, what);
    braid_graph_free(g);
}

static const int64_t lengths[] = {1, 7, 33, 768, 1000, 8192, 20000, 20001};

Test(cuda_layernorm, every_dtype_and_row_length, .timeout = 600) {
    TC_REQUIRE_GPU();
    uint64_t seed = 1;
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (size_t i = 0; i < sizeof lengths / sizeof *lengths; i++) {
        int64_t C = lengths[i], rows = C >= 8192 ? 5 : 67;
        one_case(dt, rows, C, true, TS_RANGE(-4, 4), seed++);
        one_case(dt, rows, C, false, TS_RANGE(-4, 4), seed++);
    }
    one_case(BRAID_F32, 9, 768, true, TS_RANGE(10, 11), seed++);
    one_case(BRAID_F64, 9, 20001, true, TS_RANGE(1e3, 1e3 + 1), seed++);
    cr_assert_gt(tc_gpu_cases, 0, "no case ran on the GPU");
}

/* GPT-2 small's layer norms: 128 tokens of width 768. */
Test(cuda_layernorm, gpt2_shape) {
    TC_REQUIRE_GPU();
    one_case(BRAID_F32, 128, 768, true, TS_RANGE(-4, 4), 77);
    one_case(BRAID_F16, 128, 768, true, TS_RANGE(-4, 4), 78);
}

/* x a view 4 bytes into its input. */
Test(cuda_layernorm, misaligned_input) {
    TC_REQUIRE_GPU();
    const int64_t lens[] = {64, 8192, 20000};
    for (int i = 0; i < 3; i++) {
        int64_t C = lens[i], n = 3 * C + 1;
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor flat = braid_input(g, "flat", BRAID_F32, 1, &n);
        braid_tensor sl = braid_slice(g, flat, DIMS(1), &n, NULL);
        braid_tensor x = braid_reshape(g, sl, 2, DIMS(3, C));
        braid_tensor y = braid_layer_norm(g, x, BRAID_NONE, BRAID_NONE, 1e-5);
        ts_range r = TS_RANGE(-4, 4);
        char what[64];
        snprintf(what, sizeof what, "misaligned [3, %lld]", (long long)C);
        TC_CHECK(g, y, &r, 9 + (uint64_t)i, what);
        braid_graph_free(g);
    }
}
