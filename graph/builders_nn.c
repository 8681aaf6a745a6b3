/* graph/builders_nn.c — the composites ONNX models need beside layer norm:
 * rms_norm, pad and the global pools, each written with existing ops (the
 * choice and its cost are in docs/ops.md). Like graph/builders.c, every
 * check about an argument bg_build never sees lives here; bad arguments
 * record an error on the graph (sticky) and return BRAID_NONE. */
#include "graph/internal.h"
#include "graph/window.h"

#include <math.h>
#include <string.h>

/* ---- rms_norm ------------------------------------------------------------ */

/* ONNX RMSNormalization: the mean of squares over axes [axis, rank) is
 * kept (keepdims), so fusion gives one reduction kernel (square + mean)
 * and one elementwise kernel (x · rsqrt(ms + eps) · scale). */
braid_tensor braid_rms_norm(braid_graph *g, braid_tensor x, braid_tensor scale,
                            int axis, double eps) {
    const bg_node *n = bb_peek(g, x, "rms_norm");
    if (n == NULL || !bb_need_float(g, n, "rms_norm")) return BRAID_NONE;
    if (n->rank == 0 || !isfinite(eps) || eps < 0) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "rms_norm: rank %d, eps %g; expected rank >= 1 and a finite "
                "eps >= 0",
                (int)n->rank, eps);
        return BRAID_NONE;
    }
    int first = bb_axis(g, n, axis, "rms_norm");
    if (first < 0 || !bb_affine_ok(g, n, scale, "scale", "rms_norm"))
        return BRAID_NONE;
    int axes[BRAID_MAX_RANK], naxes = 0;
    for (int a = first; a < n->rank; a++)
        axes[naxes++] = a;
    braid_dtype dt = n->dtype;
    braid_tensor ms = braid_mean(g, braid_square(g, x), naxes, axes, true);
    braid_tensor e = braid_fill(g, dt, 0, NULL, eps);
    braid_tensor y = braid_mul(g, x, braid_rsqrt(g, braid_add(g, ms, e)));
    if (braid_tensor_valid(scale)) y = braid_mul(g, y, scale);
    return y;
}

/* ---- pooling ------------------------------------------------------------- */

/* The public parameters in the node's attribute slots (graph/window.h);
 * strides and dilations of 0 mean 1. The range checks are bg_build's. */
static braid_tensor pool(braid_graph *g, braid_op op, braid_tensor x,
                         const braid_pool_params *p) {
    const char *name = bg_op(op)->name;
    const bg_node *n = bb_peek(g, x, name);
    if (n == NULL) return BRAID_NONE;
    if (p == NULL) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT, "%s: params is NULL", name);
        return BRAID_NONE;
    }
    bg_attrs a = {0};
    int k = n->rank - 2;
    for (int i = 0; i < k && i < 3; i++) {
        const int64_t v[5] = {p->kernel[i], p->strides[i] ? p->strides[i] : 1,
                              p->dilations[i] ? p->dilations[i] : 1,
                              p->pads_lo[i], p->pads_hi[i]};
        for (int q = 0; q < 5; q++)
            bg_window_set_param(&a, q, i, v[q]);
    }
    a.flags = (p->ceil_mode ? BG_POOL_CEIL : 0) |
              (p->count_include_pad && op == BRAID_OP_AVG_POOL
                   ? BG_POOL_COUNT_PAD
                   : 0);
    return bb_op1(g, op, x, &a);
}

braid_tensor braid_max_pool(braid_graph *g, braid_tensor x,
                            const braid_pool_params *p) {
    return pool(g, BRAID_OP_MAX_POOL, x, p);
}

braid_tensor braid_avg_pool(braid_graph *g, braid_tensor x,
                            const braid_pool_params *p) {
    return pool(g, BRAID_OP_AVG_POOL, x, p);
}

/* ---- resize ---------------------------------------------------------------- */

/* ONNX's rules: sizes from the scales (floor(in · scale)) when sizes are
 * not given, scales from the sizes (out / in) when scales are not. Only
 * the last three axes' scales are kept (graph/window.h); bg_build checks
 * that the leading axes keep their size. */
braid_tensor braid_resize(braid_graph *g, braid_tensor x, const int64_t *sizes,
                          const double *scales, braid_resize_mode mode,
                          braid_resize_coord coord,
                          braid_resize_nearest nearest) {
    const bg_node *n = bb_peek(g, x, "resize");
    if (n == NULL) return BRAID_NONE;
    if (sizes == NULL && scales == NULL) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "resize: sizes and scales are both NULL");
        return BRAID_NONE;
    }
    if ((unsigned)mode > 3 || (unsigned)coord > 7 || (unsigned)nearest > 3) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "resize: mode %d, coord %d, nearest %d out of range", (int)mode,
                (int)coord, (int)nearest);
        return BRAID_NONE;
    }
    bg_attrs a = {0};
    int64_t dims[BRAID_MAX_RANK];
    for (int s = 0; s < 3; s++)
        bg_resize_set_scale(&a, s, 1);
    for (int ax = 0; ax < n->rank; ax++) {
        double in = (double)n->dims[ax];
        double sc = scales ? scales[ax] : (in > 0 ? (double)sizes[ax] / in : 1);
        double out = sizes ? (double)sizes[ax] : floor(in * sc);
        /* the checks are bg_build's; keep a NaN or huge size refusable */
        dims[ax] = out >= 0 && out < 1e18 ? (int64_t)out : -1;
        if (ax >= n->rank - 3) bg_resize_set_scale(&a, ax - (n->rank - 3), sc);
    }
    a.flags = BG_RESIZE_FLAGS(mode, coord, nearest);
    if (!bb_ready(g, "resize")) return BRAID_NONE;
    return bb_tensor(bg_build(g, BRAID_OP_RESIZE, &x.id, 1, BRAID_F32, n->rank,
                              dims, &a, NULL));
}

/* ---- global pools -------------------------------------------------------- */

/* ONNX GlobalMaxPool / GlobalAveragePool: x is [N, C, spatial...]; the
 * result [N, C, 1, ...] is one reduction over the spatial axes, which the
 * reduction kernels already run at memory speed. */
static braid_tensor global_pool(braid_graph *g, braid_tensor x, bool max,
                                const char *op) {
    const bg_node *n = bb_peek(g, x, op);
    if (n == NULL) return BRAID_NONE;
    if (n->rank < 3) {
        char t[BG_ERROR_MAX / 2];
        bg_fail(g, BRAID_ERR_SHAPE,
                "%s: operand %s; expected rank >= 3 ([N, C, spatial...])", op,
                bg_type_str(n, t, sizeof t));
        return BRAID_NONE;
    }
    int axes[BRAID_MAX_RANK], naxes = 0;
    for (int a = 2; a < n->rank; a++)
        axes[naxes++] = a;
    return max ? braid_reduce_max(g, x, naxes, axes, true)
               : braid_mean(g, x, naxes, axes, true);
}

braid_tensor braid_global_max_pool(braid_graph *g, braid_tensor x) {
    return global_pool(g, x, true, "global_max_pool");
}

braid_tensor braid_global_avg_pool(braid_graph *g, braid_tensor x) {
    return global_pool(g, x, false, "global_avg_pool");
}

/* ---- pad ----------------------------------------------------------------- */

/* The piece added before (lo) or after (hi) x along axis, count elements
 * long, for edge and reflect modes: slices of x (reflect walks backwards,
 * skipping the border element), broadcast for edge. */
static braid_tensor pad_piece(braid_graph *g, braid_tensor x, const bg_node *n,
                              int axis, int64_t count, bool hi,
                              braid_pad_mode mode) {
    int64_t start[BRAID_MAX_RANK] = {0}, stop[BRAID_MAX_RANK],
            step[BRAID_MAX_RANK], dims[BRAID_MAX_RANK];
    for (int a = 0; a < n->rank; a++) {
        stop[a] = dims[a] = n->dims[a];
        step[a] = 1;
    }
    int64_t d = n->dims[axis];
    dims[axis] = count;
    if (mode == BRAID_PAD_EDGE) {
        start[axis] = hi ? d - 1 : 0;
        stop[axis] = start[axis] + 1;
        braid_tensor e = braid_slice(g, x, start, stop, step);
        return braid_broadcast_to(g, e, n->rank, dims);
    }
    /* reflect: before x, elements count..1; after, d-2 down to d-1-count */
    start[axis] = hi ? d - 2 : count;
    stop[axis] = start[axis] - count;
    if (stop[axis] < 0) stop[axis] = -d - 1; /* through element 0 */
    step[axis] = -1;
    return braid_slice(g, x, start, stop, step);
}

/* x padded along one axis by lo and hi (both >= 0) elements. */
static braid_tensor pad_axis(braid_graph *g, braid_tensor x, int axis,
                             int64_t lo, int64_t hi, braid_pad_mode mode,
                             double value) {
    const bg_node *p = bb_peek(g, x, "pad");
    if (p == NULL) return BRAID_NONE;
    /* a copy: building the pieces may move the graph's nodes */
    const bg_node node = *p, *n = &node;
    int64_t count[2] = {lo, hi}, dims[BRAID_MAX_RANK];
    memcpy(dims, n->dims, sizeof dims);
    braid_tensor parts[3];
    int np = 0;
    for (int side = 0; side < 2; side++) {
        if (side == 1) parts[np++] = x;
        if (count[side] == 0) continue;
        dims[axis] = count[side];
        parts[np++] = mode == BRAID_PAD_CONSTANT
                          ? braid_fill(g, n->dtype, n->rank, dims, value)
                          : pad_piece(g, x, n, axis, count[side], side == 1,
                                      mode);
    }
    return braid_concat(g, np, parts, axis);
}

/* Negative pads crop: one slice of every cropped axis first. */
static braid_tensor pad_crop(braid_graph *g, braid_tensor x, const bg_node *n,
                             const int64_t *lo, const int64_t *hi) {
    int64_t start[BRAID_MAX_RANK], stop[BRAID_MAX_RANK];
    bool any = false;
    for (int a = 0; a < n->rank; a++) {
        start[a] = lo[a] < 0 ? -lo[a] : 0;
        stop[a] = n->dims[a] + (hi[a] < 0 ? hi[a] : 0);
        if (stop[a] < start[a]) stop[a] = start[a];
        any |= lo[a] < 0 || hi[a] < 0;
    }
    return any ? braid_slice(g, x, start, stop, NULL) : x;
}

/* Checks the pads against x and the mode; false after recording why. */
static bool pad_args_ok(braid_graph *g, const bg_node *n, const int64_t *lo,
                        const int64_t *hi, braid_pad_mode mode) {
    if (n->rank > 0 && (lo == NULL || hi == NULL)) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "pad: pads_lo or pads_hi is NULL for rank %d", (int)n->rank);
        return false;
    }
    if (mode != BRAID_PAD_CONSTANT && mode != BRAID_PAD_REFLECT &&
        mode != BRAID_PAD_EDGE) {
        bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                "pad: mode %d; expected constant, reflect or edge", (int)mode);
        return false;
    }
    for (int a = 0; a < n->rank; a++) {
        int64_t d = n->dims[a], l = lo[a], h = hi[a];
        int64_t kept = d + (l < 0 ? l : 0) + (h < 0 ? h : 0);
        /* reflect mirrors without the border element: at most kept - 1 */
        int64_t most = mode == BRAID_PAD_CONSTANT ? BG_MAX_BYTES
                       : mode == BRAID_PAD_EDGE   ? (kept > 0 ? BG_MAX_BYTES : 0)
                                                  : kept - 1;
        bool ok = l >= -d && h >= -d && kept >= 0 && l <= most && h <= most;
        if (!ok) {
            char t[BG_ERROR_MAX / 2];
            bg_fail(g, BRAID_ERR_INVALID_ARGUMENT,
                    "pad: axis %d of %s: pads %lld, %lld; expected crops "
                    "within the axis and, for reflect, at most %lld "
                    "(the axis after cropping less one), for edge a "
                    "nonempty axis",
                    a, bg_type_str(n, t, sizeof t), (long long)l, (long long)h,
                    (long long)(kept > 0 ? kept - 1 : 0));
            return false;
        }
    }
    return true;
}

braid_tensor braid_pad(braid_graph *g, braid_tensor x, const int64_t *pads_lo,
                       const int64_t *pads_hi, braid_pad_mode mode,
                       double value) {
    const bg_node *n = bb_peek(g, x, "pad");
    if (n == NULL || !pad_args_ok(g, n, pads_lo, pads_hi, mode))
        return BRAID_NONE;
    int rank = n->rank;
    braid_tensor y = pad_crop(g, x, n, pads_lo, pads_hi);
    for (int a = 0; a < rank; a++) {
        int64_t l = pads_lo[a] > 0 ? pads_lo[a] : 0;
        int64_t h = pads_hi[a] > 0 ? pads_hi[a] : 0;
        if (l > 0 || h > 0) y = pad_axis(g, y, a, l, h, mode, value);
    }
    return y;
}
