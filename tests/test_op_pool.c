/* tests/test_op_pool.c — max_pool and avg_pool (docs/ops.md), and the
 * global pools built on the reductions.
 *
 *   - literal values worked by hand (1-D: pads, ceil_mode,
 *     count_include_pad; 2-D: dilation), against the reference evaluator,
 *     the CPU executor and a plan-file round trip;
 *   - random shapes (1-D to 3-D; kernels, strides, dilations, asymmetric
 *     pads, ceil_mode, count_include_pad drawn at random) on the CPU
 *     against the reference, every float dtype (max: i32 too), results
 *     bit-identical on 1 and 3 threads;
 *   - the text format round trip, the builder's errors, GPU plans on the
 *     emulated executor;
 *   - the channels-last form (passes/channels_last.c makes it on GPUs):
 *     the reference's bits equal the channels-first pool's, the CPU and
 *     emulated GPU plans match the reference, text round trip.
 * Tolerances: ts_tolerance of the dtype; max is exact, and an average
 * sums in double and rounds once, like the reference, so f32 matches it
 * bit for bit in practice. */
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

/* ---- literal values --------------------------------------------------------
 */

/* y = pool(x) of a [1, 1, spatial...] f32 input holding 1, 2, 3, ...:
 * the reference, the CPU plan and its plan file all give want[]. */
static void literal(bool max, int rank, const int64_t *dims,
                    const braid_pool_params *pp, int nwant,
                    const double *want) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, rank, dims);
    braid_tensor y = max ? braid_max_pool(g, x, pp) : braid_avg_pool(g, x, pp);
    cr_assert(braid_tensor_valid(y), "%s", braid_graph_error(g));
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    int64_t odims[BRAID_MAX_RANK];
    int orank = 0;
    braid_tensor_info(g, y, NULL, &orank, odims);
    int64_t n = 1;
    for (int i = 0; i < orank; i++)
        n *= odims[i];
    cr_assert_eq(n, nwant, "output elements %lld, want %d", (long long)n,
                 nwant);
    ts_io *io = ts_io_new(g, 1);
    float *in = (float *)io->in[0].data;
    for (size_t i = 0; i < io->in[0].bytes / 4; i++)
        in[i] = (float)(i + 1);
    braid_plan *p = compile_for(g, "cpu", 2);
    size_t size;
    unsigned char *file = pf_save(p, &size);
    braid_plan *q = pf_load(file, size);
    for (int round = 0; round < 3; round++) {
        float *out = round == 0 ? io->ref[0].data : io->out[0].data;
        memset(out, 0, (size_t)n * sizeof *out);
        if (round == 0)
            cr_assert_eq(braid_reference_run(g, io->in, 1, io->ref, 1),
                         BRAID_OK, "%s", braid_last_error());
        else
            cr_assert_eq(pf_run(round == 1 ? p : q, io, false, 0), BRAID_OK,
                         "%s", braid_last_error());
        for (int64_t i = 0; i < n; i++)
            cr_assert(out[i] == want[i] || fabs(out[i] - want[i]) < 1e-6,
                      "round %d element %lld: %g, want %g", round, (long long)i,
                      out[i], want[i]);
    }
    free(file);
    braid_plan_free(q);
    braid_plan_free(p);
    ts_io_free(io);
    braid_graph_free(g);
}

/* x = 1..6: windows of 3 stepping 2; ceil_mode adds the window [4, 6)
 * that hangs past the end. */
Test(op_pool, literal_1d) {
    braid_pool_params pp = {.kernel = {3}, .strides = {2}};
    literal(true, 3, DIMS(1, 1, 6), &pp, 2, (const double[]){3, 5});
    pp.ceil_mode = true;
    literal(true, 3, DIMS(1, 1, 6), &pp, 3, (const double[]){3, 5, 6});
    literal(false, 3, DIMS(1, 1, 6), &pp, 3, (const double[]){2, 4, 5.5});
    /* the hanging window is past the padded input too: 2 counted */
    pp.count_include_pad = true;
    literal(false, 3, DIMS(1, 1, 6), &pp, 3, (const double[]){2, 4, 5.5});
    /* pads 1, 1: windows start at -1, 1, 3 */
    pp = (braid_pool_params){
        .kernel = {3}, .strides = {2}, .pads_lo = {1}, .pads_hi = {1}};
    literal(false, 3, DIMS(1, 1, 6), &pp, 3, (const double[]){1.5, 3, 5});
    pp.count_include_pad = true;
    literal(false, 3, DIMS(1, 1, 6), &pp, 3, (const double[]){1, 3, 5});
    literal(true, 3, DIMS(1, 1, 6), &pp, 3, (const double[]){2, 4, 6});
    /* asymmetric: pad 2 before, 0 after, window 2 */
    pp = (braid_pool_params){.kernel = {2}, .pads_lo = {2}};
    literal(true, 3, DIMS(1, 1, 3), &pp, 4,
            (const double[]){-INFINITY, 1, 2, 3});
}

/* x [1, 1, 4, 5] = 1..20 (row r, column c: 5r + c + 1); a 2 x 2 window at
 * dilation 2 reads rows r, r+2 and columns c, c+2. */
Test(op_pool, literal_2d_dilation) {
    braid_pool_params pp = {.kernel = {2, 2}, .dilations = {2, 2}};
    /* out [2, 3]: max is the bottom-right tap 5(r+2) + c + 3 */
    literal(true, 4, DIMS(1, 1, 4, 5), &pp, 6,
            (const double[]){13, 14, 15, 18, 19, 20});
    /* mean of 5r+c+1, 5r+c+3, 5(r+2)+c+1, 5(r+2)+c+3 = 5r + c + 7 */
    literal(false, 4, DIMS(1, 1, 4, 5), &pp, 6,
            (const double[]){7, 8, 9, 12, 13, 14});
    /* stride 2 in columns, pad 1 on the left: columns -1+2j */
    pp = (braid_pool_params){
        .kernel = {1, 2}, .strides = {1, 2}, .pads_lo = {0, 1}};
    literal(true, 4, DIMS(1, 1, 2, 5), &pp, 6,
            (const double[]){1, 3, 5, 6, 8, 10});
}

/* ---- random shapes on the CPU --------------------------------------------
 */

/* Random pool parameters that fit dims (the spatial axes of x). */
static braid_pool_params random_params(uint64_t *st, int k, int64_t *dims) {
    braid_pool_params pp = {0};
    for (int i = 0; i < k; i++) {
        pp.kernel[i] = ts_rand_int(st, 1, 4);
        pp.strides[i] = ts_rand_int(st, 1, 3);
        pp.dilations[i] = ts_rand_int(st, 1, 2);
        int64_t span = pp.dilations[i] * (pp.kernel[i] - 1) + 1;
        pp.pads_lo[i] = ts_rand_int(st, 0, (int)(span - 1 < 2 ? span - 1 : 2));
        pp.pads_hi[i] = ts_rand_int(st, 0, (int)(span - 1 < 2 ? span - 1 : 2));
        int64_t least = span - pp.pads_lo[i] - pp.pads_hi[i];
        dims[2 + i] = ts_rand_int(st, least > 1 ? (int)least : 1, 12);
    }
    pp.ceil_mode = ts_rand_int(st, 0, 1);
    pp.count_include_pad = ts_rand_int(st, 0, 1);
    return pp;
}

/* One random case: x [N, C, k spatial axes] of dt; 3 threads against the
 * reference, 1 thread bit-identical to 3. */
static void random_case(uint64_t *st, braid_dtype dt, bool max, int k,
                        const char *devices) {
    int64_t dims[5] = {ts_rand_int(st, 1, 3), ts_rand_int(st, 1, 4)};
    braid_pool_params pp = random_params(st, k, dims);
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", dt, 2 + k, dims);
    braid_tensor y =
        max ? braid_max_pool(g, x, &pp) : braid_avg_pool(g, x, &pp);
    cr_assert(braid_tensor_valid(y), "%s", braid_graph_error(g));
    braid_output(g, "y", y);
    bool gpu = strstr(devices, "cuda") != NULL;
    if (gpu) braid_set_device(g, y, "cuda:0");
    braid_plan *p3 = compile_for(g, devices, 3);
    braid_plan *p1 = compile_for(g, devices, 1);
    uint64_t seed = *st;
    ts_io *io = ts_io_new(g, seed), *one = ts_io_new(g, seed);
    ts_range r = dt == BRAID_I32 ? TS_I32_FULL : TS_RANGE(-4, 4);
    ts_fill_input(io, 0, dt, r, seed);
    ts_fill_input(one, 0, dt, r, seed);
    cr_assert_eq(pf_run(p3, io, gpu, 3), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(pf_run(p1, one, gpu, 5), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_reference_run(g, io->in, 1, io->ref, 1), BRAID_OK, "%s",
                 braid_last_error());
    char msg[512];
    bool ok = ts_io_compare(io, msg, sizeof msg);
    if (!ok) ts_log_graph(g);
    cr_assert(ok, "%s %s %d-D: %s", braid_dtype_name(dt), max ? "max" : "avg",
              k, msg);
    cr_assert(pf_same_outputs(io, one), "1 and 3 threads differ");
    ts_io_free(io);
    ts_io_free(one);
    braid_plan_free(p1);
    braid_plan_free(p3);
    braid_graph_free(g);
}

Test(op_pool, cpu_random_shapes, .timeout = 120) {
    uint64_t st = 0x9001;
    for (int i = 0; i < 40; i++) {
        int k = 1 + i % 3;
        TS_FOR_DTYPES(dt, TS_NUMS) {
            random_case(&st, dt, true, k, "cpu");
            if (dt != BRAID_I32) random_case(&st, dt, false, k, "cpu");
        }
    }
}

/* max_pool f32 has its own row loop (max_rows_f32): ResNet's stem shape
 * (3x3, stride 2, pad 1, widths even and odd) against the reference, and
 * NaN: a window holding one gives NaN, the others their max. */
Test(op_pool, cpu_max_f32_rows) {
    const int64_t widths[] = {112, 13};
    for (int t = 0; t < 2; t++) {
        int64_t dims[4] = {2, 3, widths[t], widths[t] + 1};
        braid_pool_params pp = {.kernel = {3, 3},
                                .strides = {2, 2},
                                .pads_lo = {1, 1},
                                .pads_hi = {1, 1}};
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", BRAID_F32, 4, dims);
        braid_tensor y = braid_max_pool(g, x, &pp);
        cr_assert(braid_tensor_valid(y), "%s", braid_graph_error(g));
        braid_output(g, "y", y);
        braid_plan *p = compile_for(g, "cpu", 2);
        ts_io *io = ts_io_new(g, 7 + t);
        ts_fill_input(io, 0, BRAID_F32, TS_RANGE(-4, 4), 7 + t);
        float *in = (float *)io->in[0].data;
        in[dims[3] + 2] = NAN; /* plane 0, row 1, column 2 */
        cr_assert_eq(pf_run(p, io, false, 0), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert_eq(braid_reference_run(g, io->in, 1, io->ref, 1), BRAID_OK,
                     "%s", braid_last_error());
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "width %lld: %s",
                  (long long)widths[t], msg);
        /* output rows 0 and 1 read input row 1 (windows [-1, 2), [1, 4));
         * of their columns only column 1 reads input column 2 */
        const float *out = io->out[0].data;
        int64_t ow = (dims[3] + 2 - 3) / 2 + 1;
        cr_assert(isnan(out[1]) && isnan(out[ow + 1]), "NaN not propagated");
        cr_assert(!isnan(out[0]) && !isnan(out[2]) && !isnan(out[ow]) &&
                      !isnan(out[2 * ow + 1]),
                  "NaN spread too far");
        ts_io_free(io);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* The node on cuda:0, run by the emulated executor (CPU kernels). */
Test(op_pool, gpu_plan_emulated) {
    uint64_t st = 0x9002;
    for (int i = 0; i < 6; i++) {
        random_case(&st, BRAID_F32, i % 2, 1 + i % 3, "cpu,cuda:0");
    }
}

/* ---- global pools -----------------------------------------------------------
 */

/* One reduction over the spatial axes, keepdims: [N, C, 1, 1]. */
Test(op_pool, global_pools) {
    uint64_t st = 0x9003;
    for (int i = 0; i < 6; i++) {
        braid_graph *g = braid_graph_new(NULL);
        int rank = 3 + i % 3;
        int64_t dims[5];
        for (int a = 0; a < rank; a++)
            dims[a] = ts_rand_int(&st, 1, 6);
        braid_tensor x = braid_input(g, "x", BRAID_F32, rank, dims);
        braid_tensor y =
            i % 2 ? braid_global_max_pool(g, x) : braid_global_avg_pool(g, x);
        int orank = 0;
        int64_t od[BRAID_MAX_RANK];
        braid_tensor_info(g, y, NULL, &orank, od);
        cr_assert_eq(orank, rank);
        for (int a = 2; a < rank; a++)
            cr_assert_eq(od[a], 1);
        char msg[512];
        cr_assert(ts_check_graph(g, y, NULL, 7 + (uint64_t)i, msg, sizeof msg),
                  "%s", msg);
        braid_graph_free(g);
    }
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));
    cr_assert_eq(braid_global_max_pool(g, x).id, BRAID_NONE.id);
    cr_assert(strstr(braid_graph_error(g), "global_max_pool"), "%s",
              braid_graph_error(g));
    braid_graph_free(g);
}

/* ---- text format, builder errors ------------------------------------------
 */

Test(op_pool, text_round_trip) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 5, DIMS(2, 3, 5, 6, 7));
    braid_pool_params pp = {.kernel = {2, 3, 1},
                            .strides = {1, 2, 3},
                            .dilations = {2, 1, 1},
                            .pads_lo = {1, 0, 0},
                            .pads_hi = {0, 2, 0},
                            .ceil_mode = true,
                            .count_include_pad = true};
    braid_output(g, "a", braid_avg_pool(g, x, &pp));
    braid_output(g, "m", braid_max_pool(g, x, &pp));
    braid_tensor x1 = braid_input(g, "x1", BRAID_I32, 3, DIMS(1, 2, 9));
    braid_output(g, "b",
                 braid_max_pool(g, x1, &(braid_pool_params){.kernel = {4}}));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(braid_graph_print(g, &text, &len), BRAID_OK);
    cr_assert(strstr(text, "avg_pool %0 kernel_shape=[2,3,1] strides=[1,2,3] "
                           "dilations=[2,1,1] pads=[1,0,0,0,2,0] ceil_mode "
                           "count_include_pad"),
              "%s", text);
    cr_assert(strstr(text, "max_pool %0 kernel_shape=[2,3,1]"), "%s", text);
    braid_graph *h = braid_graph_parse(text, len, "t", NULL);
    cr_assert_eq(braid_graph_status(h), BRAID_OK, "%s", braid_graph_error(h));
    cr_assert(bg_graph_equal(g, h), "%s", text);
    free(text);
    braid_graph_free(h);
    braid_graph_free(g);
    /* max_pool takes no count_include_pad; pads need 2 entries per axis */
    const char *bad[] = {
        "%0 = input x : f32[1,1,4]\n%1 = max_pool %0 kernel_shape=[2] "
        "count_include_pad\n",
        "%0 = input x : f32[1,1,4]\n%1 = avg_pool %0 kernel_shape=[2] "
        "pads=[1]\n",
        "%0 = input x : f32[1,1,4]\n%1 = avg_pool %0 strides=[2]\n",
    };
    for (int i = 0; i < 3; i++) {
        h = braid_graph_parse(bad[i], strlen(bad[i]), "bad", NULL);
        cr_assert_neq(braid_graph_status(h), BRAID_OK, "bad %d", i);
        braid_graph_free(h);
    }
}

/* Bad arguments: a sticky error naming the op and the field. */
Test(op_pool, builder_errors) {
    struct {
        braid_dtype dt;
        int rank;
        int64_t dims[6];
        braid_pool_params pp;
        bool max;
        const char *msg;
    } cases[] = {
        {BRAID_F32, 2, {2, 3}, {.kernel = {1}}, true, "expected [N, C]"},
        {BRAID_F32,
         6,
         {1, 1, 2, 2, 2, 2},
         {.kernel = {1, 1, 1}},
         true,
         "1 to 3 spatial"},
        {BRAID_F32, 3, {1, 1, 4}, {.kernel = {0}}, true, "kernel 0"},
        {BRAID_F32,
         3,
         {1, 1, 4},
         {.kernel = {2}, .strides = {-1}},
         false,
         "stride -1"},
        {BRAID_F32,
         3,
         {1, 1, 4},
         {.kernel = {2}, .pads_lo = {-1}},
         false,
         "pad_lo -1"},
        {BRAID_F32, 3, {1, 1, 4}, {.kernel = {6}}, true, "does not fit"},
        {BRAID_F32,
         3,
         {1, 1, 4},
         {.kernel = {3}, .dilations = {2}},
         true,
         "dilation 2"},
        {BRAID_I32, 3, {1, 1, 4}, {.kernel = {2}}, false, "avg_pool"},
        {BRAID_BOOL, 3, {1, 1, 4}, {.kernel = {2}}, true, "max_pool"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x =
            braid_input(g, "x", cases[i].dt, cases[i].rank, cases[i].dims);
        braid_tensor y = cases[i].max ? braid_max_pool(g, x, &cases[i].pp)
                                      : braid_avg_pool(g, x, &cases[i].pp);
        cr_assert_eq(y.id, BRAID_NONE.id, "case %zu", i);
        cr_assert(strstr(braid_graph_error(g), cases[i].msg),
                  "case %zu: \"%s\"", i, braid_graph_error(g));
        /* sticky */
        cr_assert_eq(braid_max_pool(g, x, &cases[i].pp).id, BRAID_NONE.id);
        braid_graph_free(g);
    }
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 3, DIMS(1, 1, 4));
    cr_assert_eq(braid_max_pool(g, x, NULL).id, BRAID_NONE.id);
    cr_assert(strstr(braid_graph_error(g), "params is NULL"));
    braid_graph_free(g);
}

/* ---- GPU kernels: NVRTC compiles every variant for sm_90 ----------------- */

#ifdef BRAID_HAVE_CUDA
#include "codegen/codegen.h"

/* Max and average of every dtype they take, 1-D to 3-D, count_include_pad
 * and ceil_mode, channels first and (f32) last, on cuda:0: one module,
 * compiled as the GPU would. */
Test(op_pool, kernels_compile_for_sm90, .timeout = 300) {
    setenv("BRAID_CACHE_DIR", "", 1);
    braid_graph *g = braid_graph_new(NULL);
    int n = 0;
    char name[32];
    TS_FOR_DTYPES(dt, TS_NUMS)
    for (int k = 1; k <= 3; k++)
        for (int max = 0; max < 2; max++) {
            if (!max && dt == BRAID_I32) continue;
            int64_t dims[5] = {2, 3, 9, 8, 7};
            braid_pool_params pp = {.kernel = {3, 2, 2},
                                    .strides = {2, 1, 2},
                                    .dilations = {1, 2, 1},
                                    .pads_lo = {1, 0, 1},
                                    .pads_hi = {0, 1, 1},
                                    .ceil_mode = k == 2,
                                    .count_include_pad = k != 1};
            snprintf(name, sizeof name, "x%d", n);
            braid_tensor x = braid_input(g, name, dt, 2 + k, dims);
            braid_tensor y =
                max ? braid_max_pool(g, x, &pp) : braid_avg_pool(g, x, &pp);
            braid_set_device(g, y, "cuda:0");
            snprintf(name, sizeof name, "y%d", n++);
            braid_output(g, name, y);
            if (dt != BRAID_F32) continue;
            y = ts_pool_channels_last(g, x, &pp, max);
            snprintf(name, sizeof name, "y%d", n++);
            braid_output(g, name, y);
        }
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++)
        if (g->nodes[id].op != BRAID_OP_INPUT)
            braid_set_device(g, (braid_tensor){id}, "cuda:0");
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    braid_plan *p = compile_for(g, "cpu,cuda:0", 2);
    bc_source src;
    cr_assert_eq(bc_plan_source(p, &src), BRAID_OK, "%s", braid_last_error());
    int pools = 0;
    for (uint32_t i = 0; i < src.nkernels; i++)
        pools += src.kernels[i].kind == BC_KERNEL_POOL;
    cr_assert_eq(pools, n);
    const char *dump = getenv("BRAID_CODEGEN_DUMP"); /* for reading */
    if (dump && *dump) {
        char path[1024];
        snprintf(path, sizeof path, "%s/pool_zoo.cu", dump);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(src.text, f);
            fclose(f);
        }
    }
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

/* ---- channels last (BG_POOL_CHANNELS_LAST) ------------------------------- */

/* Random pools in the channels-last form: the reference gives the plain
 * pool's bits (the same taps in the same order), and the CPU plan and the
 * emulated GPU plan (its fused-pool path included: relu before the pool)
 * match the reference. */
Test(op_pool, channels_last, .timeout = 120) {
    uint64_t st = 0x9003;
    for (int i = 0; i < 24; i++) {
        int k = 1 + i % 3;
        bool max = i % 2 == 0;
        braid_dtype dt = i % 5 == 4 ? BRAID_F64 : BRAID_F32;
        int64_t dims[5] = {ts_rand_int(&st, 1, 3), ts_rand_int(&st, 1, 5)};
        braid_pool_params pp = random_params(&st, k, dims);
        if (max) pp.count_include_pad = false;
        braid_graph *g = braid_graph_new(NULL), *h = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", dt, 2 + k, dims);
        braid_output(g, "y",
                     max ? braid_max_pool(g, x, &pp)
                         : braid_avg_pool(g, x, &pp));
        braid_tensor hx = braid_input(h, "x", dt, 2 + k, dims);
        braid_tensor r = i % 3 == 0 ? braid_relu(h, hx) : hx;
        braid_output(h, "y", ts_pool_channels_last(h, r, &pp, max));
        if (i % 3 == 0) { /* the same relu in g */
            braid_graph_free(g);
            g = braid_graph_new(NULL);
            x = braid_relu(g, braid_input(g, "x", dt, 2 + k, dims));
            braid_output(g, "y",
                         max ? braid_max_pool(g, x, &pp)
                             : braid_avg_pool(g, x, &pp));
        }
        cr_assert_eq(braid_graph_status(h), BRAID_OK, "%s",
                     braid_graph_error(h));
        ts_io *a = ts_io_new(g, st), *b = ts_io_new(h, st);
        cr_assert_eq(braid_reference_run(g, a->in, 1, a->ref, 1), BRAID_OK,
                     "%s", braid_last_error());
        cr_assert_eq(braid_reference_run(h, b->in, 1, b->ref, 1), BRAID_OK,
                     "%s", braid_last_error());
        cr_assert_eq(memcmp(a->ref[0].data, b->ref[0].data, a->ref[0].bytes), 0,
                     "case %d: the plain pool's bits", i);
        for (int gpu = 0; gpu < 2; gpu++) {
            if (gpu)
                for (uint32_t id = 0; id < braid_graph_node_count(h); id++)
                    if (h->nodes[id].op != BRAID_OP_INPUT)
                        braid_set_device(h, (braid_tensor){id}, "cuda:0");
            braid_plan *p = compile_for(h, gpu ? "cpu,cuda:0" : "cpu", 3);
            cr_assert_eq(pf_run(p, b, gpu, 3), BRAID_OK, "%s",
                         braid_last_error());
            char msg[512];
            cr_assert(ts_io_compare(b, msg, sizeof msg), "case %d %s: %s", i,
                      gpu ? "emulated GPU" : "cpu", msg);
            braid_plan_free(p);
        }
        ts_io_free(a), ts_io_free(b);
        braid_graph_free(g), braid_graph_free(h);
    }
}

/* The text form says channels_last and reads back the same graph. */
Test(op_pool, channels_last_text) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 4, DIMS(2, 3, 7, 6));
    braid_pool_params pp = {.kernel = {3, 2},
                            .strides = {2, 1},
                            .pads_lo = {1, 0},
                            .pads_hi = {1, 1},
                            .ceil_mode = true,
                            .count_include_pad = true};
    braid_output(g, "y", ts_pool_channels_last(g, x, &pp, false));
    ts_assert_text_round_trip(g, " channels_last");
    braid_graph_free(g);
}
