/* tests/support/random_graph_axis.c — the generator's index ops: argmax,
 * argmin, topk (values and indices), cumsum, reduce_prod and the
 * log-sum-exp composite.
 *
 * Indices are compared exactly, so argmax/argmin and topk_indices take
 * exact operands only (an executor's value a rounding away from the
 * reference's could win a near tie). topk's values are the operand's
 * values sorted, so their drift is the operand's: the i-th largest moves
 * by no more than the elements do. cumsum's prefixes lie between the
 * one-term and the n-term sums. */
#include "tests/support/random_graph.h"

#include <math.h>

/* An operand of rank >= 1 (exact when asked) and one of its axes whose
 * length is within the reduction limit, or -1. */
static int pick_line(ts_gen *G, bool exact, int *axis) {
    int xi = ts_gen_pick(G, (ts_want){TS_NUMS, exact, 1, false});
    if (xi < 0) return -1;
    *axis = ts_gen_int(G, 0, G->vals[xi].rank - 1);
    return G->vals[xi].dims[*axis] <= TS_REDUCE_LIMIT ? xi : -1;
}

static bool gen_arg(ts_gen *G) {
    int axis, xi = pick_line(G, true, &axis);
    if (xi < 0 || G->vals[xi].dims[axis] == 0) return false;
    ts_val x = G->vals[xi];
    bool last = ts_gen_chance(G, 0.5), keep = ts_gen_chance(G, 0.5);
    int ax = ts_gen_chance(G, 0.3) ? axis - x.rank : axis;
    braid_tensor t = ts_gen_chance(G, 0.5)
                         ? braid_argmax(G->g, x.t, ax, keep, last)
                         : braid_argmin(G->g, x.t, ax, keep, last);
    ts_gen_emit(G, t, ts_iv_exact(0, (double)x.dims[axis] - 1), true);
    return true;
}

static bool gen_topk(ts_gen *G) {
    int axis, xi = pick_line(G, false, &axis);
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    int64_t k = ts_gen_int(G, 0, (int)x.dims[axis]);
    bool largest = ts_gen_chance(G, 0.5);
    braid_tensor idx = BRAID_NONE;
    braid_tensor v = braid_topk(G->g, x.t, k, axis, largest,
                                x.exact ? &idx : NULL);
    ts_gen_emit(G, v, x.v, x.exact);
    if (x.exact)
        ts_gen_emit(G, idx, ts_iv_exact(0, fmax(0, (double)x.dims[axis] - 1)),
                    true);
    return true;
}

static bool gen_cumsum(ts_gen *G) {
    int axis, xi = pick_line(G, false, &axis);
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    int64_t n = x.dims[axis] > 0 ? x.dims[axis] : 1;
    bool excl = ts_gen_chance(G, 0.5);
    ts_iv v;
    if (x.dt == BRAID_I32) {
        v = ts_iv_int(fmin(fmin(x.v.lo, x.v.lo * (double)n), 0.0),
                      fmax(fmax(x.v.hi, x.v.hi * (double)n), 0.0));
    } else {
        v = ts_iv_union(ts_iv_round(ts_iv_sum(x.v, 1, x.dt), x.dt),
                        ts_iv_round(ts_iv_sum(x.v, n, x.dt), x.dt));
        if (excl) v = ts_iv_union(v, ts_iv_exact(0, 0));
        if (!ts_iv_ok(v, x.dt)) return false;
    }
    braid_tensor t =
        braid_cumsum(G->g, x.t, axis, excl, ts_gen_chance(G, 0.5));
    ts_gen_emit(G, t, v, x.exact && x.dt == BRAID_I32);
    return true;
}

bool ts_gen_axis(ts_gen *G) {
    int which = ts_gen_int(G, 0, 2);
    return which == 0 ? gen_arg(G) : which == 1 ? gen_topk(G) : gen_cumsum(G);
}

/* reduce_prod over one axis of at most 6 elements (products grow fast):
 * the interval of the product, each step rounded (the executors round
 * less often). */
bool ts_gen_reduce_prod(ts_gen *G) {
    int axis, xi = pick_line(G, false, &axis);
    if (xi < 0 || G->vals[xi].dims[axis] > 6) return false;
    ts_val x = G->vals[xi];
    int64_t n = x.dims[axis];
    ts_iv v = ts_iv_exact(1, 1);
    for (int64_t i = 0; i < n; i++)
        v = x.dt == BRAID_I32 ? ts_iv_int(-2147483648.0, 2147483647.0)
                              : ts_iv_round(ts_iv_mul(v, x.v), x.dt);
    if (x.dt != BRAID_I32 && !ts_iv_ok(v, x.dt)) return false;
    int ax = ts_gen_chance(G, 0.3) ? axis - x.rank : axis;
    braid_tensor t =
        braid_reduce_prod(G->g, x.t, 1, &ax, ts_gen_chance(G, 0.5));
    ts_gen_emit(G, t, v, x.exact && (x.dt == BRAID_I32 || n <= 1));
    return true;
}
