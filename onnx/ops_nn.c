/* onnx/ops_nn.c — ONNX's matrix products, reductions, softmax and
 * normalisations, as braid ops or composites of them. */
#include "onnx/onnx_internal.h"

#include <math.h>
#include <string.h>

static braid_tensor sc(ox_node *n, braid_tensor x, double v) {
    return ox_scalar(n, ox_tdtype(n, x), v);
}

static braid_tensor reshape(ox_node *n, braid_tensor x, int r,
                            const int64_t *d) {
    return braid_reshape(n->g, x, r, d);
}

/* ---- matrix products ---------------------------------------------------------- */

/* numpy.matmul: a rank-1 operand gains a unit axis that the result drops. */
/* t itself, or, when t is a permute that swaps only its last two axes,
 * the permute's operand with *flags |= flag: a MatMul of a Transpose
 * (PyTorch's exporters write `x @ w.T` so, GPT-2's tied lm_head among
 * them) reads the operand in place through the matmul's transpose flag
 * rather than materialising the transposed copy on every run. */
static braid_tensor untransposed(ox_node *n, braid_tensor t, unsigned flag,
                                 unsigned *flags) {
    if (t.id == BRAID_INVALID_ID) return t;
    const bg_node *p = bg_node_at(n->g, t.id);
    if (p->op != BRAID_OP_PERMUTE || p->rank < 2) return t;
    for (int i = 0; i < p->rank - 2; i++)
        if (p->attr.perm[i] != i) return t;
    if (p->attr.perm[p->rank - 2] != p->rank - 1 ||
        p->attr.perm[p->rank - 1] != p->rank - 2)
        return t;
    *flags |= flag;
    return (braid_tensor){p->inputs[0]};
}

static braid_status map_matmul(ox_node *n) {
    if (ox_try_attention(n)) return BRAID_OK;
    braid_tensor a = ox_in(n, 0), b = ox_in(n, 1);
    int64_t da[BRAID_MAX_RANK], db[BRAID_MAX_RANK], dr[BRAID_MAX_RANK];
    int ra = ox_rank(n, a, da), rb = ox_rank(n, b, db);
    unsigned f = 0;
    if (ra == 1) a = reshape(n, a, 2, (int64_t[]){1, da[0]});
    else if (ra > 1) a = untransposed(n, a, BRAID_TRANSPOSE_A, &f);
    if (rb == 1) b = reshape(n, b, 2, (int64_t[]){db[0], 1});
    else if (rb > 1) b = untransposed(n, b, BRAID_TRANSPOSE_B, &f);
    braid_tensor r = braid_matmul(n->g, a, b, f);
    int rr = ox_rank(n, r, dr);
    if (ra == 1 || rb == 1) {
        int k = rr;
        if (rb == 1) k--;                                /* drop N */
        if (ra == 1) dr[k - 1] = dr[k], k--;            /* drop M */
        if (ra == 1 && rb == 1) k = 0;
        r = reshape(n, r, k, dr);
    }
    ox_out(n, 0, r, ox_in_elem(n, 0));
    return BRAID_OK;
}

/* The tensor a Gemm's A flattens, as [lead..., K], when A is a reshape of
 * x to [M, K] where x's leading dims multiply to M in at least two of them
 * (x [..., K] itself; or, say, attention's heads [B, T, H, D] as
 * [B, T, H·D], a view) and C (if any) is a row [N] / [1, N] or a scalar:
 * HF Conv1D's export, Reshape -> Gemm -> Reshape. Else A itself. */
static braid_tensor gemm_unflattened(ox_node *n, braid_tensor a, unsigned f,
                                     bool bias) {
    braid_graph *g = n->g;
    if ((f & BRAID_TRANSPOSE_A) || a.id >= braid_graph_node_count(g))
        return a; /* invalid */
    const bg_node *an = bg_node_at(g, a.id);
    if (an->op != BRAID_OP_RESHAPE || an->rank != 2) return a;
    uint32_t xid = an->inputs[0];
    int64_t m = an->dims[0], k = an->dims[1], lead = 1, d[BRAID_MAX_RANK];
    const bg_node *x = bg_node_at(g, xid);
    int rank = x->rank, j = 0;
    memcpy(d, x->dims, sizeof d);
    while (j < rank && (lead != m || j < 2))
        lead *= d[j++];
    if (lead != m || j < 2 || j == rank) return a;
    if (bias) {
        braid_tensor ct = ox_in(n, 2); /* may add the initializer's node */
        if (ct.id >= braid_graph_node_count(g)) return a;
        const bg_node *c = bg_node_at(g, ct.id);
        if (c->rank > 2 || (c->rank == 2 && c->dims[0] != 1)) return a;
    }
    if (j == rank - 1) return (braid_tensor){xid};
    d[j] = k;
    return reshape(n, (braid_tensor){xid}, j + 1, d);
}

/* Gemm. Where A flattens a tensor x (gemm_unflattened) the product is
 * taken on x itself (b broadcast over its leading dims, one product of M
 * rows on every device) and reshaped to [M, N] last: the Reshape back to
 * [..., N] that follows in such exports then cancels in the simplifier,
 * and the bias add meets the node after it, as in a model written without
 * the flattening (a residual add joins the matmul's epilogue, fuse rule
 * 9). */
static braid_status map_gemm(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor a = ox_in(n, 0), b = ox_in(n, 1);
    unsigned f = (ox_attr_int(n, "transA", 0) ? BRAID_TRANSPOSE_A : 0) |
                 (ox_attr_int(n, "transB", 0) ? BRAID_TRANSPOSE_B : 0);
    double alpha = ox_attr_float(n, "alpha", 1), beta = ox_attr_float(n, "beta", 1);
    bool bias = ox_has(n, 2) && beta != 0;
    braid_tensor x = gemm_unflattened(n, a, f, bias);
    braid_tensor r = braid_matmul(g, x, b, f);
    if (alpha != 1) r = braid_mul(g, r, sc(n, r, alpha));
    if (bias) {
        braid_tensor c = ox_in(n, 2);
        if (beta != 1) c = braid_mul(g, c, sc(n, c, beta));
        r = braid_add(g, r, c);
    }
    int64_t d[BRAID_MAX_RANK];
    int rank = x.id != a.id ? ox_rank(n, r, d) : 0; /* 0: r is invalid */
    if (rank >= 1) {                                /* back to Gemm's [M, N] */
        int64_t mn[2] = {ox_numel(rank - 1, d), d[rank - 1]};
        r = reshape(n, r, 2, mn);
    }
    ox_out(n, 0, r, ox_in_elem(n, 0));
    return BRAID_OK;
}

/* ---- softmax ----------------------------------------------------------------------- */

/* Before opset 13 softmax ran over the input flattened to 2-D at axis. */
static braid_status softmax(ox_node *n, bool log) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d), axis;
    bool legacy = n->im->opset < 13;
    if (!ox_axis(n, ox_attr_int(n, "axis", legacy ? 1 : -1), r, &axis))
        return n->im->status;
    braid_tensor y = x;
    if (legacy) {
        int64_t flat[2] = {ox_numel(axis, d), ox_numel(r - axis, d + axis)};
        y = reshape(n, x, 2, flat);
        axis = 1;
    }
    if (log) { /* x - max - log(sum(exp(x - max))) */
        braid_tensor m = braid_reduce_max(g, y, 1, &axis, true);
        braid_tensor s = braid_sub(g, y, m);
        braid_tensor l = braid_log(g, braid_sum(g, braid_exp(g, s), 1, &axis,
                                                true));
        y = braid_sub(g, s, l);
    } else {
        y = braid_softmax(g, y, axis);
    }
    if (legacy) y = reshape(n, y, r, d);
    ox_out(n, 0, y, ox_in_elem(n, 0));
    return BRAID_OK;
}
static braid_status map_softmax(ox_node *n) { return softmax(n, false); }
static braid_status map_log_softmax(ox_node *n) { return softmax(n, true); }

/* ---- reductions ---------------------------------------------------------------------- */

typedef enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_L1, R_L2, R_SQ, R_LOGSUM,
               R_LOGSUMEXP, R_PROD } red_kind;

/* Axes: attribute (older opsets) or input 1 (ReduceSum 13+, others 18+);
 * none reduces everything unless noop_with_empty_axes. */
static braid_status reduce(ox_node *n, red_kind k) {
    braid_graph *g = n->g;
    int64_t ax[BRAID_MAX_RANK];
    int na;
    if (!ox_axes(n, "axes", 1, ax, &na)) return n->im->status;
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, NULL);
    bool keep = ox_attr_int(n, "keepdims", 1);
    if (na <= 0 && ox_attr_int(n, "noop_with_empty_axes", 0)) {
        ox_out(n, 0, x, ox_in_elem(n, 0));
        return BRAID_OK;
    }
    int axes[BRAID_MAX_RANK];
    for (int i = 0; i < na; i++)
        if (!ox_axis(n, ax[i], r, &axes[i])) return n->im->status;
    if (na < 0) na = 0;
    if (ox_tdtype(n, x) == BRAID_BOOL && (k == R_MAX || k == R_MIN)) {
        /* any / all: through i32, then > 0, so that an empty set gives
         * ONNX's false (max: INT32_MIN) and true (min: INT32_MAX) */
        braid_tensor i = braid_cast(g, x, BRAID_I32);
        braid_tensor y = k == R_MAX ? braid_reduce_max(g, i, na, axes, keep)
                                    : braid_reduce_min(g, i, na, axes, keep);
        ox_out(n, 0, braid_gt(g, y, braid_fill(g, BRAID_I32, 0, NULL, 0)),
               ox_in_elem(n, 0));
        return BRAID_OK;
    }
    if (r == 0) { /* a scalar reduces to itself */
        braid_tensor y = k == R_L1 ? braid_abs(g, x)
                         : k == R_L2 ? braid_abs(g, x)
                         : k == R_SQ ? braid_mul(g, x, x)
                         : k == R_LOGSUM ? braid_log(g, x) : x;
        ox_out(n, 0, y, ox_in_elem(n, 0));
        return BRAID_OK;
    }
    braid_tensor y;
    switch (k) {
    case R_SUM: y = braid_sum(g, x, na, axes, keep); break;
    case R_MEAN: y = braid_mean(g, x, na, axes, keep); break;
    case R_MAX: y = braid_reduce_max(g, x, na, axes, keep); break;
    case R_MIN: y = braid_reduce_min(g, x, na, axes, keep); break;
    case R_L1: y = braid_sum(g, braid_abs(g, x), na, axes, keep); break;
    case R_L2:
        y = braid_sqrt(g, braid_sum(g, braid_mul(g, x, x), na, axes, keep));
        break;
    case R_SQ: y = braid_sum(g, braid_mul(g, x, x), na, axes, keep); break;
    case R_LOGSUM: y = braid_log(g, braid_sum(g, x, na, axes, keep)); break;
    case R_PROD: y = braid_reduce_prod(g, x, na, axes, keep); break;
    default: y = braid_reduce_logsumexp(g, x, na, axes, keep); break;
    }
    ox_out(n, 0, y, ox_in_elem(n, 0));
    return BRAID_OK;
}
static braid_status map_rsum(ox_node *n) { return reduce(n, R_SUM); }
static braid_status map_rmean(ox_node *n) { return reduce(n, R_MEAN); }
static braid_status map_rmax(ox_node *n) { return reduce(n, R_MAX); }
static braid_status map_rmin(ox_node *n) { return reduce(n, R_MIN); }
static braid_status map_rl1(ox_node *n) { return reduce(n, R_L1); }
static braid_status map_rl2(ox_node *n) { return reduce(n, R_L2); }
static braid_status map_rsq(ox_node *n) { return reduce(n, R_SQ); }
static braid_status map_rlogsum(ox_node *n) { return reduce(n, R_LOGSUM); }
static braid_status map_rlogsumexp(ox_node *n) { return reduce(n, R_LOGSUMEXP); }
static braid_status map_rprod(ox_node *n) { return reduce(n, R_PROD); }

/* GlobalAveragePool / GlobalMaxPool: every axis after N, C, kept. */
static braid_status global_pool(ox_node *n, bool avg) {
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, NULL), axes[BRAID_MAX_RANK];
    if (r < 3)
        return ox_node_fail(n, BRAID_ERR_SHAPE, "input rank %d (expected N, C "
                            "and spatial axes)", r);
    for (int i = 2; i < r; i++) axes[i - 2] = i;
    braid_tensor y = avg ? braid_mean(n->g, x, r - 2, axes, true)
                         : braid_reduce_max(n->g, x, r - 2, axes, true);
    ox_out(n, 0, y, ox_in_elem(n, 0));
    return BRAID_OK;
}
static braid_status map_gap(ox_node *n) { return global_pool(n, true); }
static braid_status map_gmp(ox_node *n) { return global_pool(n, false); }

/* ---- normalisations ------------------------------------------------------------------- */

/* (x - mean) / sqrt(var + eps) over axes; *mean and *inv (may be NULL)
 * get the mean and 1/sqrt(var + eps), kept dims. */
static braid_tensor normalize(ox_node *n, braid_tensor x, int na,
                              const int *axes, double eps, braid_tensor *mean,
                              braid_tensor *inv) {
    braid_graph *g = n->g;
    braid_tensor m = braid_mean(g, x, na, axes, true);
    braid_tensor c = braid_sub(g, x, m);
    braid_tensor v = braid_mean(g, braid_mul(g, c, c), na, axes, true);
    braid_tensor is = braid_rsqrt(g, braid_add(g, v, sc(n, v, eps)));
    if (mean) *mean = m;
    if (inv) *inv = is;
    return braid_mul(g, c, is);
}

/* Whether the node names output k (Mean, InvStdDev: optional). */
static bool out_named(const ox_node *n, int k) {
    return k < n->nout && n->np->output[k] && n->np->output[k][0];
}

/* Over the last axis with only Y named: one layer_norm op (scale and bias
 * of the row's length go in, others broadcast after it: braid_layer_norm).
 * Otherwise the composite, which also gives Mean and InvStdDev. */
static braid_status map_layer_norm(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, NULL), axis, axes[BRAID_MAX_RANK];
    if (!ox_axis(n, ox_attr_int(n, "axis", -1), r, &axis)) return n->im->status;
    double eps = ox_attr_float(n, "epsilon", 1e-5);
    if (axis == r - 1 && !out_named(n, 1) && !out_named(n, 2)) {
        braid_tensor y = braid_layer_norm(g, x,
                                          ox_has(n, 1) ? ox_in(n, 1)
                                                       : BRAID_NONE,
                                          ox_has(n, 2) ? ox_in(n, 2)
                                                       : BRAID_NONE,
                                          eps);
        ox_out(n, 0, y, ox_in_elem(n, 0));
        return BRAID_OK;
    }
    for (int i = axis; i < r; i++) axes[i - axis] = i;
    braid_tensor mean, inv;
    braid_tensor y = normalize(n, x, r - axis, axes, eps, &mean, &inv);
    if (ox_has(n, 1)) y = braid_mul(g, y, ox_in(n, 1));
    if (ox_has(n, 2)) y = braid_add(g, y, ox_in(n, 2));
    ox_out(n, 0, y, ox_in_elem(n, 0));
    ox_out(n, 1, mean, ox_in_elem(n, 0));
    ox_out(n, 2, inv, ox_in_elem(n, 0));
    return BRAID_OK;
}

/* A per-channel vector [C] shaped [C, 1, ...] to broadcast against N, C, ... */
static braid_tensor per_channel(ox_node *n, braid_tensor v, int r) {
    int64_t d[BRAID_MAX_RANK];
    ox_rank(n, v, d);
    for (int i = 1; i < r - 1; i++) d[i] = 1;
    return reshape(n, v, r - 1 > 0 ? r - 1 : 1, d);
}

static braid_status map_batch_norm(ox_node *n) {
    braid_graph *g = n->g;
    if (ox_attr_int(n, "training_mode", 0) || n->nout > 1)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "training mode (running "
                            "statistics as outputs)");
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, NULL);
    if (r < 2) return ox_node_fail(n, BRAID_ERR_SHAPE, "input rank %d", r);
    braid_tensor s = per_channel(n, ox_in(n, 1), r);
    braid_tensor b = per_channel(n, ox_in(n, 2), r);
    braid_tensor m = per_channel(n, ox_in(n, 3), r);
    braid_tensor v = per_channel(n, ox_in(n, 4), r);
    double eps = ox_attr_float(n, "epsilon", 1e-5);
    braid_tensor is = braid_rsqrt(g, braid_add(g, v, sc(n, v, eps)));
    braid_tensor y = braid_mul(g, braid_sub(g, x, m), braid_mul(g, is, s));
    ox_out(n, 0, braid_add(g, y, b), ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_instance_norm(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, NULL), axes[BRAID_MAX_RANK];
    if (r < 3) return ox_node_fail(n, BRAID_ERR_SHAPE, "input rank %d", r);
    for (int i = 2; i < r; i++) axes[i - 2] = i;
    braid_tensor y = normalize(n, x, r - 2, axes,
                               ox_attr_float(n, "epsilon", 1e-5), NULL, NULL);
    y = braid_mul(g, y, per_channel(n, ox_in(n, 1), r));
    ox_out(n, 0, braid_add(g, y, per_channel(n, ox_in(n, 2), r)),
           ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_mvn(ox_node *n) {
    braid_graph *g = n->g;
    int64_t ax[BRAID_MAX_RANK] = {0, 2, 3};
    int na = 3, axes[BRAID_MAX_RANK];
    if (!ox_attr_ints(n, "axes", ax, BRAID_MAX_RANK, &na)) return n->im->status;
    if (na < 0) na = 3, ax[0] = 0, ax[1] = 2, ax[2] = 3;
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, NULL);
    for (int i = 0; i < na; i++)
        if (!ox_axis(n, ax[i], r, &axes[i])) return n->im->status;
    /* ONNX: (x - mean) / (sqrt(mean(x^2) - mean(x)^2) + 1e-9) */
    braid_tensor m = braid_mean(g, x, na, axes, true);
    braid_tensor m2 = braid_mean(g, braid_mul(g, x, x), na, axes, true);
    braid_tensor sd = braid_sqrt(g, braid_sub(g, m2, braid_mul(g, m, m)));
    braid_tensor y = braid_div(g, braid_sub(g, x, m),
                               braid_add(g, sd, sc(n, sd, 1e-9)));
    ox_out(n, 0, y, ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_lp_norm(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, NULL), axis;
    int64_t p = ox_attr_int(n, "p", 2);
    if (!ox_axis(n, ox_attr_int(n, "axis", -1), r, &axis)) return n->im->status;
    if (p != 1 && p != 2)
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "p = %lld",
                            (long long)p);
    braid_tensor s = p == 1 ? braid_sum(g, braid_abs(g, x), 1, &axis, true)
                            : braid_sqrt(g, braid_sum(g, braid_mul(g, x, x), 1,
                                                      &axis, true));
    braid_tensor zero = braid_eq(g, s, sc(n, s, 0)); /* ONNX: 0 / 0 = 0 */
    s = braid_where(g, zero, sc(n, s, 1), s);
    ox_out(n, 0, braid_div(g, x, s), ox_in_elem(n, 0));
    return BRAID_OK;
}

/* GroupNormalization (18+): per group of channels over the channels and
 * spatial axes, then per-channel scale and bias (opset 21; opset 18's
 * per-group scale is the same when the group has one channel). */
static braid_status map_group_norm(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK], gd[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d), axes[BRAID_MAX_RANK];
    int64_t groups = ox_attr_int(n, "num_groups", 0);
    if (r < 3 || r + 1 > BRAID_MAX_RANK || groups <= 0 || d[1] % groups)
        return ox_node_fail(n, BRAID_ERR_SHAPE, "channels must divide into "
                            "num_groups on an input of rank 3..%d",
                            BRAID_MAX_RANK - 1);
    gd[0] = d[0], gd[1] = groups, gd[2] = d[1] / groups;
    for (int i = 2; i < r; i++) gd[i + 1] = d[i];
    for (int i = 2; i <= r; i++) axes[i - 2] = i;
    braid_tensor y = braid_reshape(g, x, r + 1, gd);
    y = normalize(n, y, r - 1, axes, ox_attr_float(n, "epsilon", 1e-5), NULL,
                  NULL);
    y = braid_reshape(g, y, r, d);
    int64_t sd[BRAID_MAX_RANK];
    braid_tensor s = ox_in(n, 1), b = ox_in(n, 2);
    if (ox_rank(n, s, sd) == 1 && sd[0] == groups && groups != d[1]) {
        int64_t rep[2] = {groups, 1}, full[2] = {groups, d[1] / groups};
        s = braid_reshape(g, braid_broadcast_to(g, braid_reshape(g, s, 2, rep),
                                                2, full), 1, &d[1]);
        b = braid_reshape(g, braid_broadcast_to(g, braid_reshape(g, b, 2, rep),
                                                2, full), 1, &d[1]);
    }
    y = braid_mul(g, y, per_channel(n, s, r));
    ox_out(n, 0, braid_add(g, y, per_channel(n, b, r)), ox_in_elem(n, 0));
    return BRAID_OK;
}

/* RMSNormalization (23): x / sqrt(mean(x^2 over [axis, rank)) + eps)
 * times scale. */
static braid_status map_rms_norm(ox_node *n) {
    braid_tensor x = ox_in(n, 0);
    int r = ox_rank(n, x, NULL), axis;
    if (!ox_axis(n, ox_attr_int(n, "axis", -1), r, &axis)) return n->im->status;
    braid_tensor s = ox_has(n, 1) ? ox_in(n, 1) : BRAID_NONE;
    ox_out(n, 0, braid_rms_norm(n->g, x, s, axis,
                                ox_attr_float(n, "epsilon", 1e-5)),
           ox_in_elem(n, 0));
    return BRAID_OK;
}

/* LRN: x / (bias + alpha / size · sum of x² over the channel window
 * [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta; the window sum is
 * an average pool over channels (padding counted) times size. */
static braid_status map_lrn(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    int64_t d[BRAID_MAX_RANK], size = ox_attr_int(n, "size", 0);
    int r = ox_rank(n, x, d);
    if (r < 3 || size < 1)
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "rank %d or size "
                            "%lld", r, (long long)size);
    int64_t rest = ox_numel(r - 2, d + 2);
    braid_tensor sq = braid_reshape(g, braid_mul(g, x, x), 4,
                                    (int64_t[]){d[0], 1, d[1], rest});
    braid_pool_params p = {.kernel = {size, 1}, .pads_lo = {(size - 1) / 2, 0},
                           .pads_hi = {size / 2, 0}, .count_include_pad = true};
    braid_tensor sum = braid_reshape(g, braid_avg_pool(g, sq, &p), r, d);
    double a = ox_attr_float(n, "alpha", 1e-4), b = ox_attr_float(n, "beta", 0.75);
    braid_tensor den = braid_add(g, braid_mul(g, sum, sc(n, x, a)),
                                 sc(n, x, ox_attr_float(n, "bias", 1.0)));
    ox_out(n, 0, braid_div(g, x, braid_pow(g, den, sc(n, x, b))),
           ox_in_elem(n, 0));
    return BRAID_OK;
}

/* Hann, Hamming and Blackman windows (17): sum of a_k cos(2πk·i / N),
 * N = size (periodic) or size - 1, in the output_datatype. */
static braid_status window(ox_node *n, double a0, double a1, double a2) {
    braid_graph *g = n->g;
    int64_t size;
    int cnt;
    if (!ox_static_ints(n, 0, &size, 1, &cnt)) return n->im->status;
    int elem = (int)ox_attr_int(n, "output_datatype", 1);
    braid_dtype t = ox_dtype(elem);
    if (size < 1 || t == BRAID_DTYPE_COUNT_)
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "size %lld or "
                            "output_datatype", (long long)size);
    double N = (double)(ox_attr_int(n, "periodic", 1) ? size : size - 1);
    braid_tensor i = braid_cast(g, braid_iota(g, BRAID_I32, 1, &size, 0),
                                BRAID_F64);
    braid_tensor ph = braid_mul(g, i, ox_scalar(n, BRAID_F64, 2 * 3.14159265358979323846 / N));
    braid_tensor w = braid_sub(g, ox_scalar(n, BRAID_F64, a0),
                               braid_mul(g, braid_cos(g, ph),
                                         ox_scalar(n, BRAID_F64, a1)));
    if (a2 != 0)
        w = braid_add(g, w, braid_mul(g, braid_cos(g, braid_add(g, ph, ph)),
                                      ox_scalar(n, BRAID_F64, a2)));
    ox_out(n, 0, braid_cast(g, w, t), elem);
    return BRAID_OK;
}
static braid_status map_hann(ox_node *n) { return window(n, 0.5, 0.5, 0); }
static braid_status map_hamming(ox_node *n) {
    return window(n, 25.0 / 46, 1 - 25.0 / 46, 0);
}
static braid_status map_blackman(ox_node *n) {
    return window(n, 0.42, 0.5, 0.08);
}

const ox_op ox_ops_nn[] = {
    {"BlackmanWindow", 17, map_blackman, 0},
    {"HammingWindow", 17, map_hamming, 0},
    {"HannWindow", 17, map_hann, 0},
    {"LRN", 1, map_lrn, 0},
    {"BatchNormalization", 1, map_batch_norm, 0},
    {"Gemm", 1, map_gemm, 0},
    {"GroupNormalization", 18, map_group_norm, 0},
    {"GlobalAveragePool", 1, map_gap, 0},
    {"GlobalMaxPool", 1, map_gmp, 0},
    {"InstanceNormalization", 1, map_instance_norm, 0},
    {"LayerNormalization", 17, map_layer_norm, 0},
    {"LogSoftmax", 1, map_log_softmax, 0},
    {"LpNormalization", 1, map_lp_norm, 0},
    {"MatMul", 1, map_matmul, 0},
    {"MeanVarianceNormalization", 9, map_mvn, 0},
    {"ReduceL1", 1, map_rl1, 0},
    {"ReduceL2", 1, map_rl2, 0},
    {"ReduceLogSum", 1, map_rlogsum, 0},
    {"ReduceLogSumExp", 1, map_rlogsumexp, 0},
    {"ReduceMax", 1, map_rmax, 0},
    {"ReduceMean", 1, map_rmean, 0},
    {"ReduceMin", 1, map_rmin, 0},
    {"ReduceProd", 1, map_rprod, 0},
    {"ReduceSum", 1, map_rsum, 0},
    {"ReduceSumSquare", 1, map_rsq, 0},
    {"RMSNormalization", 23, map_rms_norm, 0},
    {"Softmax", 1, map_softmax, 0},
    {NULL, 0, NULL, 0},
};
