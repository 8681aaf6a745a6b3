/* tests/test_op_conv.c — the conv ops (conv, conv_transpose; docs/ops.md).
 *
 *   - the reference's meaning on literal values (a 1-D conv worked by hand)
 *     and conv_transpose as the adjoint of conv: <conv(x, w), y> equals
 *     <x, conv_transpose(y, w)> for the same attributes, checked in the
 *     reference on random shapes (so neither rule checks itself);
 *   - the CPU kernel (im2col + OpenBLAS) against the reference on random
 *     shapes: 1-D, 2-D and 3-D, strides 1..3, dilations 1..2, asymmetric
 *     pads, groups (depthwise included), bias or not, output_padding, f32
 *     and f64; the 1×1 direct path; 3×3 stride-1 convolutions through
 *     Winograd F(4×4, 3×3) and F(2×2, 3×3); the other 2-D convs straight
 *     from the input (cpu_kernels_conv_direct.c: tiles of 14 and 7 pixels,
 *     an output written over its residual); products large enough for the
 *     split path (im2col and the GEMM's blocks over the pool);
 *   - GPU plans on the emulated executor against the reference;
 *   - the channels-last form (passes/channels_last.c makes it for GPUs):
 *     the reference gives the channels-first bits, the CPU's direct loops
 *     and emulated GPU plans match the reference, the text form round
 *     trips, and a malformed one is refused;
 *   - text and plan files round-trip (output_padding folded in included);
 *   - bad attributes and operands: a sticky error naming the op and what
 *     is wrong; f16 on the CPU refused at executor creation.
 * Tolerances: ts_tolerance of the dtype (f32 1e-4, f64 1e-9). */
#define _POSIX_C_SOURCE 200809L
#include "tests/planfile_support.h"

#include <math.h>

#include "graph/eval.h"
#include "runtime/cpu/cpu_kernels.h"
#include "tests/support/conv_cases.h"
#include "tests/support/op_cases.h"
#ifdef BRAID_HAVE_CUDA
#include "codegen/codegen.h"
#endif

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* Hints every node but the inputs to cuda:0. */
static void hint_gpu(braid_graph *g) {
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++)
        if (g->nodes[id].op != BRAID_OP_INPUT)
            braid_set_device(g, (braid_tensor){id}, "cuda:0");
}

/* Runs g compiled for devices (emulated when a GPU is named) against the
 * reference on fresh random inputs. */
static void check_run(const braid_graph *g, const char *devices, uint64_t seed,
                      const char *what) {
    braid_plan *p = pf_compile(g, devices);
    ts_io *io = ts_io_new(g, seed);
    cr_assert(io);
    cr_assert_eq(pf_run(p, io, strstr(devices, "cuda") != NULL, seed), BRAID_OK,
                 "%s: %s", what, braid_last_error());
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s: %s", what, braid_last_error());
    char msg[512];
    bool ok = ts_io_compare(io, msg, sizeof msg);
    if (!ok) ts_log_graph(g);
    cr_assert(ok, "%s: %s", what, msg);
    ts_io_free(io);
    braid_plan_free(p);
}

/* g's plan on 1 and on 3 CPU threads gives the same bits (the kernels'
 * blocks and chunks depend on the shape alone). */
/* g compiled for the cpu with `threads` threads, asserting success. */
static braid_plan *compile_cpu(const braid_graph *g, int threads) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    o.num_threads = threads;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    return p;
}

static void same_bits_on_1_and_3_threads(const braid_graph *g, uint64_t seed,
                                         const char *what) {
    ts_io *io[2];
    for (int k = 0; k < 2; k++) {
        braid_plan *p = compile_cpu(g, k ? 3 : 1);
        io[k] = ts_io_new(g, seed);
        cr_assert_eq(pf_run(p, io[k], false, 0), BRAID_OK, "%s",
                     braid_last_error());
        braid_plan_free(p);
    }
    cr_assert(pf_same_outputs(io[0], io[1]), "%s: 1 and 3 threads differ",
              what);
    ts_io_free(io[0]), ts_io_free(io[1]);
}

/* ---- the meaning --------------------------------------------------------- */

/* y[o] = sum_k x[o·2 - 1 + 2k] w[k] + b over x = 1..6, w = (1, 10, 100),
 * stride 2, dilation 2, pads (1, 2): worked by hand. */
Test(op_conv, reference_literal_1d) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F64, 3, DIMS(1, 1, 6));
    braid_tensor w = braid_input(g, "w", BRAID_F64, 3, DIMS(1, 1, 3));
    braid_tensor b = braid_input(g, "b", BRAID_F64, 1, DIMS(1));
    braid_conv_params p = {.strides = {2}, .dilations = {2}, .pads = {1, 2}};
    braid_tensor y = braid_conv(g, x, w, b, &p);
    /* padded: 0 1 2 3 4 5 6 0 0 (9); span 5; out = (6+3-5)/2+1 = 3 */
    double xv[6] = {1, 2, 3, 4, 5, 6}, wv[3] = {1, 10, 100}, bv = 0.5;
    double want[3] = {0 * 1 + 2 * 10 + 4 * 100 + bv,
                      2 * 1 + 4 * 10 + 6 * 100 + bv,
                      4 * 1 + 6 * 10 + 0 * 100 + bv};
    braid_input_binding in[3] = {
        {"x", xv, sizeof xv}, {"w", wv, sizeof wv}, {"b", &bv, sizeof bv}};
    double out[3];
    ts_run_ref(g, y, in, 3, out, sizeof out);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(out[i], want[i], "y[%d] = %g, want %g", i, out[i],
                     want[i]);
    braid_graph_free(g);
}

/* <conv(x, w), u> = <x, conv_transpose(u, w)>: conv_transpose is conv's
 * adjoint in x when output_padding makes its result x's shape. */
Test(op_conv, transpose_is_the_adjoint) {
    uint64_t st = 11;
    for (int t = 0; t < 40; t++) {
        ts_conv_case c = ts_conv_random_case(&st, false);
        c.bias = false;
        braid_graph *g = ts_conv_case_graph(&c, BRAID_F64);
        const bg_node *y = bg_node_at(g, g->outputs[0].node);
        /* conv_transpose of a y-shaped u with the same w, pads, strides;
         * output_padding restores the rows conv's floor dropped */
        ts_conv_case ct = c;
        ct.transpose = true;
        for (int i = 0; i < c.s; i++) {
            int64_t span = (c.k[i] - 1) * c.p.dilations[i] + 1;
            int64_t full = c.p.strides[i] * (y->dims[2 + i] - 1) + span -
                           c.p.pads[i] - c.p.pads[c.s + i];
            ct.p.output_padding[i] = c.in[i] - full;
            ct.in[i] = y->dims[2 + i];
        }
        bool representable = true;
        for (int i = 0; i < c.s; i++) {
            int64_t lim = c.p.strides[i] > c.p.dilations[i] ? c.p.strides[i]
                                                            : c.p.dilations[i];
            representable &=
                ct.p.output_padding[i] >= 0 && ct.p.output_padding[i] < lim;
        }
        if (!representable) {
            braid_graph_free(g);
            continue;
        }
        ct.Cg = c.OCg; /* transposed roles: w [C, OC/G] = conv's w */
        ct.OCg = c.Cg;
        braid_graph *h = ts_conv_case_graph(&ct, BRAID_F64);
        int64_t nx = c.N * c.G * c.Cg, ny = bg_numel(y),
                nw = c.G * c.OCg * c.Cg;
        for (int i = 0; i < c.s; i++) {
            nx *= c.in[i];
            nw *= c.k[i];
        }
        double *xv = malloc((size_t)nx * 8), *uv = malloc((size_t)ny * 8);
        double *wv = malloc((size_t)nw * 8), *cy = malloc((size_t)ny * 8);
        double *tx = malloc((size_t)nx * 8);
        ts_fill_random(BRAID_F64, xv, nx, st + 1, -1, 1);
        ts_fill_random(BRAID_F64, uv, ny, st + 2, -1, 1);
        ts_fill_random(BRAID_F64, wv, nw, st + 3, -1, 1);
        braid_input_binding a[2] = {{"x", xv, (size_t)nx * 8},
                                    {"w", wv, (size_t)nw * 8}};
        braid_input_binding b[2] = {{"x", uv, (size_t)ny * 8},
                                    {"w", wv, (size_t)nw * 8}};
        braid_output_binding oa = {"y", cy, (size_t)ny * 8};
        braid_output_binding ob = {"y", tx, (size_t)nx * 8};
        cr_assert_eq(braid_reference_run(g, a, 2, &oa, 1), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert_eq(braid_reference_run(h, b, 2, &ob, 1), BRAID_OK, "%s",
                     braid_last_error());
        double l = 0, r = 0, mag = 0;
        for (int64_t i = 0; i < ny; i++) {
            l += cy[i] * uv[i];
            mag += fabs(cy[i] * uv[i]);
        }
        for (int64_t i = 0; i < nx; i++)
            r += xv[i] * tx[i];
        char buf[400];
        cr_assert(fabs(l - r) <= 1e-9 * (mag + 1), "%s: %.17g vs %.17g",
                  ts_conv_case_str(&c, buf, sizeof buf), l, r);
        free(xv), free(uv), free(wv), free(cy), free(tx);
        braid_graph_free(g);
        braid_graph_free(h);
    }
}

/* ---- the CPU kernel
 * ---------------------------------------------------------- */

Test(op_conv, cpu_random_shapes, .timeout = 120) {
    uint64_t st = 7;
    for (int t = 0; t < 120; t++) {
        ts_conv_case c = ts_conv_random_case(&st, t % 2 == 1);
        braid_dtype dt = t % 3 == 2 ? BRAID_F64 : BRAID_F32;
        braid_graph *g = ts_conv_case_graph(&c, dt);
        char buf[400];
        check_run(g, "cpu", 100 + (uint64_t)t,
                  ts_conv_case_str(&c, buf, sizeof buf));
        braid_graph_free(g);
    }
}

/* A 1×1 conv with stride 1 and no pads multiplies x itself; with stride 2
 * it goes through im2col. */
Test(op_conv, cpu_pointwise) {
    for (int s = 1; s <= 2; s++) {
        ts_conv_case c = {.s = 2,
                          .N = 2,
                          .G = 1,
                          .Cg = 5,
                          .OCg = 7,
                          .in = {6, 5, 1},
                          .k = {1, 1, 1},
                          .bias = true};
        c.p.strides[0] = c.p.strides[1] = s;
        braid_graph *g = ts_conv_case_graph(&c, BRAID_F32);
        check_run(g, "cpu", 3, s == 1 ? "1x1 direct" : "1x1 stride 2");
        braid_graph_free(g);
    }
}

/* With braid's own GEMM (x86-64 with AVX-512F; elsewhere OpenBLAS runs
 * the same case), an f32 conv's col is packed per run in blocks of at most
 * 8 MiB of panels: a 1×1 conv over 400×399 positions of 16 channels
 * (10 MB of col) takes two blocks (4096 panels of 32 columns, then 891½),
 * the last panel half full. Against the reference, and the same bits on
 * 1 and 3 threads. */
Test(op_conv, cpu_col_in_pack_blocks, .timeout = 120) {
    ts_conv_case c = {.s = 2,
                      .N = 1,
                      .G = 1,
                      .Cg = 16,
                      .OCg = 13,
                      .in = {400, 399, 1},
                      .k = {1, 1, 1},
                      .bias = true};
    braid_graph *g = ts_conv_case_graph(&c, BRAID_F32);
    check_run(g, "cpu", 11, "1x1 16->13 over 400x399");
    same_bits_on_1_and_3_threads(g, 11, "1x1 16->13 over 400x399");
    braid_graph_free(g);
}

/* Products above one thread's share: im2col and col2im over the pool,
 * the GEMM split in blocks over it too (br_gemm: the 3×3 one by columns,
 * the transpose by rows) (ResNet's 3×3 stride-1 and stride-2 shapes,
 * scaled down; a depthwise layer with many groups). */
Test(op_conv, cpu_large_split_path, .timeout = 120) {
    ts_conv_case a = {.s = 2,
                      .N = 2,
                      .G = 1,
                      .Cg = 16,
                      .OCg = 32,
                      .in = {28, 28, 1},
                      .k = {3, 3, 1},
                      .bias = true,
                      .p = {.pads = {1, 1, 1, 1}}};
    braid_graph *g = ts_conv_case_graph(&a, BRAID_F32);
    check_run(g, "cpu", 5, "3x3 16->32 28x28");
    braid_graph_free(g);
    ts_conv_case b = a;
    b.p.strides[0] = b.p.strides[1] = 2;
    b.p.pads[2] = b.p.pads[3] = 0; /* asymmetric */
    g = ts_conv_case_graph(&b, BRAID_F32);
    check_run(g, "cpu", 6, "3x3 stride 2, pads (1,1,0,0)");
    braid_graph_free(g);
    ts_conv_case t = a;
    t.transpose = true;
    t.p.strides[0] = t.p.strides[1] = 2;
    t.p.output_padding[0] = t.p.output_padding[1] = 1;
    t.in[0] = t.in[1] = 14;
    g = ts_conv_case_graph(&t, BRAID_F32);
    check_run(g, "cpu", 7, "conv_transpose 3x3 stride 2 16->32");
    braid_graph_free(g);
    ts_conv_case d = {.s = 2,
                      .N = 3,
                      .G = 48,
                      .Cg = 1,
                      .OCg = 1,
                      .in = {20, 20, 1},
                      .k = {3, 3, 1},
                      .bias = false,
                      .p = {.pads = {1, 1, 1, 1}, .groups = 48}};
    g = ts_conv_case_graph(&d, BRAID_F32);
    check_run(g, "cpu", 8, "depthwise 48 channels");
    braid_graph_free(g);
}

/* 3×3 stride-1 f32 convolutions with 16 or more channels each way run as
 * Winograd F(4×4, 3×3) or F(2×2, 3×3) (runtime/cpu/cpu_kernels_winograd.c,
 * the tile from the output planes): random batches, channels, planes (odd
 * sizes, a single row or column: partial tiles), pads 0..2 at each end
 * (asymmetric, more output than input), bias or not, against the reference
 * at f32's tolerance; chunks of tiles when the planes are large. Both tiles
 * come up. */
Test(op_conv, cpu_winograd, .timeout = 120) {
    uint64_t st = 31;
    int tiles[5] = {0};
    for (int t = 0; t < 40; t++) {
        ts_conv_case c = {.s = 2,
                          .N = ts_rand_int(&st, 1, 3),
                          .G = 1,
                          .Cg = ts_rand_int(&st, 16, 40),
                          .OCg = ts_rand_int(&st, 16, 40),
                          .in = {ts_rand_int(&st, 1, 13),
                                 ts_rand_int(&st, 1, 13), 1},
                          .k = {3, 3, 1},
                          .bias = t % 2 == 0};
        for (int i = 0; i < 4; i++)
            c.p.pads[i] = ts_rand_int(&st, 0, 2);
        if (t == 39) { /* 3 × 70×70 planes, 16 channels: 3675 tiles in
                          four chunks of 919 and 918 (a chunk's 2 MiB hold
                          1024 tiles of 32 channels): on 3 threads, waves
                          of whole chunks per thread */
            c.N = 3, c.Cg = c.OCg = 16, c.in[0] = c.in[1] = 70;
            for (int i = 0; i < 4; i++) c.p.pads[i] = 1;
        }
        if (c.in[0] + c.p.pads[0] + c.p.pads[2] < 3 ||
            c.in[1] + c.p.pads[1] + c.p.pads[3] < 3)
            c.p.pads[0] = c.p.pads[1] = c.p.pads[2] = c.p.pads[3] = 2;
        braid_graph *g = ts_conv_case_graph(&c, BRAID_F32);
        bg_conv_geom geo;
        cr_assert(bg_conv_geom_of(g, &g->nodes[g->nnodes - 1], &geo));
        cr_assert(br_winograd_applies(&geo, BRAID_F32));
        tiles[br_winograd_tile(&geo)]++;
        char buf[400];
        check_run(g, "cpu", 300 + (uint64_t)t,
                  ts_conv_case_str(&c, buf, sizeof buf));
        if (t % 8 == 0 || t == 39)
            same_bits_on_1_and_3_threads(g, 300 + (uint64_t)t, buf);
        braid_graph_free(g);
    }
    cr_assert(tiles[2] > 0, "no case ran F(2x2, 3x3)");
    if (!getenv("BRAID_CPU_WINOGRAD"))
        cr_assert(tiles[4] > 0, "no case ran F(4x4, 3x3)");
}

/* F(4×4, 3×3) rounds more than F(2×2) (its transforms' coefficients reach
 * 5/2 and 8), and more with more channels. Its stated bound: at 256 input
 * channels, inputs and weights in [−1, 1], every output within 1e-5 of the
 * largest output's magnitude of the reference (measured: about 4e-6; a
 * direct sum's reordering gives about 5e-7). */
Test(op_conv, cpu_winograd_f4_rounding, .timeout = 120) {
    if (getenv("BRAID_CPU_WINOGRAD")) cr_skip_test("BRAID_CPU_WINOGRAD set");
    ts_conv_case c = {.s = 2,
                      .N = 1,
                      .G = 1,
                      .Cg = 256,
                      .OCg = 32,
                      .in = {14, 14, 1},
                      .k = {3, 3, 1},
                      .p = {.pads = {1, 1, 1, 1}}};
    braid_graph *g = ts_conv_case_graph(&c, BRAID_F32);
    bg_conv_geom geo;
    cr_assert(bg_conv_geom_of(g, &g->nodes[g->nnodes - 1], &geo));
    cr_assert(br_winograd_applies(&geo, BRAID_F32));
    cr_assert_eq(br_winograd_tile(&geo), 4);
    braid_plan *p = pf_compile(g, "cpu");
    ts_io *io = ts_io_new(g, 77);
    cr_assert(io);
    cr_assert_eq(pf_run(p, io, false, 77), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s", braid_last_error());
    const float *y = io->out[0].data, *r = io->ref[0].data;
    double big = 0, worst = 0;
    for (int64_t i = 0; i < io->out_numel[0]; i++)
        if (fabs(r[i]) > big) big = fabs(r[i]);
    for (int64_t i = 0; i < io->out_numel[0]; i++)
        if (fabs((double)y[i] - r[i]) > worst)
            worst = fabs((double)y[i] - r[i]);
    cr_assert_gt(big, 10.0, "the outputs are too small to measure: %g", big);
    cr_assert_leq(worst, 1e-5 * big, "F(4x4) error %g against max |ref| %g",
                  worst, big);
    ts_io_free(io);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* 2-D f32 convolutions of one group, kernels larger than 1×1, dilation 1,
 * column stride 1 or 2 and more than 16 output channels run straight from
 * their input where braid's GEMM runs (runtime/cpu/cpu_kernels_conv_direct.c):
 * random batches, channels (partial blocks of 32 and 64 channels),
 * kernels up to 5 each way, strides 1..3 down and 1..2 across, pads 0..3
 * at each end, planes whose output rows hold fewer than 7 pixels, 7..13,
 * exactly 14 and more (tiles of 7 and of 14 pixels, extra pixels read on
 * into the next row, a last tile shifted left), bias or not, against the
 * reference at f32's tolerance, and the same bits on 1 and 3 threads. */
Test(op_conv, cpu_direct, .timeout = 120) {
    uint64_t st = 47;
    int rows[4] = {0}, sevens = 0; /* output rows <7, 7..13, 14, >14 */
    for (int t = 0; t < 40; t++) {
        ts_conv_case c = {
            .s = 2,
            .N = ts_rand_int(&st, 1, 3),
            .G = 1,
            .Cg = ts_rand_int(&st, 1, 12),
            .OCg = ts_rand_int(&st, 17, 80),
            .in = {ts_rand_int(&st, 1, 14), ts_rand_int(&st, 1, 44), 1},
            .k = {ts_rand_int(&st, 1, 5), ts_rand_int(&st, 1, 5), 1},
            .bias = t % 2 == 0};
        if (c.k[0] == 1 && c.k[1] == 1) c.k[1] = 2;
        c.p.strides[0] = ts_rand_int(&st, 1, 3);
        c.p.strides[1] = ts_rand_int(&st, 1, 2);
        for (int i = 0; i < 4; i++)
            c.p.pads[i] = ts_rand_int(&st, 0, 3);
        for (int i = 0; i < 2; i++) /* the kernel fits the padded input */
            if (c.in[i] + c.p.pads[i] + c.p.pads[i + 2] < c.k[i])
                c.p.pads[i + 2] = c.k[i] - c.in[i] - c.p.pads[i];
        braid_graph *g = ts_conv_case_graph(&c, BRAID_F32);
        bg_conv_geom geo;
        cr_assert(bg_conv_geom_of(g, &g->nodes[g->nnodes - 1], &geo));
        char buf[400];
        ts_conv_case_str(&c, buf, sizeof buf);
        bool winograd = br_winograd_applies(&geo, BRAID_F32);
        if (br_conv_direct_applies(&geo, BRAID_F32)) {
            int64_t ow = geo.out[1];
            rows[ow < 7 ? 0 : ow < 14 ? 1 : ow == 14 ? 2 : 3]++;
            sevens += ow <= 7 && geo.OC > 32;
        } else if (br_sgemm_enabled() && !getenv("BRAID_CPU_CONV"))
            cr_assert(winograd, "%s: not run direct", buf);
        check_run(g, "cpu", 400 + (uint64_t)t, buf);
        if (t % 5 == 0) same_bits_on_1_and_3_threads(g, 400 + (uint64_t)t, buf);
        braid_graph_free(g);
    }
    if (!br_sgemm_enabled() || getenv("BRAID_CPU_CONV"))
        cr_skip_test("the direct conv does not run here (braid's GEMM off, "
                     "or BRAID_CPU_CONV set): the cases ran on im2col");
    for (int i = 0; i < 4; i++)
        cr_assert(rows[i] > 0, "no case with output rows of kind %d", i);
    cr_assert(sevens > 0, "no case ran tiles of 7 pixels");
}

/* The direct conv's output may be the residual it adds (the memory
 * planner lets a fused conv write over a residual it alone reads): each
 * residual is read before the pixel is written, the shifted last tile of
 * a row included. br_conv_direct_run with y = ep.res against a separate
 * output: the same bits. */
Test(op_conv, cpu_direct_in_place_residual) {
    ts_conv_case c = {.s = 2,
                      .N = 2,
                      .G = 1,
                      .Cg = 3,
                      .OCg = 40,
                      .in = {6, 19, 1},
                      .k = {3, 3, 1},
                      .bias = true,
                      .p = {.pads = {1, 1, 1, 1}}};
    braid_graph *g = ts_conv_case_graph(&c, BRAID_F32);
    bg_conv_geom geo;
    cr_assert(bg_conv_geom_of(g, &g->nodes[g->nnodes - 1], &geo));
    if (!br_conv_direct_applies(&geo, BRAID_F32))
        cr_skip_test("the direct conv does not run here");
    cr_assert_eq(geo.out[1], 19); /* tiles at 0 and 5: 9 pixels twice */
    ts_io *io = ts_io_new(g, 91);
    cr_assert(io);
    size_t bytes = io->out[0].bytes, sbytes = br_conv_direct_scratch(&geo);
    int64_t n = (int64_t)(bytes / sizeof(float));
    float *res = malloc(bytes), *apart = malloc(bytes),
          *inplace = malloc(bytes);
    void *scratch = aligned_alloc(64, (sbytes + 63) / 64 * 64);
    cr_assert(res && apart && inplace && scratch);
    for (int64_t i = 0; i < n; i++)
        res[i] = (float)((i * 7919) % 2001 - 1000) / 250.0f;
    br_conv_ep ep = {.res = res, .res_first = false, .relu = true};
    br_conv_direct_run(&geo, NULL, io->in[0].data, io->in[1].data, NULL,
                       io->in[2].data, &ep, apart, scratch);
    memcpy(inplace, res, bytes);
    ep.res = inplace;
    br_conv_direct_run(&geo, NULL, io->in[0].data, io->in[1].data, NULL,
                       io->in[2].data, &ep, inplace, scratch);
    cr_assert(memcmp(apart, inplace, bytes) == 0,
              "writing over the residual changed the output");
    int64_t positive = 0;
    for (int64_t i = 0; i < n; i++)
        positive += apart[i] > 0;
    cr_assert(positive > n / 10 && positive < n,
              "relu(conv + residual) left %lld of %lld positive",
              (long long)positive, (long long)n);
    free(scratch), free(inplace), free(apart), free(res);
    ts_io_free(io);
    braid_graph_free(g);
}

/* A Winograd conv, and a direct one, whose weights (and bias) are
 * constants of the plan: the executor makes the filter transform (the
 * packed filter) once, at creation (br_cpu_derive), and every run reuses
 * it. Against the same conv with
 * the weights as inputs bound to the same values (which transforms them
 * per run): the same bits, on the first run and the second, on 1 and 3
 * threads (one chunk, and waves of whole chunks); and against the
 * reference at f32's tolerance. */
Test(op_conv, cpu_derived_filter_constant_weights, .timeout = 120) {
    ts_conv_case cases[3] = {
        {.s = 2,
         .N = 2,
         .G = 1,
         .Cg = 40,
         .OCg = 24,
         .in = {13, 11, 1},
         .k = {3, 3, 1},
         .bias = true,
         .p = {.pads = {1, 0, 2, 1}}},
        {.s = 2,
         .N = 3,
         .G = 1,
         .Cg = 16,
         .OCg = 16,
         .in = {70, 70, 1},
         .k = {3, 3, 1},
         .bias = false,
         .p = {.pads = {1, 1, 1, 1}}},
        {.s = 2, /* direct (where braid's GEMM runs) */
         .N = 2,
         .G = 1,
         .Cg = 8,
         .OCg = 40,
         .in = {15, 30, 1},
         .k = {3, 3, 1},
         .bias = true,
         .p = {.strides = {2, 2}, .pads = {1, 1, 1, 1}}},
    };
    for (int t = 0; t < 3; t++) {
        char what[400];
        ts_conv_case_str(&cases[t], what, sizeof what);
        braid_graph *gi = ts_conv_case_graph(&cases[t], BRAID_F32);
        ts_io *io = ts_io_new(gi, 700 + (uint64_t)t);
        cr_assert(io);
        /* the same conv, w and b constants holding io's values */
        braid_graph *gc = braid_graph_new(NULL);
        const bg_node *xn = bg_node_at(gi, 0), *wn = bg_node_at(gi, 1);
        braid_tensor x = braid_input(gc, "x", BRAID_F32, xn->rank, xn->dims);
        braid_tensor w =
            braid_constant(gc, BRAID_F32, wn->rank, wn->dims, io->in[1].data);
        int64_t oc = wn->dims[0];
        braid_tensor b = cases[t].bias ? braid_constant(gc, BRAID_F32, 1, &oc,
                                                        io->in[2].data)
                                       : BRAID_NONE;
        braid_tensor y = braid_conv(gc, x, w, b, &cases[t].p);
        braid_output(gc, "y", y);
        cr_assert_eq(braid_graph_status(gc), BRAID_OK, "%s",
                     braid_graph_error(gc));
        /* the conv derives its filter from constant weights only */
        const void *cin[3] = {NULL, io->in[1].data, NULL};
        bg_conv_geom geo;
        cr_assert(bg_conv_geom_of(gi, bg_node_at(gi, gi->nnodes - 1), &geo));
        void *u = br_cpu_derive(gi, gi->nnodes - 1, cin, NULL, NULL);
        if (t < 2 || br_conv_direct_applies(&geo, BRAID_F32))
            cr_assert(u, "%s: no filter derived", what);
        free(u);
        cin[1] = NULL;
        cr_assert_null(br_cpu_derive(gi, gi->nnodes - 1, cin, NULL, NULL));
        for (int threads = 1; threads <= 3; threads += 2) {
            ts_io *want = ts_io_new(gi, 700 + (uint64_t)t); /* same values */
            braid_plan *pi = pf_compile(gi, "cpu");
            cr_assert_eq(pf_run(pi, want, false, 0), BRAID_OK, "%s",
                         braid_last_error());
            braid_plan *pc = compile_cpu(gc, threads);
            braid_exec *e = NULL;
            cr_assert_eq(braid_exec_new(pc, &e), BRAID_OK, "%s",
                         braid_last_error());
            size_t bytes = want->out[0].bytes;
            float *got = malloc(bytes);
            cr_assert(got);
            for (int run = 0; run < 2; run++) {
                memset(got, 0, bytes);
                braid_output_binding out = {"y", got, bytes};
                cr_assert_eq(braid_run(e, &want->in[0], 1, &out, 1), BRAID_OK,
                             "%s", braid_last_error());
                cr_assert(memcmp(got, want->out[0].data, bytes) == 0,
                          "%s, %d threads, run %d: constant weights differ "
                          "from the same weights as inputs",
                          what, threads, run);
            }
            free(got);
            braid_exec_free(e);
            braid_plan_free(pc);
            braid_plan_free(pi);
            ts_io_free(want);
        }
        check_run(gc, "cpu", 710 + (uint64_t)t, what);
        ts_io_free(io);
        braid_graph_free(gc);
        braid_graph_free(gi);
    }
}

/* Convolutions run in blocks of output positions
 * (runtime/cpu/cpu_kernels_conv.c): those whose col matrix outgrows one
 * item's buffer (CONV_BLOCKED_COL: 4 MiB) — a stem-like 7×7 stride-2 conv
 * with asymmetric pads, a grouped one with a dilation, a long 1-D one —
 * and those with small images, whose blocks cross from one image into the
 * next (several images in one GEMM, then scattered): stride 2 with bias,
 * grouped, 3-D. Each against the reference, and the same bits on 1 and 3
 * threads (blocks side by side or one after another). Blocks start and
 * end inside output rows. */
Test(op_conv, cpu_blocked, .timeout = 120) {
    ts_conv_case cases[6] = {
        {.s = 2,
         .N = 2,
         .G = 1,
         .Cg = 3,
         .OCg = 8,
         .in = {181, 179, 1},
         .k = {7, 7, 1},
         .bias = true,
         .p = {.strides = {2, 2}, .pads = {3, 2, 2, 3}}},
        {.s = 2,
         .N = 1,
         .G = 2,
         .Cg = 4,
         .OCg = 3,
         .in = {200, 191, 1},
         .k = {3, 3, 1},
         .bias = false,
         .p = {.strides = {1, 1},
               .dilations = {2, 1},
               .pads = {1, 0, 2, 1},
               .groups = 2}},
        {.s = 1,
         .N = 2,
         .G = 1,
         .Cg = 4,
         .OCg = 5,
         .in = {60001, 1, 1},
         .k = {5, 1, 1},
         .bias = true,
         .p = {.strides = {1}, .pads = {2, 1}}},
        {.s = 2,
         .N = 7,
         .G = 1,
         .Cg = 5,
         .OCg = 9,
         .in = {19, 23, 1},
         .k = {3, 3, 1},
         .bias = true,
         .p = {.strides = {2, 2}, .pads = {1, 1, 0, 1}}},
        {.s = 2,
         .N = 11,
         .G = 3,
         .Cg = 2,
         .OCg = 4,
         .in = {13, 10, 1},
         .k = {3, 2, 1},
         .bias = true,
         .p = {.strides = {1, 2}, .pads = {1, 0, 1, 1}, .groups = 3}},
        {.s = 3,
         .N = 9,
         .G = 1,
         .Cg = 3,
         .OCg = 4,
         .in = {5, 6, 7},
         .k = {2, 3, 2},
         .bias = false,
         .p = {.strides = {1, 1, 2}, .pads = {0, 1, 1, 1, 0, 0}}},
    };
    for (int t = 0; t < 6; t++) {
        const ts_conv_case *c = &cases[t];
        braid_graph *g = ts_conv_case_graph(c, BRAID_F32);
        bg_conv_geom geo;
        cr_assert(bg_conv_geom_of(g, &g->nodes[g->nnodes - 1], &geo));
        cr_assert(!br_winograd_applies(&geo, BRAID_F32));
        int64_t ov = 1, K = c->Cg;
        for (int i = 0; i < geo.nspatial; i++)
            ov *= geo.out[i], K *= c->k[i];
        cr_assert(K * ov * 4 > (int64_t)4 << 20 || (ov < 384 && c->N > 1),
                  "case %d: neither a large col nor small images", t);
        if (t >= 3) cr_assert_gt(c->N * ov, 384, "case %d: one block only", t);
        char buf[400];
        ts_conv_case_str(c, buf, sizeof buf);
        check_run(g, "cpu", 500 + (uint64_t)t, buf);
        same_bits_on_1_and_3_threads(g, 500 + (uint64_t)t, buf);
        braid_graph_free(g);
    }
}

/* With braid's own GEMM every im2col conv writes its col straight into the
 * GEMM's panels, block by block, and adds its bias as the product is
 * stored (elsewhere OpenBLAS runs the same cases): stride 2 with K = 432
 * (two 384-deep blocks of rows in the panels) over images of 462
 * positions (one block each, its last panel 14 columns wide); the same
 * over images of 110 positions (blocks across images); stride 1 with a
 * dilation and runs that cross panels; stride 3 (the scalar piece).
 * Against the reference, and the same bits on 1 and 3 threads. */
Test(op_conv, cpu_im2col_in_panels, .timeout = 120) {
    ts_conv_case cases[4] = {
        {.s = 2,
         .N = 3,
         .G = 1,
         .Cg = 48,
         .OCg = 20,
         .in = {41, 43, 1},
         .k = {3, 3, 1},
         .bias = true,
         .p = {.strides = {2, 2}, .pads = {1, 1, 1, 1}}},
        {.s = 2,
         .N = 5,
         .G = 1,
         .Cg = 48,
         .OCg = 13,
         .in = {20, 21, 1},
         .k = {3, 3, 1},
         .bias = true,
         .p = {.strides = {2, 2}, .pads = {1, 0, 1, 0}}},
        {.s = 2,
         .N = 2,
         .G = 1,
         .Cg = 5,
         .OCg = 17,
         .in = {30, 45, 1},
         .k = {3, 2, 1},
         .bias = true,
         .p = {.strides = {1, 1}, .dilations = {1, 3}, .pads = {2, 1, 0, 2}}},
        {.s = 2,
         .N = 2,
         .G = 1,
         .Cg = 6,
         .OCg = 9,
         .in = {50, 61, 1},
         .k = {5, 5, 1},
         .bias = true,
         .p = {.strides = {3, 3}, .pads = {2, 2, 2, 2}}},
    };
    for (int t = 0; t < 4; t++) {
        const ts_conv_case *c = &cases[t];
        braid_graph *g = ts_conv_case_graph(c, BRAID_F32);
        bg_conv_geom geo;
        cr_assert(bg_conv_geom_of(g, &g->nodes[g->nnodes - 1], &geo));
        cr_assert(!br_winograd_applies(&geo, BRAID_F32));
        char buf[400];
        ts_conv_case_str(c, buf, sizeof buf);
        check_run(g, "cpu", 600 + (uint64_t)t, buf);
        same_bits_on_1_and_3_threads(g, 600 + (uint64_t)t, buf);
        braid_graph_free(g);
    }
}

/* No input channels: the output is the bias alone. */
Test(op_conv, cpu_no_input_channels) {
    ts_conv_case c = {.s = 1,
                      .N = 2,
                      .G = 1,
                      .Cg = 0,
                      .OCg = 3,
                      .in = {5, 1, 1},
                      .k = {2, 1, 1},
                      .bias = true};
    braid_graph *g = ts_conv_case_graph(&c, BRAID_F32);
    check_run(g, "cpu", 9, "C = 0");
    braid_graph_free(g);
}

/* The same plan on the GPU, run on the emulated executor (its device
 * queues run the CPU kernels): placement, copies, memory and events
 * around a conv node. */
Test(op_conv, gpu_plan_emulated) {
    uint64_t st = 21;
    for (int t = 0; t < 6; t++) {
        ts_conv_case c = ts_conv_random_case(&st, t % 2 == 1);
        braid_graph *g = ts_conv_case_graph(&c, BRAID_F32);
        hint_gpu(g);
        char buf[400];
        check_run(g, "cpu,cuda:0", 30 + (uint64_t)t,
                  ts_conv_case_str(&c, buf, sizeof buf));
        braid_graph_free(g);
    }
}

#ifdef BRAID_HAVE_CUDA
/* braid's GPU kernel for the conv ops (codegen/conv.c, cuDNN's fallback)
 * compiles with NVRTC for sm_90, every dtype and both ops (and the
 * channels-last form), one launch of
 * one thread per output element. */
Test(op_conv, gpu_kernels_compile_for_sm90, .timeout = 300) {
    setenv("BRAID_CACHE_DIR", "", 1);
    uint64_t st = 31;
    braid_dtype dts[4] = {BRAID_F32, BRAID_F64, BRAID_F16, BRAID_BF16};
    for (int t = 0; t < 8; t++) {
        ts_conv_case c = ts_conv_random_case(&st, t % 2 == 1);
        braid_graph *g = t % 4 == 2 /* channels last (a conv) */
                             ? ts_conv_case_graph_channels_last(&c, dts[t % 4])
                             : ts_conv_case_graph(&c, dts[t % 4]);
        hint_gpu(g);
        braid_plan *p = pf_compile(g, "cpu,cuda:0");
        bc_source src;
        cr_assert_eq(bc_plan_source(p, &src), BRAID_OK, "%s",
                     braid_last_error());
        uint32_t convs = 0;
        for (uint32_t i = 0; i < src.nkernels; i++) {
            const bc_kernel *k = &src.kernels[i];
            const bg_node *n = bg_node_at(p->res.graph, k->node);
            if (bg_op(n->op)->kind != BRAID_KIND_CONV) continue;
            convs++;
            cr_assert_eq(k->kind, BC_KERNEL_CONV);
            cr_assert_eq(k->nlaunch, 1);
            cr_assert_eq((int64_t)k->launch[0].grid[0] *
                                 k->launch[0].block[0] >=
                             bg_numel(n),
                         true);
        }
        cr_assert_eq(convs, 1);
        bc_binary bin;
        char err[16384];
        braid_status s =
            bc_compile(src.text, "conv.cu", 90, &bin, err, sizeof err);
        cr_assert_eq(s, BRAID_OK, "%s\n%s", err, src.text);
        bc_binary_free(&bin);
        bc_source_free(&src);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}
#endif

/* What follows a conv in a network — bias, a residual add, relu — fuses
 * into one elementwise node after the conv (the conv itself is no
 * fusion member), on the CPU and in a GPU plan alike. */
Test(op_conv, epilogue_fuses_after_the_conv) {
    for (int gpu = 0; gpu < 2; gpu++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", BRAID_F32, 4, DIMS(2, 4, 9, 9));
        braid_tensor w = braid_input(g, "w", BRAID_F32, 4, DIMS(6, 4, 3, 3));
        braid_tensor b = braid_input(g, "b", BRAID_F32, 4, DIMS(1, 6, 1, 1));
        braid_tensor z = braid_input(g, "z", BRAID_F32, 4, DIMS(2, 6, 9, 9));
        braid_conv_params p = {.pads = {1, 1, 1, 1}};
        braid_tensor y = braid_conv(g, x, w, BRAID_NONE, &p);
        y = braid_relu(g, braid_add(g, braid_add(g, y, b), z));
        braid_output(g, "y", y);
        if (gpu) hint_gpu(g);
        const char *devices = gpu ? "cpu,cuda:0" : "cpu";
        braid_plan *pl = pf_compile(g, devices);
        uint32_t convs = 0, fused = 0, other = 0;
        for (uint32_t id = 0; id < pl->res.graph->nnodes; id++) {
            braid_op op = pl->res.graph->nodes[id].op;
            convs += op == BRAID_OP_CONV;
            fused += op == BRAID_OP_FUSED;
            other += op == BRAID_OP_ADD || op == BRAID_OP_RELU;
        }
        cr_assert_eq(convs, 1, "%s", devices);
        cr_assert_eq(fused, 1, "%s", devices);
        cr_assert_eq(other, 0, "%s", devices);
        braid_plan_free(pl);
        check_run(g, devices, 12, "conv + bias + residual + relu");
        braid_graph_free(g);
    }
}

/* ---- CPU conv epilogues (docs/fusion.md, rule 16) -------------------------
 */

/* Epilogues after a conv: 0 relu, 1 add(conv, r), 2 relu(add(r, conv)),
 * 3 relu(add(conv, r)). */
static braid_tensor with_epilogue(braid_graph *g, braid_tensor y, int e,
                                  const bg_node *shape) {
    if (e == 0) return braid_relu(g, y);
    braid_tensor r = braid_input(g, "r", BRAID_F32, shape->rank, shape->dims);
    braid_tensor s = e == 2 ? braid_add(g, r, y) : braid_add(g, y, r);
    return e == 1 ? s : braid_relu(g, s);
}

/* Ops of p's graph: fused CONV programs, and conv, add, relu nodes. */
static void count_conv_plan(const braid_plan *p, int *programs, int *rest) {
    *programs = *rest = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        const bg_node *n = &p->res.graph->nodes[id];
        if (n->op == BRAID_OP_FUSED &&
            p->res.programs[p->res.info[id].program].kind == BP_PROGRAM_CONV)
            (*programs)++;
        *rest += n->op == BRAID_OP_CONV || n->op == BRAID_OP_ADD ||
                 n->op == BRAID_OP_RELU;
    }
}

/* A CPU f32 conv followed by relu, a residual add (either operand order)
 * or both becomes one fused CONV node, whose kernels apply the epilogue
 * as they store each output: Winograd (3×3), im2col blocks inside images
 * and across them (the scatter applies it), a 1×1 conv on its item path
 * (a pass after), stride 3 (scalar pieces), the direct conv's tiles (where
 * braid's GEMM runs). Against the reference, and
 * the same bits as the unfused plan (fuse pass off) and on 1 and 3
 * threads; a plan file round trip runs it the same. */
Test(op_conv, cpu_epilogue_fuses_into_the_conv, .timeout = 120) {
    ts_conv_case cases[7] = {
        {.s = 2,
         .N = 2,
         .G = 1,
         .Cg = 17,
         .OCg = 20,
         .in = {13, 11, 1},
         .k = {3, 3, 1},
         .bias = true,
         .p = {.pads = {1, 1, 1, 1}}},
        {.s = 2,
         .N = 2,
         .G = 1,
         .Cg = 5,
         .OCg = 13,
         .in = {41, 39, 1},
         .k = {3, 3, 1},
         .bias = true,
         .p = {.strides = {2, 2}, .pads = {1, 1, 0, 1}}},
        {.s = 2,
         .N = 5,
         .G = 1,
         .Cg = 6,
         .OCg = 9,
         .in = {9, 10, 1},
         .k = {3, 3, 1},
         .bias = false,
         .p = {.strides = {2, 1}, .pads = {1, 1, 1, 1}}},
        {.s = 2,
         .N = 3,
         .G = 1,
         .Cg = 7,
         .OCg = 5,
         .in = {6, 7, 1},
         .k = {1, 1, 1},
         .bias = true},
        {.s = 2,
         .N = 2,
         .G = 1,
         .Cg = 4,
         .OCg = 6,
         .in = {31, 29, 1},
         .k = {5, 5, 1},
         .bias = true,
         .p = {.strides = {3, 3}, .pads = {2, 2, 2, 2}}},
        {.s = 2, /* direct: tiles of 14 pixels, the last shifted left */
         .N = 2,
         .G = 1,
         .Cg = 5,
         .OCg = 33,
         .in = {9, 17, 1},
         .k = {3, 3, 1},
         .bias = true,
         .p = {.pads = {1, 1, 1, 1}}},
        {.s = 2, /* direct: tiles of 7 pixels by 64 channels */
         .N = 3,
         .G = 1,
         .Cg = 9,
         .OCg = 70,
         .in = {12, 13, 1},
         .k = {5, 3, 1},
         .bias = false,
         .p = {.strides = {2, 2}, .pads = {2, 1, 2, 1}}},
    };
    for (int t = 0; t < 7; t++)
        for (int e = 0; e < 4; e++) {
            ts_conv_case c = cases[t];
            braid_graph *g = braid_graph_new(NULL);
            int64_t xd[4] = {c.N, c.Cg, c.in[0], c.in[1]};
            int64_t wd[4] = {c.OCg, c.Cg, c.k[0], c.k[1]}, oc = c.OCg;
            braid_tensor x = braid_input(g, "x", BRAID_F32, 4, xd);
            braid_tensor w = braid_input(g, "w", BRAID_F32, 4, wd);
            braid_tensor b =
                c.bias ? braid_input(g, "b", BRAID_F32, 1, &oc) : BRAID_NONE;
            braid_tensor conv = braid_conv(g, x, w, b, &c.p);
            cr_assert(braid_tensor_valid(conv), "%s", braid_graph_error(g));
            bg_node cv = *bg_node_at(g, conv.id);
            braid_output(g, "y", with_epilogue(g, conv, e, &cv));
            char buf[400], what[480];
            snprintf(what, sizeof what, "%s, epilogue %d",
                     ts_conv_case_str(&c, buf, sizeof buf), e);
            braid_plan *p = pf_compile(g, "cpu");
            int programs, rest;
            count_conv_plan(p, &programs, &rest);
            cr_assert_eq(programs, 1, "%s: one fused conv", what);
            cr_assert_eq(rest, 0, "%s: no conv, add or relu left", what);
            /* unfused: the same bits */
            braid_compile_options o;
            braid_compile_options_init(&o);
            o.devices = "cpu";
            o.num_threads = 2;
            o.disable_passes = BRAID_PASS_FUSE;
            braid_plan *u = NULL;
            cr_assert_eq(braid_compile(g, &o, &u), BRAID_OK, "%s",
                         braid_last_error());
            size_t size;
            unsigned char *file = pf_save(p, &size);
            braid_plan *l = pf_load(file, size);
            ts_io *io[3];
            const braid_plan *plans[3] = {p, u, l};
            for (int k = 0; k < 3; k++) {
                io[k] = ts_io_new(g, 700 + (uint64_t)t);
                cr_assert_eq(pf_run(plans[k], io[k], false, 0), BRAID_OK,
                             "%s: %s", what, braid_last_error());
            }
            cr_assert(pf_same_outputs(io[0], io[1]),
                      "%s: fused and unfused differ", what);
            cr_assert(pf_same_outputs(io[0], io[2]),
                      "%s: differs after a plan file round trip", what);
            for (int k = 0; k < 3; k++)
                ts_io_free(io[k]);
            free(file);
            braid_plan_free(l);
            braid_plan_free(u);
            braid_plan_free(p);
            check_run(g, "cpu", 710 + (uint64_t)t, what);
            same_bits_on_1_and_3_threads(g, 720 + (uint64_t)t, what);
            braid_graph_free(g);
        }
}

/* What stays unfused: a conv whose result is also an output, a residual
 * that broadcasts, a grouped conv, and a GPU conv (rule 15's instead). */
Test(op_conv, cpu_epilogue_what_stays) {
    for (int t = 0; t < 3; t++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", BRAID_F32, 4, DIMS(2, 4, 9, 9));
        braid_tensor w = braid_input(
            g, "w", BRAID_F32, 4, t == 2 ? DIMS(6, 2, 3, 3) : DIMS(6, 4, 3, 3));
        braid_conv_params cp = {.pads = {1, 1, 1, 1}, .groups = t == 2 ? 2 : 1};
        braid_tensor y = braid_conv(g, x, w, BRAID_NONE, &cp);
        if (t == 0) braid_output(g, "conv", y);
        braid_tensor r = braid_input(
            g, "r", BRAID_F32, 4, t == 1 ? DIMS(1, 6, 9, 9) : DIMS(2, 6, 9, 9));
        braid_output(g, "y", braid_relu(g, braid_add(g, y, r)));
        braid_plan *p = pf_compile(g, "cpu");
        int programs, rest;
        count_conv_plan(p, &programs, &rest);
        cr_assert_eq(programs, 0, "case %d: nothing fuses into the conv", t);
        braid_plan_free(p);
        check_run(g, "cpu", 40 + (uint64_t)t, "unfused epilogue");
        braid_graph_free(g);
    }
}

/* The program checker refuses a CONV program whose conv does not match:
 * its stride changed (the space no longer follows), the conv moved out of
 * the head, an epilogue load that is not the space's shape. */
Test(op_conv, cpu_epilogue_program_checked) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 4, DIMS(2, 4, 9, 9));
    braid_tensor w = braid_input(g, "w", BRAID_F32, 4, DIMS(6, 4, 3, 3));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 1, DIMS(6));
    braid_conv_params cp = {.pads = {1, 1, 1, 1}};
    braid_tensor y = braid_conv(g, x, w, b, &cp);
    braid_tensor r = braid_input(g, "r", BRAID_F32, 4, DIMS(2, 6, 9, 9));
    braid_output(g, "y", braid_relu(g, braid_add(g, y, r)));
    braid_plan *p = pf_compile(g, "cpu");
    uint32_t id = BG_NONE;
    for (uint32_t i = 0; i < p->res.graph->nnodes; i++)
        if (p->res.graph->nodes[i].op == BRAID_OP_FUSED) id = i;
    cr_assert_neq(id, BG_NONE);
    const bp_program *pr = &p->res.programs[p->res.info[id].program];
    cr_assert_eq(pr->kind, BP_PROGRAM_CONV);
    cr_assert_eq(bp_program_conv_at(pr), 3, "x, w, b, then the conv");
    char err[256];
    cr_assert(bp_program_check(pr, p->res.graph, id, err, sizeof err), "%s",
              err);
    bp_instr ins[16];
    cr_assert_leq(pr->ninstr, 16);
    bp_program m = *pr;
    m.instr = ins;
    memcpy(ins, pr->instr, pr->ninstr * sizeof *ins);
    m.window[1][0] = 2; /* stride 2: a 5-row output, not 9 */
    cr_assert(!bp_program_check(&m, p->res.graph, id, err, sizeof err));
    cr_assert(strstr(err, "does not give the space"), "%s", err);
    m = *pr;
    m.instr = ins;
    ins[3].op = BRAID_OP_RELU; /* the head's conv gone */
    cr_assert(!bp_program_check(&m, p->res.graph, id, err, sizeof err));
    cr_assert(strstr(err, "a conv program starts"), "%s", err);
    memcpy(ins, pr->instr, pr->ninstr * sizeof *ins);
    ins[5] = ins[3]; /* a conv in the epilogue */
    ins[5].arg[0] = 0, ins[5].arg[1] = 1, ins[5].arg[2] = 2;
    cr_assert(!bp_program_check(&m, p->res.graph, id, err, sizeof err));
    cr_assert(strstr(err, "outside the head"), "%s", err);
    memcpy(ins, pr->instr, pr->ninstr * sizeof *ins);
    m.window[0][1] = 5; /* a kernel the weights do not have */
    cr_assert(!bp_program_check(&m, p->res.graph, id, err, sizeof err));
    braid_plan_free(p);
    braid_graph_free(g);
}

/* f16 convolutions have no CPU kernel: executor creation says so. */
Test(op_conv, cpu_f16_refused) {
    ts_conv_case c = {.s = 1,
                      .N = 1,
                      .G = 1,
                      .Cg = 2,
                      .OCg = 2,
                      .in = {5, 1, 1},
                      .k = {3, 1, 1}};
    braid_graph *g = ts_conv_case_graph(&c, BRAID_F16);
    braid_plan *p = pf_compile(g, "cpu");
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_ERR_UNSUPPORTED);
    cr_assert(strstr(braid_last_error(), "conv") &&
                  strstr(braid_last_error(), "f16"),
              "%s", braid_last_error());
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- text and plan files
 * ----------------------------------------------------- */

Test(op_conv, text_and_plan_round_trip) {
    uint64_t st = 5;
    for (int t = 0; t < 20; t++) {
        ts_conv_case c = ts_conv_random_case(&st, t % 2 == 0);
        braid_graph *g = ts_conv_case_graph(&c, BRAID_F32);
        char *text = NULL;
        size_t len = 0;
        cr_assert_eq(braid_graph_print(g, &text, &len), BRAID_OK);
        braid_graph *h = braid_graph_parse(text, len, "conv.graph", NULL);
        cr_assert_eq(braid_graph_status(h), BRAID_OK, "%s\n%s",
                     braid_graph_error(h), text);
        cr_assert(bg_graph_equal(g, h), "%s", text);
        free(text);
        braid_graph_free(h);
        braid_plan *p = pf_compile(g, "cpu");
        size_t size = 0;
        unsigned char *data = pf_save(p, &size);
        braid_plan *q = pf_load(data, size);
        ts_io *a = ts_io_new(g, 40 + (uint64_t)t),
              *b = ts_io_new(g, 40 + (uint64_t)t);
        cr_assert_eq(pf_run(p, a, false, 1), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert_eq(pf_run(q, b, false, 1), BRAID_OK, "%s",
                     braid_last_error());
        cr_assert(pf_same_outputs(a, b));
        ts_io_free(a), ts_io_free(b);
        free(data);
        braid_plan_free(q);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* The text form, spelled out: defaults fill in; output_padding is folded
 * into the end pads (where it leaves them >= 0 it prints as them), else
 * printed back. */
Test(op_conv, text_form) {
    const char *src =
        "braid-graph 1\n"
        "%0 = input f32[1,2,5,5] name=\"x\"\n"
        "%1 = input f32[2,1,3,3] name=\"w\"\n"
        "%2 = conv_transpose %0, %1 strides=[2,2] pads=[1,1,1,1] groups=2 "
        "output_padding=[1,0]\n"
        "output \"y\" = %2\n";
    braid_graph *g = braid_graph_parse(src, strlen(src), "t.graph", NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    const bg_node *n = bg_node_at(g, 2);
    /* 2·4 + 3 - 2 + output_padding */
    cr_assert_eq(n->dims[2], 10);
    cr_assert_eq(n->dims[3], 9);
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(braid_graph_print(g, &text, &len), BRAID_OK);
    cr_assert(strstr(text, "conv_transpose %0, %1 strides=[2,2] "
                           "dilations=[1,1] pads=[1,1,0,1] groups=2 :"),
              "%s", text);
    free(text);
    braid_graph_free(g);
    /* no end pad to absorb it: output_padding stays */
    const char *src2 = "braid-graph 1\n"
                       "%0 = input f32[1,2,5,5] name=\"x\"\n"
                       "%1 = input f32[2,1,3,3] name=\"w\"\n"
                       "%2 = conv_transpose %0, %1 strides=[3,2] "
                       "output_padding=[2,1]\n"
                       "output \"y\" = %2\n";
    g = braid_graph_parse(src2, strlen(src2), "t.graph", NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    cr_assert_eq(bg_node_at(g, 2)->dims[2], 3 * 4 + 3 + 2);
    cr_assert_eq(braid_graph_print(g, &text, &len), BRAID_OK);
    cr_assert(strstr(text, "pads=[0,0,0,0] groups=1 output_padding=[2,1] :"),
              "%s", text);
    free(text);
    braid_graph_free(g);
}

/* ---- errors
 * ------------------------------------------------------------------ */

/* A builder call that must fail with status s and a message holding what. */
static void builder_fails(braid_op op, int rank, const int64_t *xd,
                          const int64_t *wd, int64_t bias_len,
                          const braid_conv_params *p, braid_status s,
                          const char *what) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, rank, xd);
    braid_tensor w = braid_input(g, "w", BRAID_F32, rank, wd);
    braid_tensor b =
        bias_len ? braid_input(g, "b", BRAID_F32, 1, &bias_len) : BRAID_NONE;
    braid_tensor y = op == BRAID_OP_CONV ? braid_conv(g, x, w, b, p)
                                         : braid_conv_transpose(g, x, w, b, p);
    cr_assert_eq(y.id, BRAID_NONE.id, "%s", what);
    cr_assert_eq(braid_graph_status(g), s, "%s: %s", what,
                 braid_graph_error(g));
    const char *msg = braid_graph_error(g);
    cr_assert(strstr(msg, bg_op(op)->name) && strstr(msg, what),
              "want '%s' in: %s", what, msg);
    cr_assert_eq(braid_conv(g, x, w, BRAID_NONE, NULL).id, BRAID_NONE.id,
                 "sticky");
    braid_graph_free(g);
}

Test(op_conv, bad_attributes) {
    const int64_t *x = DIMS(1, 4, 8, 8), *w = DIMS(6, 2, 3, 3);
    builder_fails(BRAID_OP_CONV, 4, x, w, 0, &(braid_conv_params){.groups = 3},
                  BRAID_ERR_INVALID_ARGUMENT, "groups 3");
    builder_fails(BRAID_OP_CONV, 4, x, w, 0, NULL, BRAID_ERR_INVALID_ARGUMENT,
                  "expected C divisible by groups and w");
    builder_fails(BRAID_OP_CONV, 4, x, w, 5, &(braid_conv_params){.groups = 2},
                  BRAID_ERR_INVALID_ARGUMENT, "bias f32[5]");
    builder_fails(BRAID_OP_CONV, 4, x, w, 0,
                  &(braid_conv_params){.groups = 2, .strides = {-1, 1}},
                  BRAID_ERR_INVALID_ARGUMENT, "stride -1");
    builder_fails(BRAID_OP_CONV, 4, x, w, 0,
                  &(braid_conv_params){.groups = 2, .pads = {0, 0, -1, 0}},
                  BRAID_ERR_INVALID_ARGUMENT, "pads 0, -1");
    builder_fails(BRAID_OP_CONV, 4, x, w, 0,
                  &(braid_conv_params){.groups = 2, .dilations = {5, 1}},
                  BRAID_ERR_INVALID_ARGUMENT, "leave no output");
    builder_fails(BRAID_OP_CONV, 4, x, w, 0,
                  &(braid_conv_params){.groups = 2, .output_padding = {1}},
                  BRAID_ERR_INVALID_ARGUMENT, "output_padding 1");
    builder_fails(
        BRAID_OP_CONV_TRANSPOSE, 4, x, DIMS(4, 3, 3, 3), 0,
        &(braid_conv_params){.strides = {2, 2}, .output_padding = {0, 2}},
        BRAID_ERR_INVALID_ARGUMENT, "output_padding 2");
    builder_fails(BRAID_OP_CONV, 2, DIMS(4, 8), DIMS(4, 8), 0, NULL,
                  BRAID_ERR_INVALID_ARGUMENT, "expected x [N, C, 1 to 3");
    builder_fails(BRAID_OP_CONV_TRANSPOSE, 4, x, DIMS(3, 3, 3, 3), 0, NULL,
                  BRAID_ERR_INVALID_ARGUMENT, "w [C, OC/groups");
    /* mixed dtypes */
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = braid_input(g, "x", BRAID_F32, 3, DIMS(1, 2, 5));
    braid_tensor b = braid_input(g, "w", BRAID_F64, 3, DIMS(2, 2, 3));
    cr_assert_eq(braid_conv(g, a, b, BRAID_NONE, NULL).id, BRAID_NONE.id);
    cr_assert_eq(braid_graph_status(g), BRAID_ERR_DTYPE);
    cr_assert(strstr(braid_graph_error(g), "one float dtype"), "%s",
              braid_graph_error(g));
    braid_graph_free(g);
}

/* Parse errors name the attribute and its place. */
Test(op_conv, text_errors) {
    static const struct {
        const char *line, *want;
    } cases[] = {
        {"conv %0, %1 pads=[1,1]", "pads has 2 entries; expected 4"},
        {"conv %0, %1 strides=[0,1]", "stride 0"},
        {"conv %0, %1 output_padding=[1,1]", "has no attribute"},
        {"conv_transpose %0, %1 output_padding=[1,0]",
         "output_padding 1 on spatial axis 0"},
        {"conv %0, %1, %1", "bias f32[2,2,3,3]"},
        {"conv %0", "got 1 inputs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char src[400];
        snprintf(src, sizeof src,
                 "braid-graph 1\n"
                 "%%0 = input f32[1,2,5,5] name=\"x\"\n"
                 "%%1 = input f32[2,2,3,3] name=\"w\"\n"
                 "%%2 = %s\n"
                 "output \"y\" = %%2\n",
                 cases[i].line);
        braid_graph *g = braid_graph_parse(src, strlen(src), "e.graph", NULL);
        cr_assert_neq(braid_graph_status(g), BRAID_OK, "%s", cases[i].line);
        cr_assert(strstr(braid_graph_error(g), cases[i].want),
                  "%s: want '%s' in: %s", cases[i].line, cases[i].want,
                  braid_graph_error(g));
        braid_graph_free(g);
    }
}

/* ---- channels last (BG_CONV_CHANNELS_LAST) --------------------------------
 */

/* The reference computes the channels-last form from the same products in
 * the same order as the channels-first one: the same bits, f32 and f64. */
Test(op_conv, channels_last_reference_same_bits) {
    uint64_t st = 61;
    for (int t = 0; t < 16; t++) {
        ts_conv_case c = ts_conv_random_case(&st, false);
        braid_dtype dt = t % 3 == 2 ? BRAID_F64 : BRAID_F32;
        braid_graph *g = ts_conv_case_graph(&c, dt);
        braid_graph *h = ts_conv_case_graph_channels_last(&c, dt);
        ts_io *a = ts_io_new(g, 70 + (uint64_t)t),
              *b = ts_io_new(h, 70 + (uint64_t)t);
        cr_assert(a && b);
        cr_assert_eq(a->ninputs, b->ninputs);
        for (uint32_t i = 0; i < a->ninputs; i++)
            cr_assert_eq(memcmp(a->in[i].data, b->in[i].data, a->in[i].bytes),
                         0, "the same inputs");
        cr_assert_eq(braid_reference_run(g, a->in, a->ninputs, a->ref, 1),
                     BRAID_OK, "%s", braid_last_error());
        cr_assert_eq(braid_reference_run(h, b->in, b->ninputs, b->ref, 1),
                     BRAID_OK, "%s", braid_last_error());
        char buf[400];
        cr_assert_eq(memcmp(a->ref[0].data, b->ref[0].data, a->ref[0].bytes), 0,
                     "%s %s", braid_dtype_name(dt),
                     ts_conv_case_str(&c, buf, sizeof buf));
        ts_io_free(a), ts_io_free(b);
        braid_graph_free(g), braid_graph_free(h);
    }
}

/* The CPU's direct loops, and the form in a GPU plan on the emulated
 * executor (whose device queues run them), against the reference. */
Test(op_conv, channels_last_cpu_and_emulated, .timeout = 120) {
    uint64_t st = 62;
    for (int t = 0; t < 12; t++) {
        ts_conv_case c = ts_conv_random_case(&st, false);
        braid_dtype dt = t % 4 == 3 ? BRAID_F64 : BRAID_F32;
        braid_graph *g = ts_conv_case_graph_channels_last(&c, dt);
        char buf[400];
        ts_conv_case_str(&c, buf, sizeof buf);
        check_run(g, "cpu", 80 + (uint64_t)t, buf);
        hint_gpu(g);
        check_run(g, "cpu,cuda:0", 90 + (uint64_t)t, buf);
        braid_graph_free(g);
    }
}

/* The text form says channels_last and reads back to the same graph; the
 * flag on a conv_transpose, and shapes that are not channels last, are
 * refused naming what is wrong. */
Test(op_conv, channels_last_text) {
    ts_conv_case c = {.s = 2,
                      .N = 2,
                      .G = 2,
                      .Cg = 3,
                      .OCg = 2,
                      .in = {5, 6, 1},
                      .k = {3, 2, 1},
                      .bias = true,
                      .p = {.strides = {2, 1}, .pads = {1, 0, 1, 1}}};
    c.p.groups = 2;
    braid_graph *g = ts_conv_case_graph_channels_last(&c, BRAID_F32);
    ts_assert_text_round_trip(g, " channels_last");
    braid_graph_free(g);
    static const struct {
        const char *src, *want;
    } bad[] = {
        {"braid-graph 1\n%0 = input f32[1,4,5,5] name=\"x\"\n"
         "%1 = input f32[2,4,3,3] name=\"w\"\n"
         "%2 = conv %0, %1 channels_last\n",
         "w [OC, kernel..., C/groups]"},
        {"braid-graph 1\n%0 = input f32[1,2,5,5] name=\"x\"\n"
         "%1 = input f32[2,1,3,3] name=\"w\"\n"
         "%2 = conv_transpose %0, %1 channels_last\n",
         "channels_last"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        braid_graph *b = braid_graph_parse(bad[i].src, strlen(bad[i].src),
                                           "bad.graph", NULL);
        cr_assert_neq(braid_graph_status(b), BRAID_OK, "%s", bad[i].src);
        cr_assert(strstr(braid_graph_error(b), bad[i].want), "%s: %s",
                  bad[i].src, braid_graph_error(b));
        braid_graph_free(b);
    }
}
