/* tests/test_cuda_pooling.c — max_pool and avg_pool kernels
 * (codegen/pool.c), resize (codegen/resize.c), and the composites pad,
 * rms_norm and the global pools, on a GPU against the reference
 * evaluator. Pools: 1-D to 3-D, random
 * kernels, strides, dilations, asymmetric pads, ceil_mode and
 * count_include_pad, every float dtype (max: i32 too), and ResNet-18's
 * max pool ([8, 64, 112, 112], 3 x 3, stride 2, pad 1) after a relu.
 * Skipped without a CUDA device.
 *
 * Tolerances: ts_tolerance per dtype (f32 1e-4, f16 1e-2, bf16 5e-2, f64
 * 1e-9, atol and rtol alike); max is exact, averages sum in double. */
#include <math.h>

#include "passes/passes.h"
#include "tests/test_cuda_common.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* One random pool of x [N, C, k spatial axes] of dt; channels_last: in
 * that form between permutes (tests/support/op_cases.h), after a relu
 * (a fused pool program) every other time. */
static void pool_case(uint64_t *st, braid_dtype dt, bool max, int k,
                      bool channels_last) {
    int64_t dims[5] = {ts_rand_int(st, 1, 3), ts_rand_int(st, 1, 4)};
    braid_pool_params pp = {0};
    for (int i = 0; i < k; i++) {
        pp.kernel[i] = ts_rand_int(st, 1, 4);
        pp.strides[i] = ts_rand_int(st, 1, 3);
        pp.dilations[i] = ts_rand_int(st, 1, 2);
        int64_t span = pp.dilations[i] * (pp.kernel[i] - 1) + 1;
        int most = (int)(span - 1 < 2 ? span - 1 : 2);
        pp.pads_lo[i] = ts_rand_int(st, 0, most);
        pp.pads_hi[i] = ts_rand_int(st, 0, most);
        int64_t least = span - pp.pads_lo[i] - pp.pads_hi[i];
        dims[2 + i] = ts_rand_int(st, least > 1 ? (int)least : 1, 14);
    }
    pp.ceil_mode = ts_rand_int(st, 0, 1);
    pp.count_include_pad = ts_rand_int(st, 0, 1);
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", dt, 2 + k, dims);
    braid_tensor y;
    if (channels_last) {
        if (max) pp.count_include_pad = false;
        if (*st % 2) x = braid_relu(g, x);
        y = ts_pool_channels_last(g, x, &pp, max);
    } else {
        y = max ? braid_max_pool(g, x, &pp) : braid_avg_pool(g, x, &pp);
    }
    ts_range r = dt == BRAID_I32 ? TS_I32_FULL : TS_RANGE(-4, 4);
    char what[96];
    snprintf(what, sizeof what, "%s_pool %s %d-D%s", max ? "max" : "avg",
             braid_dtype_name(dt), k, channels_last ? " channels last" : "");
    TC_CHECK(g, y, &r, *st, what);
    braid_graph_free(g);
}

Test(cuda_pooling, random_pools, .timeout = 600) {
    TC_REQUIRE_GPU();
    uint64_t st = 0x7001;
    for (int i = 0; i < 24; i++) {
        int k = 1 + i % 3;
        TS_FOR_DTYPES(dt, TS_NUMS) {
            pool_case(&st, dt, true, k, false);
            if (dt != BRAID_I32) pool_case(&st, dt, false, k, false);
        }
    }
    cr_assert_gt(tc_gpu_cases, 0, "no case ran on the GPU");
}

/* The channels-last form (passes/channels_last.c makes it on GPUs). */
Test(cuda_pooling, channels_last_pools, .timeout = 600) {
    TC_REQUIRE_GPU();
    uint64_t st = 0x7005;
    for (int i = 0; i < 12; i++) {
        braid_dtype dt = i % 4 == 3 ? BRAID_F16 : BRAID_F32;
        pool_case(&st, dt, true, 1 + i % 3, true);
        pool_case(&st, dt, false, 1 + i % 3, true);
    }
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 4, DIMS(8, 64, 112, 112));
    braid_pool_params pp = {.kernel = {3, 3},
                            .strides = {2, 2},
                            .pads_lo = {1, 1},
                            .pads_hi = {1, 1}};
    braid_tensor y = ts_pool_channels_last(g, braid_relu(g, x), &pp, true);
    TC_CHECK(g, y, NULL, 13, "resnet max pool channels last");
    braid_graph_free(g);
}

/* ResNet-18's stem: relu then a 3 x 3 max pool, stride 2, pad 1. */
Test(cuda_pooling, resnet_stem, .timeout = 600) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x =
        braid_input(g, "x", BRAID_F32, 4, DIMS(8, 64, 112, 112));
    braid_pool_params pp = {.kernel = {3, 3},
                            .strides = {2, 2},
                            .pads_lo = {1, 1},
                            .pads_hi = {1, 1}};
    braid_tensor y = braid_max_pool(g, braid_relu(g, x), &pp);
    TC_CHECK(g, y, NULL, 11, "resnet max pool");
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 4, DIMS(8, 512, 7, 7));
    TC_CHECK(g, braid_global_avg_pool(g, x), NULL, 12, "global avg pool");
    braid_graph_free(g);
}

/* pad (every mode, negative pads crop) and rms_norm: composites of slices
 * (negative steps for reflect), concat, fill, reductions. */
Test(cuda_pooling, pad_and_rms_norm, .timeout = 600) {
    TC_REQUIRE_GPU();
    uint64_t st = 0x7002;
    for (int i = 0; i < 12; i++) {
        braid_graph *g = braid_graph_new(NULL);
        int rank = 1 + i % 4;
        int64_t dims[4], lo[4], hi[4];
        for (int a = 0; a < rank; a++) {
            /* reflect's limit: at most the cropped axis less one */
            dims[a] = ts_rand_int(&st, 3, 6);
            lo[a] = ts_rand_int(&st, -1, (int)dims[a] - 3);
            hi[a] = ts_rand_int(&st, -1, (int)dims[a] - 3);
        }
        braid_tensor x = braid_input(g, "x", BRAID_F32, rank, dims);
        braid_tensor y = braid_pad(g, x, lo, hi, (braid_pad_mode)(i % 3), 1.5);
        TC_CHECK(g, y, NULL, st, "pad");
        braid_graph_free(g);
    }
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 3, DIMS(4, 33, 768));
    braid_tensor s = braid_input(g, "s", BRAID_F32, 1, DIMS(768));
    TC_CHECK(g, braid_rms_norm(g, x, s, -1, 1e-6), NULL, 3, "rms_norm");
    braid_graph_free(g);
}

/* resize: random trailing axes, modes and coordinate transformations, and
 * a 2x bilinear upsampling of a [2, 64, 56, 56] map. */
Test(cuda_pooling, resize, .timeout = 600) {
    TC_REQUIRE_GPU();
    uint64_t st = 0x7003;
    for (int i = 0; i < 24; i++) {
        int rank = ts_rand_int(&st, 1, 5);
        int k = ts_rand_int(&st, 1, rank < 3 ? rank : 3);
        int64_t dims[5], sizes[5];
        for (int a = 0; a < rank; a++) {
            dims[a] = ts_rand_int(&st, 1, 6);
            sizes[a] = a >= rank - k ? ts_rand_int(&st, 1, 12) : dims[a];
        }
        braid_dtype dt =
            (braid_dtype[]){BRAID_F32, BRAID_F16, BRAID_BF16, BRAID_F64}[i % 4];
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", dt, rank, dims);
        braid_tensor y = braid_resize(g, x, sizes, NULL,
                                      (braid_resize_mode)(i % 2),
                                      (braid_resize_coord)(i / 2 % 4),
                                      (braid_resize_nearest)(i / 3 % 4));
        TC_CHECK(g, y, NULL, st, "resize");
        braid_graph_free(g);
    }
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 4, DIMS(2, 64, 56, 56));
    braid_tensor y =
        braid_resize(g, x, NULL, (const double[]){1, 1, 2, 2},
                     BRAID_RESIZE_LINEAR, BRAID_COORD_PYTORCH_HALF_PIXEL,
                     BRAID_NEAREST_FLOOR);
    TC_CHECK(g, y, NULL, 5, "bilinear x2");
    braid_graph_free(g);
}
