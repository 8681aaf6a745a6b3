/* graph/grad_rules.c — the gradient rule of every differentiable op, in one
 * table keyed by op (bg_grad_rule_of). A rule receives gy, the gradient of
 * the loss with respect to the node's output, and adds each input's
 * contribution; broadcasting operands get theirs summed over the broadcast
 * axes. docs/training.md lists the rules and their conventions (relu and
 * abs at 0, max/min ties split evenly, pow's exponent at a base of 0). */
#include "graph/grad.h"

/* C11 has no M_PI & co. */
#define GR_2_SQRTPI 1.12837916709551257390  /* 2/√π */
#define GR_SQRT1_2 0.70710678118654752440   /* 1/√2 */
#define GR_1_SQRT2PI 0.39894228040143267794 /* 1/√(2π) */

/* What a rule works with: node n, its first input x, its output y, the
 * incoming gradient gy, and its dtype for constants. */
typedef struct gr {
    bg_grad_ctx *c;
    const bg_grad_node *n;
    braid_graph *g;
    braid_tensor x, y, gy;
    braid_dtype dt;
} gr;

static gr gr_begin(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    gr r = {c, n, bg_grad_graph(c), {n->inputs[0]}, {n->id}, gy, n->dtype};
    return r;
}

static braid_tensor gr_in(const gr *r, uint32_t k) {
    return (braid_tensor){r->n->inputs[k]};
}

/* Short names for the builders, over r->g. */
#define K(v) bg_grad_scalar(r->c, r->dt, (v))
#define ADD(a, b) braid_add(r->g, (a), (b))
#define SUB(a, b) braid_sub(r->g, (a), (b))
#define MUL(a, b) braid_mul(r->g, (a), (b))
#define DIV(a, b) braid_div(r->g, (a), (b))
#define NEG(a) braid_neg(r->g, (a))
#define WHERE(c, a, b) braid_where(r->g, (c), (a), (b))

/* Input k's contribution t, summed over what input k was broadcast along. */
static void gr_acc(const gr *r, uint32_t k, braid_tensor t) {
    if (!bg_grad_wants(r->c, r->n, k)) return;
    bg_grad_acc(r->c, r->n, k,
                bg_grad_unbroadcast_to(r->c, t, r->n->inputs[k]));
}

/* ---- unary elementwise: gy times the derivative, written in x and y ----- */

#define GR_UNARY(name, expr)                                                   \
    static void gr_##name(bg_grad_ctx *c, const bg_grad_node *n,               \
                          braid_tensor gy) {                                   \
        gr rr = gr_begin(c, n, gy), *r = &rr;                                  \
        braid_tensor x = r->x, y = r->y;                                       \
        (void)x;                                                               \
        (void)y;                                                               \
        gr_acc(r, 0, (expr));                                                  \
    }

/* abs'(0) = 0 and relu'(0) = 0: the subgradient PyTorch also picks. */
GR_UNARY(neg, NEG(gy))
GR_UNARY(abs, WHERE(braid_gt(r->g, x, K(0)), gy,
                    WHERE(braid_lt(r->g, x, K(0)), NEG(gy), K(0))))
GR_UNARY(exp, MUL(gy, y))
GR_UNARY(log, DIV(gy, x))
GR_UNARY(sqrt, DIV(gy, MUL(K(2), y)))
GR_UNARY(rsqrt, MUL(gy, MUL(K(-0.5), MUL(y, braid_square(r->g, y)))))
GR_UNARY(sin, MUL(gy, braid_cos(r->g, x)))
GR_UNARY(cos, NEG(MUL(gy, braid_sin(r->g, x))))
GR_UNARY(tan, MUL(gy, ADD(K(1), braid_square(r->g, y))))
GR_UNARY(tanh, MUL(gy, SUB(K(1), braid_square(r->g, y))))
GR_UNARY(sigmoid, MUL(gy, MUL(y, SUB(K(1), y))))
GR_UNARY(relu, WHERE(braid_gt(r->g, x, K(0)), gy, K(0)))
GR_UNARY(erf, MUL(gy, MUL(K(GR_2_SQRTPI),
                          braid_exp(r->g, NEG(braid_square(r->g, x))))))
GR_UNARY(reciprocal, NEG(MUL(gy, braid_square(r->g, y))))
GR_UNARY(square, MUL(gy, MUL(K(2), x)))
/* elemwise helper's inverse and hyperbolic functions */
GR_UNARY(asin, DIV(gy, braid_sqrt(r->g, SUB(K(1), braid_square(r->g, x)))))
GR_UNARY(acos,
         NEG(DIV(gy, braid_sqrt(r->g, SUB(K(1), braid_square(r->g, x))))))
GR_UNARY(atan, DIV(gy, ADD(K(1), braid_square(r->g, x))))
GR_UNARY(sinh, MUL(gy, braid_cosh(r->g, x)))
GR_UNARY(cosh, MUL(gy, braid_sinh(r->g, x)))
GR_UNARY(asinh, DIV(gy, braid_sqrt(r->g, ADD(braid_square(r->g, x), K(1)))))
GR_UNARY(acosh, DIV(gy, braid_sqrt(r->g, SUB(braid_square(r->g, x), K(1)))))
GR_UNARY(atanh, DIV(gy, SUB(K(1), braid_square(r->g, x))))

/* gelu(x) = x·Φ(x): gelu' = Φ(x) + x·φ(x). */
static braid_tensor gr_dgelu(const gr *r) {
    braid_tensor x = r->x;
    braid_tensor cdf =
        MUL(K(0.5), ADD(K(1), braid_erf(r->g, MUL(x, K(GR_SQRT1_2)))));
    braid_tensor pdf = MUL(
        K(GR_1_SQRT2PI), braid_exp(r->g, MUL(K(-0.5), braid_square(r->g, x))));
    return ADD(cdf, MUL(x, pdf));
}
GR_UNARY(gelu, MUL(gy, gr_dgelu(r)))

/* silu(x) = x·σ(x): silu' = σ(x)·(1 + x·(1 - σ(x))). */
static braid_tensor gr_dsilu(const gr *r) {
    braid_tensor s = braid_sigmoid(r->g, r->x);
    return MUL(s, ADD(K(1), MUL(r->x, SUB(K(1), s))));
}
GR_UNARY(silu, MUL(gy, gr_dsilu(r)))

/* ---- binary elementwise ------------------------------------------------- */

static void gr_add(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    gr rr = gr_begin(c, n, gy);
    gr_acc(&rr, 0, gy);
    gr_acc(&rr, 1, gy);
}

static void gr_sub(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    gr rr = gr_begin(c, n, gy), *r = &rr;
    gr_acc(r, 0, gy);
    if (bg_grad_wants(c, n, 1)) gr_acc(r, 1, NEG(gy));
}

static void gr_mul(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    gr rr = gr_begin(c, n, gy), *r = &rr;
    if (bg_grad_wants(c, n, 0)) gr_acc(r, 0, MUL(gy, gr_in(r, 1)));
    if (bg_grad_wants(c, n, 1)) gr_acc(r, 1, MUL(gy, gr_in(r, 0)));
}

/* d(a/b)/db = -a/b² = -y/b. */
static void gr_div(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    gr rr = gr_begin(c, n, gy), *r = &rr;
    braid_tensor b = gr_in(r, 1);
    if (bg_grad_wants(c, n, 0)) gr_acc(r, 0, DIV(gy, b));
    if (bg_grad_wants(c, n, 1)) gr_acc(r, 1, NEG(DIV(MUL(gy, r->y), b)));
}

/* mod and fmod: y = a - b·q with q = floor(a/b) (mod) or trunc(a/b)
 * (fmod), piecewise constant: dy/da = 1, dy/db = -q = -(a - y)/b. */
static void gr_mod(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    gr rr = gr_begin(c, n, gy), *r = &rr;
    braid_tensor a = gr_in(r, 0), b = gr_in(r, 1);
    if (bg_grad_wants(c, n, 0)) gr_acc(r, 0, gy);
    if (bg_grad_wants(c, n, 1))
        gr_acc(r, 1, NEG(MUL(gy, DIV(SUB(a, r->y), b))));
}

/* d(a^b)/da = b·a^(b-1); d(a^b)/db = a^b·log a, taken as 0 where a = 0
 * (the limit for b > 0) and NaN where a < 0. */
static void gr_pow(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    gr rr = gr_begin(c, n, gy), *r = &rr;
    braid_tensor a = gr_in(r, 0), b = gr_in(r, 1);
    if (bg_grad_wants(c, n, 0))
        gr_acc(r, 0, MUL(gy, MUL(b, braid_pow(r->g, a, SUB(b, K(1))))));
    if (bg_grad_wants(c, n, 1)) {
        braid_tensor l = MUL(r->y, braid_log(r->g, a));
        gr_acc(r, 1, MUL(gy, WHERE(braid_eq(r->g, a, K(0)), K(0), l)));
    }
}

/* max/min: the operand that wins gets the gradient; a tie splits it evenly
 * (½ each), as for the reductions. win compares a with b. */
static void gr_select2(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy,
                       braid_op win) {
    gr rr = gr_begin(c, n, gy), *r = &rr;
    braid_tensor a = gr_in(r, 0), b = gr_in(r, 1);
    braid_tensor w = WHERE(braid_binary(r->g, win, a, b), K(1),
                           WHERE(braid_eq(r->g, a, b), K(0.5), K(0)));
    if (bg_grad_wants(c, n, 0)) gr_acc(r, 0, MUL(gy, w));
    if (bg_grad_wants(c, n, 1)) gr_acc(r, 1, MUL(gy, SUB(K(1), w)));
}

static void gr_max(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    gr_select2(c, n, gy, BRAID_OP_GT);
}

static void gr_min(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    gr_select2(c, n, gy, BRAID_OP_LT);
}

/* The condition (bool) gets nothing. */
static void gr_where(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    gr rr = gr_begin(c, n, gy), *r = &rr;
    braid_tensor cond = gr_in(r, 0);
    if (bg_grad_wants(c, n, 1)) gr_acc(r, 1, WHERE(cond, gy, K(0)));
    if (bg_grad_wants(c, n, 2)) gr_acc(r, 2, WHERE(cond, K(0), gy));
}

/* Only float → float casts are on a path (gradients do not flow through
 * i32 or bool); the gradient is cast back. */
static void gr_cast(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    braid_dtype to;
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    bg_grad_type(c, n->inputs[0], &to, &rank, dims);
    bg_grad_acc(c, n, 0, braid_cast(bg_grad_graph(c), gy, to));
}

static void gr_identity(bg_grad_ctx *c, const bg_grad_node *n,
                        braid_tensor gy) {
    bg_grad_acc(c, n, 0, gy);
}

/* ---- matmul ----------------------------------------------------------------
 * With op(X) = X or Xᵀ as the flags say, C = op(A)·op(B) and G = dC:
 *   flags   dA               dB
 *   none    G·Bᵀ             Aᵀ·G
 *   TB      G·B              Gᵀ·A
 *   TA      B·Gᵀ             A·G
 *   TA|TB   Bᵀ·Gᵀ            Gᵀ·Aᵀ
 * each one matmul with flags, then summed over broadcast batch dims. */
static void gr_matmul(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    gr rr = gr_begin(c, n, gy), *r = &rr;
    braid_tensor a = gr_in(r, 0), b = gr_in(r, 1);
    unsigned f = n->attr.flags, TA = BRAID_TRANSPOSE_A, TB = BRAID_TRANSPOSE_B;
    bool ta = f & TA, tb = f & TB;
    if (bg_grad_wants(c, n, 0)) {
        braid_tensor da = !ta ? braid_matmul(r->g, gy, b, tb ? 0 : TB)
                              : braid_matmul(r->g, b, gy, tb ? TA | TB : TB);
        gr_acc(r, 0, da);
    }
    if (bg_grad_wants(c, n, 1)) {
        braid_tensor db = !tb ? braid_matmul(r->g, a, gy, ta ? 0 : TA)
                              : braid_matmul(r->g, gy, a, ta ? TA | TB : TA);
        gr_acc(r, 1, db);
    }
}

/* ---- reductions --------------------------------------------------------- */

static void gr_sum(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    bg_grad_type(c, n->inputs[0], NULL, &rank, dims);
    bg_grad_acc(c, n, 0,
                bg_grad_expand_reduced(c, gy, n->attr.axes, rank, dims));
}

static void gr_mean(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    gr rr = gr_begin(c, n, gy), *r = &rr;
    int rank;
    int64_t dims[BRAID_MAX_RANK], count = 1;
    bg_grad_type(c, n->inputs[0], NULL, &rank, dims);
    for (int i = 0; i < rank; i++)
        if (n->attr.axes & (1u << i)) count *= dims[i];
    braid_tensor e = bg_grad_expand_reduced(c, gy, n->attr.axes, rank, dims);
    bg_grad_acc(c, n, 0, MUL(e, K(count > 0 ? 1.0 / (double)count : 0.0)));
}

/* reduce_max / reduce_min: every element equal to the result shares the
 * gradient evenly (k ties get 1/k each). A NaN result gives NaN. */
static void gr_reduce_select(bg_grad_ctx *c, const bg_grad_node *n,
                             braid_tensor gy) {
    gr rr = gr_begin(c, n, gy), *r = &rr;
    int rank, axes[BRAID_MAX_RANK], naxes = 0;
    int64_t dims[BRAID_MAX_RANK];
    bg_grad_type(c, n->inputs[0], NULL, &rank, dims);
    for (int i = 0; i < rank; i++)
        if (n->attr.axes & (1u << i)) axes[naxes++] = i;
    uint8_t ax = n->attr.axes;
    braid_tensor yk = bg_grad_keepdims(c, r->y, ax, rank, dims);
    braid_tensor gk = bg_grad_keepdims(c, gy, ax, rank, dims);
    braid_tensor hit = braid_cast(r->g, braid_eq(r->g, r->x, yk), r->dt);
    braid_tensor cnt =
        naxes > 0 ? braid_sum(r->g, hit, naxes, axes, true) : hit;
    bg_grad_acc(c, n, 0, MUL(hit, DIV(gk, cnt)));
}

/* ---- softmax (last axis): dx = y·(gy - Σ gy·y) -------------------------- */

static void gr_softmax(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    gr rr = gr_begin(c, n, gy), *r = &rr;
    int last = n->rank - 1;
    braid_tensor s = braid_sum(r->g, MUL(gy, r->y), 1, &last, true);
    bg_grad_acc(c, n, 0, MUL(r->y, SUB(gy, s)));
}

/* ---- layer_norm (last axis) ---------------------------------------------
 * With x̂ = (x - mean)·r, r = rsqrt(var + eps) recomputed from x, and
 * g = gy·gamma: dx = r·(g - mean(g) - x̂·mean(g·x̂)) (means over the row),
 * dgamma = Σ gy·x̂ and dbeta = Σ gy over every axis but the last. */

static void gr_layer_norm(bg_grad_ctx *c, const bg_grad_node *n,
                          braid_tensor gy) {
    gr rr = gr_begin(c, n, gy), *r = &rr;
    int last = n->rank - 1;
    braid_tensor mu = braid_mean(r->g, r->x, 1, &last, true);
    braid_tensor d = SUB(r->x, mu);
    braid_tensor var = braid_mean(r->g, braid_square(r->g, d), 1, &last, true);
    braid_tensor rs = braid_rsqrt(r->g, ADD(var, K(n->attr.value[0])));
    braid_tensor xh = MUL(d, rs);
    if (bg_grad_wants(r->c, r->n, 0)) {
        braid_tensor g = MUL(gy, gr_in(r, 1));
        braid_tensor mg = braid_mean(r->g, g, 1, &last, true);
        braid_tensor mgx = braid_mean(r->g, MUL(g, xh), 1, &last, true);
        gr_acc(r, 0, MUL(rs, SUB(SUB(g, mg), MUL(xh, mgx))));
    }
    gr_acc(r, 1, MUL(gy, xh));
    gr_acc(r, 2, gy);
}

/* ---- shape ops ---------------------------------------------------------- */

static void gr_reshape(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    bg_grad_type(c, n->inputs[0], NULL, &rank, dims);
    bg_grad_acc(c, n, 0, braid_reshape(bg_grad_graph(c), gy, rank, dims));
}

static void gr_permute(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    int inv[BRAID_MAX_RANK];
    for (int i = 0; i < n->rank; i++)
        inv[n->attr.perm[i]] = i;
    bg_grad_acc(c, n, 0, braid_permute(bg_grad_graph(c), gy, inv));
}

/* gy reversed along axis (a slice with step -1), for a backwards slice.
 * gy's shape is its own (earlier axes may already be restored). */
static braid_tensor gr_reverse_axis(bg_grad_ctx *c, braid_tensor gy,
                                    int axis) {
    int rank = 0;
    int64_t dims[BRAID_MAX_RANK];
    if (braid_tensor_info(bg_grad_graph(c), gy, NULL, &rank, dims) != BRAID_OK)
        return BRAID_NONE;
    int64_t start[BRAID_MAX_RANK], stop[BRAID_MAX_RANK], step[BRAID_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        start[i] = i == axis ? dims[i] - 1 : 0;
        stop[i] = i == axis ? -dims[i] - 1 : dims[i]; /* through element 0 */
        step[i] = i == axis ? -1 : 1;
    }
    return braid_slice(bg_grad_graph(c), gy, start, stop, step);
}

/* A slice narrowing one axis with step 1 is held back (bg_grad_acc_slice:
 * the parts of a split give one concat). Otherwise axis by axis, each
 * sliced axis grows back to its full size with zeros
 * where slicing dropped elements. A negative step took the elements
 * start, start + step, ... backwards: gy is reversed along that axis
 * first, making it the slice from the lowest index with step -step. */
static void gr_slice(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    bg_grad_type(c, n->inputs[0], NULL, &rank, dims);
    int narrowed = -1, count = 0;
    for (int i = 0; i < rank; i++)
        if (n->attr.step[i] != 1 || n->dims[i] != dims[i]) {
            narrowed = i;
            count += n->attr.step[i] == 1 ? 1 : 2;
        }
    if (count == 1) { /* one part of a split, perhaps: held back */
        bg_grad_acc_slice(c, n, narrowed, n->attr.start[narrowed], gy);
        return;
    }
    for (int i = 0; i < rank; i++) {
        int64_t start = n->attr.start[i], step = n->attr.step[i];
        if (step < 0 && n->dims[i] > 0) {
            gy = gr_reverse_axis(c, gy, i);
            start += (n->dims[i] - 1) * step;
            step = -step;
        }
        gy = bg_grad_unslice_axis(c, gy, i, dims[i], start, step);
    }
    bg_grad_acc(c, n, 0, gy);
}

static void gr_concat(bg_grad_ctx *c, const bg_grad_node *n, braid_tensor gy) {
    int axis = n->attr.axis, rank;
    int64_t dims[BRAID_MAX_RANK], at = 0;
    for (uint32_t k = 0; k < n->ninputs; k++) {
        bg_grad_type(c, n->inputs[k], NULL, &rank, dims);
        if (bg_grad_wants(c, n, k))
            bg_grad_acc(c, n, k,
                        bg_grad_slice_axis(c, gy, axis, at, at + dims[axis]));
        at += dims[axis];
    }
}

static void gr_broadcast_to(bg_grad_ctx *c, const bg_grad_node *n,
                            braid_tensor gy) {
    bg_grad_acc(c, n, 0, bg_grad_unbroadcast_to(c, gy, n->inputs[0]));
}

/* ---- the table ---------------------------------------------------------- */

static const bg_grad_rule gr_rules[BRAID_OP_COUNT_] = {
    [BRAID_OP_NEG] = gr_neg,
    [BRAID_OP_ABS] = gr_abs,
    [BRAID_OP_EXP] = gr_exp,
    [BRAID_OP_LOG] = gr_log,
    [BRAID_OP_SQRT] = gr_sqrt,
    [BRAID_OP_RSQRT] = gr_rsqrt,
    [BRAID_OP_SIN] = gr_sin,
    [BRAID_OP_COS] = gr_cos,
    [BRAID_OP_TAN] = gr_tan,
    [BRAID_OP_TANH] = gr_tanh,
    [BRAID_OP_SIGMOID] = gr_sigmoid,
    [BRAID_OP_RELU] = gr_relu,
    [BRAID_OP_GELU] = gr_gelu,
    [BRAID_OP_SILU] = gr_silu,
    [BRAID_OP_ERF] = gr_erf,
    [BRAID_OP_RECIPROCAL] = gr_reciprocal,
    [BRAID_OP_SQUARE] = gr_square,
    [BRAID_OP_ADD] = gr_add,
    [BRAID_OP_SUB] = gr_sub,
    [BRAID_OP_MUL] = gr_mul,
    [BRAID_OP_DIV] = gr_div,
    [BRAID_OP_POW] = gr_pow,
    [BRAID_OP_MAX] = gr_max,
    [BRAID_OP_MIN] = gr_min,
    [BRAID_OP_WHERE] = gr_where,
    [BRAID_OP_CAST] = gr_cast,
    [BRAID_OP_MATMUL] = gr_matmul,
    [BRAID_OP_SUM] = gr_sum,
    [BRAID_OP_MEAN] = gr_mean,
    [BRAID_OP_REDUCE_MAX] = gr_reduce_select,
    [BRAID_OP_REDUCE_MIN] = gr_reduce_select,
    [BRAID_OP_SOFTMAX] = gr_softmax,
    [BRAID_OP_LAYER_NORM] = gr_layer_norm,
    [BRAID_OP_RESHAPE] = gr_reshape,
    [BRAID_OP_PERMUTE] = gr_permute,
    [BRAID_OP_SLICE] = gr_slice,
    [BRAID_OP_CONCAT] = gr_concat,
    [BRAID_OP_BROADCAST_TO] = gr_broadcast_to,
    /* elemwise helper */
    [BRAID_OP_ASIN] = gr_asin,
    [BRAID_OP_ACOS] = gr_acos,
    [BRAID_OP_ATAN] = gr_atan,
    [BRAID_OP_SINH] = gr_sinh,
    [BRAID_OP_COSH] = gr_cosh,
    [BRAID_OP_ASINH] = gr_asinh,
    [BRAID_OP_ACOSH] = gr_acosh,
    [BRAID_OP_ATANH] = gr_atanh,
    [BRAID_OP_MOD] = gr_mod,
    [BRAID_OP_FMOD] = gr_mod,
    [BRAID_OP_COPY] = gr_identity,
    [BRAID_OP_ALL_REDUCE] = bg_grad_collective,
    [BRAID_OP_ALL_GATHER] = bg_grad_collective,
    [BRAID_OP_BROADCAST] = bg_grad_collective,
    [BRAID_OP_REDUCE_SCATTER] = bg_grad_collective,
    [BRAID_OP_GATHER] = bg_grad_gather, /* graph/grad_index.c */
    [BRAID_OP_SCATTER] = bg_grad_scatter,
    [BRAID_OP_TOPK_VALUES] = bg_grad_topk, /* index ops */
    [BRAID_OP_CUMSUM] = bg_grad_cumsum,
    [BRAID_OP_REDUCE_PROD] = bg_grad_reduce_prod,
    /* pooling (issue #13) */
    [BRAID_OP_MAX_POOL] = bg_grad_window,
    [BRAID_OP_AVG_POOL] = bg_grad_window,
    [BRAID_OP_RESIZE] = bg_grad_window,
    [BRAID_OP_ATTENTION] = bg_grad_attention, /* graph/grad_attention.c */
    /* conv ops (issue #13) */
    [BRAID_OP_CONV] = bg_grad_conv,
    [BRAID_OP_CONV_TRANSPOSE] = bg_grad_conv,
};

bg_grad_rule bg_grad_rule_of(braid_op op) {
    return (unsigned)op < BRAID_OP_COUNT_ ? gr_rules[op] : NULL;
}
