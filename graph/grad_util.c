/* graph/grad_util.c — shape helpers the gradient rules share: zeros,
 * un-broadcasting, un-slicing, expanding a reduction's gradient. Each is a
 * few public builder calls, so the nodes they make are validated and
 * optimised like any other. */
#include "graph/grad.h"

#include <string.h>

void bg_grad_type(bg_grad_ctx *c, uint32_t id, braid_dtype *dt, int *rank,
                  int64_t *dims) {
    const bg_node *n = bg_node_at(bg_grad_graph(c), id);
    if (dt) *dt = n->dtype;
    *rank = n->rank;
    memcpy(dims, n->dims, sizeof n->dims);
}

braid_tensor bg_grad_scalar(bg_grad_ctx *c, braid_dtype dt, double v) {
    return braid_fill(bg_grad_graph(c), dt, 0, NULL, v);
}

braid_tensor bg_grad_zeros(bg_grad_ctx *c, braid_dtype dt, int rank,
                           const int64_t *dims) {
    return braid_fill(bg_grad_graph(c), dt, rank, dims, 0.0);
}

/* The type of tensor t (valid, or the graph has an error: then rank 0). */
static void gu_type(bg_grad_ctx *c, braid_tensor t, braid_dtype *dt, int *rank,
                    int64_t *dims) {
    braid_graph *g = bg_grad_graph(c);
    *rank = 0;
    if (dt) *dt = BRAID_F32;
    if (braid_tensor_valid(t) && t.id < g->nnodes)
        bg_grad_type(c, t.id, dt, rank, dims);
}

static bool gu_same_shape(int ra, const int64_t *a, int rb, const int64_t *b) {
    return ra == rb && memcmp(a, b, (size_t)ra * sizeof *a) == 0;
}

braid_tensor bg_grad_unbroadcast(bg_grad_ctx *c, braid_tensor t, int rank,
                                 const int64_t *dims) {
    braid_graph *g = bg_grad_graph(c);
    int rt;
    int64_t dt[BRAID_MAX_RANK];
    gu_type(c, t, NULL, &rt, dt);
    if (!braid_tensor_valid(t) || gu_same_shape(rt, dt, rank, dims)) return t;
    int axes[BRAID_MAX_RANK], naxes = 0, lead = rt - rank;
    bool keep = false; /* a size-1 axis is summed: keep it, as size 1 */
    for (int i = 0; i < rt; i++)
        if (i < lead || (dims[i - lead] == 1 && dt[i] != 1)) {
            axes[naxes++] = i;
            keep = keep || i >= lead;
        }
    if (naxes > 0) t = braid_sum(g, t, naxes, axes, keep);
    gu_type(c, t, NULL, &rt, dt);
    if (gu_same_shape(rt, dt, rank, dims)) return t;
    return braid_reshape(g, t, rank, dims);
}

braid_tensor bg_grad_unbroadcast_to(bg_grad_ctx *c, braid_tensor t,
                                    uint32_t id) {
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    bg_grad_type(c, id, NULL, &rank, dims);
    return bg_grad_unbroadcast(c, t, rank, dims);
}

braid_tensor bg_grad_slice_axis(bg_grad_ctx *c, braid_tensor t, int axis,
                                int64_t lo, int64_t hi) {
    int rank;
    int64_t dims[BRAID_MAX_RANK], start[BRAID_MAX_RANK] = {0};
    gu_type(c, t, NULL, &rank, dims);
    start[axis] = lo;
    dims[axis] = hi;
    return braid_slice(bg_grad_graph(c), t, start, dims, NULL);
}

/* t with `before` zeros ahead of it and `after` zeros behind along axis. */
static braid_tensor gu_pad_axis(bg_grad_ctx *c, braid_tensor t, int axis,
                                int64_t before, int64_t after) {
    braid_dtype dt;
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    gu_type(c, t, &dt, &rank, dims);
    braid_tensor parts[3];
    int n = 0;
    if (before > 0) {
        dims[axis] = before;
        parts[n++] = bg_grad_zeros(c, dt, rank, dims);
    }
    parts[n++] = t;
    if (after > 0) {
        dims[axis] = after;
        parts[n++] = bg_grad_zeros(c, dt, rank, dims);
    }
    return n == 1 ? t : braid_concat(bg_grad_graph(c), n, parts, axis);
}

/* Element i of t along axis moved to i·step, zeros between: a [.., c, ..]
 * tensor becomes [.., c·step, ..] (reshape to [.., c, 1, ..], concat zeros
 * [.., c, step-1, ..], reshape back). */
static braid_tensor gu_spread_axis(bg_grad_ctx *c, braid_tensor t, int axis,
                                   int64_t step) {
    braid_graph *g = bg_grad_graph(c);
    braid_dtype dt;
    int rank;
    int64_t dims[BRAID_MAX_RANK], wide[BRAID_MAX_RANK];
    gu_type(c, t, &dt, &rank, dims);
    if (rank >= BRAID_MAX_RANK) { /* no room for the helper axis */
        bg_fail(g, BRAID_ERR_UNSUPPORTED,
                "grad: slice with step %lld on a rank-%d tensor: the "
                "gradient needs rank %d",
                (long long)step, rank, rank + 1);
        return BRAID_NONE;
    }
    for (int i = 0, j = 0; i <= rank; i++)
        wide[i] = i == axis + 1 ? 1 : dims[j++];
    braid_tensor parts[2] = {braid_reshape(g, t, rank + 1, wide)};
    wide[axis + 1] = step - 1;
    parts[1] = bg_grad_zeros(c, dt, rank + 1, wide);
    t = braid_concat(g, 2, parts, axis + 1);
    dims[axis] *= step;
    return braid_reshape(g, t, rank, dims);
}

braid_tensor bg_grad_unslice_axis(bg_grad_ctx *c, braid_tensor t, int axis,
                                  int64_t full, int64_t start, int64_t step) {
    braid_dtype dt;
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    gu_type(c, t, &dt, &rank, dims);
    int64_t count = dims[axis];
    if (count == full) return t; /* the whole axis: start 0, step 1 */
    if (count == 0) {
        dims[axis] = full;
        return bg_grad_zeros(c, dt, rank, dims);
    }
    int64_t span = count;
    if (step > 1) {
        t = gu_spread_axis(c, t, axis, step);
        span = count * step;
        if (start + span > full) { /* the zeros past the last element */
            span = full - start;
            t = bg_grad_slice_axis(c, t, axis, 0, span);
        }
    }
    return gu_pad_axis(c, t, axis, start, full - start - span);
}

braid_tensor bg_grad_keepdims(bg_grad_ctx *c, braid_tensor t, uint8_t axes,
                              int rank, const int64_t *dims) {
    int64_t kd[BRAID_MAX_RANK];
    for (int i = 0; i < rank; i++)
        kd[i] = axes & (1u << i) ? 1 : dims[i];
    int rt;
    int64_t dt[BRAID_MAX_RANK];
    gu_type(c, t, NULL, &rt, dt);
    if (!braid_tensor_valid(t) || gu_same_shape(rt, dt, rank, kd)) return t;
    return braid_reshape(bg_grad_graph(c), t, rank, kd);
}

braid_tensor bg_grad_expand_reduced(bg_grad_ctx *c, braid_tensor gy,
                                    uint8_t axes, int rank,
                                    const int64_t *dims) {
    gy = bg_grad_keepdims(c, gy, axes, rank, dims);
    return braid_broadcast_to(bg_grad_graph(c), gy, rank, dims);
}
