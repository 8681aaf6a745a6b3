/* graph/grad_rules_axis.c — gradient rules of the index ops: cumsum,
 * topk_values and reduce_prod (argmax, argmin and topk_indices give i32,
 * through which no gradient flows). Built from public builders like every
 * rule (graph/grad_rules.c). */
#include "graph/grad.h"

/* cumsum: x_i feeds every later (earlier, reversed) prefix, so dx is the
 * cumsum of gy the other way round, exclusive alike. */
void bg_grad_cumsum(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    bool excl = (n->attr.flags & BG_EXCLUSIVE) != 0;
    bool rev = (n->attr.flags & BG_REVERSE) != 0;
    bg_grad_acc(c, n, 0,
                braid_cumsum(bg_grad_graph(c), gy, n->attr.axis, excl, !rev));
}

/* topk_values: gy scattered back to the positions the values came from, as
 * a one-hot sum: with the axis split into (L, k) — iota over L == the
 * indices over k — where(hit, gy, 0) summed over k. Needs rank + 1 <= 8;
 * builds numel(x)·k elements. */
void bg_grad_topk(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    braid_graph *g = bg_grad_graph(c);
    braid_dtype dt;
    int rank, ax = n->attr.axis;
    int64_t dims[BRAID_MAX_RANK], wide[BRAID_MAX_RANK], lane[BRAID_MAX_RANK];
    bg_grad_type(c, n->inputs[0], &dt, &rank, dims);
    if (rank + 1 > BRAID_MAX_RANK) {
        bg_fail(g, BRAID_ERR_UNSUPPORTED,
                "grad: topk_values node %u of rank %d: its gradient needs "
                "rank + 1 <= %d",
                (unsigned)n->id, rank, BRAID_MAX_RANK);
        return;
    }
    int64_t k = (int64_t)n->attr.seed;
    for (int i = 0, j = 0; i <= rank;
         i++) { /* [.., 1, k, ..] / [.., L, 1, ..] */
        wide[i] = i == ax ? 1 : i == ax + 1 ? k : dims[j];
        lane[i] = i == ax ? dims[ax] : 1;
        if (i != ax) j++;
    }
    braid_tensor idx = BRAID_NONE, x = {n->inputs[0]};
    braid_topk(g, x, k, ax, !(n->attr.flags & BG_SMALLEST), &idx);
    idx = braid_reshape(g, idx, rank + 1, wide);
    braid_tensor at = braid_iota(g, BRAID_I32, rank + 1, lane, ax);
    braid_tensor hit = braid_eq(g, at, idx);
    braid_tensor gw = braid_reshape(g, gy, rank + 1, wide);
    braid_tensor one = braid_where(
        g, hit, gw, bg_grad_scalar(c, dt, 0.0)); /* [.., L, k, ..] */
    int kax = ax + 1;
    bg_grad_acc(c, n, 0, braid_sum(g, one, 1, &kax, false));
}

/* reduce_prod: dy/dx_i is the product of the other elements of x_i's set:
 * y / x_i when the set has no zero; at the zero of a set with exactly one
 * zero, the product of the non-zero elements; 0 everywhere else (written
 * without dividing by zero). */
void bg_grad_reduce_prod(bg_grad_ctx *c, const bg_grad_node *n,
                         braid_tensor gy) {
    braid_graph *g = bg_grad_graph(c);
    braid_dtype dt;
    int rank, axes[BRAID_MAX_RANK], naxes = 0;
    int64_t dims[BRAID_MAX_RANK];
    bg_grad_type(c, n->inputs[0], &dt, &rank, dims);
    for (int i = 0; i < rank; i++)
        if (n->attr.axes & (1u << i)) axes[naxes++] = i;
    if (naxes == 0) { /* a product of one element each: the identity */
        bg_grad_acc(c, n, 0, gy);
        return;
    }
    braid_tensor x = {n->inputs[0]};
    braid_tensor zero = bg_grad_scalar(c, dt, 0.0);
    braid_tensor one = bg_grad_scalar(c, dt, 1.0);
    braid_tensor isz = braid_eq(g, x, zero);
    braid_tensor nz = braid_where(g, isz, one, x);
    braid_tensor pk = braid_reduce_prod(g, nz, naxes, axes, true);
    braid_tensor zc = braid_sum(g, braid_cast(g, isz, dt), naxes, axes, true);
    braid_tensor at_zero = braid_where(g, braid_eq(g, zc, one), pk, zero);
    braid_tensor off_zero =
        braid_where(g, braid_eq(g, zc, zero), braid_div(g, pk, nz), zero);
    braid_tensor d = braid_where(g, isz, at_zero, off_zero);
    braid_tensor gk = bg_grad_keepdims(c, gy, n->attr.axes, rank, dims);
    bg_grad_acc(c, n, 0, braid_mul(g, d, gk));
}
