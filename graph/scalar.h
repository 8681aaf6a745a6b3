/* graph/scalar.h — the scalar meaning of every elementwise op and reduction,
 * written once (prefix bg_, BG_).
 *
 * Each op's rule is a macro over one element, so the CPU kernels
 * (runtime/cpu) can expand it inside their -O3 loops and keep them
 * vectorised, while the reference evaluator and constant folding
 * (graph/eval.c) expand the same text in double:
 *   BG_<ID>(T, x[, y])   the float rule in the float type T: float for
 *                        f32/f16/bf16 on the CPU, double for f64 and for the
 *                        reference (which rounds each node to its dtype);
 *   BG_<ID>_I32(x[, y])  the i32 rule, for ops whose dtypes column is
 *                        NUMBER: wrapping (through uint32, never signed
 *                        overflow), x/0 = 0, INT32_MIN/-1 = INT32_MIN;
 *   BG_<ID>(x, y)        a comparison, exact for every dtype.
 * The lists below name the ops of each family with their CUDA C templates
 * ($0 $1 are the operands; float version, double version / int version),
 * so codegen spells an op from the same row. Adding an elementwise op is a
 * row in include/braid/ops.h, a rule and a row here (docs/architecture.md,
 * "Adding an elementwise op"); every backend walks these lists.
 *
 * NaN rules: max/min give NaN when either side is NaN (x + y is that NaN);
 * relu keeps NaN and -0.0 (x < 0 is false for both). */
#ifndef BRAID_GRAPH_SCALAR_H
#define BRAID_GRAPH_SCALAR_H

#include "braid/braid.h"
#include "graph/scalar_math.h"

#include <math.h>
#include <stdint.h>

/* f(x) in x's float type: sinf for a float, sin for a double. */
#define BG_M(fn, x) _Generic((x), float : fn##f, default : fn)(x)
#define BG_M2(fn, x, y) _Generic((x), float : fn##f, default : fn)(x, y)
/* exp and tanh: braid's vectorisable versions for float
 * (graph/scalar_math.h), the C library's for double. */
#define BG_EXP(x) _Generic((x), float : bg_expf, default : exp)(x)
#define BG_TANH(x) _Generic((x), float : bg_tanhf, default : tanh)(x)

#define BG_SQRT1_2 0.70710678118654752440 /* 1/√2, for gelu */

/* ---- unary float rules ------------------------------------------------- */

#define BG_NEG(T, x) (-(x))
#define BG_ABS(T, x) BG_M(fabs, x)
#define BG_EXP_(T, x) BG_EXP(x)
#define BG_LOG(T, x) BG_M(log, x)
#define BG_SQRT(T, x) BG_M(sqrt, x)
#define BG_RSQRT(T, x) ((T)1 / BG_M(sqrt, x))
#define BG_SIN(T, x) BG_M(sin, x)
#define BG_COS(T, x) BG_M(cos, x)
#define BG_TAN(T, x) BG_M(tan, x)
#define BG_TANH_(T, x) BG_TANH(x)
#define BG_SIGMOID(T, x) ((T)1 / ((T)1 + BG_EXP(-(x))))
#define BG_RELU(T, x) ((x) < (T)0 ? (T)0 : (x))
#define BG_GELU(T, x) ((T)0.5 * (x) * ((T)1 + BG_M(erf, (x) * (T)BG_SQRT1_2)))
#define BG_SILU(T, x) ((x) / ((T)1 + BG_EXP(-(x))))
#define BG_ERF(T, x) BG_M(erf, x)
#define BG_FLOOR(T, x) BG_M(floor, x)
#define BG_CEIL(T, x) BG_M(ceil, x)
#define BG_RECIPROCAL(T, x) ((T)1 / (x))
#define BG_SQUARE(T, x) ((x) * (x))
/* elemwise helper: inverse and hyperbolic functions (the C library's, as
 * for tan), sign (±0 and NaN pass through) and round (half to even: rint
 * in the default rounding mode, which braid never changes) */
#define BG_ASIN(T, x) BG_M(asin, x)
#define BG_ACOS(T, x) BG_M(acos, x)
#define BG_ATAN(T, x) BG_M(atan, x)
#define BG_SINH(T, x) BG_M(sinh, x)
#define BG_COSH(T, x) BG_M(cosh, x)
#define BG_ASINH(T, x) BG_M(asinh, x)
#define BG_ACOSH(T, x) BG_M(acosh, x)
#define BG_ATANH(T, x) BG_M(atanh, x)
#define BG_SIGN(T, x) ((x) > (T)0 ? (T)1 : (x) < (T)0 ? (T)-1 : (x))
#define BG_ROUND(T, x) BG_M(rint, x)

/* X(ID, rule, CUDA float, CUDA double): every unary op but cast. */
/* clang-format off */
#define BG_UNARY_OPS(X)                                                      \
    X(NEG, BG_NEG, "(-$0)", "(-$0)")                                         \
    X(ABS, BG_ABS, "fabsf($0)", "fabs($0)")                                  \
    X(EXP, BG_EXP_, "expf($0)", "exp($0)")                                   \
    X(LOG, BG_LOG, "logf($0)", "log($0)")                                    \
    X(SQRT, BG_SQRT, "sqrtf($0)", "sqrt($0)")                                \
    X(RSQRT, BG_RSQRT, "(1.0f / sqrtf($0))", "(1.0 / sqrt($0))")             \
    X(SIN, BG_SIN, "sinf($0)", "sin($0)")                                    \
    X(COS, BG_COS, "cosf($0)", "cos($0)")                                    \
    X(TAN, BG_TAN, "tanf($0)", "tan($0)")                                    \
    X(TANH, BG_TANH_, "tanhf($0)", "tanh($0)")                               \
    X(SIGMOID, BG_SIGMOID, "(1.0f / (1.0f + expf(-$0)))",                    \
      "(1.0 / (1.0 + exp(-$0)))")                                            \
    X(RELU, BG_RELU, "($0 < 0.0f ? 0.0f : $0)", "($0 < 0.0 ? 0.0 : $0)")     \
    X(GELU, BG_GELU,                                                         \
      "(0.5f * $0 * (1.0f + erff($0 * 0.70710678118654752440f)))",           \
      "(0.5 * $0 * (1.0 + erf($0 * 0.70710678118654752440)))")               \
    X(SILU, BG_SILU, "($0 / (1.0f + expf(-$0)))", "($0 / (1.0 + exp(-$0)))") \
    X(ERF, BG_ERF, "erff($0)", "erf($0)")                                    \
    X(FLOOR, BG_FLOOR, "floorf($0)", "floor($0)")                            \
    X(CEIL, BG_CEIL, "ceilf($0)", "ceil($0)")                                \
    X(RECIPROCAL, BG_RECIPROCAL, "(1.0f / $0)", "(1.0 / $0)")                \
    X(SQUARE, BG_SQUARE, "($0 * $0)", "($0 * $0)")                          \
    X(ASIN, BG_ASIN, "asinf($0)", "asin($0)")                                \
    X(ACOS, BG_ACOS, "acosf($0)", "acos($0)")                                \
    X(ATAN, BG_ATAN, "atanf($0)", "atan($0)")                                \
    X(SINH, BG_SINH, "sinhf($0)", "sinh($0)")                                \
    X(COSH, BG_COSH, "coshf($0)", "cosh($0)")                                \
    X(ASINH, BG_ASINH, "asinhf($0)", "asinh($0)")                            \
    X(ACOSH, BG_ACOSH, "acoshf($0)", "acosh($0)")                            \
    X(ATANH, BG_ATANH, "atanhf($0)", "atanh($0)")                            \
    X(SIGN, BG_SIGN, "($0 > 0.0f ? 1.0f : $0 < 0.0f ? -1.0f : $0)",          \
      "($0 > 0.0 ? 1.0 : $0 < 0.0 ? -1.0 : $0)")                             \
    X(ROUND, BG_ROUND, "rintf($0)", "rint($0)")
/* clang-format on */

/* ---- unary i32 rules --------------------------------------------------- */

#define BG_NEG_I32(x) ((int32_t)(0u - (uint32_t)(x)))
#define BG_ABS_I32(x) ((x) < 0 ? BG_NEG_I32(x) : (x))
#define BG_SQUARE_I32(x) ((int32_t)((uint32_t)(x) * (uint32_t)(x)))
#define BG_RELU_I32(x) ((x) < 0 ? 0 : (x))
#define BG_SIGN_I32(x) ((x) > 0 ? 1 : (x) < 0 ? -1 : 0)
#define BG_BITWISE_NOT_I32(x) (~(x))

/* X(ID, rule, CUDA int): the unary ops whose dtypes column is NUMBER. */
/* clang-format off */
#define BG_UNARY_I32_OPS(X)                                                  \
    X(NEG, BG_NEG_I32, "(int)(0u - (unsigned)$0)")                           \
    X(ABS, BG_ABS_I32, "($0 < 0 ? (int)(0u - (unsigned)$0) : $0)")           \
    X(SQUARE, BG_SQUARE_I32, "(int)((unsigned)$0 * (unsigned)$0)")           \
    X(RELU, BG_RELU_I32, "($0 < 0 ? 0 : $0)")                                \
    X(SIGN, BG_SIGN_I32, "($0 > 0 ? 1 : $0 < 0 ? -1 : 0)")                   \
    X(BITWISE_NOT, BG_BITWISE_NOT_I32, "(~$0)")
/* clang-format on */

/* ---- binary float rules ------------------------------------------------ */

#define BG_ADD(T, x, y) ((x) + (y))
#define BG_SUB(T, x, y) ((x) - (y))
#define BG_MUL(T, x, y) ((x) * (y))
#define BG_DIV(T, x, y) ((x) / (y))
#define BG_POW(T, x, y) BG_M2(pow, x, y)
#define BG_MAX(T, x, y)                                                        \
    (((x) != (x) || (y) != (y)) ? (x) + (y) : ((x) > (y) ? (x) : (y)))
#define BG_MIN(T, x, y)                                                        \
    (((x) != (x) || (y) != (y)) ? (x) + (y) : ((x) < (y) ? (x) : (y)))

/* mod (ONNX Mod, fmod=0; Python's %): the remainder with the divisor's
 * sign, x - floor(x/y)·y, computed from fmod so it is exact up to the one
 * addition of y: r = fmod(x, y), plus y when r is nonzero with the other
 * sign; a zero result takes the divisor's sign. x mod ±inf = x when the
 * signs agree (±inf otherwise); inf mod y and x mod 0 are NaN. fmod (ONNX
 * Mod, fmod=1; C's fmod): the remainder with the dividend's sign, exact. */
static inline double bg_mod(double x, double y) {
    double r = fmod(x, y);
    if (r != 0 && (r < 0) != (y < 0)) return r + y;
    return r == 0 ? copysign(0.0, y) : r;
}
static inline float bg_modf(float x, float y) {
    float r = fmodf(x, y);
    if (r != 0 && (r < 0) != (y < 0)) return r + y;
    return r == 0 ? copysignf(0.0f, y) : r;
}
#define BG_MOD(T, x, y) _Generic((x), float : bg_modf, default : bg_mod)(x, y)
#define BG_FMOD(T, x, y) BG_M2(fmod, x, y)

/* X(ID, rule, CUDA float, CUDA double): binary arithmetic. */
/* clang-format off */
#define BG_BINARY_OPS(X)                                                     \
    X(ADD, BG_ADD, "($0 + $1)", "($0 + $1)")                                 \
    X(SUB, BG_SUB, "($0 - $1)", "($0 - $1)")                                 \
    X(MUL, BG_MUL, "($0 * $1)", "($0 * $1)")                                 \
    X(DIV, BG_DIV, "($0 / $1)", "($0 / $1)")                                 \
    X(POW, BG_POW, "powf($0, $1)", "pow($0, $1)")                            \
    X(MAX, BG_MAX, "bc_maxf($0, $1)", "bc_maxd($0, $1)")                     \
    X(MIN, BG_MIN, "bc_minf($0, $1)", "bc_mind($0, $1)")                     \
    X(MOD, BG_MOD, "bc_modf($0, $1)", "bc_modd($0, $1)")                     \
    X(FMOD, BG_FMOD, "fmodf($0, $1)", "fmod($0, $1)")
/* clang-format on */

/* ---- binary i32 rules -------------------------------------------------- */

static inline int32_t bg_div_i32(int32_t x, int32_t y) {
    if (y == 0) return 0;
    if (y == -1) return BG_NEG_I32(x); /* INT32_MIN / -1 wraps */
    return x / y;
}

#define BG_ADD_I32(x, y) ((int32_t)((uint32_t)(x) + (uint32_t)(y)))
#define BG_SUB_I32(x, y) ((int32_t)((uint32_t)(x) - (uint32_t)(y)))
#define BG_MUL_I32(x, y) ((int32_t)((uint32_t)(x) * (uint32_t)(y)))
#define BG_DIV_I32(x, y) bg_div_i32(x, y)
#define BG_MAX_I32(x, y) ((x) > (y) ? (x) : (y))
#define BG_MIN_I32(x, y) ((x) < (y) ? (x) : (y))

/* i32 remainders (elemwise helper): x mod 0 = x fmod 0 = 0 (as x / 0 = 0),
 * INT32_MIN mod/fmod -1 = 0 (never the overflowing C division); fmod has
 * the dividend's sign (C's %), mod the divisor's (Python's %). */
static inline int32_t bg_fmod_i32(int32_t x, int32_t y) {
    if (y == 0 || y == -1) return 0;
    return x % y;
}
static inline int32_t bg_mod_i32(int32_t x, int32_t y) {
    int32_t r = bg_fmod_i32(x, y);
    return r != 0 && (r < 0) != (y < 0) ? r + y : r;
}
/* Shifts: a count outside [0, 32) shifts every bit out (left: 0; right:
 * the sign, -1 or 0); right shifts are arithmetic (sign-propagating, as
 * NumPy's >> on int32); left shifts wrap through uint32. */
static inline int32_t bg_shl_i32(int32_t x, int32_t y) {
    if (y < 0 || y >= 32) return 0;
    return (int32_t)((uint32_t)x << y);
}
static inline int32_t bg_shr_i32(int32_t x, int32_t y) {
    if (y < 0 || y >= 32) return x < 0 ? -1 : 0;
    return x < 0 ? ~(~x >> y) : x >> y;
}
#define BG_MOD_I32(x, y) bg_mod_i32(x, y)
#define BG_FMOD_I32(x, y) bg_fmod_i32(x, y)
#define BG_BITWISE_AND_I32(x, y) ((x) & (y))
#define BG_BITWISE_OR_I32(x, y) ((x) | (y))
#define BG_BITWISE_XOR_I32(x, y) ((x) ^ (y))
#define BG_SHIFT_LEFT_I32(x, y) bg_shl_i32(x, y)
#define BG_SHIFT_RIGHT_I32(x, y) bg_shr_i32(x, y)

/* X(ID, rule, CUDA int): the binary ops whose dtypes column is NUMBER. */
/* clang-format off */
#define BG_BINARY_I32_OPS(X)                                                 \
    X(ADD, BG_ADD_I32, "(int)((unsigned)$0 + (unsigned)$1)")                 \
    X(SUB, BG_SUB_I32, "(int)((unsigned)$0 - (unsigned)$1)")                 \
    X(MUL, BG_MUL_I32, "(int)((unsigned)$0 * (unsigned)$1)")                 \
    X(DIV, BG_DIV_I32, "bc_divi($0, $1)")                                    \
    X(MAX, BG_MAX_I32, "($0 > $1 ? $0 : $1)")                                \
    X(MIN, BG_MIN_I32, "($0 < $1 ? $0 : $1)")                                \
    X(MOD, BG_MOD_I32, "bc_modi($0, $1)")                                    \
    X(FMOD, BG_FMOD_I32, "bc_fmodi($0, $1)")                                 \
    X(BITWISE_AND, BG_BITWISE_AND_I32, "($0 & $1)")                          \
    X(BITWISE_OR, BG_BITWISE_OR_I32, "($0 | $1)")                            \
    X(BITWISE_XOR, BG_BITWISE_XOR_I32, "($0 ^ $1)")                          \
    X(SHIFT_LEFT, BG_SHIFT_LEFT_I32, "bc_shli($0, $1)")                      \
    X(SHIFT_RIGHT, BG_SHIFT_RIGHT_I32, "bc_shri($0, $1)")
/* clang-format on */

/* ---- comparisons ------------------------------------------------------- */

/* X(ID, C and CUDA operator): the ops flagged BRAID_OPF_COMPARE; NaN
 * compares unequal, bools compare as 0/1. */
/* clang-format off */
#define BG_COMPARE_OPS(X) \
    X(EQ, ==) X(NE, !=) X(LT, <) X(LE, <=) X(GT, >) X(GE, >=)
/* clang-format on */

/* ---- reductions -------------------------------------------------------- */

/* An integer v (|v| < 2^53) wrapped to int32 two's complement. */
static inline double bg_wrap_i32(double v) {
    uint32_t u = (uint32_t)(uint64_t)(int64_t)v; /* both modular */
    return u >= 0x80000000u ? (double)u - 4294967296.0 : (double)u;
}

static inline bool bg_reduce_is_sum(braid_op op) {
    return op == BRAID_OP_SUM || op == BRAID_OP_MEAN;
}

/* The accumulator a reduction starts from (in double, every dtype). */
static inline double bg_reduce_identity(braid_op op) {
    return op == BRAID_OP_REDUCE_MAX    ? -INFINITY
           : op == BRAID_OP_REDUCE_MIN  ? INFINITY
           : op == BRAID_OP_REDUCE_PROD ? 1.0
                                        : 0.0;
}

/* a · b for int32 values a and b (any double holding an int32 or a uint32
 * residue), wrapped to int32 two's complement exactly: the product of the
 * low 32 bits, which a double product would round. */
static inline double bg_mul_i32(double a, double b) {
    uint32_t ua = (uint32_t)(uint64_t)(int64_t)a;
    uint32_t ub = (uint32_t)(uint64_t)(int64_t)b;
    return bg_wrap_i32((double)(uint32_t)(ua * ub));
}

/* acc combined with v for reduction op over dtype t: sums add (i32 sums
 * wrap; acc may also hold a uint32 residue), reduce_prod multiplies (i32
 * products wrap), max/min by BG_MAX/BG_MIN with the new value first, so
 * ties keep the accumulator. */
static inline double bg_reduce_combine(braid_op op, braid_dtype t, double acc,
                                       double v) {
    if (bg_reduce_is_sum(op))
        return t == BRAID_I32 ? bg_wrap_i32(acc + v) : acc + v;
    if (op == BRAID_OP_REDUCE_PROD)
        return t == BRAID_I32 ? bg_mul_i32(acc, v) : acc * v;
    return op == BRAID_OP_REDUCE_MAX ? BG_MAX(double, v, acc)
                                     : BG_MIN(double, v, acc);
}

/* The result of reduction op over dtype t from acc, the combination of
 * count values: mean divides; zero values give sum 0, prod 1, mean NaN, max
 * -inf / min +inf for floats and INT32_MIN / INT32_MAX for i32; i32 sums
 * wrap. */
static inline double bg_reduce_finish(braid_op op, braid_dtype t, double acc,
                                      int64_t count) {
    if (count == 0) {
        if (op == BRAID_OP_MEAN) return NAN;
        if (t != BRAID_I32) return bg_reduce_identity(op);
        return op == BRAID_OP_REDUCE_MAX    ? INT32_MIN
               : op == BRAID_OP_REDUCE_MIN  ? INT32_MAX
               : op == BRAID_OP_REDUCE_PROD ? 1.0
                                            : 0.0;
    }
    if (op == BRAID_OP_MEAN) return acc / (double)count;
    return t == BRAID_I32 && (op == BRAID_OP_SUM || op == BRAID_OP_REDUCE_PROD)
               ? bg_wrap_i32(acc)
               : acc;
}

/* ---- in double (graph/scalar.c) ---------------------------------------- */

/* Elementwise op on operands x[0..arity) of dtype t (where: t is the
 * values' dtype), before rounding to the result's dtype: float dtypes by
 * the rules above in double, i32 by the i32 rules, comparisons exactly,
 * cast and copy pass x[0] through (the rounding is the cast). NaN for an
 * op the builder would not accept on t. */
double bg_scalar_apply(braid_op op, braid_dtype t, const double *x);

#endif /* BRAID_GRAPH_SCALAR_H */
