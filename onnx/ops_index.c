/* onnx/ops_index.c — ArgMax, ArgMin and Hardmax as composites: the
 * position of the first (or last) element equal to the axis' max (min),
 * found as the smallest (largest) iota among them. */
#include "onnx/onnx_internal.h"

#define ELEM_INT64 7

/* i32 index of the extreme element along axis, dims kept. */
static braid_tensor extreme_index(ox_node *n, braid_tensor x, int axis,
                                  bool max, bool last) {
    braid_graph *g = n->g;
    int64_t d[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d);
    braid_tensor m = max ? braid_reduce_max(g, x, 1, &axis, true)
                         : braid_reduce_min(g, x, 1, &axis, true);
    braid_tensor hit = braid_eq(g, x, m);
    braid_tensor io = braid_iota(g, BRAID_I32, r, d, axis);
    braid_tensor none = ox_scalar(n, BRAID_I32, last ? -1 : (double)INT32_MAX);
    braid_tensor cand = braid_where(g, hit, io, none);
    return last ? braid_reduce_max(g, cand, 1, &axis, true)
                : braid_reduce_min(g, cand, 1, &axis, true);
}

static braid_status arg(ox_node *n, bool max) {
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, NULL), axis;
    if (!ox_axis(n, ox_attr_int(n, "axis", 0), r, &axis)) return n->im->status;
    braid_tensor i = extreme_index(n, x, axis, max,
                                   ox_attr_int(n, "select_last_index", 0));
    if (!ox_attr_int(n, "keepdims", 1)) {
        int64_t d[BRAID_MAX_RANK], o[BRAID_MAX_RANK];
        int k = 0;
        ox_rank(n, i, d);
        for (int a = 0; a < r; a++)
            if (a != axis) o[k++] = d[a];
        i = braid_reshape(n->g, i, k, o);
    }
    ox_out(n, 0, i, ELEM_INT64);
    return BRAID_OK;
}
static braid_status map_argmax(ox_node *n) { return arg(n, true); }
static braid_status map_argmin(ox_node *n) { return arg(n, false); }

static braid_status map_hardmax(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d), axis;
    if (!ox_axis(n, ox_attr_int(n, "axis", -1), r, &axis)) return n->im->status;
    braid_tensor i = extreme_index(n, x, axis, true, false);
    braid_tensor hit = braid_eq(g, braid_iota(g, BRAID_I32, r, d, axis), i);
    braid_dtype t = ox_tdtype(n, x);
    ox_out(n, 0, braid_where(g, hit, ox_scalar(n, t, 1), ox_scalar(n, t, 0)),
           ox_in_elem(n, 0));
    return BRAID_OK;
}

/* CumSum as a matmul with a triangular 0/1 matrix (exclusive: strictly
 * triangular; reverse: the other triangle), in f64 for integers. */
static braid_status map_cumsum(ox_node *n) {
    braid_graph *g = n->g;
    int64_t ax64, d[BRAID_MAX_RANK];
    int cnt, axis;
    if (!ox_static_ints(n, 1, &ax64, 1, &cnt)) return n->im->status;
    braid_tensor x = ox_in(n, 0);
    braid_dtype t = ox_tdtype(n, x);
    int r = ox_rank(n, x, d);
    if (!ox_axis(n, ax64, r, &axis)) return n->im->status;
    int64_t len = d[axis];
    if (len > 4096)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "an axis of %lld "
                            "(the composite is quadratic)", (long long)len);
    braid_dtype ct = braid_dtype_is_float(t) ? t : BRAID_F64;
    int perm[BRAID_MAX_RANK], inv[BRAID_MAX_RANK];
    for (int i = 0, k = 0; i < r; i++)
        if (i != axis) perm[k++] = i;
    perm[r - 1] = axis;
    for (int i = 0; i < r; i++) inv[perm[i]] = i;
    braid_tensor y = braid_permute(g, braid_cast(g, x, ct), perm);
    int64_t sq[2] = {len, len};
    /* m[i][j] = 1 when input i adds into output j */
    braid_tensor i = braid_iota(g, BRAID_I32, 2, sq, 0);
    braid_tensor j = braid_iota(g, BRAID_I32, 2, sq, 1);
    bool ex = ox_attr_int(n, "exclusive", 0), rev = ox_attr_int(n, "reverse", 0);
    braid_tensor m = rev ? (ex ? braid_gt(g, i, j) : braid_ge(g, i, j))
                         : (ex ? braid_lt(g, i, j) : braid_le(g, i, j));
    m = braid_cast(g, m, ct);
    if (r == 1) y = braid_reshape(g, y, 2, (int64_t[]){1, len});
    y = braid_matmul(g, y, m, 0);
    if (r == 1) y = braid_reshape(g, y, 1, &len);
    ox_out(n, 0, braid_cast(g, braid_permute(g, y, inv), t), ox_in_elem(n, 0));
    return BRAID_OK;
}

const ox_op ox_ops_index[] = {
    {"CumSum", 11, map_cumsum, 0},
    {"ArgMax", 1, map_argmax, 0},
    {"ArgMin", 1, map_argmin, 0},
    {"Hardmax", 1, map_hardmax, 0},
    {NULL, 0, NULL, 0},
};
