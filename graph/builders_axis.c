/* graph/builders_axis.c — the public builders of the index ops: argmax,
 * argmin, topk, cumsum (one node each, checked by bg_infer_axis, which also
 * turns a negative axis into 0..rank-1) and the log-sum-exp composite.
 * braid_reduce_prod is an ordinary reduction (graph/builders.c). */
#include "graph/internal.h"

#include <math.h>

/* One axis-op node on x, or BRAID_NONE with the error recorded (sticky:
 * a graph that already failed stays quiet). */
static braid_tensor ba_op(braid_graph *g, braid_op op, braid_tensor x,
                          const bg_attrs *a) {
    if (g == NULL) {
        bg_set_last_error(BRAID_ERR_INVALID_ARGUMENT, "%s: graph is NULL",
                          bg_op(op)->name);
        return BRAID_NONE;
    }
    if (g->status != BRAID_OK) return BRAID_NONE;
    braid_tensor t = {bg_build(g, op, &x.id, 1, BRAID_F32, 0, NULL, a, NULL)};
    return t;
}

static braid_tensor ba_arg(braid_graph *g, braid_op op, braid_tensor x,
                           int axis, bool keepdims, bool last) {
    bg_attrs a = {0};
    a.axis = axis;
    a.flags = (keepdims ? BG_KEEPDIMS : 0) | (last ? BG_SELECT_LAST : 0);
    return ba_op(g, op, x, &a);
}

braid_tensor braid_argmax(braid_graph *g, braid_tensor x, int axis,
                          bool keepdims, bool select_last_index) {
    return ba_arg(g, BRAID_OP_ARGMAX, x, axis, keepdims, select_last_index);
}

braid_tensor braid_argmin(braid_graph *g, braid_tensor x, int axis,
                          bool keepdims, bool select_last_index) {
    return ba_arg(g, BRAID_OP_ARGMIN, x, axis, keepdims, select_last_index);
}

braid_tensor braid_topk(braid_graph *g, braid_tensor x, int64_t k, int axis,
                        bool largest, braid_tensor *indices) {
    if (indices) *indices = BRAID_NONE;
    if (g != NULL && g->status == BRAID_OK && k < 0) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT, "topk: k = %lld is negative",
                (long long)k);
        return BRAID_NONE;
    }
    bg_attrs a = {0};
    a.axis = axis;
    a.seed = (uint64_t)k;
    a.flags = largest ? 0 : BG_SMALLEST;
    braid_tensor v = ba_op(g, BRAID_OP_TOPK_VALUES, x, &a);
    if (indices && braid_tensor_valid(v))
        *indices = ba_op(g, BRAID_OP_TOPK_INDICES, x, &a);
    return v;
}

braid_tensor braid_cumsum(braid_graph *g, braid_tensor x, int axis,
                          bool exclusive, bool reverse) {
    bg_attrs a = {0};
    a.axis = axis;
    a.flags = (exclusive ? BG_EXCLUSIVE : 0) | (reverse ? BG_REVERSE : 0);
    return ba_op(g, BRAID_OP_CUMSUM, x, &a);
}

/* m' = m where |m| < inf, else 0: the shift, kept finite so that x - m'
 * never makes NaN from inf - inf (all -inf gives log 0 + 0 = -inf, a +inf
 * gives +inf, a NaN NaN). */
static braid_tensor ba_finite_or_zero(braid_graph *g, braid_tensor m,
                                      braid_dtype t) {
    braid_tensor inf = braid_fill(g, t, 0, NULL, INFINITY);
    braid_tensor zero = braid_fill(g, t, 0, NULL, 0.0);
    braid_tensor ok = braid_lt(g, braid_abs(g, m), inf);
    return braid_where(g, ok, m, zero);
}

braid_tensor braid_reduce_logsumexp(braid_graph *g, braid_tensor x, int naxes,
                                    const int *axes, bool keepdims) {
    if (g == NULL || g->status != BRAID_OK)
        return braid_reduce_max(g, x, naxes, axes, keepdims); /* reports */
    if (x.id < g->nnodes && !braid_dtype_is_float(g->nodes[x.id].dtype)) {
        char t[BG_ERROR_MAX / 2];
        bg_fail(g, BRAID_ERR_DTYPE,
                "reduce_logsumexp: operand %s; expected a float dtype",
                bg_type_str(&g->nodes[x.id], t, sizeof t));
        return BRAID_NONE;
    }
    braid_tensor m = braid_reduce_max(g, x, naxes, axes, true);
    if (!braid_tensor_valid(m)) return BRAID_NONE;
    braid_dtype t = g->nodes[m.id].dtype;
    braid_tensor shift = ba_finite_or_zero(g, m, t);
    braid_tensor s = braid_sum(g, braid_exp(g, braid_sub(g, x, shift)), naxes,
                               axes, keepdims);
    if (!braid_tensor_valid(s)) return BRAID_NONE;
    if (!keepdims) {
        const bg_node *sn = &g->nodes[s.id];
        int64_t dims[BRAID_MAX_RANK];
        for (int i = 0; i < sn->rank; i++)
            dims[i] = sn->dims[i];
        shift = braid_reshape(g, shift, sn->rank, dims);
    }
    return braid_add(g, braid_log(g, s), shift);
}
