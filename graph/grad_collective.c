/* graph/grad_collective.c — gradients of collective members (local form).
 *
 * A local member r reads every rank's input, so its gradient is a sum of
 * ordinary nodes over those inputs; placement then puts them where their
 * operands live. The dual collective (all_reduce ↔ itself, all_gather ↔
 * reduce_scatter) is not emitted: summing the members' contributions per
 * input gives the same values. A rank-form member (one rank of a group
 * spread over processes) cannot see the other ranks' gradients: an error.
 * Ties of max/min split evenly, like reduce_max. */
#include "graph/collective.h"
#include "graph/grad.h"

static braid_tensor gc_in(const bg_grad_node *n, int j) {
    return (braid_tensor){n->inputs[j]};
}

/* Per rank j: 1 where its (row block of) input equals the result y, as
 * n's dtype; *cnt gets their sum. rows < 0: the whole input. */
static void gc_hits(bg_grad_ctx *c, const bg_grad_node *n, int k, int64_t lo,
                    int64_t hi, braid_tensor *hit, braid_tensor *cnt) {
    braid_graph *g = bg_grad_graph(c);
    for (int j = 0; j < k; j++) {
        braid_tensor xj = gc_in(n, j);
        if (lo >= 0) xj = bg_grad_slice_axis(c, xj, 0, lo, hi);
        hit[j] =
            braid_cast(g, braid_eq(g, xj, (braid_tensor){n->id}), n->dtype);
        *cnt = j == 0 ? hit[j] : braid_add(g, *cnt, hit[j]);
    }
}

/* Rank j's share of gy for a reduction of kind red over k ranks (before
 * any row placement): gy, gy/k, or gy·hit_j/count. */
static braid_tensor gc_share(bg_grad_ctx *c, const bg_grad_node *n,
                             braid_tensor gy, int j, int k,
                             braid_reduce_kind red, const braid_tensor *hit,
                             braid_tensor cnt) {
    braid_graph *g = bg_grad_graph(c);
    if (red == BRAID_REDUCE_SUM) return gy;
    if (red == BRAID_REDUCE_AVG)
        return braid_mul(g, gy, bg_grad_scalar(c, n->dtype, 1.0 / k));
    return braid_mul(g, hit[j], braid_div(g, gy, cnt));
}

static void gc_reduce(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy,
                      int k, bool scatter) {
    braid_reduce_kind red = (braid_reduce_kind)n->attr.flags;
    int r = (int)n->attr.axis;
    int64_t rows = scatter ? n->dims[0] : -1, full = rows * k;
    braid_tensor hit[BG_COLL_MAX_LOCAL], cnt = BRAID_NONE;
    if (red == BRAID_REDUCE_MAX || red == BRAID_REDUCE_MIN)
        gc_hits(c, n, k, scatter ? r * rows : -1, (r + 1) * rows, hit, &cnt);
    for (int j = 0; j < k; j++) {
        if (!bg_grad_wants(c, n, (uint32_t)j)) continue;
        braid_tensor t = gc_share(c, n, gy, j, k, red, hit, cnt);
        if (scatter) t = bg_grad_unslice_axis(c, t, 0, full, r * rows, 1);
        bg_grad_acc(c, n, (uint32_t)j, t);
    }
}

static void gc_gather(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy,
                      int k) {
    int64_t rows = n->dims[0] / k;
    for (int j = 0; j < k; j++)
        if (bg_grad_wants(c, n, (uint32_t)j))
            bg_grad_acc(c, n, (uint32_t)j,
                        bg_grad_slice_axis(c, gy, 0, j * rows, (j + 1) * rows));
}

void bg_grad_collective(bg_grad_ctx *c, const bg_grad_node *n,
                        braid_tensor gy) {
    int64_t k = n->attr.start[0];
    if ((int64_t)n->ninputs != k) {
        bg_fail(bg_grad_graph(c), BRAID_ERR_UNSUPPORTED,
                "grad: node %u (%s) is one rank of a group spread over %lld "
                "processes; braid_grad differentiates only groups built "
                "whole in one graph (braid_all_reduce & co.)",
                (unsigned)n->id, bg_op(n->op)->name, (long long)k);
        return;
    }
    switch (n->op) {
    case BRAID_OP_ALL_REDUCE:
        gc_reduce(c, n, gy, (int)k, false);
        break;
    case BRAID_OP_REDUCE_SCATTER:
        gc_reduce(c, n, gy, (int)k, true);
        break;
    case BRAID_OP_ALL_GATHER:
        gc_gather(c, n, gy, (int)k);
        break;
    case BRAID_OP_BROADCAST:
        bg_grad_acc(c, n, (uint32_t)n->attr.start[1], gy);
        break;
    default:
        bg_fail(bg_grad_graph(c), BRAID_ERR_INTERNAL,
                "grad: op %s is not a collective", bg_op(n->op)->name);
    }
}
