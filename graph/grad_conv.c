/* graph/grad_conv.c — gradients of conv and conv_transpose, as convolutions
 * themselves (so they run on the same kernels, cuDNN included).
 *
 * conv_transpose is conv's adjoint in its input, so each op's input
 * gradient is the other op on gy with the same weights, strides,
 * dilations, pads and groups (end pads adjusted so the result has x's
 * size exactly). The weight gradient of both is one grouped convolution
 * with batch and channels swapped: dW[m, c, k] = Σ_n,o g[n, m, o] ·
 * a[n, c', o·s + k·d − pb] is a conv of a (channels as batch, batch as
 * channels) with g as the weights, stride d and dilation s, cut to the
 * kernel's size (gcv_weight). The bias gets gy summed
 * over the batch and spatial axes. */
#include "graph/grad.h"

#include <string.h>

/* A conv params struct for strides s, dilations d, pads (pb, pe ≥ 0),
 * output padding op and groups G over ns spatial axes. */
static braid_conv_params gcv_params(int ns, const int64_t *s, const int64_t *d,
                                    const int64_t *pb, const int64_t *pe,
                                    const int64_t *op, int64_t G) {
    braid_conv_params p;
    memset(&p, 0, sizeof p);
    for (int i = 0; i < ns; i++) {
        p.strides[i] = s[i];
        p.dilations[i] = d[i];
        p.pads[i] = pb[i];
        p.pads[ns + i] = pe[i];
        p.output_padding[i] = op ? op[i] : 0;
    }
    p.groups = G;
    return p;
}

/* The weight gradient [Co, Ci/G, K...] of a convolution reading a
 * [N, Ci, X...] with output gradient go [N, Co, Y...]: stride s, dilation
 * d, pads pb before and ph after (ph large enough to reach K taps). */
static braid_tensor gcv_weight(bg_grad_ctx *c, braid_tensor a, braid_tensor go,
                               const bg_conv_geom *q, const int64_t *ph,
                               const int64_t *kernel) {
    braid_graph *g = bg_grad_graph(c);
    int ns = q->nspatial, r = ns + 2;
    int ar, gr;
    int64_t ad[BRAID_MAX_RANK], gd[BRAID_MAX_RANK], d5[BRAID_MAX_RANK];
    bg_grad_type(c, a.id, NULL, &ar, ad);
    bg_grad_type(c, go.id, NULL, &gr, gd);
    int64_t G = q->G, N = ad[0], Ci = ad[1], Co = gd[1];
    int perm[BRAID_MAX_RANK];
    /* a: [N, G, Ci/G, X...] → [Ci/G, G, N, X...] → [Ci/G, G·N, X...] */
    d5[0] = N, d5[1] = G, d5[2] = Ci / G;
    for (int i = 0; i < ns; i++)
        d5[3 + i] = ad[2 + i], perm[3 + i] = 3 + i;
    perm[0] = 2, perm[1] = 1, perm[2] = 0;
    a = braid_permute(g, braid_reshape(g, a, r + 1, d5), perm);
    d5[0] = Ci / G, d5[1] = G * N;
    for (int i = 0; i < ns; i++)
        d5[2 + i] = ad[2 + i];
    a = braid_reshape(g, a, r, d5);
    /* go: [N, G, Co/G, Y...] → [G, Co/G, N, Y...] → [Co, N, Y...] */
    d5[0] = N, d5[1] = G, d5[2] = Co / G;
    for (int i = 0; i < ns; i++)
        d5[3 + i] = gd[2 + i];
    perm[0] = 1, perm[1] = 2, perm[2] = 0;
    go = braid_permute(g, braid_reshape(g, go, r + 1, d5), perm);
    d5[0] = Co, d5[1] = N;
    for (int i = 0; i < ns; i++)
        d5[2 + i] = gd[2 + i];
    go = braid_reshape(g, go, r, d5);
    braid_conv_params p = gcv_params(ns, q->dil, q->stride, q->pb, ph, NULL, G);
    braid_tensor w = braid_conv(g, a, go, BRAID_NONE, &p); /* [Ci/G, Co, K'] */
    for (int i = 0; i < ns; i++)
        w = bg_grad_slice_axis(c, w, 2 + i, 0, kernel[i]);
    for (int i = 0; i < r; i++)
        perm[i] = i < 2 ? 1 - i : i;
    return braid_permute(g, w, perm);
}

static void gcv_bias(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    if (n->ninputs < 3 || !bg_grad_wants(c, n, 2)) return;
    int axes[BRAID_MAX_RANK], k = 0;
    for (int i = 0; i < n->rank; i++)
        if (i != 1) axes[k++] = i;
    bg_grad_acc(c, n, 2, braid_sum(bg_grad_graph(c), gy, k, axes, false));
}

/* conv: dx = conv_transpose(gy, w) sized to x; dw by gcv_weight. */
static void gcv_conv(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy,
                     const bg_conv_geom *q) {
    braid_graph *g = bg_grad_graph(c);
    braid_tensor x = {n->inputs[0]}, w = {n->inputs[1]};
    int ns = q->nspatial;
    if (bg_grad_wants(c, n, 0)) {
        int64_t pe[3], op[3];
        for (int i = 0; i < ns; i++) {
            int64_t e = q->stride[i] * (q->out[i] - 1) +
                        (q->k[i] - 1) * q->dil[i] + 1 - q->pb[i] - q->in[i];
            pe[i] = e > 0 ? e : 0;
            op[i] = e < 0 ? -e : 0;
        }
        braid_conv_params p =
            gcv_params(ns, q->stride, q->dil, q->pb, pe, op, q->G);
        bg_grad_acc(c, n, 0, braid_conv_transpose(g, gy, w, BRAID_NONE, &p));
    }
    if (bg_grad_wants(c, n, 1))
        bg_grad_acc(c, n, 1, gcv_weight(c, x, gy, q, q->pe, q->k));
    gcv_bias(c, n, gy);
}

/* conv_transpose: dx = conv(gy) (gy cut where a negative end pad, i.e.
 * output padding, left positions no input reaches); dw by gcv_weight with
 * the roles of x and gy swapped. */
static void gcv_transpose(bg_grad_ctx *c, const bg_grad_node *n,
                          braid_tensor gy, const bg_conv_geom *q) {
    braid_graph *g = bg_grad_graph(c);
    braid_tensor x = {n->inputs[0]}, w = {n->inputs[1]};
    int ns = q->nspatial;
    int64_t pe[3];
    braid_tensor gc = gy;
    for (int i = 0; i < ns; i++) {
        pe[i] = q->pe[i] > 0 ? q->pe[i] : 0;
        if (q->pe[i] < 0)
            gc = bg_grad_slice_axis(c, gc, 2 + i, 0, q->out[i] + q->pe[i]);
    }
    if (bg_grad_wants(c, n, 0)) {
        braid_conv_params p =
            gcv_params(ns, q->stride, q->dil, q->pb, pe, NULL, q->G);
        bg_grad_acc(c, n, 0, braid_conv(g, gc, w, BRAID_NONE, &p));
    }
    if (bg_grad_wants(c, n, 1))
        bg_grad_acc(c, n, 1, gcv_weight(c, gc, x, q, pe, q->k));
    gcv_bias(c, n, gy);
}

void bg_grad_conv(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    braid_graph *g = bg_grad_graph(c);
    bg_conv_geom q;
    if (!bg_conv_geom_of(g, bg_node_at(g, n->id), &q)) {
        bg_fail(g, BRAID_ERR_INTERNAL, "grad: node %u (%s): bad geometry",
                (unsigned)n->id, bg_op(n->op)->name);
        return;
    }
    if (q.channels_last) { /* the compiler's form, made after grad runs */
        bg_fail(g, BRAID_ERR_UNSUPPORTED,
                "grad: node %u (conv channels_last): no gradient rule; "
                "differentiate the channels-first conv",
                (unsigned)n->id);
        return;
    }
    if (q.transpose)
        gcv_transpose(c, n, gy, &q);
    else
        gcv_conv(c, n, gy, &q);
}
