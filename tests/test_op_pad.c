/* tests/test_op_pad.c — the composites pad (ONNX Pad: constant, reflect,
 * edge; negative pads crop) and rms_norm (ONNX RMSNormalization), checked
 * against values this file computes itself (index arithmetic for pad, a
 * float64 loop for rms_norm), through the reference evaluator and the CPU
 * executor, on random shapes; and their builder errors.
 * Tolerances: pad moves values (exact); rms_norm ts_tolerance-like 1e-5
 * relative in f32. */
#define _POSIX_C_SOURCE 200809L
#include "tests/planfile_support.h"

#include <math.h>

#include "tests/support/op_cases.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* The input index pad reads for output index o along an axis of d
 * elements (after cropping, starting at c), or -1 for the constant. */
static int64_t pad_source(int64_t o, int64_t lo, int64_t d, int64_t c,
                          braid_pad_mode m) {
    int64_t i = o - (lo > 0 ? lo : 0); /* index into the cropped axis */
    if (i < 0 || i >= d) {
        if (m == BRAID_PAD_CONSTANT) return -1;
        if (m == BRAID_PAD_EDGE) i = i < 0 ? 0 : d - 1;
        else i = i < 0 ? -i : 2 * (d - 1) - i; /* reflect */
    }
    return c + i;
}

/* y = pad(x) of a random f32 x; both executors against pad_source. */
static void pad_case(uint64_t *st, braid_pad_mode m) {
    int rank = ts_rand_int(st, 1, 4);
    int64_t dims[4], lo[4], hi[4], od[4], kept[4];
    for (int a = 0; a < rank; a++) {
        dims[a] = ts_rand_int(st, 3, 6);
        lo[a] = ts_rand_int(st, -1, (int)dims[a] - 3);
        hi[a] = ts_rand_int(st, -1, (int)dims[a] - 3);
        kept[a] = dims[a] + (lo[a] < 0 ? lo[a] : 0) + (hi[a] < 0 ? hi[a] : 0);
        od[a] = dims[a] + lo[a] + hi[a];
    }
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, rank, dims);
    braid_tensor y = braid_pad(g, x, lo, hi, m, -7.25);
    cr_assert(braid_tensor_valid(y), "%s", braid_graph_error(g));
    int orank;
    int64_t got[BRAID_MAX_RANK];
    braid_tensor_info(g, y, NULL, &orank, got);
    cr_assert_eq(orank, rank);
    for (int a = 0; a < rank; a++)
        cr_assert_eq(got[a], od[a], "axis %d", a);
    char msg[512];
    cr_assert(ts_check_graph(g, y, NULL, *st, msg, sizeof msg), "%s", msg);
    /* the reference's values against the index arithmetic */
    ts_io *io = ts_io_new(g, *st);
    cr_assert_eq(braid_reference_run(g, io->in, 1, io->ref, 1), BRAID_OK);
    const float *in = io->in[0].data, *out = io->ref[0].data;
    int64_t n = io->ref[0].bytes / 4;
    for (int64_t e = 0; e < n; e++) {
        int64_t r = e, src = 0, stride = 1, idx[4];
        for (int a = rank - 1; a >= 0; a--) {
            idx[a] = r % od[a];
            r /= od[a];
        }
        bool constant = false;
        for (int a = rank - 1; a >= 0; a--) {
            int64_t c = lo[a] < 0 ? -lo[a] : 0;
            int64_t s = pad_source(idx[a], lo[a], kept[a], c, m);
            constant |= s < 0;
            src += s * stride;
            stride *= dims[a];
        }
        float want = constant ? -7.25f : in[src];
        cr_assert_eq(out[e], want, "mode %d element %lld: %g, want %g", (int)m,
                     (long long)e, out[e], want);
    }
    ts_io_free(io);
    braid_graph_free(g);
}

Test(op_pad, random_shapes) {
    uint64_t st = 0x9a01;
    for (int i = 0; i < 30; i++)
        pad_case(&st, (braid_pad_mode)(i % 3));
}

Test(op_pad, errors) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 4));
    /* reflect by the whole axis would repeat the border */
    cr_assert_eq(braid_pad(g, x, DIMS(0, 4), DIMS(0, 0), BRAID_PAD_REFLECT, 0)
                     .id,
                 BRAID_NONE.id);
    cr_assert(strstr(braid_graph_error(g), "pad: axis 1 of f32[3,4]"), "%s",
              braid_graph_error(g));
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 4));
    cr_assert_eq(
        braid_pad(g, x, DIMS(-2, 0), DIMS(-2, 0), BRAID_PAD_CONSTANT, 0).id,
        BRAID_NONE.id, "crops past the axis");
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 4));
    cr_assert_eq(braid_pad(g, x, NULL, DIMS(0, 0), BRAID_PAD_EDGE, 0).id,
                 BRAID_NONE.id);
    cr_assert_eq(braid_pad(g, x, DIMS(0, 0), DIMS(0, 0), BRAID_PAD_EDGE, 0).id,
                 BRAID_NONE.id, "sticky");
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 4));
    cr_assert_eq(braid_pad(g, x, DIMS(0, 0), DIMS(0, 0), (braid_pad_mode)7, 0)
                     .id,
                 BRAID_NONE.id);
    cr_assert(strstr(braid_graph_error(g), "mode 7"));
    /* no pads at all: x itself */
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 4));
    cr_assert_eq(
        braid_pad(g, x, DIMS(0, 0), DIMS(0, 0), BRAID_PAD_CONSTANT, 0).id,
        x.id);
    braid_graph_free(g);
}

/* ---- rms_norm ---------------------------------------------------------------
 */

/* y = x / sqrt(mean(x² over axes [axis, rank)) + eps) · scale, in float64
 * here; the executors within 1e-5 relative (f32). */
Test(op_rms_norm, random_shapes) {
    uint64_t st = 0x9a02;
    for (int i = 0; i < 12; i++) {
        int rank = ts_rand_int(&st, 1, 4);
        int64_t dims[4], inner = 1, outer = 1;
        int axis = ts_rand_int(&st, 0, rank - 1);
        for (int a = 0; a < rank; a++) {
            dims[a] = ts_rand_int(&st, 1, 9);
            if (a >= axis) inner *= dims[a];
            else outer *= dims[a];
        }
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", BRAID_F32, rank, dims);
        braid_tensor s = braid_input(g, "s", BRAID_F32, rank - axis, dims + axis);
        braid_tensor y = braid_rms_norm(g, x, s, i % 2 ? axis : axis - rank,
                                        1e-5);
        char msg[512];
        cr_assert(ts_check_graph(g, y, NULL, 40 + (uint64_t)i, msg, sizeof msg),
                  "%s", msg);
        ts_io *io = ts_io_new(g, 40 + (uint64_t)i);
        cr_assert_eq(braid_reference_run(g, io->in, 2, io->ref, 1), BRAID_OK);
        const float *xv = io->in[0].data, *sv = io->in[1].data;
        const float *yv = io->ref[0].data;
        for (int64_t o = 0; o < outer; o++) {
            double ss = 0;
            for (int64_t k = 0; k < inner; k++)
                ss += (double)xv[o * inner + k] * xv[o * inner + k];
            double r = 1 / sqrt(ss / (double)inner + 1e-5);
            for (int64_t k = 0; k < inner; k++) {
                double want = xv[o * inner + k] * r * sv[k];
                cr_assert(fabs(yv[o * inner + k] - want) <=
                              1e-5 * (1 + fabs(want)),
                          "row %lld element %lld: %g, want %g", (long long)o,
                          (long long)k, yv[o * inner + k], want);
            }
        }
        ts_io_free(io);
        braid_graph_free(g);
    }
}

Test(op_rms_norm, errors) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_I32, 2, DIMS(3, 4));
    cr_assert_eq(braid_rms_norm(g, x, BRAID_NONE, -1, 1e-5).id, BRAID_NONE.id);
    cr_assert(strstr(braid_graph_error(g), "rms_norm"));
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 4));
    braid_tensor s = braid_input(g, "s", BRAID_F32, 1, DIMS(5));
    cr_assert_eq(braid_rms_norm(g, x, s, -1, 1e-5).id, BRAID_NONE.id);
    cr_assert(strstr(braid_graph_error(g), "rms_norm: scale"), "%s",
              braid_graph_error(g));
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 4));
    cr_assert_eq(braid_rms_norm(g, x, BRAID_NONE, 2, 1e-5).id, BRAID_NONE.id);
    cr_assert_eq(braid_rms_norm(g, x, BRAID_NONE, -1, -1).id, BRAID_NONE.id);
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_F32, 2, DIMS(3, 4));
    cr_assert_eq(braid_rms_norm(g, x, BRAID_NONE, 0, NAN).id, BRAID_NONE.id);
    braid_graph_free(g);
}
