/* onnx/ops_attention.c — ONNX Attention (opset 23+) as a composite of
 * matmuls, a masked softmax and shape ops, following onnx.reference's
 * order of operations: Q and K each scaled by sqrt(scale), softcap, then
 * the bias (attention mask, causal and sliding-window masks as 0 / -inf),
 * a softmax whose fully masked rows give 0, and × V. 3-D inputs are split
 * into heads (q_num_heads, kv_num_heads); fewer K/V heads are repeated
 * (grouped-query attention); past_key/past_value are prepended and the
 * results returned as present_key/present_value; nonpad_kv_seqlen masks
 * each batch's padded keys and offsets its causal/window masks.
 *
 * Without softcap and without the qk_matmul_output output, and with V's
 * head size Q's (≤ 256), the scores, softmax and product are one attention
 * op (issue 14; fully masked rows give 0 there too) fed by the same bias:
 * q, k, v permuted to sequence-major, the result permuted back. Not for
 * bf16: onnx.reference rounds its bf16 intermediates, which the composite
 * follows (ONNX's bf16 node tests: 2 of 10 pass fused, all but the 8
 * known ones unfused). */
#include "onnx/onnx_internal.h"

#include <math.h>

static braid_tensor sc(ox_node *n, braid_tensor x, double v) {
    return ox_scalar(n, ox_tdtype(n, x), v);
}

/* [B, S, H*D] → [B, H, S, D]. */
static braid_tensor heads(ox_node *n, braid_tensor x, int64_t h) {
    int64_t d[BRAID_MAX_RANK];
    ox_rank(n, x, d);
    x = braid_reshape(n->g, x, 4, (int64_t[]){d[0], d[1], h, d[2] / h});
    return braid_permute(n->g, x, (int[]){0, 2, 1, 3});
}

/* K or V with each of its kv heads repeated rep times: [B, H*rep, S, D]. */
static braid_tensor repeat_heads(ox_node *n, braid_tensor x, int64_t rep) {
    if (rep == 1) return x;
    int64_t d[BRAID_MAX_RANK];
    ox_rank(n, x, d);
    x = braid_reshape(n->g, x, 5, (int64_t[]){d[0], d[1], 1, d[2], d[3]});
    x = braid_broadcast_to(n->g, x, 5, (int64_t[]){d[0], d[1], rep, d[2], d[3]});
    return braid_reshape(n->g, x, 4, (int64_t[]){d[0], d[1] * rep, d[2], d[3]});
}

/* 0 where allowed, -inf elsewhere, as [sq, skv] of dtype t. */
static braid_tensor bias_of(ox_node *n, braid_tensor allowed, braid_dtype t) {
    return braid_where(n->g, allowed, ox_scalar(n, t, 0),
                       ox_scalar(n, t, -INFINITY));
}

/* j - i - offset over [sq, skv] (broadcast with off, an i32 scalar or a
 * per-batch [B, 1, 1, 1]). */
static braid_tensor diag(ox_node *n, int64_t sq, int64_t skv, braid_tensor off) {
    int64_t d[2] = {sq, skv};
    braid_tensor i = braid_iota(n->g, BRAID_I32, 2, d, 0);
    braid_tensor j = braid_iota(n->g, BRAID_I32, 2, d, 1);
    braid_tensor r = braid_sub(n->g, j, i);
    return braid_sub(n->g, r, off);
}

/* The additive bias of the scores, or BRAID_NONE. */
static braid_tensor attention_bias(ox_node *n, braid_dtype t, int64_t sq,
                                   int64_t skv, braid_tensor past) {
    braid_graph *g = n->g;
    braid_tensor bias = BRAID_NONE;
    if (ox_has(n, 3)) {
        braid_tensor m = ox_in(n, 3);
        int64_t md[BRAID_MAX_RANK];
        int mr = ox_rank(n, m, md);
        bool is_bool = ox_tdtype(n, m) == BRAID_BOOL;
        if (md[mr - 1] < skv) { /* pad the kv axis: masked */
            int64_t pd[BRAID_MAX_RANK];
            for (int i = 0; i < mr; i++) pd[i] = md[i];
            pd[mr - 1] = skv - md[mr - 1];
            braid_tensor fill = braid_fill(g, ox_tdtype(n, m), mr, pd,
                                           is_bool ? 0 : -INFINITY);
            m = braid_concat(g, 2, (braid_tensor[]){m, fill}, mr - 1);
        }
        bias = is_bool ? bias_of(n, m, t) : m;
    }
    if (ox_attr_int(n, "is_causal", 0)) {
        braid_tensor c = bias_of(n, braid_le(g, diag(n, sq, skv, past),
                                             ox_scalar(n, BRAID_I32, 0)), t);
        bias = braid_tensor_valid(bias) ? braid_add(g, bias, c) : c;
    }
    int64_t lw = ox_attr_int(n, "left_window_size", -1);
    int64_t rw = ox_attr_int(n, "right_window_size", -1);
    if (lw >= 0 || rw >= 0) { /* diff = i + past - j */
        braid_tensor dj = diag(n, sq, skv, past); /* j - i - past = -diff */
        braid_tensor ok = ox_scalar(n, BRAID_BOOL, 1);
        if (lw >= 0)
            ok = braid_where(g, braid_ge(g, dj, ox_scalar(n, BRAID_I32, (double)-lw)),
                             ok, ox_scalar(n, BRAID_BOOL, 0));
        if (rw >= 0)
            ok = braid_where(g, braid_le(g, dj, ox_scalar(n, BRAID_I32, (double)rw)),
                             ok, ox_scalar(n, BRAID_BOOL, 0));
        braid_tensor w = bias_of(n, ok, t);
        bias = braid_tensor_valid(bias) ? braid_add(g, bias, w) : w;
    }
    return bias;
}

/* nonpad_kv_seqlen [B] (an external cache, no past): keys from
 * nonpad[b] on are masked, and the causal and window masks align to
 * offset nonpad[b] - sq; *off gets that offset as [B, 1, 1, 1]. */
static braid_tensor nonpad_bias(ox_node *n, braid_dtype t, int64_t sq,
                                int64_t skv, braid_tensor *off) {
    braid_graph *g = n->g;
    braid_tensor np = braid_cast(g, ox_in(n, 6), BRAID_I32);
    int64_t nd[BRAID_MAX_RANK];
    int64_t b = ox_numel(ox_rank(n, np, nd), nd);
    np = braid_reshape(g, np, 4, (int64_t[]){b, 1, 1, 1});
    *off = braid_sub(g, np, ox_scalar(n, BRAID_I32, (double)sq));
    braid_tensor j = braid_iota(g, BRAID_I32, 4, (int64_t[]){1, 1, 1, skv}, 3);
    return bias_of(n, braid_lt(g, j, np), t);
}

/* Softmax over the last axis whose fully masked rows (all -inf) give 0. */
static braid_tensor masked_softmax(ox_node *n, braid_tensor x) {
    braid_graph *g = n->g;
    int r = ox_rank(n, x, NULL), ax = r - 1;
    braid_tensor m = braid_reduce_max(g, x, 1, &ax, true);
    braid_tensor dead = braid_eq(g, m, sc(n, m, -INFINITY));
    m = braid_where(g, dead, sc(n, m, 0), m);
    braid_tensor e = braid_exp(g, braid_sub(g, x, m));
    braid_tensor s = braid_sum(g, e, 1, &ax, true);
    s = braid_where(g, braid_eq(g, s, sc(n, s, 0)), sc(n, s, 1), s);
    return braid_div(g, e, s);
}

static braid_status map_attention(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor q = ox_in(n, 0), k = ox_in(n, 1), v = ox_in(n, 2);
    int64_t qd[BRAID_MAX_RANK], kd[BRAID_MAX_RANK];
    int rank = ox_rank(n, q, qd);
    if (rank != 3 && rank != 4)
        return ox_node_fail(n, BRAID_ERR_SHAPE, "Q has rank %d", rank);
    if (rank == 3) {
        int64_t hq = ox_attr_int(n, "q_num_heads", 0);
        int64_t hkv = ox_attr_int(n, "kv_num_heads", 0);
        if (hq <= 0 || hkv <= 0)
            return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "3-D inputs "
                                "need q_num_heads and kv_num_heads");
        q = heads(n, q, hq);
        k = heads(n, k, hkv);
        v = heads(n, v, hkv);
        ox_rank(n, q, qd);
    }
    int64_t past = 0;
    if (ox_has(n, 4) && ox_has(n, 5)) {
        braid_tensor pk = ox_in(n, 4);
        int64_t pd[BRAID_MAX_RANK];
        ox_rank(n, pk, pd);
        past = pd[2];
        k = braid_concat(g, 2, (braid_tensor[]){pk, k}, 2);
        v = braid_concat(g, 2, (braid_tensor[]){ox_in(n, 5), v}, 2);
    }
    ox_out(n, 1, k, ox_in_elem(n, 1));
    ox_out(n, 2, v, ox_in_elem(n, 2));
    ox_rank(n, k, kd);
    if (kd[1] <= 0 || qd[1] % kd[1])
        return ox_node_fail(n, BRAID_ERR_SHAPE, "%lld query heads for %lld "
                            "key heads", (long long)qd[1], (long long)kd[1]);
    braid_tensor kr = repeat_heads(n, k, qd[1] / kd[1]);
    braid_tensor vr = repeat_heads(n, v, qd[1] / kd[1]);
    double scale = ox_attr_float(n, "scale", 1.0 / sqrt((double)qd[3]));
    double cap = ox_attr_float(n, "softcap", 0);
    int64_t vd[BRAID_MAX_RANK];
    ox_rank(n, vr, vd);
    bool want_qk = n->nout > 3 && n->np->output[3] && n->np->output[3][0];
    bool fused = cap == 0 && !want_qk && vd[3] == qd[3] && qd[3] <= 256 &&
                 isfinite(scale) && braid_dtype_is_float(ox_tdtype(n, q)) &&
                 ox_tdtype(n, q) != BRAID_BF16;
    braid_tensor qk = BRAID_NONE;
    if (!fused) {
        braid_tensor s2 = sc(n, q, sqrt(scale));
        qk = braid_matmul(g, braid_mul(g, q, s2), braid_mul(g, kr, s2),
                          BRAID_TRANSPOSE_B);
    }
    if (cap > 0)
        qk = braid_mul(g, braid_tanh(g, braid_div(g, qk, sc(n, qk, cap))),
                       sc(n, qk, cap));
    braid_dtype t = ox_tdtype(n, q);
    braid_tensor off = ox_scalar(n, BRAID_I32, (double)past), pad = BRAID_NONE;
    if (ox_has(n, 6)) {
        if (past)
            return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "nonpad_kv_seqlen "
                                "with past_key");
        pad = nonpad_bias(n, t, qd[2], kd[2], &off);
    }
    braid_tensor bias = attention_bias(n, t, qd[2], kd[2], off);
    if (braid_tensor_valid(pad))
        bias = braid_tensor_valid(bias) ? braid_add(g, bias, pad) : pad;
    braid_tensor y;
    if (fused) {
        static const int sm[4] = {0, 2, 1, 3};
        y = braid_permute(g,
                          braid_attention(g, braid_permute(g, q, sm),
                                          braid_permute(g, kr, sm),
                                          braid_permute(g, vr, sm), bias,
                                          scale, 0),
                          sm);
    } else {
        braid_tensor with =
            braid_tensor_valid(bias) ? braid_add(g, qk, bias) : qk;
        braid_tensor p = masked_softmax(n, with);
        int64_t mode = ox_attr_int(n, "qk_matmul_output_mode", 0);
        ox_out(n, 3, mode == 3 ? p : mode == 2 ? with : qk, ox_in_elem(n, 0));
        y = braid_matmul(g, p, vr, 0);
    }
    if (rank == 3) {
        int64_t yd[BRAID_MAX_RANK];
        ox_rank(n, y, yd);
        y = braid_permute(g, y, (int[]){0, 2, 1, 3});
        y = braid_reshape(g, y, 3, (int64_t[]){yd[0], yd[2], yd[1] * yd[3]});
    }
    ox_out(n, 0, y, ox_in_elem(n, 0));
    return BRAID_OK;
}

/* Elements [lo, hi) by step along the last axis of x. */
static braid_tensor last_axis(ox_node *n, braid_tensor x, int64_t lo,
                              int64_t hi, int64_t step) {
    int64_t d[BRAID_MAX_RANK], b[BRAID_MAX_RANK] = {0}, s[BRAID_MAX_RANK];
    int r = ox_rank(n, x, d);
    for (int i = 0; i < r; i++) s[i] = 1;
    b[r - 1] = lo, d[r - 1] = hi, s[r - 1] = step;
    return braid_slice(n->g, x, b, d, s);
}

/* RotaryEmbedding (23), as ONNX's reference: x [B, H, S, D] or [B, S,
 * H·D] worked on as [B, S, H, D]; the first rotary_embedding_dim
 * features rotate in halves (or even/odd pairs when interleaved) by the
 * cos/sin caches, picked by position_ids when given. */
static braid_status map_rotary(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0), cs = ox_in(n, 1), sn = ox_in(n, 2);
    int64_t d[BRAID_MAX_RANK], od[BRAID_MAX_RANK];
    int r = ox_rank(n, x, od), perm[4] = {0, 2, 1, 3};
    if (r != 3 && r != 4)
        return ox_node_fail(n, BRAID_ERR_SHAPE, "input rank %d (3 or 4)", r);
    if (r == 4) {
        x = braid_permute(g, x, perm);
    } else {
        int64_t nh = ox_attr_int(n, "num_heads", 0);
        if (nh <= 0 || od[2] % nh)
            return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "num_heads");
        x = braid_reshape(g, x, 4, (int64_t[]){od[0], od[1], nh, od[2] / nh});
    }
    ox_rank(n, x, d);
    int64_t rd = ox_attr_int(n, "rotary_embedding_dim", 0);
    if (rd <= 0) rd = d[3];
    int64_t h = rd / 2;
    if (ox_has(n, 3)) {
        braid_tensor pos = ox_in(n, 3);
        cs = braid_gather(g, cs, pos, 0);
        sn = braid_gather(g, sn, pos, 0);
    }
    int64_t cd[4] = {d[0], d[1], 1, h};
    cs = braid_reshape(g, cs, 4, cd);
    sn = braid_reshape(g, sn, 4, cd);
    braid_tensor xr = last_axis(n, x, 0, rd, 1);
    bool il = ox_attr_int(n, "interleaved", 0);
    braid_tensor x1 = il ? last_axis(n, xr, 0, rd, 2) : last_axis(n, xr, 0, h, 1);
    braid_tensor x2 = il ? last_axis(n, xr, 1, rd, 2) : last_axis(n, xr, h, rd, 1);
    braid_tensor re = braid_sub(g, braid_mul(g, cs, x1), braid_mul(g, sn, x2));
    braid_tensor im = braid_add(g, braid_mul(g, sn, x1), braid_mul(g, cs, x2));
    if (il) {
        int64_t e[5] = {d[0], d[1], d[2], h, 1};
        braid_tensor p[2] = {braid_reshape(g, re, 5, e), braid_reshape(g, im, 5, e)};
        xr = braid_reshape(g, braid_concat(g, 2, p, 4), 4,
                           (int64_t[]){d[0], d[1], d[2], rd});
    } else {
        xr = braid_concat(g, 2, (braid_tensor[]){re, im}, 3);
    }
    if (rd < d[3])
        xr = braid_concat(g, 2, (braid_tensor[]){xr, last_axis(n, x, rd, d[3], 1)}, 3);
    xr = r == 4 ? braid_permute(g, xr, perm) : braid_reshape(g, xr, 3, od);
    ox_out(n, 0, xr, ox_in_elem(n, 0));
    return BRAID_OK;
}

const ox_op ox_ops_attention[] = {
    {"Attention", 23, map_attention, 0},
    {"RotaryEmbedding", 23, map_rotary, 0},
    {NULL, 0, NULL, 0},
};
