/* bench/gpt2_block.h — one GPT-2 transformer block built with braid's
 * builder, shared by the training-step benchmark (bench/gpu_train_gpt2.c)
 * and its gradient test (tests/test_gpt2_block.c), so the graph that is
 * timed is the graph that is checked. Public API only.
 *
 * The block (GPT-2's, pre-norm), x [B, T, C], H heads of D = C / H:
 *   h   = layer_norm(x; ln_1.weight, ln_1.bias, eps 1e-5)
 *   qkv = h · attn.c_attn.weight [C, 3C] + attn.c_attn.bias
 *   q, k, v = the three C-wide column blocks, each [B, T, H, D] → [B, H, T, D]
 *   a   = softmax(where(causal, q·kᵀ / √D, -inf)) · v → [B, T, C]
 *   x1  = x + a · attn.c_proj.weight [C, C] + attn.c_proj.bias
 *   h2  = gelu(layer_norm(x1; ln_2.*) · mlp.c_fc.weight [C, 4C]
 *              + mlp.c_fc.bias)
 *   out = x1 + h2 · mlp.c_proj.weight [4C, C] + mlp.c_proj.bias
 * GELU is the exact (erf) form, as braid_gelu and torch's F.gelu default
 * (GPT-2 itself uses the tanh approximation; the cost is the same). The
 * causal mask is a where over iota(row) ≥ iota(column), computed inside
 * the fused kernel, not a tensor in memory. The linear layers work on
 * [B·T, C] (a free reshape) so a weight's gradient is one matmul, not a
 * batched one summed over B. bench/train_step_torch.py builds the same. */
#ifndef BRAID_BENCH_GPT2_BLOCK_H
#define BRAID_BENCH_GPT2_BLOCK_H

#include <math.h>
#include <stdint.h>

#include "braid/braid.h"

typedef struct gpt2_dims {
    int64_t batch, seq, width, heads; /* B, T, C, H; the MLP is 4C wide */
} gpt2_dims;

#define GPT2_PARAMS 12 /* parameter tensors of one block */

/* Parameter i's name (GPT-2's, as in the Hugging Face checkpoints). */
static inline const char *gpt2_param_name(int i) {
    static const char *const names[GPT2_PARAMS] = {
        "ln_1.weight",      "ln_1.bias",          "attn.c_attn.weight",
        "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
        "ln_2.weight",      "ln_2.bias",          "mlp.c_fc.weight",
        "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};
    return names[i];
}

/* Parameter i's shape: returns its rank, dims in dims[0..rank). Even i is
 * a weight (LN gamma or a matrix), odd i a bias (LN beta or a vector). */
static inline int gpt2_param_shape(const gpt2_dims *d, int i, int64_t *dims) {
    /* rows and columns in units of C (0 columns: a vector) */
    static const int8_t rows[GPT2_PARAMS] = {1, 1, 1, 3, 1, 1,
                                             1, 1, 1, 4, 4, 1};
    static const int8_t cols[GPT2_PARAMS] = {0, 0, 3, 0, 1, 0,
                                             0, 0, 4, 0, 1, 0};
    dims[0] = rows[i] * d->width;
    dims[1] = cols[i] * d->width;
    return cols[i] ? 2 : 1;
}

/* GPT-2's initialisation: matrices normal(0, 0.02), biases 0, layer-norm
 * gamma 1 and beta 0. */
static inline braid_init gpt2_param_init(int i, uint64_t seed) {
    if (i == 0 || i == 6) return braid_init_fill(1);
    if (i % 2 == 1) return braid_init_fill(0);
    return braid_init_normal(seed + (uint64_t)i, 0, 0.02);
}

/* q, k or v (which = 0, 1, 2) of qkv [B·T, 3C] as [B, H, T, D]. */
static inline braid_tensor gpt2_heads(braid_graph *g, const gpt2_dims *d,
                                      braid_tensor qkv, int which) {
    int64_t c = d->width, hd = d->width / d->heads;
    int64_t start[2] = {0, which * c},
            stop[2] = {d->batch * d->seq, (which + 1) * c};
    braid_tensor t = braid_slice(g, qkv, start, stop, NULL);
    t = braid_reshape(g, t, 4,
                      (const int64_t[]){d->batch, d->seq, d->heads, hd});
    return braid_permute(g, t, (const int[]){0, 2, 1, 3});
}

/* x [B, T, C] (a float dtype; p[] the same) → the block's output [B·T, C]. */
static inline braid_tensor gpt2_block(braid_graph *g, const gpt2_dims *d,
                                      braid_tensor x, const braid_tensor *p) {
    braid_dtype dt = BRAID_F32;
    braid_tensor_info(g, x, &dt, NULL, NULL);
    int64_t bt = d->batch * d->seq, c = d->width, t = d->seq,
            hd = d->width / d->heads;
    braid_tensor x2 = braid_reshape(g, x, 2, (const int64_t[]){bt, c});
    braid_tensor h = braid_layer_norm(g, x2, p[0], p[1], 1e-5);
    braid_tensor qkv = braid_add(g, braid_matmul(g, h, p[2], 0), p[3]);
    braid_tensor q = gpt2_heads(g, d, qkv, 0), k = gpt2_heads(g, d, qkv, 1),
                 v = gpt2_heads(g, d, qkv, 2);
    braid_tensor att = braid_matmul(g, q, k, BRAID_TRANSPOSE_B);
    att = braid_mul(g, att, braid_fill(g, dt, 0, NULL, 1 / sqrt((double)hd)));
    const int64_t tt[2] = {t, t};
    braid_tensor causal = braid_ge(g, braid_iota(g, BRAID_I32, 2, tt, 0),
                                   braid_iota(g, BRAID_I32, 2, tt, 1));
    att = braid_where(g, causal, att, braid_fill(g, dt, 0, NULL, -INFINITY));
    att = braid_softmax(g, att, 3);
    braid_tensor y = braid_matmul(g, att, v, 0); /* [B, H, T, D] */
    y = braid_permute(g, y, (const int[]){0, 2, 1, 3});
    y = braid_reshape(g, y, 2, (const int64_t[]){bt, c});
    braid_tensor x1 =
        braid_add(g, x2, braid_add(g, braid_matmul(g, y, p[4], 0), p[5]));
    h = braid_layer_norm(g, x1, p[6], p[7], 1e-5);
    h = braid_gelu(g, braid_add(g, braid_matmul(g, h, p[8], 0), p[9]));
    return braid_add(g, x1, braid_add(g, braid_matmul(g, h, p[10], 0), p[11]));
}

/* The loss of the benchmark: mean(out²), a scalar. */
static inline braid_tensor gpt2_loss(braid_graph *g, braid_tensor out) {
    return braid_mean(g, braid_square(g, out), 0, NULL, false);
}

/* One training step on x [B, T, C] (f32): the parameters as variables
 * (named gpt2_param_name(i), initialised by gpt2_param_init(i, seed)),
 * the block, output "loss", braid_grad of the loss with respect to all
 * twelve, and AdamW (braid_adamw_options_init's defaults) updating them.
 * params / grads (may be NULL) receive the variables and gradients. The
 * graph's status tells whether every step succeeded. */
static inline braid_tensor gpt2_train_step(braid_graph *g, const gpt2_dims *d,
                                           braid_tensor x, uint64_t seed,
                                           braid_tensor *params,
                                           braid_tensor *grads) {
    braid_tensor p[GPT2_PARAMS], gr[GPT2_PARAMS];
    for (int i = 0; i < GPT2_PARAMS; i++) {
        gr[i] = BRAID_NONE;
        int64_t dims[2];
        int rank = gpt2_param_shape(d, i, dims);
        p[i] = braid_variable(g, gpt2_param_name(i), BRAID_F32, rank, dims,
                              gpt2_param_init(i, seed));
    }
    braid_tensor loss = gpt2_loss(g, gpt2_block(g, d, x, p));
    braid_output(g, "loss", loss);
    if (braid_grad(g, loss, GPT2_PARAMS, p, gr) == BRAID_OK) {
        braid_adamw_options o;
        braid_adamw_options_init(&o);
        braid_adamw(g, GPT2_PARAMS, p, gr, &o);
    }
    for (int i = 0; i < GPT2_PARAMS; i++) {
        if (params) params[i] = p[i];
        if (grads) grads[i] = gr[i];
    }
    return loss;
}

#endif /* BRAID_BENCH_GPT2_BLOCK_H */
