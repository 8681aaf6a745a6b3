/* onnx/ops_index.c — ONNX ops on braid's index ops (issue #13): Gather
 * with run-time indices, GatherElements, GatherND, ScatterElements,
 * ScatterND, Scatter, ArgMax, ArgMin, Hardmax, TopK, CumSum. Indices
 * reach braid as i32 (ONNX int64 narrowed at the boundary, docs/onnx.md);
 * index results are i32 marked int64, widened to i64 at the outputs. */
#include "onnx/onnx_internal.h"

#include <string.h>

static braid_status map_gather(ox_node *n) {
    braid_tensor x = ox_in(n, 0), i = ox_in(n, 1);
    int axis = (int)ox_attr_int(n, "axis", 0);
    ox_out(n, 0, braid_gather(n->g, x, i, axis), ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_gather_elements(ox_node *n) {
    braid_tensor x = ox_in(n, 0), i = ox_in(n, 1);
    int axis = (int)ox_attr_int(n, "axis", 0);
    ox_out(n, 0, braid_gather_elements(n->g, x, i, axis), ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_gather_nd(ox_node *n) {
    braid_tensor x = ox_in(n, 0), i = ox_in(n, 1);
    int b = (int)ox_attr_int(n, "batch_dims", 0);
    ox_out(n, 0, braid_gather_nd(n->g, x, i, b), ox_in_elem(n, 0));
    return BRAID_OK;
}

/* The reduction attribute (opset 16+; "none" before). */
static bool reduction(ox_node *n, braid_scatter_reduction *r) {
    char red[8];
    ox_attr_str(n, "reduction", red, sizeof red, "none");
    static const char *names[] = {"none", "add", "mul", "max", "min"};
    for (int k = 0; k < 5; k++)
        if (!strcmp(red, names[k])) {
            *r = (braid_scatter_reduction)k;
            return true;
        }
    ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "reduction \"%s\"", red);
    return false;
}

/* ScatterElements, and Scatter (its deprecated name, opsets 9-10). */
static braid_status map_scatter_elements(ox_node *n) {
    braid_scatter_reduction r;
    if (!reduction(n, &r)) return n->im->status;
    braid_tensor x = ox_in(n, 0), i = ox_in(n, 1), u = ox_in(n, 2);
    int axis = (int)ox_attr_int(n, "axis", 0);
    ox_out(n, 0, braid_scatter_elements(n->g, x, i, u, axis, r),
           ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_scatter_nd(ox_node *n) {
    braid_scatter_reduction r;
    if (!reduction(n, &r)) return n->im->status;
    braid_tensor x = ox_in(n, 0), i = ox_in(n, 1), u = ox_in(n, 2);
    ox_out(n, 0, braid_scatter_nd(n->g, x, i, u, r), ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status arg(ox_node *n, bool max) {
    braid_tensor x = ox_in(n, 0);
    int axis = (int)ox_attr_int(n, "axis", 0);
    bool keep = ox_attr_int(n, "keepdims", 1);
    bool last = ox_attr_int(n, "select_last_index", 0);
    braid_tensor r = max ? braid_argmax(n->g, x, axis, keep, last)
                         : braid_argmin(n->g, x, axis, keep, last);
    ox_out(n, 0, r, OX_ELEM_INT64);
    return BRAID_OK;
}
static braid_status map_argmax(ox_node *n) { return arg(n, true); }
static braid_status map_argmin(ox_node *n) { return arg(n, false); }

/* 1 at the first maximum along axis, 0 elsewhere. */
static braid_status map_hardmax(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d), axis;
    if (!ox_axis(n, ox_attr_int(n, "axis", -1), r, &axis)) return n->im->status;
    braid_tensor i = braid_argmax(g, x, axis, true, false);
    braid_tensor hit = braid_eq(g, braid_iota(g, BRAID_I32, r, d, axis), i);
    braid_dtype t = ox_tdtype(n, x);
    ox_out(n, 0, braid_where(g, hit, ox_scalar(n, t, 1), ox_scalar(n, t, 0)),
           ox_in_elem(n, 0));
    return BRAID_OK;
}

/* k is an attribute before opset 10, a static input after. sorted=0
 * leaves the order to the implementation: braid's sorted order is one. */
static braid_status map_topk(ox_node *n) {
    int64_t k;
    int cnt;
    if (n->im->opset < 10) {
        k = ox_attr_int(n, "k", -1);
    } else if (!ox_static_ints(n, 1, &k, 1, &cnt)) {
        return n->im->status;
    }
    braid_tensor x = ox_in(n, 0), idx = BRAID_NONE;
    int axis = (int)ox_attr_int(n, "axis", -1);
    bool largest = ox_attr_int(n, "largest", 1);
    braid_tensor v = braid_topk(n->g, x, k, axis, largest,
                                n->nout > 1 ? &idx : NULL);
    ox_out(n, 0, v, ox_in_elem(n, 0));
    if (n->nout > 1) ox_out(n, 1, idx, OX_ELEM_INT64);
    return BRAID_OK;
}

static braid_status map_cumsum(ox_node *n) {
    int64_t axis;
    int cnt;
    if (!ox_static_ints(n, 1, &axis, 1, &cnt)) return n->im->status;
    braid_tensor x = ox_in(n, 0);
    bool ex = ox_attr_int(n, "exclusive", 0), rev = ox_attr_int(n, "reverse", 0);
    ox_out(n, 0, braid_cumsum(n->g, x, (int)axis, ex, rev), ox_in_elem(n, 0));
    return BRAID_OK;
}

/* CumProd (26), from cumsums in f64 (braid has no running product): the
 * magnitude as exp of the running sum of log|x|, the sign from the
 * running count of negatives, 0 once a zero has been passed. Exact for
 * small integers (rounded), within a few ulps of f64 for floats. */
static braid_status map_cumprod(ox_node *n) {
    braid_graph *g = n->g;
    int64_t ax;
    int cnt;
    if (!ox_static_ints(n, 1, &ax, 1, &cnt)) return n->im->status;
    braid_tensor x = ox_in(n, 0);
    braid_dtype t = ox_tdtype(n, x);
    bool ex = ox_attr_int(n, "exclusive", 0), rev = ox_attr_int(n, "reverse", 0);
    int axis = (int)ax;
    braid_tensor y = braid_cast(g, x, BRAID_F64);
    braid_tensor zero = ox_scalar(n, BRAID_F64, 0), one = ox_scalar(n, BRAID_F64, 1);
    braid_tensor isz = braid_eq(g, y, zero);
    braid_tensor lg = braid_log(g, braid_where(g, isz, one, braid_abs(g, y)));
    braid_tensor nz = braid_cumsum(g, braid_where(g, isz, one, zero), axis, ex, rev);
    braid_tensor nn = braid_cumsum(g, braid_where(g, braid_lt(g, y, zero), one,
                                                  zero), axis, ex, rev);
    braid_tensor mag = braid_exp(g, braid_cumsum(g, lg, axis, ex, rev));
    braid_tensor half = braid_mul(g, nn, ox_scalar(n, BRAID_F64, 0.5));
    braid_tensor odd = braid_ne(g, braid_floor(g, half), half);
    braid_tensor p = braid_where(g, odd, braid_neg(g, mag), mag);
    p = braid_where(g, braid_gt(g, nz, zero), zero, p);
    if (!braid_dtype_is_float(t)) p = braid_round(g, p);
    ox_out(n, 0, braid_cast(g, p, t), ox_in_elem(n, 0));
    return BRAID_OK;
}

/* ReverseSequence: along time_axis, the first seq_lens[b] elements of
 * batch b reversed, the rest kept: a GatherElements with index
 * where(t < len, len - 1 - t, t). */
static braid_status map_reverse_sequence(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK], ld[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d), ba, ta;
    if (!ox_axis(n, ox_attr_int(n, "batch_axis", 1), r, &ba) ||
        !ox_axis(n, ox_attr_int(n, "time_axis", 0), r, &ta))
        return n->im->status;
    for (int i = 0; i < r; i++) ld[i] = i == ba ? d[ba] : 1;
    braid_tensor len = braid_reshape(g, braid_cast(g, ox_in(n, 1), BRAID_I32),
                                     r, ld);
    braid_tensor t = braid_iota(g, BRAID_I32, r, d, ta);
    braid_tensor rev = braid_sub(g, braid_sub(g, len, ox_scalar(n, BRAID_I32, 1)),
                                 t);
    braid_tensor idx = braid_where(g, braid_lt(g, t, len), rev, t);
    ox_out(n, 0, braid_gather_elements(g, x, idx, ta), ox_in_elem(n, 0));
    return BRAID_OK;
}

/* TensorScatter (24), a KV-cache write: update's positions s along axis
 * land at write_indices[b] + s (mod the cache length when circular) of
 * batch b; a ScatterElements with those indices. */
static braid_status map_tensor_scatter(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor c = ox_in(n, 0), u = ox_in(n, 1);
    int64_t cd[BRAID_MAX_RANK], ud[BRAID_MAX_RANK], wd[BRAID_MAX_RANK];
    int r = ox_rank(n, c, cd), axis;
    ox_rank(n, u, ud);
    if (!ox_axis(n, ox_attr_int(n, "axis", -2), r, &axis)) return n->im->status;
    char mode[16];
    ox_attr_str(n, "mode", mode, sizeof mode, "linear");
    bool circ = !strcmp(mode, "circular");
    if (!circ && strcmp(mode, "linear"))
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "mode \"%s\"", mode);
    braid_tensor idx = braid_iota(g, BRAID_I32, r, ud, axis);
    if (ox_has(n, 2)) {
        for (int i = 0; i < r; i++) wd[i] = i == 0 ? cd[0] : 1;
        braid_tensor w = braid_cast(g, ox_in(n, 2), BRAID_I32);
        idx = braid_add(g, idx, braid_reshape(g, w, r, wd));
    }
    if (circ) idx = braid_mod(g, idx, ox_scalar(n, BRAID_I32, (double)cd[axis]));
    ox_out(n, 0, braid_scatter_elements(g, c, idx, u, axis, BRAID_SCATTER_NONE),
           ox_in_elem(n, 0));
    return BRAID_OK;
}

const ox_op ox_ops_index[] = {
    {"TensorScatter", 24, map_tensor_scatter, 0},
    {"ReverseSequence", 10, map_reverse_sequence, 0},
    {"CumProd", 26, map_cumprod, 0},
    {"ArgMax", 1, map_argmax, 0},
    {"ArgMin", 1, map_argmin, 0},
    {"CumSum", 11, map_cumsum, 0},
    {"Gather", 1, map_gather, 0},
    {"GatherElements", 11, map_gather_elements, 0},
    {"GatherND", 11, map_gather_nd, 0},
    {"Hardmax", 1, map_hardmax, 0},
    {"Scatter", 9, map_scatter_elements, 0},
    {"ScatterElements", 11, map_scatter_elements, 0},
    {"ScatterND", 11, map_scatter_nd, 0},
    {"TopK", 1, map_topk, 0},
    {NULL, 0, NULL, 0},
};
