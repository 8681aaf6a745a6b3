/* graph/grad_index.c — gradients of gather and scatter (graph/index.h),
 * built from the ops themselves:
 *   gather:  dx = scatter-add of gy into zeros at the gathered positions
 *            (along an axis: through [outer, n, inner] reshapes and the
 *            indices broadcast; nd with batch_dims: the batch coordinates
 *            prepended to every tuple);
 *   scatter add:  dx = gy, dupdates = gy gathered at the indices;
 *   scatter none: dx = gy with the overwritten elements zeroed, dupdates =
 *            gy gathered where the update won (duplicates: the last in C
 *            order, the op's own rule) and 0 for the updates overwritten;
 *   mul, max, min: no gradient (an error naming the reduction).
 * The indices get no gradient. */
#include "graph/grad.h"
#include "graph/index.h"

/* The tensor of node id. */
static braid_tensor tn(uint32_t id) {
    return (braid_tensor){id};
}

/* [d0 .. d(k-1)] of t's node reshaped to (rank, dims). */
static braid_tensor reshape_to(braid_graph *g, braid_tensor t, int rank,
                               const int64_t *dims) {
    return braid_reshape(g, t, rank, dims);
}

/* Tuples of an nd gather with b batch dims, the batch coordinates
 * prepended: indices [B.., Q.., m] → [B.., Q.., b + m]. */
static braid_tensor batch_tuples(bg_grad_ctx *c, uint32_t idx, int b) {
    braid_graph *g = bg_grad_graph(c);
    int r;
    braid_dtype it;
    int64_t d[BRAID_MAX_RANK];
    bg_grad_type(c, idx, &it, &r, d);
    braid_tensor parts[BRAID_MAX_RANK + 1];
    int64_t one[BRAID_MAX_RANK];
    for (int k = 0; k < r; k++)
        one[k] = d[k];
    one[r - 1] = 1;
    for (int k = 0; k < b; k++)
        parts[k] = braid_cast(g, braid_iota(g, BRAID_I32, r, one, k), it);
    parts[b] = tn(idx);
    return braid_concat(g, b + 1, parts, r - 1);
}

void bg_grad_gather(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    if (!bg_grad_wants(c, n, 0)) return;
    braid_graph *g = bg_grad_graph(c);
    braid_dtype dt;
    int xr;
    int64_t xd[BRAID_MAX_RANK];
    bg_grad_type(c, n->inputs[0], &dt, &xr, xd);
    braid_tensor zeros = bg_grad_zeros(c, dt, xr, xd), idx = tn(n->inputs[1]);
    int axis = n->attr.axis;
    switch (bg_index_mode_of(&n->attr)) {
    case BG_INDEX_ELEMENTS:
        bg_grad_acc(
            c, n, 0,
            braid_scatter_elements(g, zeros, idx, gy, axis, BRAID_SCATTER_ADD));
        return;
    case BG_INDEX_ND:
        if (axis > 0) idx = batch_tuples(c, n->inputs[1], axis);
        bg_grad_acc(c, n, 0,
                    braid_scatter_nd(g, zeros, idx, gy, BRAID_SCATTER_ADD));
        return;
    default: { /* along an axis: [outer, A, inner] */
        int64_t outer = 1, inner = 1, q = 1;
        for (int k = 0; k < axis; k++)
            outer *= xd[k];
        for (int k = axis + 1; k < xr; k++)
            inner *= xd[k];
        int ir;
        int64_t id[BRAID_MAX_RANK];
        bg_grad_type(c, n->inputs[1], NULL, &ir, id);
        for (int k = 0; k < ir; k++)
            q *= id[k];
        int64_t d3[3] = {outer, xd[axis], inner}, g3[3] = {outer, q, inner};
        braid_tensor i3 = reshape_to(g, idx, 3, (const int64_t[]){1, q, 1});
        i3 = braid_broadcast_to(g, i3, 3, g3);
        braid_tensor s = braid_scatter_elements(g, reshape_to(g, zeros, 3, d3),
                                                i3, reshape_to(g, gy, 3, g3), 1,
                                                BRAID_SCATTER_ADD);
        bg_grad_acc(c, n, 0, reshape_to(g, s, xr, xd));
        return;
    }
    }
}

/* gy gathered at the scatter's indices (the updates' shape). */
static braid_tensor gather_back(braid_graph *g, const bg_grad_node *n,
                                braid_tensor t) {
    braid_tensor idx = tn(n->inputs[1]);
    if (bg_index_mode_of(&n->attr) == BG_INDEX_ELEMENTS)
        return braid_gather_elements(g, t, idx, n->attr.axis);
    return braid_gather_nd(g, t, idx, 0);
}

/* The scatter of n's form with reduction none of updates u into x. */
static braid_tensor scatter_none(braid_graph *g, const bg_grad_node *n,
                                 braid_tensor x, braid_tensor u) {
    braid_tensor idx = tn(n->inputs[1]);
    if (bg_index_mode_of(&n->attr) == BG_INDEX_ELEMENTS)
        return braid_scatter_elements(g, x, idx, u, n->attr.axis,
                                      BRAID_SCATTER_NONE);
    return braid_scatter_nd(g, x, idx, u, BRAID_SCATTER_NONE);
}

/* 1 where update p is the one that lands (the last of its duplicates), 0
 * where a later update overwrites it; dtype dt, the updates' shape. */
static braid_tensor winners(bg_grad_ctx *c, const bg_grad_node *n,
                            braid_dtype dt) {
    braid_graph *g = bg_grad_graph(c);
    int ur, xr;
    int64_t ud[BRAID_MAX_RANK], xd[BRAID_MAX_RANK], count = 1;
    bg_grad_type(c, n->inputs[2], NULL, &ur, ud);
    bg_grad_type(c, n->inputs[0], NULL, &xr, xd);
    for (int k = 0; k < ur; k++)
        count *= ud[k];
    braid_tensor pos = braid_iota(g, BRAID_I32, 1, &count, 0);
    pos = braid_add(g, reshape_to(g, pos, ur, ud),
                    braid_fill(g, BRAID_I32, 0, NULL, 1));
    braid_tensor who =
        scatter_none(g, n, bg_grad_zeros(c, BRAID_I32, xr, xd), pos);
    return braid_cast(g, braid_eq(g, gather_back(g, n, who), pos), dt);
}

void bg_grad_scatter(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    braid_graph *g = bg_grad_graph(c);
    bg_scatter_red red = bg_scatter_red_of(&n->attr);
    if (red != BG_SCATTER_NONE && red != BG_SCATTER_ADD) {
        bg_fail(g, BRAID_ERR_UNSUPPORTED,
                "grad: node %u (scatter, reduction %s) has no gradient "
                "(scatter with none and add have)",
                (unsigned)n->id, bg_scatter_red_name(red));
        return;
    }
    int ur;
    int64_t ud[BRAID_MAX_RANK];
    bg_grad_type(c, n->inputs[2], NULL, &ur, ud);
    if (bg_grad_wants(c, n, 0))
        bg_grad_acc(
            c, n, 0,
            red == BG_SCATTER_ADD
                ? gy
                : scatter_none(g, n, gy, bg_grad_zeros(c, n->dtype, ur, ud)));
    if (!bg_grad_wants(c, n, 2)) return;
    braid_tensor du = gather_back(g, n, gy);
    if (red == BG_SCATTER_NONE) du = braid_mul(g, du, winners(c, n, n->dtype));
    bg_grad_acc(c, n, 2, du);
}
