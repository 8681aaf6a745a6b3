/* tests/test_op_resize.c — the resize op (ONNX Resize; docs/ops.md).
 *
 *   - literal values worked by hand: nearest upsampling (asymmetric and
 *     half_pixel, the nearest modes' ties), linear with align_corners and
 *     half_pixel (borders clamped), given scales that are not out / in;
 *   - random shapes (1 to 3 resized trailing axes of rank 1 to 5, every
 *     mode, coordinate transformation and nearest mode, up and down) on
 *     the CPU against the reference, every float dtype, 1 and 3 threads
 *     bit-identical; the emulated GPU executor;
 *   - text round trip, builder errors, NVRTC compile of the GPU kernels.
 * (tests/scripts/resize_vs_onnxruntime.py checks the reference against
 * onnxruntime.) Tolerances: ts_tolerance of the dtype. */
#define _POSIX_C_SOURCE 200809L
#include "tests/planfile_support.h"

#include <math.h>

#include "graph/window.h"
#include "tests/support/op_cases.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

static braid_plan *compile_for(const braid_graph *g, const char *devices,
                               int threads) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.archs = "none";
    o.num_threads = threads;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    return p;
}

/* resize of a 1-D f32 x (rank 1) = xs: reference and CPU give want. */
static void literal(int n, const float *xs, int64_t out, const double *scale,
                    braid_resize_mode m, braid_resize_coord c,
                    braid_resize_nearest nm, const double *want) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(n));
    braid_tensor y = braid_resize(g, x, &out, scale, m, c, nm);
    cr_assert(braid_tensor_valid(y), "%s", braid_graph_error(g));
    braid_output(g, "y", y);
    ts_io *io = ts_io_new(g, 1);
    memcpy((void *)io->in[0].data, xs, (size_t)n * sizeof *xs);
    braid_plan *p = compile_for(g, "cpu", 2);
    cr_assert_eq(pf_run(p, io, false, 0), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_reference_run(g, io->in, 1, io->ref, 1), BRAID_OK);
    const float *o = io->out[0].data, *r = io->ref[0].data;
    for (int64_t i = 0; i < out; i++) {
        cr_assert(fabs(r[i] - want[i]) < 1e-6, "ref %lld: %g, want %g",
                  (long long)i, r[i], want[i]);
        cr_assert_eq(o[i], r[i], "cpu %lld: %g, ref %g", (long long)i, o[i],
                     r[i]);
    }
    ts_io_free(io);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(op_resize, literal_values) {
    const float x4[] = {10, 20, 30, 40};
    /* nearest x2, asymmetric: x/2 floored by round_prefer_floor's ties */
    literal(4, x4, 8, NULL, BRAID_RESIZE_NEAREST, BRAID_COORD_ASYMMETRIC,
            BRAID_NEAREST_ROUND_PREFER_FLOOR,
            (const double[]){10, 10, 20, 20, 30, 30, 40, 40});
    /* ... round_prefer_ceil: 0.5 → 1, 1.5 → 2, 3.5 → 4 clamped to 3 */
    literal(4, x4, 8, NULL, BRAID_RESIZE_NEAREST, BRAID_COORD_ASYMMETRIC,
            BRAID_NEAREST_ROUND_PREFER_CEIL,
            (const double[]){10, 20, 20, 30, 30, 40, 40, 40});
    /* half_pixel x2, floor: (o + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, ... */
    literal(4, x4, 8, NULL, BRAID_RESIZE_NEAREST, BRAID_COORD_HALF_PIXEL,
            BRAID_NEAREST_FLOOR,
            (const double[]){10, 10, 10, 20, 20, 30, 30, 40});
    /* linear, align_corners 4 → 7: x = o / 2 */
    literal(4, x4, 7, NULL, BRAID_RESIZE_LINEAR, BRAID_COORD_ALIGN_CORNERS,
            BRAID_NEAREST_FLOOR,
            (const double[]){10, 15, 20, 25, 30, 35, 40});
    /* linear, half_pixel x2: -0.25 clamps to 0, 3.25 to 3 */
    literal(4, x4, 8, NULL, BRAID_RESIZE_LINEAR, BRAID_COORD_HALF_PIXEL,
            BRAID_NEAREST_FLOOR,
            (const double[]){10, 12.5, 17.5, 22.5, 27.5, 32.5, 37.5, 40});
    /* downsampling 4 → 2, half_pixel: x = 0.5, 2.5 */
    literal(4, x4, 2, NULL, BRAID_RESIZE_LINEAR, BRAID_COORD_HALF_PIXEL,
            BRAID_NEAREST_FLOOR, (const double[]){15, 35});
    /* a given scale 1.25 that leaves 2 elements: x = o / 1.25 + 0.1 - 0.5 */
    const float x2[] = {0, 1};
    literal(2, x2, 2, (const double[]){1.25}, BRAID_RESIZE_LINEAR,
            BRAID_COORD_HALF_PIXEL, BRAID_NEAREST_FLOOR,
            (const double[]){0, 0.7});
    /* pytorch_half_pixel to one element: x = 0 */
    literal(4, x4, 1, NULL, BRAID_RESIZE_LINEAR,
            BRAID_COORD_PYTORCH_HALF_PIXEL, BRAID_NEAREST_FLOOR,
            (const double[]){10});
}

/* One random resize of the trailing k axes of a rank-r input. */
static void random_case(uint64_t *st, braid_dtype dt, const char *devices) {
    int rank = ts_rand_int(st, 1, 5);
    int k = ts_rand_int(st, 1, rank < 3 ? rank : 3);
    int64_t dims[5], sizes[5];
    double scales[5];
    bool use_scales = ts_rand_int(st, 0, 1);
    for (int a = 0; a < rank; a++) {
        dims[a] = ts_rand_int(st, 1, 6);
        sizes[a] = dims[a];
        scales[a] = 1;
        if (a >= rank - k) {
            static const double pick[] = {0.5, 0.75, 1.5, 2, 3, 1.25};
            scales[a] = pick[ts_rand_int(st, 0, 5)];
            sizes[a] = use_scales ? (int64_t)floor((double)dims[a] * scales[a])
                                  : ts_rand_int(st, 1, 11);
            if (sizes[a] < 1) sizes[a] = 1, use_scales = false;
        }
    }
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", dt, rank, dims);
    braid_tensor y = braid_resize(
        g, x, sizes, use_scales ? scales : NULL,
        (braid_resize_mode)ts_rand_int(st, 0, 1),
        (braid_resize_coord)ts_rand_int(st, 0, 3),
        (braid_resize_nearest)ts_rand_int(st, 0, 3));
    cr_assert(braid_tensor_valid(y), "%s", braid_graph_error(g));
    braid_output(g, "y", y);
    bool gpu = strstr(devices, "cuda") != NULL;
    if (gpu) braid_set_device(g, y, "cuda:0");
    braid_plan *p3 = compile_for(g, devices, 3), *p1 = compile_for(g, devices, 1);
    ts_io *io = ts_io_new(g, *st), *one = ts_io_new(g, *st);
    cr_assert_eq(pf_run(p3, io, gpu, 1), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(pf_run(p1, one, gpu, 2), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_reference_run(g, io->in, 1, io->ref, 1), BRAID_OK);
    char msg[512];
    bool ok = ts_io_compare(io, msg, sizeof msg);
    if (!ok) ts_log_graph(g);
    cr_assert(ok, "%s", msg);
    cr_assert(pf_same_outputs(io, one), "1 and 3 threads differ");
    ts_io_free(io);
    ts_io_free(one);
    braid_plan_free(p1);
    braid_plan_free(p3);
    braid_graph_free(g);
}

Test(op_resize, cpu_random_shapes, .timeout = 120) {
    uint64_t st = 0x7e51;
    for (int i = 0; i < 30; i++)
        TS_FOR_DTYPES(dt, TS_FLOATS) random_case(&st, dt, "cpu");
}

Test(op_resize, gpu_plan_emulated) {
    uint64_t st = 0x7e52;
    for (int i = 0; i < 6; i++)
        random_case(&st, BRAID_F32, "cpu,cuda:0");
}

Test(op_resize, text_round_trip) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 4, DIMS(2, 3, 5, 6));
    braid_output(g, "a",
                 braid_resize(g, x, NULL, (const double[]){1, 1, 1.5, 0.75},
                              BRAID_RESIZE_LINEAR, BRAID_COORD_ALIGN_CORNERS,
                              BRAID_NEAREST_CEIL));
    braid_output(g, "b", braid_resize(g, x, DIMS(2, 3, 10, 3), NULL,
                                      BRAID_RESIZE_NEAREST,
                                      BRAID_COORD_PYTORCH_HALF_PIXEL,
                                      BRAID_NEAREST_ROUND_PREFER_CEIL));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(braid_graph_print(g, &text, &len), BRAID_OK);
    cr_assert(strstr(text, "resize %0 shape=[2,3,7,4] scales=[1,1,1.5,0.75] "
                           "mode=linear coordinate_transformation_mode="
                           "align_corners nearest_mode=ceil"),
              "%s", text);
    braid_graph *h = braid_graph_parse(text, len, "t", NULL);
    cr_assert_eq(braid_graph_status(h), BRAID_OK, "%s", braid_graph_error(h));
    cr_assert(bg_graph_equal(g, h), "%s", text);
    free(text);
    braid_graph_free(h);
    braid_graph_free(g);
    const char *bad[] = {
        "braid-graph 1\n%0 = input f32[1,4] name=\"x\"\n"
        "%1 = resize %0 shape=[1,8] mode=cubic\n",
        "braid-graph 1\n%0 = input f32[1,4] name=\"x\"\n"
        "%1 = resize %0 shape=[1,8] scales=[1] mode=linear\n",
        "braid-graph 1\n%0 = input f32[1,4] name=\"x\"\n"
        "%1 = resize %0 shape=[1,8]\n",
    };
    for (int i = 0; i < 3; i++) {
        h = braid_graph_parse(bad[i], strlen(bad[i]), "bad", NULL);
        cr_assert_neq(braid_graph_status(h), BRAID_OK, "bad %d", i);
        braid_graph_free(h);
    }
}

Test(op_resize, builder_errors) {
    struct {
        braid_dtype dt;
        int64_t sizes[5];
        const double *scales;
        const char *msg;
    } cases[] = {
        {BRAID_I32, {2, 3, 4, 5, 6}, NULL, "float"},
        {BRAID_F32, {3, 3, 4, 5, 6}, NULL, "only the last 3 axes"},
        {BRAID_F32, {2, 3, 4, 5, -1}, NULL, "size -1"},
        {BRAID_F32, {2, 3, 4, 5, 6}, (const double[]){1, 1, 1, 1, -2},
         "scale -2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x =
            braid_input(g, "x", cases[i].dt, 5, DIMS(2, 3, 4, 5, 6));
        braid_tensor y =
            braid_resize(g, x, cases[i].sizes, cases[i].scales,
                         BRAID_RESIZE_LINEAR, BRAID_COORD_HALF_PIXEL,
                         BRAID_NEAREST_FLOOR);
        cr_assert_eq(y.id, BRAID_NONE.id, "case %zu", i);
        cr_assert(strstr(braid_graph_error(g), cases[i].msg), "case %zu: %s",
                  i, braid_graph_error(g));
        braid_graph_free(g);
    }
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(4));
    cr_assert_eq(braid_resize(g, x, NULL, NULL, BRAID_RESIZE_LINEAR,
                              BRAID_COORD_HALF_PIXEL, BRAID_NEAREST_FLOOR)
                     .id,
                 BRAID_NONE.id);
    cr_assert(strstr(braid_graph_error(g), "both NULL"));
    braid_graph_free(g);
}

#ifdef BRAID_HAVE_CUDA
#include "codegen/codegen.h"

/* Every mode and dtype, 1 to 3 resized axes: one module, NVRTC, sm_90. */
Test(op_resize, kernels_compile_for_sm90, .timeout = 300) {
    setenv("BRAID_CACHE_DIR", "", 1);
    braid_graph *g = braid_graph_new(NULL);
    int n = 0;
    char name[32];
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (int rank = 1; rank <= 4; rank++)
        for (int m = 0; m < 2; m++) {
            int64_t dims[4] = {2, 3, 4, 5}, sizes[4] = {2, 3, 4, 5};
            sizes[rank - 1] = 9;
            snprintf(name, sizeof name, "x%d", n);
            braid_tensor x = braid_input(g, name, dt, rank, dims);
            braid_tensor y = braid_resize(g, x, sizes, NULL,
                                          (braid_resize_mode)m,
                                          (braid_resize_coord)(n % 4),
                                          (braid_resize_nearest)(n % 4));
            braid_set_device(g, y, "cuda:0");
            snprintf(name, sizeof name, "y%d", n++);
            braid_output(g, name, y);
        }
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    braid_plan *p = compile_for(g, "cpu,cuda:0", 2);
    bc_source src;
    cr_assert_eq(bc_plan_source(p, &src), BRAID_OK, "%s", braid_last_error());
    int kernels = 0;
    for (uint32_t i = 0; i < src.nkernels; i++)
        kernels += src.kernels[i].kind == BC_KERNEL_RESIZE;
    cr_assert_eq(kernels, n);
    bc_binary bin;
    char err[16384];
    braid_status s =
        bc_compile(src.text, "kernel.cu", 90, &bin, err, sizeof err);
    cr_assert_eq(s, BRAID_OK, "%s", err);
    bc_binary_free(&bin);
    bc_source_free(&src);
    braid_plan_free(p);
    braid_graph_free(g);
}
#endif
