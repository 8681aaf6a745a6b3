/* tests/support/random_graph_elemwise.c — the generator's share of the
 * elemwise helper's ops: asin/acos/atanh on tanh(x)/2, atan, asinh,
 * sinh/cosh on |x| ≤ 3, acosh on |x| + 1.5; sign and round on exact
 * operands (they jump); mod/fmod on exact floats with divisors away from 0
 * (the result jumps at multiples of the divisor) and on any i32; bitwise
 * ops and shifts on i32 (their result range is taken as all of i32). */
#include "tests/support/random_graph.h"

#include <math.h>

static const braid_op TS_ELEMWISE_OPS[] = {
    BRAID_OP_ASIN,        BRAID_OP_ACOS,        BRAID_OP_ATAN,
    BRAID_OP_SINH,        BRAID_OP_COSH,        BRAID_OP_ASINH,
    BRAID_OP_ACOSH,       BRAID_OP_ATANH,       BRAID_OP_SIGN,
    BRAID_OP_ROUND,       BRAID_OP_MOD,         BRAID_OP_FMOD,
    BRAID_OP_BITWISE_AND, BRAID_OP_BITWISE_OR,  BRAID_OP_BITWISE_XOR,
    BRAID_OP_BITWISE_NOT, BRAID_OP_SHIFT_LEFT,  BRAID_OP_SHIFT_RIGHT};
#define TS_NELEMWISE ((int)(sizeof TS_ELEMWISE_OPS / sizeof TS_ELEMWISE_OPS[0]))

/* tanh(x) · 0.5: within (-0.5, 0.5), where asin/acos/atanh have slopes
 * ≤ 4/3. */
static int make_half_bounded(ts_gen *G, int xi) {
    int bi = ts_gen_bounded(G, xi);
    if (bi < 0) return -1;
    ts_val b = G->vals[bi];
    int fi = ts_gen_fill(G, b.dt, 0, NULL, 0.5);
    ts_iv v = ts_iv_round(ts_iv_mul(b.v, G->vals[fi].v), b.dt);
    if (!ts_iv_ok(v, b.dt)) return -1;
    return ts_gen_emit(G, braid_mul(G->g, b.t, G->vals[fi].t), v, false);
}

/* The operand of float unary op, moved into its domain; -1 when not. */
static int float_operand(ts_gen *G, braid_op op, int xi) {
    ts_val x = G->vals[xi];
    switch (op) {
    case BRAID_OP_ASIN:
    case BRAID_OP_ACOS:
    case BRAID_OP_ATANH:
        return ts_iv_mag(x.v) <= 0.5 ? xi : make_half_bounded(G, xi);
    case BRAID_OP_ACOSH:
        return ts_gen_abs_plus(G, xi, 1.5);
    case BRAID_OP_SINH:
    case BRAID_OP_COSH:
        return ts_iv_mag(x.v) <= 3.0 ? xi : -1;
    default:
        return xi;
    }
}

/* Interval of a smooth float unary op on a (in its domain): the values at
 * the ends (monotone ops; cosh: [1, cosh|a|]) and the slope bound. */
static ts_iv smooth_iv(braid_op op, ts_iv a, braid_dtype dt) {
    double m = ts_iv_mag(a);
    switch (op) {
    case BRAID_OP_ASIN:
        return ts_iv_round(ts_iv_lipschitz(a, 1.155, asin(a.lo), asin(a.hi)),
                           dt);
    case BRAID_OP_ACOS: /* decreasing */
        return ts_iv_round(ts_iv_lipschitz(a, 1.155, acos(a.hi), acos(a.lo)),
                           dt);
    case BRAID_OP_ATANH:
        return ts_iv_round(
            ts_iv_lipschitz(a, 1.334, atanh(a.lo), atanh(a.hi)), dt);
    case BRAID_OP_ATAN:
        return ts_iv_round(ts_iv_lipschitz(a, 1.0, atan(a.lo), atan(a.hi)),
                           dt);
    case BRAID_OP_ASINH:
        return ts_iv_round(
            ts_iv_lipschitz(a, 1.0, asinh(a.lo), asinh(a.hi)), dt);
    case BRAID_OP_ACOSH: /* a ≥ 1.5: slope ≤ 1/√1.25 */
        return ts_iv_round(
            ts_iv_lipschitz(a, 0.9, acosh(a.lo), acosh(a.hi)), dt);
    case BRAID_OP_SINH:
        return ts_iv_round(
            ts_iv_lipschitz(a, cosh(m), sinh(a.lo), sinh(a.hi)), dt);
    default: /* COSH */
        return ts_iv_round(ts_iv_lipschitz(a, sinh(m), 1.0, cosh(m)), dt);
    }
}

static bool gen_float_unary(ts_gen *G, braid_op op) {
    bool jumps = op == BRAID_OP_SIGN || op == BRAID_OP_ROUND;
    int xi = ts_gen_pick(G, (ts_want){TS_FLOATS, jumps, 0, false});
    if (xi < 0 || (xi = float_operand(G, op, xi)) < 0) return false;
    ts_val x = G->vals[xi];
    ts_iv v = op == BRAID_OP_SIGN    ? ts_iv_exact(-1.0, 1.0)
              : op == BRAID_OP_ROUND ? ts_iv_exact(rint(x.v.lo), rint(x.v.hi))
                                     : smooth_iv(op, x.v, x.dt);
    if (!ts_iv_ok(v, x.dt)) return false;
    ts_gen_emit(G, braid_unary(G->g, op, x.t), v, jumps);
    return true;
}

/* i32 results: sign in [-1, 1], mod/fmod below the divisor's magnitude,
 * bitwise ops and shifts anywhere. */
static ts_iv int_iv(braid_op op, ts_iv a, ts_iv b) {
    (void)a;
    if (op == BRAID_OP_SIGN) return ts_iv_exact(-1.0, 1.0);
    if (op == BRAID_OP_MOD || op == BRAID_OP_FMOD)
        return ts_iv_int(-ts_iv_mag(b), ts_iv_mag(b));
    return ts_iv_int((double)INT32_MIN, (double)INT32_MAX);
}

static bool gen_int(ts_gen *G, braid_op op) {
    int ai = ts_gen_pick(G, (ts_want){TS_DT(BRAID_I32), false, 0, false});
    if (ai < 0) return false;
    bool binary = bg_op(op)->arity == 2;
    int bi = binary ? ts_gen_partner(G, ai, true) : ai;
    ts_val a = G->vals[ai], b = G->vals[bi];
    braid_tensor t = binary ? braid_binary(G->g, op, a.t, b.t)
                            : braid_unary(G->g, op, a.t);
    ts_gen_emit(G, t, int_iv(op, a.v, b.v), true);
    return true;
}

/* Float mod/fmod of exact operands, the divisor at least 0.25 away from 0:
 * fmod is exact and mod's one addition rounds alike everywhere (f32 then
 * f16 is innocuous double rounding), so the result is exact too. */
static bool gen_float_mod(ts_gen *G, braid_op op) {
    int ai = ts_gen_pick(G, (ts_want){TS_FLOATS, true, 0, false});
    if (ai < 0) return false;
    int bi = ts_gen_partner(G, ai, true);
    ts_val a = G->vals[ai], b = G->vals[bi];
    if (b.v.lo < 0.25 && b.v.hi > -0.25) return false;
    ts_iv v = ts_iv_exact(-ts_iv_mag(b.v), ts_iv_mag(b.v));
    if (!ts_iv_ok(v, a.dt)) return false;
    ts_gen_emit(G, braid_binary(G->g, op, a.t, b.t), v, true);
    return true;
}

bool ts_gen_elemwise(ts_gen *G) {
    braid_op op = TS_ELEMWISE_OPS[ts_gen_int(G, 0, TS_NELEMWISE - 1)];
    bool mod = op == BRAID_OP_MOD || op == BRAID_OP_FMOD;
    bool ints = bg_op(op)->dtypes == BRAID_DTYPES_INT ||
                ((mod || op == BRAID_OP_SIGN) && ts_gen_chance(G, 0.5));
    if (ints) return gen_int(G, op);
    if (mod) return gen_float_mod(G, op);
    return gen_float_unary(G, op);
}
