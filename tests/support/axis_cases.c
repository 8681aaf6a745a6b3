/* tests/support/axis_cases.c — random cases of the index ops (see
 * axis_cases.h). */
#include "tests/support/axis_cases.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const op_names[TS_AX_COUNT_] = {
    "argmax", "argmin",      "topk_values",     "topk_indices",
    "cumsum", "reduce_prod", "reduce_logsumexp"};

static braid_dtype pick_dtype(uint64_t *st, bool floats_only) {
    static const braid_dtype all[] = {BRAID_F32, BRAID_F64, BRAID_F16,
                                      BRAID_BF16, BRAID_I32};
    return all[ts_rand_int(st, 0, floats_only ? 3 : 4)];
}

/* Rank 1..4; mode 0: one long axis ax, mode 1: inner run ≥ 32 after ax. */
static ts_shape pick_shape(uint64_t *st, int *ax, int64_t max_len) {
    ts_shape s = ts_random_shape(st, 1, 4, 9);
    *ax = ts_rand_int(st, 0, s.rank - 1);
    int mode = ts_rand_int(st, 0, 3);
    if (mode == 0) {
        for (int k = 0; k < s.rank; k++)
            s.dims[k] = ts_rand_int(st, 1, 3);
        s.dims[*ax] = ts_rand_int(st, 200, (int)max_len);
    } else if (mode == 1 && *ax + 1 < s.rank) {
        for (int k = 0; k < s.rank; k++)
            if (k != *ax) s.dims[k] = ts_rand_int(st, 1, 2);
        s.dims[s.rank - 1] = ts_rand_int(st, 32, 80);
    }
    return s;
}

/* Values: ties (small integers, negated every other one) half the time. */
static ts_range pick_range(uint64_t *st, ts_axis_op op, braid_dtype dt) {
    bool ties = ts_rand_int(st, 0, 1);
    if (op == TS_AX_PROD)
        return ties ? (ts_range){1, 2, true, true} : TS_RANGE(0.6, 1.4);
    if (op == TS_AX_LOGSUMEXP)
        return ties ? (ts_range){-3, 3, false, true}
               : dt == BRAID_F32 || dt == BRAID_F64 ? TS_RANGE(1000, 1100)
                                                    : TS_RANGE(-8, 8);
    if (dt == BRAID_I32 && !ties) return TS_I32_FULL;
    return ties ? TS_SMALL_INTS : TS_RANGE(-4, 4);
}

/* reduce_prod / logsumexp over a random set of axes (none: all). */
static braid_tensor reduce_case(braid_graph *g, ts_axis_op op, braid_tensor x,
                                const ts_shape *s, uint64_t *st, char *what,
                                size_t n) {
    int axes[BRAID_MAX_RANK], naxes = 0;
    for (int k = 0; k < s->rank; k++)
        if (ts_rand_int(st, 0, 1)) axes[naxes++] = k - s->rank * (k & 1);
    bool keep = ts_rand_int(st, 0, 1);
    snprintf(what, n, " axes=%d of them%s", naxes, keep ? " keepdims" : "");
    return op == TS_AX_PROD ? braid_reduce_prod(g, x, naxes, axes, keep)
                            : braid_reduce_logsumexp(g, x, naxes, axes, keep);
}

static braid_tensor build(braid_graph *g, ts_axis_op op, braid_tensor x,
                          const ts_shape *s, int ax, uint64_t *st, char *what,
                          size_t n) {
    if (op == TS_AX_PROD || op == TS_AX_LOGSUMEXP)
        return reduce_case(g, op, x, s, st, what, n);
    int axis = ts_rand_int(st, 0, 1) ? ax - s->rank : ax;
    bool f1 = ts_rand_int(st, 0, 1), f2 = ts_rand_int(st, 0, 1);
    if (op == TS_AX_CUMSUM) {
        snprintf(what, n, " axis=%d%s%s", axis, f1 ? " exclusive" : "",
                 f2 ? " reverse" : "");
        return braid_cumsum(g, x, axis, f1, f2);
    }
    if (op == TS_AX_ARGMAX || op == TS_AX_ARGMIN) {
        snprintf(what, n, " axis=%d%s%s", axis, f1 ? " keepdims" : "",
                 f2 ? " select_last" : "");
        return op == TS_AX_ARGMAX ? braid_argmax(g, x, axis, f1, f2)
                                  : braid_argmin(g, x, axis, f1, f2);
    }
    int64_t len = s->dims[ax];
    int64_t k = ts_rand_int(st, 0, 3) == 0
                    ? ts_rand_int(st, 0, (int)len)
                    : ts_rand_int(st, 0, len < 8 ? (int)len : 8);
    snprintf(what, n, " axis=%d k=%lld%s", axis, (long long)k,
             f1 ? " smallest" : "");
    braid_tensor idx = BRAID_NONE;
    braid_tensor v = braid_topk(g, x, k, axis, !f1, &idx);
    return op == TS_AX_TOPK_VALUES ? v : idx;
}

ts_axis_case ts_axis_case_make(ts_axis_op op, uint64_t seed, int64_t max_len) {
    ts_axis_case c;
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + (uint64_t)op + 1;
    braid_dtype dt = pick_dtype(&st, op == TS_AX_LOGSUMEXP);
    int ax = 0;
    ts_shape s = pick_shape(&st, &ax, max_len);
    c.range = pick_range(&st, op, dt);
    c.g = braid_graph_new(NULL);
    cr_assert(c.g);
    braid_tensor x = ts_shape_input(c.g, "x", dt, &s);
    char shape[96], attrs[96];
    c.y = build(c.g, op, x, &s, ax, &st, attrs, sizeof attrs);
    cr_assert(braid_tensor_valid(c.y), "%s: %s", op_names[op],
              braid_graph_error(c.g));
    snprintf(c.what, sizeof c.what, "%s %s%s%s (seed %llu)", op_names[op],
             braid_dtype_name(dt), ts_shape_str(&s, shape, sizeof shape), attrs,
             (unsigned long long)seed);
    if (c.range.ints)
        strncat(c.what, " ties", sizeof c.what - strlen(c.what) - 1);
    return c;
}

/* ---- literal cases ------------------------------------------------------- */

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* x = [1, NaN, 3, NaN, 3, -inf, 3, inf]: argmax / argmin take the first NaN
 * (the last with select_last), also in the slice [3, NaN, 3, -inf, 3];
 * topk ranks NaN above +inf, equal values in index order. */
static ts_axis_literal nan_case(void) {
    static const float x[] = {1, NAN, 3, NAN, 3, -INFINITY, 3, INFINITY};
    static const double amax[] = {1}, amax_last[] = {3}, amin[] = {1};
    static const double sl[] = {1}, sl_last[] = {1};
    static const double tv[] = {NAN, NAN, INFINITY, 3}, ti[] = {1, 3, 7, 2};
    static const double sv[] = {-INFINITY, 1, 3}, si[] = {5, 0, 2};
    static const double *const want[] = {amax, amax_last, amin, sl, sl_last,
                                         tv,   ti,        sv,   si};
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor in = braid_input(g, "x", BRAID_F32, 1, DIMS(8));
    braid_tensor part = braid_slice(g, in, DIMS(2), DIMS(7), NULL);
    braid_tensor vi = BRAID_NONE, si_t = BRAID_NONE;
    braid_output(g, "amax", braid_argmax(g, in, 0, false, false));
    braid_output(g, "amax_last", braid_argmax(g, in, 0, false, true));
    braid_output(g, "amin", braid_argmin(g, in, 0, false, false));
    braid_output(g, "slice", braid_argmax(g, part, 0, true, false));
    braid_output(g, "slice_last", braid_argmin(g, part, 0, true, true));
    braid_output(g, "tv", braid_topk(g, in, 4, 0, true, &vi));
    braid_output(g, "ti", vi);
    braid_output(g, "sv", braid_topk(g, in, 3, 0, false, &si_t));
    braid_output(g, "si", si_t);
    return (ts_axis_literal){g, x, 8, want};
}

/* x = [[2, 5, 5], [1, 5, 0]]: ties to the first or the last index; an
 * exclusive reverse cumsum. */
static ts_axis_literal tie_case(void) {
    static const float x[] = {2, 5, 5, 1, 5, 0};
    static const double a[] = {1, 1}, b[] = {2, 1}, c[] = {0, 1, 0};
    static const double d[] = {10, 5, 0, 5, 0, 0}, e[] = {0, 2};
    static const double *const want[] = {a, b, c, d, e};
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor in = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));
    braid_output(g, "a", braid_argmax(g, in, 1, false, false));
    braid_output(g, "b", braid_argmax(g, in, 1, false, true));
    braid_output(g, "c", braid_argmax(g, in, 0, true, true));
    braid_output(g, "d", braid_cumsum(g, in, 1, true, true));
    braid_output(g, "e", braid_argmin(g, in, 1, false, true));
    return (ts_axis_literal){g, x, 6, want};
}

ts_axis_literal ts_axis_literal_make(int which) {
    ts_axis_literal l = which == 0 ? nan_case() : tie_case();
    cr_assert_eq(braid_graph_status(l.g), BRAID_OK, "%s",
                 braid_graph_error(l.g));
    return l;
}

bool ts_axis_literal_check(const ts_axis_literal *l, const ts_io *io, char *msg,
                           size_t size) {
    for (uint32_t o = 0; o < io->noutputs; o++)
        for (int64_t i = 0; i < io->out_numel[o]; i++) {
            double got = bg_load(io->out_dtype[o], io->out[o].data, i);
            double ref = bg_load(io->out_dtype[o], io->ref[o].data, i);
            double w = l->want[o][i];
            bool ok =
                isnan(w) ? isnan(got) && isnan(ref) : got == w && ref == w;
            if (ok) continue;
            snprintf(msg, size,
                     "output %u element %lld: executor %g, reference %g, "
                     "want %g",
                     (unsigned)o, (long long)i, got, ref, w);
            return false;
        }
    return true;
}
