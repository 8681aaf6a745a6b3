/* graph/grad_attention.c — the gradient of the attention op
 * (graph/attention.h), the probabilities recomputed from q and k with
 * ordinary nodes (the fused op keeps none of them):
 *   q_h, k_h, v_h = q, k, v permuted to [B, H, rows, D] (views)
 *   s   = scale · q_h·k_hᵀ (+ mask) (causal: -inf where key j > query i)
 *   p   = softmax(s) over the keys, 0 in a row whose every s is -inf (the
 *         op's convention: such a row's output is 0, a constant)
 *   dv  = pᵀ·gy_h     dp = gy_h·v_hᵀ     ds = p ⊙ (dp − Σ_j dp ⊙ p)
 *   dq  = scale · ds·k_h     dk = scale · dsᵀ·q_h
 *   dmask = ds summed over the axes the mask was broadcast along
 * A fully masked row has p = 0, so ds = 0 there and no NaN reaches q, k
 * or the mask. Nodes: four matmuls, the softmax and a few elementwise
 * ones, which fuse and are placed like any others. */
#include "graph/attention.h"
#include "graph/grad.h"

#include <math.h>

static const int TO_BHSD[4] = {0, 2, 1, 3}; /* its own inverse */

void bg_grad_attention(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    braid_graph *g = bg_grad_graph(c);
    braid_dtype dt = n->dtype;
    double scale = n->attr.value[0];
    bool causal = (n->attr.flags & BRAID_ATTENTION_CAUSAL) != 0;
    bool mask = n->ninputs > 3;
    braid_tensor q = {n->inputs[0]}, k = {n->inputs[1]}, v = {n->inputs[2]};
    braid_tensor qh = braid_permute(g, q, TO_BHSD),
                 kh = braid_permute(g, k, TO_BHSD),
                 vh = braid_permute(g, v, TO_BHSD),
                 gyh = braid_permute(g, gy, TO_BHSD);
    braid_tensor sc = braid_fill(g, dt, 0, NULL, scale);
    braid_tensor s = braid_mul(g, braid_matmul(g, qh, kh, BRAID_TRANSPOSE_B),
                               sc); /* [B, H, S, T] */
    if (mask) s = braid_add(g, s, (braid_tensor){n->inputs[3]});
    if (causal) {
        int64_t st[2] = {n->dims[1], bg_node_at(g, n->inputs[1])->dims[1]};
        braid_tensor keep = braid_ge(g, braid_iota(g, BRAID_I32, 2, st, 0),
                                     braid_iota(g, BRAID_I32, 2, st, 1));
        s = braid_where(g, keep, s, braid_fill(g, dt, 0, NULL, -INFINITY));
    }
    braid_tensor p = braid_softmax(g, s, 3);
    p = braid_where(g, braid_isnan(g, p), braid_fill(g, dt, 0, NULL, 0), p);
    if (bg_grad_wants(c, n, 2))
        bg_grad_acc(c, n, 2,
                    braid_permute(g, braid_matmul(g, p, gyh, BRAID_TRANSPOSE_A),
                                  TO_BHSD));
    bool wq = bg_grad_wants(c, n, 0), wk = bg_grad_wants(c, n, 1),
         wm = mask && bg_grad_wants(c, n, 3);
    if (!wq && !wk && !wm) return;
    int last = 3;
    braid_tensor dp = braid_matmul(g, gyh, vh, BRAID_TRANSPOSE_B);
    braid_tensor ds = braid_mul(
        g, p,
        braid_sub(g, dp, braid_sum(g, braid_mul(g, dp, p), 1, &last, true)));
    if (wm) bg_grad_acc(c, n, 3, bg_grad_unbroadcast_to(c, ds, n->inputs[3]));
    braid_tensor dss = braid_mul(g, ds, sc);
    if (wq)
        bg_grad_acc(c, n, 0,
                    braid_permute(g, braid_matmul(g, dss, kh, 0), TO_BHSD));
    if (wk)
        bg_grad_acc(c, n, 1,
                    braid_permute(g,
                                  braid_matmul(g, dss, qh, BRAID_TRANSPOSE_A),
                                  TO_BHSD));
}
