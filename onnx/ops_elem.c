/* onnx/ops_elem.c — ONNX's elementwise ops: braid's unary and binary ops,
 * and composites of them for the activations braid has no op for. */
#include "onnx/onnx_internal.h"

#include <math.h>
#include <string.h>

#define ELEM_BOOL 9

static braid_status unary(ox_node *n, braid_op op) {
    braid_tensor x = ox_in(n, 0);
    ox_out(n, 0, braid_unary(n->g, op, x), ox_in_elem(n, 0));
    return BRAID_OK;
}

#define UNARY(fn, OP)                                                          \
    static braid_status fn(ox_node *n) { return unary(n, BRAID_OP_##OP); }
UNARY(map_neg, NEG)
UNARY(map_abs, ABS)
UNARY(map_exp, EXP)
UNARY(map_log, LOG)
UNARY(map_sqrt, SQRT)
UNARY(map_reciprocal, RECIPROCAL)
UNARY(map_relu, RELU)
UNARY(map_sigmoid, SIGMOID)
UNARY(map_tanh, TANH)
UNARY(map_erf, ERF)
UNARY(map_floor, FLOOR)
UNARY(map_ceil, CEIL)
UNARY(map_sin, SIN)
UNARY(map_cos, COS)
UNARY(map_tan, TAN)

static braid_status map_identity(ox_node *n) {
    ox_out(n, 0, ox_in(n, 0), ox_in_elem(n, 0));
    return BRAID_OK;
}

/* a op b with the same braid dtype; an int exponent of a float Pow is cast. */
static braid_status binary(ox_node *n, braid_op op) {
    braid_tensor a = ox_in(n, 0), b = ox_in(n, 1);
    int elem = bg_op_is_compare(op) ? ELEM_BOOL : ox_in_elem(n, 0);
    ox_out(n, 0, braid_binary(n->g, op, a, b), elem);
    return BRAID_OK;
}

#define BINARY(fn, OP)                                                         \
    static braid_status fn(ox_node *n) { return binary(n, BRAID_OP_##OP); }
BINARY(map_add, ADD)
BINARY(map_sub, SUB)
BINARY(map_mul, MUL)
BINARY(map_div, DIV)
BINARY(map_equal, EQ)
BINARY(map_less, LT)
BINARY(map_less_equal, LE)
BINARY(map_greater, GT)
BINARY(map_greater_equal, GE)

static braid_status map_pow(ox_node *n) {
    braid_tensor a = ox_in(n, 0), b = ox_in(n, 1);
    braid_dtype ta = ox_tdtype(n, a);
    if (!braid_dtype_is_float(ta)) {
        /* integer powers through f64, which holds every i32 exactly */
        a = braid_cast(n->g, a, BRAID_F64);
        b = braid_cast(n->g, b, BRAID_F64);
        braid_tensor r = braid_pow(n->g, a, b);
        ox_out(n, 0, braid_cast(n->g, r, ta), ox_in_elem(n, 0));
        return BRAID_OK;
    }
    if (ox_tdtype(n, b) != ta) b = braid_cast(n->g, b, ta);
    ox_out(n, 0, braid_pow(n->g, a, b), ox_in_elem(n, 0));
    return BRAID_OK;
}

/* Max, Min, Sum, Mean: a fold of op over every input. */
static braid_status variadic(ox_node *n, braid_op op, bool mean) {
    braid_tensor acc = ox_in(n, 0);
    for (int k = 1; k < n->nin; k++)
        acc = braid_binary(n->g, op, acc, ox_in(n, k));
    if (mean && n->nin > 1)
        acc = braid_div(n->g, acc, ox_scalar(n, ox_tdtype(n, acc), n->nin));
    ox_out(n, 0, acc, ox_in_elem(n, 0));
    return BRAID_OK;
}
static braid_status map_max(ox_node *n) { return variadic(n, BRAID_OP_MAX, false); }
static braid_status map_min(ox_node *n) { return variadic(n, BRAID_OP_MIN, false); }
static braid_status map_sum(ox_node *n) { return variadic(n, BRAID_OP_ADD, false); }
static braid_status map_mean(ox_node *n) { return variadic(n, BRAID_OP_ADD, true); }

/* ---- logic ------------------------------------------------------------------ */


static braid_status map_where(ox_node *n) {
    braid_tensor c = ox_in(n, 0), a = ox_in(n, 1), b = ox_in(n, 2);
    ox_out(n, 0, braid_where(n->g, c, a, b), ox_in_elem(n, 1));
    return BRAID_OK;
}

/* ---- casts -------------------------------------------------------------------- */

static braid_status cast_to(ox_node *n, int to) {
    braid_dtype t = ox_dtype(to);
    if (t == BRAID_DTYPE_COUNT_)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "cast to %s",
                            ox_elem_name(to));
    braid_tensor x = ox_in(n, 0);
    ox_out(n, 0, braid_cast(n->g, x, t), to);
    return BRAID_OK;
}
static braid_status map_cast(ox_node *n) {
    return cast_to(n, (int)ox_attr_int(n, "to", 0));
}
static braid_status map_cast_like(ox_node *n) {
    return cast_to(n, ox_in_elem(n, 1));
}

/* ---- activations as composites -------------------------------------------------- */

/* A scalar of x's dtype. */
static braid_tensor sc(ox_node *n, braid_tensor x, double v) {
    return ox_scalar(n, ox_tdtype(n, x), v);
}

static braid_status out_like(ox_node *n, braid_tensor r) {
    ox_out(n, 0, r, ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_leaky_relu(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    double a = ox_attr_float(n, "alpha", 0.01);
    braid_tensor neg = braid_lt(g, x, sc(n, x, 0));
    return out_like(n, braid_where(g, neg, braid_mul(g, x, sc(n, x, a)), x));
}

static braid_status map_prelu(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0), slope = ox_in(n, 1);
    braid_tensor neg = braid_lt(g, x, sc(n, x, 0));
    return out_like(n, braid_where(g, neg, braid_mul(g, x, slope), x));
}

static braid_tensor elu(ox_node *n, braid_tensor x, double alpha) {
    braid_graph *g = n->g;
    braid_tensor e = braid_sub(g, braid_exp(g, x), sc(n, x, 1));
    braid_tensor neg = braid_lt(g, x, sc(n, x, 0));
    return braid_where(g, neg, braid_mul(g, e, sc(n, x, alpha)), x);
}

static braid_status map_elu(ox_node *n) {
    return out_like(n, elu(n, ox_in(n, 0), ox_attr_float(n, "alpha", 1.0)));
}

static braid_status map_selu(ox_node *n) {
    braid_tensor x = ox_in(n, 0);
    double a = ox_attr_float(n, "alpha", 1.67326319217681884765625);
    double gm = ox_attr_float(n, "gamma", 1.05070102214813232421875);
    braid_graph *g = n->g;
    braid_tensor le = braid_le(g, x, sc(n, x, 0));
    braid_tensor e = braid_sub(g, braid_mul(g, braid_exp(g, x), sc(n, x, a)),
                               sc(n, x, a));
    return out_like(n, braid_mul(g, braid_where(g, le, e, x), sc(n, x, gm)));
}

static braid_status map_celu(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    double a = ox_attr_float(n, "alpha", 1.0);
    braid_tensor e = braid_exp(g, braid_div(g, x, sc(n, x, a)));
    e = braid_mul(g, braid_sub(g, e, sc(n, x, 1)), sc(n, x, a));
    braid_tensor r = braid_add(g, braid_max(g, x, sc(n, x, 0)),
                               braid_min(g, e, sc(n, x, 0)));
    return out_like(n, r);
}

static braid_status map_thresholded_relu(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    double a = ox_attr_float(n, "alpha", 1.0);
    braid_tensor gt = braid_gt(g, x, sc(n, x, a));
    return out_like(n, braid_where(g, gt, x, sc(n, x, 0)));
}

static braid_tensor hard_sigmoid(ox_node *n, braid_tensor x, double a,
                                 double b) {
    braid_graph *g = n->g;
    braid_tensor y = braid_add(g, braid_mul(g, x, sc(n, x, a)), sc(n, x, b));
    return braid_max(g, braid_min(g, y, sc(n, x, 1)), sc(n, x, 0));
}

static braid_status map_hard_sigmoid(ox_node *n) {
    braid_tensor x = ox_in(n, 0);
    return out_like(n, hard_sigmoid(n, x, ox_attr_float(n, "alpha", 0.2),
                                    ox_attr_float(n, "beta", 0.5)));
}

static braid_status map_hard_swish(ox_node *n) {
    braid_tensor x = ox_in(n, 0);
    return out_like(n,
                    braid_mul(n->g, x, hard_sigmoid(n, x, 1.0 / 6.0, 0.5)));
}

static braid_tensor softplus(ox_node *n, braid_tensor x) {
    braid_graph *g = n->g;
    return braid_log(g, braid_add(g, braid_exp(g, x), sc(n, x, 1)));
}

static braid_status map_softplus(ox_node *n) {
    return out_like(n, softplus(n, ox_in(n, 0)));
}

static braid_status map_softsign(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    braid_tensor d = braid_add(g, braid_abs(g, x), sc(n, x, 1));
    return out_like(n, braid_div(g, x, d));
}

static braid_status map_mish(ox_node *n) {
    braid_tensor x = ox_in(n, 0);
    return out_like(n, braid_mul(n->g, x, braid_tanh(n->g, softplus(n, x))));
}

static braid_status map_swish(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    double a = ox_attr_float(n, "alpha", 1.0);
    braid_tensor s = braid_sigmoid(g, braid_mul(g, x, sc(n, x, a)));
    return out_like(n, braid_mul(g, x, s));
}

/* SwiGLU (28): swish_alpha(a) · b, a and b of one shape. */
static braid_status map_swiglu(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor a = ox_in(n, 0), b = ox_in(n, 1);
    double al = ox_attr_float(n, "alpha", 1.0);
    braid_tensor s = braid_sigmoid(g, braid_mul(g, a, sc(n, a, al)));
    return out_like(n, braid_mul(g, braid_mul(g, a, s), b));
}

static braid_status map_gelu(ox_node *n) {
    char approx[16];
    ox_attr_str(n, "approximate", approx, sizeof approx, "none");
    braid_tensor x = ox_in(n, 0);
    if (strcmp(approx, "tanh")) return out_like(n, braid_gelu(n->g, x));
    /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
    braid_graph *g = n->g;
    braid_tensor x3 = braid_mul(g, braid_mul(g, x, x), x);
    braid_tensor in = braid_add(g, x, braid_mul(g, x3, sc(n, x, 0.044715)));
    in = braid_mul(g, in, sc(n, x, 0.7978845608028654 /* sqrt(2 / pi) */));
    braid_tensor t = braid_add(g, braid_tanh(g, in), sc(n, x, 1));
    return out_like(n, braid_mul(g, braid_mul(g, x, t), sc(n, x, 0.5)));
}


static braid_status map_shrink(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    double l = ox_attr_float(n, "lambd", 0.5), b = ox_attr_float(n, "bias", 0);
    braid_tensor lo = braid_lt(g, x, sc(n, x, -l));
    braid_tensor hi = braid_gt(g, x, sc(n, x, l));
    braid_tensor r = braid_where(g, lo, braid_add(g, x, sc(n, x, b)),
                                 sc(n, x, 0));
    return out_like(n, braid_where(g, hi, braid_sub(g, x, sc(n, x, b)), r));
}

/* Clip: min/max from inputs 1 and 2 (opset 11+) or attributes. */
static braid_status map_clip(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0);
    if (n->im->opset < 11) {
        x = braid_max(g, x, sc(n, x, ox_attr_float(n, "min", -INFINITY)));
        return out_like(n,
                        braid_min(g, x, sc(n, x, ox_attr_float(n, "max",
                                                                INFINITY))));
    }
    if (ox_has(n, 1)) x = braid_max(g, x, ox_in(n, 1));
    if (ox_has(n, 2)) x = braid_min(g, x, ox_in(n, 2));
    return out_like(n, x);
}




/* ---- braid's own elementwise ops (issue #13) ------------------------------- */

UNARY(map_asin, ASIN)
UNARY(map_acos, ACOS)
UNARY(map_atan, ATAN)
UNARY(map_sinh, SINH)
UNARY(map_cosh, COSH)
UNARY(map_asinh, ASINH)
UNARY(map_acosh, ACOSH)
UNARY(map_atanh, ATANH)
UNARY(map_sign, SIGN)
UNARY(map_round, ROUND)
BINARY(map_bitwise_and, BITWISE_AND)
BINARY(map_bitwise_or, BITWISE_OR)
BINARY(map_bitwise_xor, BITWISE_XOR)

/* Mod: fmod=1 is C's fmod (the sign of a), fmod=0 Python's (that of b). */
static braid_status map_mod(ox_node *n) {
    braid_tensor a = ox_in(n, 0), b = ox_in(n, 1);
    braid_tensor r = ox_attr_int(n, "fmod", 0) ? braid_fmod(n->g, a, b)
                                               : braid_mod(n->g, a, b);
    ox_out(n, 0, r, ox_in_elem(n, 0));
    return BRAID_OK;
}

/* ONNX's 8- and 16-bit integers compute as i32: a result that can leave
 * their range (a shift, a complement) wraps back into it, as the type
 * would: the low bits, sign-extended for the signed ones. */
static braid_tensor wrap_narrow(ox_node *n, braid_tensor r, int elem) {
    enum { U8 = 2, I8 = 3, U16 = 4, I16 = 5 };
    if (elem != U8 && elem != I8 && elem != U16 && elem != I16) return r;
    double bits = elem == U8 || elem == I8 ? 256 : 65536;
    bool sign = elem == I8 || elem == I16;
    braid_tensor mask = ox_scalar(n, BRAID_I32, bits - 1);
    braid_tensor half = ox_scalar(n, BRAID_I32, bits / 2);
    if (sign) r = braid_add(n->g, r, half);
    r = braid_bitwise_and(n->g, r, mask);
    return sign ? braid_sub(n->g, r, half) : r;
}

static braid_status map_bitwise_not(ox_node *n) {
    braid_tensor r = braid_bitwise_not(n->g, ox_in(n, 0));
    ox_out(n, 0, wrap_narrow(n, r, ox_in_elem(n, 0)), ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status map_bit_shift(ox_node *n) {
    char dir[8];
    ox_attr_str(n, "direction", dir, sizeof dir, "");
    bool left = !strcmp(dir, "LEFT");
    if (!left && strcmp(dir, "RIGHT"))
        return ox_node_fail(n, BRAID_ERR_INVALID_ARGUMENT, "direction \"%s\"",
                            dir);
    braid_tensor a = ox_in(n, 0), b = ox_in(n, 1);
    braid_tensor r = left ? braid_shift_left(n->g, a, b)
                          : braid_shift_right(n->g, a, b);
    ox_out(n, 0, wrap_narrow(n, r, ox_in_elem(n, 0)), ox_in_elem(n, 0));
    return BRAID_OK;
}

static braid_status logic(ox_node *n, braid_tensor r) {
    ox_out(n, 0, r, ELEM_BOOL);
    return BRAID_OK;
}
static braid_status map_not(ox_node *n) {
    return logic(n, braid_logical_not(n->g, ox_in(n, 0)));
}
static braid_status map_and(ox_node *n) {
    return logic(n, braid_logical_and(n->g, ox_in(n, 0), ox_in(n, 1)));
}
static braid_status map_or(ox_node *n) {
    return logic(n, braid_logical_or(n->g, ox_in(n, 0), ox_in(n, 1)));
}
static braid_status map_xor(ox_node *n) {
    return logic(n, braid_logical_xor(n->g, ox_in(n, 0), ox_in(n, 1)));
}
static braid_status map_isnan(ox_node *n) {
    return logic(n, braid_isnan(n->g, ox_in(n, 0)));
}
static braid_status map_isinf(ox_node *n) {
    return logic(n, braid_isinf(n->g, ox_in(n, 0),
                                ox_attr_int(n, "detect_positive", 1),
                                ox_attr_int(n, "detect_negative", 1)));
}

/* ---- quantisation (integer types only; braid has no float8/4-bit) ---------- */

/* Scale or zero point p broadcast against x [rank r, dims d]: a scalar as
 * is, a vector along axis, or (block_size > 0) a blocked tensor whose
 * axis dim is ceil(d / block) repeated block times and cut to d. */
static braid_tensor per_axis(ox_node *n, braid_tensor p, int r,
                             const int64_t *d, int axis, int64_t block) {
    braid_graph *g = n->g;
    int64_t pd[BRAID_MAX_RANK];
    int pr = ox_rank(n, p, pd);
    if (pr == 0 || ox_numel(pr, pd) == 1) return braid_reshape(g, p, 0, NULL);
    if (block <= 0) {
        int64_t s[BRAID_MAX_RANK];
        for (int i = 0; i < r; i++) s[i] = i == axis ? pd[0] : 1;
        return braid_reshape(g, p, r, s);
    }
    int64_t e[BRAID_MAX_RANK + 1], f[BRAID_MAX_RANK + 1], b[BRAID_MAX_RANK] = {0};
    int k = 0;
    for (int i = 0; i < pr; i++) {
        e[k] = pd[i], f[k++] = pd[i];
        if (i == axis) e[k] = 1, f[k++] = block;
    }
    p = braid_broadcast_to(g, braid_reshape(g, p, k, e), k, f);
    for (int i = 0; i < pr; i++) e[i] = i == axis ? pd[i] * block : pd[i];
    p = braid_reshape(g, p, pr, e);
    return braid_slice(g, p, b, d, NULL);
}

/* axis matters only for a vector or blocked scale: checked then. */
static bool quant_axis(ox_node *n, int r, int *axis, int64_t *block) {
    *block = ox_attr_int(n, "block_size", 0);
    int64_t pd[BRAID_MAX_RANK];
    int pr = ox_rank(n, ox_in(n, 1), pd);
    *axis = 0;
    if (pr == 0 || ox_numel(pr, pd) == 1) return true;
    return ox_axis(n, ox_attr_int(n, "axis", 1), r, axis);
}

/* DequantizeLinear: (x - zero_point) · scale, in the scale's type. */
static braid_status map_dequantize(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0), s = ox_in(n, 1);
    int64_t d[BRAID_MAX_RANK], block;
    int r = ox_rank(n, x, d), axis;
    if (!quant_axis(n, r, &axis, &block)) return n->im->status;
    braid_dtype t = ox_tdtype(n, s);
    braid_tensor y = braid_cast(g, x, BRAID_F32);
    if (ox_has(n, 2))
        y = braid_sub(g, y, braid_cast(g, per_axis(n, ox_in(n, 2), r, d, axis,
                                                   block), BRAID_F32));
    y = braid_mul(g, y, braid_cast(g, per_axis(n, s, r, d, axis, block),
                                   BRAID_F32));
    ox_out(n, 0, braid_cast(g, y, t), ox_in_elem(n, 1));
    return BRAID_OK;
}

/* QuantizeLinear: round(x / scale) (half to even) + zero_point,
 * saturated to the output type (the zero point's, else output_dtype,
 * else uint8). */
static braid_status map_quantize(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = ox_in(n, 0), s = ox_in(n, 1);
    int64_t d[BRAID_MAX_RANK], block;
    int r = ox_rank(n, x, d), axis;
    if (!quant_axis(n, r, &axis, &block)) return n->im->status;
    int elem = ox_has(n, 2) ? ox_in_elem(n, 2)
                            : (int)ox_attr_int(n, "output_dtype", 2);
    static const double lo[] = {0, 0, 0, -128, 0, -32768, -2147483648.0};
    static const double hi[] = {0, 0, 255, 127, 65535, 32767, 2147483647.0};
    if (elem < 2 || elem > 6)
        return ox_node_fail(n, BRAID_ERR_UNSUPPORTED, "output type %s",
                            ox_elem_name(elem));
    braid_tensor y = braid_div(g, braid_cast(g, x, BRAID_F32),
                               braid_cast(g, per_axis(n, s, r, d, axis, block),
                                          BRAID_F32));
    y = braid_round(g, y);
    if (ox_has(n, 2))
        y = braid_add(g, y, braid_cast(g, per_axis(n, ox_in(n, 2), r, d, axis,
                                                   block), BRAID_F32));
    y = braid_max(g, y, ox_scalar(n, BRAID_F32, lo[elem]));
    y = braid_min(g, y, ox_scalar(n, BRAID_F32, hi[elem]));
    ox_out(n, 0, braid_cast(g, y, BRAID_I32), elem);
    return BRAID_OK;
}

/* DynamicQuantizeLinear: uint8 with scale (max(0, x) - min(0, x)) / 255
 * over all of x and zero point round(-min / scale), saturated. */
static braid_status map_dyn_quantize(ox_node *n) {
    braid_graph *g = n->g;
    braid_tensor x = braid_cast(g, ox_in(n, 0), BRAID_F32);
    braid_tensor z = ox_scalar(n, BRAID_F32, 0);
    braid_tensor hi = braid_max(g, braid_reduce_max(g, x, 0, NULL, false), z);
    braid_tensor lo = braid_min(g, braid_reduce_min(g, x, 0, NULL, false), z);
    braid_tensor s = braid_div(g, braid_sub(g, hi, lo),
                               ox_scalar(n, BRAID_F32, 255));
    braid_tensor zp = braid_round(g, braid_div(g, braid_neg(g, lo), s));
    braid_tensor c0 = ox_scalar(n, BRAID_F32, 0), c255 = ox_scalar(n, BRAID_F32, 255);
    zp = braid_min(g, braid_max(g, zp, c0), c255);
    braid_tensor y = braid_add(g, braid_round(g, braid_div(g, x, s)), zp);
    y = braid_min(g, braid_max(g, y, c0), c255);
    ox_out(n, 0, braid_cast(g, y, BRAID_I32), 2);
    ox_out(n, 1, s, 1);
    ox_out(n, 2, braid_cast(g, zp, BRAID_I32), 2);
    return BRAID_OK;
}

const ox_op ox_ops_elem[] = {
    {"DynamicQuantizeLinear", 11, map_dyn_quantize, 0},
    {"DequantizeLinear", 10, map_dequantize, 0},
    {"QuantizeLinear", 10, map_quantize, 0},
    {"Acos", 7, map_acos, 0},
    {"Asin", 7, map_asin, 0},
    {"Atan", 7, map_atan, 0},
    {"BitShift", 11, map_bit_shift, 0},
    {"BitwiseAnd", 18, map_bitwise_and, 0},
    {"BitwiseNot", 18, map_bitwise_not, 0},
    {"BitwiseOr", 18, map_bitwise_or, 0},
    {"BitwiseXor", 18, map_bitwise_xor, 0},
    {"Abs", 1, map_abs, 0},
    {"Acosh", 9, map_acosh, 0},
    {"Asinh", 9, map_asinh, 0},
    {"Atanh", 9, map_atanh, 0},
    {"Add", 1, map_add, 0},
    {"And", 1, map_and, 0},
    {"Cast", 1, map_cast, 0},
    {"CastLike", 15, map_cast_like, 0},
    {"Ceil", 1, map_ceil, 0},
    {"Celu", 12, map_celu, 0},
    {"Clip", 1, map_clip, 0},
    {"Cos", 7, map_cos, 0},
    {"Cosh", 9, map_cosh, 0},
    {"Div", 1, map_div, 0},
    {"Elu", 1, map_elu, 0},
    {"Equal", 1, map_equal, 0},
    {"Erf", 9, map_erf, 0},
    {"Exp", 1, map_exp, 0},
    {"Floor", 1, map_floor, 0},
    {"Gelu", 20, map_gelu, 0},
    {"Greater", 1, map_greater, 0},
    {"GreaterOrEqual", 12, map_greater_equal, 0},
    {"HardSigmoid", 1, map_hard_sigmoid, 0},
    {"HardSwish", 14, map_hard_swish, 0},
    {"Identity", 1, map_identity, 0},
    {"IsInf", 10, map_isinf, 0},
    {"IsNaN", 9, map_isnan, 0},
    {"LeakyRelu", 1, map_leaky_relu, 0},
    {"Less", 1, map_less, 0},
    {"LessOrEqual", 12, map_less_equal, 0},
    {"Log", 1, map_log, 0},
    {"Max", 1, map_max, 0},
    {"Mean", 1, map_mean, 0},
    {"Min", 1, map_min, 0},
    {"Mish", 18, map_mish, 0},
    {"Mod", 10, map_mod, 0},
    {"Mul", 1, map_mul, 0},
    {"Neg", 1, map_neg, 0},
    {"Not", 1, map_not, 0},
    {"Or", 1, map_or, 0},
    {"Pow", 1, map_pow, 0},
    {"PRelu", 1, map_prelu, 0},
    {"Reciprocal", 1, map_reciprocal, 0},
    {"Relu", 1, map_relu, 0},
    {"Round", 11, map_round, 0},
    {"Selu", 1, map_selu, 0},
    {"Shrink", 9, map_shrink, 0},
    {"Sigmoid", 1, map_sigmoid, 0},
    {"Sign", 9, map_sign, 0},
    {"Sin", 7, map_sin, 0},
    {"Sinh", 9, map_sinh, 0},
    {"Softplus", 1, map_softplus, 0},
    {"Softsign", 1, map_softsign, 0},
    {"Sqrt", 1, map_sqrt, 0},
    {"Sub", 1, map_sub, 0},
    {"Sum", 1, map_sum, 0},
    {"Swish", 24, map_swish, 0},
    {"SwiGLU", 28, map_swiglu, 0},
    {"Tan", 7, map_tan, 0},
    {"Tanh", 1, map_tanh, 0},
    {"ThresholdedRelu", 10, map_thresholded_relu, 0},
    {"Where", 9, map_where, 0},
    {"Xor", 1, map_xor, 0},
    {NULL, 0, NULL, 0},
};
