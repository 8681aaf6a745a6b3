/* onnx/ops_loss.c — NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss
 * as composites: the target class is picked with a one-hot mask (target ==
 * iota over the class axis) instead of a gather, weights the same way;
 * ignore_index zeroes a position's loss and weight; "mean" divides by the
 * weights' sum, as ONNX does. */
#include "onnx/onnx_internal.h"

#include <string.h>

static braid_tensor sc(ox_node *n, braid_tensor x, double v) {
    return ox_scalar(n, ox_tdtype(n, x), v);
}

/* input [N, C, d...] of log-probabilities, target [N, d...]. */
static braid_status nll(ox_node *n, braid_tensor x, braid_tensor t,
                        int out) {
    braid_graph *g = n->g;
    int64_t d[BRAID_MAX_RANK], td[BRAID_MAX_RANK], od[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d), tr = ox_rank(n, t, td);
    if (r < 2 || tr != r - 1)
        return ox_node_fail(n, BRAID_ERR_SHAPE, "input rank %d, target rank "
                            "%d", r, tr);
    for (int i = 0, k = 0; i < r; i++) od[i] = i == 1 ? 1 : td[k++];
    braid_tensor tu = braid_reshape(g, braid_cast(g, t, BRAID_I32), r, od);
    for (int i = 0; i < r; i++) od[i] = i == 1 ? d[1] : 1;
    braid_tensor mask = braid_eq(g, tu, braid_iota(g, BRAID_I32, r, od, 1));
    int ax = 1;
    braid_tensor picked = braid_sum(g, braid_where(g, mask, x, sc(n, x, 0)), 1,
                                    &ax, false);
    braid_tensor w = sc(n, x, 1);
    if (ox_has(n, 2)) {
        braid_tensor wc = braid_reshape(g, ox_in(n, 2), r, od);
        w = braid_sum(g, braid_where(g, mask, wc, sc(n, x, 0)), 1, &ax, false);
    }
    const Onnx__AttributeProto *ii = ox_attr(n, "ignore_index");
    if (ii && ii->has_i) {
        braid_tensor keep = braid_ne(g, braid_cast(g, t, BRAID_I32),
                                     ox_scalar(n, BRAID_I32, (double)ii->i));
        w = braid_where(g, keep, w, sc(n, x, 0));
    }
    w = braid_broadcast_to(g, w, tr, td);
    braid_tensor loss = braid_neg(g, braid_mul(g, picked, w));
    char red[8];
    ox_attr_str(n, "reduction", red, sizeof red, "mean");
    if (!strcmp(red, "sum")) {
        loss = braid_sum(g, loss, 0, NULL, false);
    } else if (!strcmp(red, "mean")) {
        loss = braid_div(g, braid_sum(g, loss, 0, NULL, false),
                         braid_sum(g, w, 0, NULL, false));
    } else if (strcmp(red, "none")) {
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "reduction \"%s\"",
                            red);
    }
    ox_out(n, out, loss, ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_nll(ox_node *n) {
    return nll(n, ox_in(n, 0), ox_in(n, 1), 0);
}

static braid_status map_sce(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    int ax = 1;
    braid_tensor m = braid_reduce_max(g, x, 1, &ax, true);
    braid_tensor s = braid_sub(g, x, m);
    braid_tensor lp = braid_sub(g, s, braid_log(g, braid_sum(g, braid_exp(g, s),
                                                            1, &ax, true)));
    ox_out(n, 1, lp, ox_in_elem(n, 0));
    return nll(n, lp, ox_in(n, 1), 0);
}

const ox_op ox_ops_loss[] = {
    {"NegativeLogLikelihoodLoss", 12, map_nll, 0},
    {"SoftmaxCrossEntropyLoss", 12, map_sce, 0},
    {NULL, 0, NULL, 0},
};
