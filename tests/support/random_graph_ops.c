/* tests/support/random_graph_ops.c — the generator's elementwise, matmul,
 * reduction and composite ops.
 *
 * Each generator picks operands from the pool, moves them into the op's
 * safe domain in-graph when needed (abs(x)+0.5 before log/sqrt/rsqrt/pow,
 * x*x+1 or abs(x)+0.5 as a divisor, tanh to tame an exponent), predicts the
 * result's interval and drift, and only then builds the node — or gives up
 * when the drift would exceed the budget. */
#include "tests/support/random_graph.h"

#include <math.h>

/* ---- domain helpers ------------------------------------------------------ */

/* abs(x) + 0.5: at least 0.5 whatever x holds. Returns -1 over budget. */
static int make_positive(ts_gen *G, int xi) {
    return ts_gen_abs_plus(G, xi, 0.5);
}

int ts_gen_abs_plus(ts_gen *G, int xi, double c) {
    ts_val x = G->vals[xi];
    int ai = ts_gen_emit(G, braid_abs(G->g, x.t), ts_iv_abs(x.v), x.exact);
    int64_t ones[BRAID_MAX_RANK] = {1, 1, 1, 1, 1, 1, 1, 1};
    /* a scalar or an all-ones tensor: both broadcast */
    int fi =
        ts_gen_fill(G, x.dt, ts_gen_chance(G, 0.7) ? 0 : x.rank, ones, c);
    ts_iv v = ts_iv_round(ts_iv_add(G->vals[ai].v, G->vals[fi].v), x.dt);
    if (!ts_iv_ok(v, x.dt)) return -1;
    braid_tensor t = braid_add(G->g, G->vals[ai].t, G->vals[fi].t);
    return ts_gen_emit(G, t, v, false);
}

/* x*x + 1: at least 1. Returns -1 over budget. */
static int make_square_plus_one(ts_gen *G, int xi) {
    ts_val x = G->vals[xi];
    ts_iv sq = ts_iv_round(ts_iv_square(x.v), x.dt);
    if (!ts_iv_ok(sq, x.dt)) return -1;
    int si = ts_gen_emit(G, braid_mul(G->g, x.t, x.t), sq, false);
    int fi = ts_gen_fill(G, x.dt, 0, NULL, 1.0);
    ts_iv v = ts_iv_round(ts_iv_add(G->vals[si].v, G->vals[fi].v), x.dt);
    if (!ts_iv_ok(v, x.dt)) return -1;
    return ts_gen_emit(G, braid_add(G->g, G->vals[si].t, G->vals[fi].t), v,
                       false);
}

/* tanh(x): within (-1, 1). */
static int make_bounded(ts_gen *G, int xi) {
    return ts_gen_bounded(G, xi);
}

int ts_gen_bounded(ts_gen *G, int xi) {
    ts_val x = G->vals[xi];
    ts_iv v = ts_iv_round(ts_iv_lipschitz(x.v, 1.0, tanh(x.v.lo), tanh(x.v.hi)),
                          x.dt);
    if (!ts_iv_ok(v, x.dt)) return -1;
    return ts_gen_emit(G, braid_tanh(G->g, x.t), v, false);
}

static bool away_from_zero(ts_iv v, double margin) {
    return v.lo >= margin || v.hi <= -margin;
}

/* ---- unary --------------------------------------------------------------- */

static const braid_op TS_UNARY_OPS[] = {
    BRAID_OP_NEG,        BRAID_OP_ABS,     BRAID_OP_EXP,   BRAID_OP_LOG,
    BRAID_OP_SQRT,       BRAID_OP_RSQRT,   BRAID_OP_SIN,   BRAID_OP_COS,
    BRAID_OP_TANH,       BRAID_OP_SIGMOID, BRAID_OP_RELU,  BRAID_OP_GELU,
    BRAID_OP_SILU,       BRAID_OP_ERF,     BRAID_OP_FLOOR, BRAID_OP_CEIL,
    BRAID_OP_RECIPROCAL, BRAID_OP_SQUARE,  BRAID_OP_TAN};
#define TS_NUNARY ((int)(sizeof TS_UNARY_OPS / sizeof TS_UNARY_OPS[0]))

static bool int_unary_ok(braid_op op) {
    return op == BRAID_OP_NEG || op == BRAID_OP_ABS || op == BRAID_OP_SQUARE ||
           op == BRAID_OP_RELU;
}

/* i32 neg/abs/square/relu: exact, with wraparound widening the range. */
static ts_iv unary_int_range(braid_op op, ts_iv a) {
    switch (op) {
    case BRAID_OP_NEG:
        return ts_iv_int(-a.hi, -a.lo);
    case BRAID_OP_ABS: {
        ts_iv r = ts_iv_abs(a);
        return ts_iv_int(r.lo, r.hi);
    }
    case BRAID_OP_SQUARE: {
        ts_iv r = ts_iv_square(a);
        return ts_iv_int(r.lo, r.hi);
    }
    default:
        return ts_iv_int(fmax(a.lo, 0.0), fmax(a.hi, 0.0));
    }
}

/* Interval and drift of a float unary op (x already in its domain). */
static ts_iv unary_float_iv(braid_op op, ts_val x, braid_dtype dt) {
    ts_iv a = x.v;
    const double pi_2 = 1.5707963267948966;
    switch (op) {
    case BRAID_OP_NEG:
        return ts_iv_neg(a);
    case BRAID_OP_ABS:
        return ts_iv_abs(a);
    case BRAID_OP_RELU:
        return ts_iv_relu(a);
    case BRAID_OP_FLOOR:
        return ts_iv_exact(floor(a.lo), floor(a.hi));
    case BRAID_OP_CEIL:
        return ts_iv_exact(ceil(a.lo), ceil(a.hi));
    case BRAID_OP_SQUARE:
        return ts_iv_round(ts_iv_square(a), dt);
    case BRAID_OP_EXP:
        return ts_iv_round(ts_iv_exp(a), dt);
    case BRAID_OP_LOG:
        return ts_iv_round(ts_iv_log(a), dt);
    case BRAID_OP_SQRT:
        return ts_iv_round(ts_iv_sqrt(a), dt);
    case BRAID_OP_RSQRT:
        return ts_iv_round(ts_iv_recip(ts_iv_sqrt(a)), dt);
    case BRAID_OP_RECIPROCAL:
        return ts_iv_round(ts_iv_recip(a), dt);
    case BRAID_OP_SIN: {
        bool mono = a.lo >= -pi_2 && a.hi <= pi_2;
        return ts_iv_round(ts_iv_lipschitz(a, 1.0, mono ? sin(a.lo) : -1.0,
                                           mono ? sin(a.hi) : 1.0),
                           dt);
    }
    case BRAID_OP_COS:
        return ts_iv_round(ts_iv_lipschitz(a, 1.0, -1.0, 1.0), dt);
    case BRAID_OP_TAN: { /* |x| ≤ 1 (the caller's): increasing, tan' ≤ 3.43 */
        double m = tan(ts_iv_mag(a));
        return ts_iv_round(
            ts_iv_lipschitz(a, 1.0 + m * m, tan(a.lo), tan(a.hi)), dt);
    }
    case BRAID_OP_TANH:
        return ts_iv_round(ts_iv_lipschitz(a, 1.0, tanh(a.lo), tanh(a.hi)), dt);
    case BRAID_OP_SIGMOID:
        return ts_iv_round(ts_iv_lipschitz(a, 0.25, 1.0 / (1.0 + exp(-a.lo)),
                                           1.0 / (1.0 + exp(-a.hi))),
                           dt);
    case BRAID_OP_ERF: /* erf' <= 2/sqrt(pi) */
        return ts_iv_round(ts_iv_lipschitz(a, 1.1284, erf(a.lo), erf(a.hi)),
                           dt);
    case BRAID_OP_GELU: { /* min -0.170 near x = -0.75; gelu' <= 1.13 */
        double g_hi = 0.5 * a.hi * (1.0 + erf(a.hi / sqrt(2.0)));
        double g_lo = 0.5 * a.lo * (1.0 + erf(a.lo / sqrt(2.0)));
        ts_iv v = ts_iv_round(
            ts_iv_lipschitz(a, 1.13, a.lo < 0 ? -0.171 : g_lo, fmax(g_hi, 0.0)),
            dt);
        /* 1 + erf(x/√2) cancels for negative x: the compute error of erf
         * becomes absolute, about an ulp of 1 times |x|/2 */
        v.ea += 4.0 * ts_iv_compute_unit(dt) * ts_iv_mag(a);
        return v;
    }
    default: { /* SILU: min -0.2785 near x = -1.28; silu' <= 1.1 */
        double s_hi = a.hi / (1.0 + exp(-a.hi));
        double s_lo = a.lo / (1.0 + exp(-a.lo));
        return ts_iv_round(
            ts_iv_lipschitz(a, 1.1, a.lo < 0 ? -0.279 : s_lo, fmax(s_hi, 0.0)),
            dt);
    }
    }
}

bool ts_gen_unary(ts_gen *G) {
    braid_op op = TS_UNARY_OPS[ts_gen_int(G, 0, TS_NUNARY - 1)];
    bool rounding_free = op == BRAID_OP_NEG || op == BRAID_OP_ABS ||
                         op == BRAID_OP_RELU || op == BRAID_OP_FLOOR ||
                         op == BRAID_OP_CEIL;
    ts_want w = {int_unary_ok(op) ? TS_NUMS : TS_FLOATS,
                 op == BRAID_OP_FLOOR || op == BRAID_OP_CEIL, 0, false};
    int xi = ts_gen_pick(G, w);
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    if (x.dt == BRAID_I32) {
        braid_tensor t = braid_unary(G->g, op, x.t);
        ts_gen_emit(G, t, unary_int_range(op, x.v), true);
        return true;
    }
    bool needs_pos =
        op == BRAID_OP_LOG || op == BRAID_OP_SQRT || op == BRAID_OP_RSQRT;
    if ((needs_pos && x.v.lo < 0.25) ||
        (op == BRAID_OP_RECIPROCAL && !away_from_zero(x.v, 0.25))) {
        xi = op == BRAID_OP_RECIPROCAL && ts_gen_chance(G, 0.5)
                 ? make_square_plus_one(G, xi)
                 : make_positive(G, xi);
        if (xi < 0) return false;
        x = G->vals[xi];
    }
    if (op == BRAID_OP_EXP && x.v.hi > 4.0) return false;
    if (op == BRAID_OP_TAN && ts_iv_mag(x.v) > 1.0) {
        if ((xi = make_bounded(G, xi)) < 0) return false;
        x = G->vals[xi];
    }
    ts_iv v = unary_float_iv(op, x, x.dt);
    if (!ts_iv_ok(v, x.dt)) return false;
    bool exact = rounding_free && x.exact;
    ts_gen_emit(G, braid_unary(G->g, op, x.t), v, exact);
    return true;
}

/* ---- binary -------------------------------------------------------------- */

static const braid_op TS_BINARY_OPS[] = {
    BRAID_OP_ADD, BRAID_OP_SUB, BRAID_OP_MUL, BRAID_OP_DIV,
    BRAID_OP_POW, BRAID_OP_MAX, BRAID_OP_MIN};

static ts_iv binary_int_range(braid_op op, ts_iv a, ts_iv b) {
    switch (op) {
    case BRAID_OP_ADD:
        return ts_iv_int(a.lo + b.lo, a.hi + b.hi);
    case BRAID_OP_SUB:
        return ts_iv_int(a.lo - b.hi, a.hi - b.lo);
    case BRAID_OP_MUL: {
        ts_iv m = ts_iv_mul(a, b);
        return ts_iv_int(m.lo, m.hi);
    }
    case BRAID_OP_DIV: { /* |a/b| <= |a|, and INT32_MIN/-1 stays in range */
        double m = ts_iv_mag(a);
        return ts_iv_int(-m, m);
    }
    case BRAID_OP_MAX:
        return ts_iv_int(fmax(a.lo, b.lo), fmax(a.hi, b.hi));
    default:
        return ts_iv_int(fmin(a.lo, b.lo), fmin(a.hi, b.hi));
    }
}

/* Moves operands of div/pow into their domains; false when over budget.
 * *ai, *bi are updated to the new pool entries. */
static bool fix_domain(ts_gen *G, braid_op op, int *ai, int *bi) {
    if (op == BRAID_OP_DIV && !away_from_zero(G->vals[*bi].v, 0.25)) {
        *bi = ts_gen_chance(G, 0.5) ? make_square_plus_one(G, *bi)
                                    : make_positive(G, *bi);
        return *bi >= 0;
    }
    if (op == BRAID_OP_POW) {
        if (G->vals[*ai].v.lo < 0.25 && (*ai = make_positive(G, *ai)) < 0)
            return false;
        if (ts_iv_mag(G->vals[*bi].v) > 2.0 && (*bi = make_bounded(G, *bi)) < 0)
            return false;
    }
    return true;
}

static ts_iv binary_float_iv(braid_op op, ts_iv a, ts_iv b, braid_dtype dt) {
    switch (op) {
    case BRAID_OP_ADD:
        return ts_iv_round(ts_iv_add(a, b), dt);
    case BRAID_OP_SUB:
        return ts_iv_round(ts_iv_add(a, ts_iv_neg(b)), dt);
    case BRAID_OP_MUL:
        return ts_iv_round(ts_iv_mul(a, b), dt);
    case BRAID_OP_DIV:
        return ts_iv_round(ts_iv_mul(a, ts_iv_recip(b)), dt);
    case BRAID_OP_POW: /* a^b = exp(b·log a), one rounding at the end */
        return ts_iv_round(ts_iv_exp(ts_iv_mul(b, ts_iv_log(a))), dt);
    case BRAID_OP_MAX:
        return ts_iv_maxmin(a, b, true);
    default:
        return ts_iv_maxmin(a, b, false);
    }
}

bool ts_gen_binary(ts_gen *G) {
    braid_op op = TS_BINARY_OPS[ts_gen_int(G, 0, 6)];
    ts_want w = {op == BRAID_OP_POW ? TS_FLOATS : TS_NUMS, false, 0, false};
    int ai = ts_gen_pick(G, w);
    if (ai < 0) return false;
    int bi = ts_gen_partner(G, ai, false);
    if (ts_gen_chance(G, 0.3) && op != BRAID_OP_POW && op != BRAID_OP_DIV) {
        int t = ai; /* the fresh operand first, sometimes */
        ai = bi;
        bi = t;
    }
    ts_val a = G->vals[ai], b = G->vals[bi];
    ts_iv v;
    bool exact;
    if (a.dt == BRAID_I32) {
        v = binary_int_range(op, a.v, b.v);
        exact = true;
    } else {
        if (!fix_domain(G, op, &ai, &bi)) return false;
        a = G->vals[ai];
        b = G->vals[bi];
        v = binary_float_iv(op, a.v, b.v, a.dt);
        exact =
            (op == BRAID_OP_MAX || op == BRAID_OP_MIN) && a.exact && b.exact;
        if (!ts_iv_ok(v, a.dt)) return false;
    }
    ts_gen_emit(G, braid_binary(G->g, op, a.t, b.t), v, exact);
    return true;
}

/* ---- comparisons, where, cast -------------------------------------------- */

bool ts_gen_compare(ts_gen *G) {
    braid_op op = (braid_op)(BRAID_OP_EQ + ts_gen_int(G, 0, 5));
    bool eq = op == BRAID_OP_EQ || op == BRAID_OP_NE;
    ts_want w = {eq ? TS_ALL : TS_NUMS, true, 0, false};
    int ai = ts_gen_pick(G, w);
    if (ai < 0) return false;
    int bi = ts_gen_partner(G, ai, true);
    braid_tensor t = braid_binary(G->g, op, G->vals[ai].t, G->vals[bi].t);
    ts_gen_emit(G, t, ts_iv_exact(0.0, 1.0), true);
    return true;
}

/* A bool tensor broadcasting with pool entry ai: from the pool, or a fresh
 * comparison of an exact tensor against a threshold inside its range. */
static int make_condition(ts_gen *G, int ai) {
    ts_val a = G->vals[ai];
    if (ts_gen_chance(G, 0.4)) {
        for (int tries = 0; tries < 8; tries++) {
            int ci =
                ts_gen_pick(G, (ts_want){TS_DT(BRAID_BOOL), true, 0, false});
            int r;
            int64_t d[BRAID_MAX_RANK];
            if (ci >= 0 &&
                ts_broadcast_ok(a.rank, a.dims, G->vals[ci].rank,
                                G->vals[ci].dims, &r, d) &&
                ts_numel(r, d) <= TS_NUMEL_LIMIT)
                return ci;
        }
    }
    int ei;
    if (a.exact && bg_op_accepts(BRAID_OP_LT, a.dt) && ts_gen_chance(G, 0.5)) {
        ei = ai;
    } else {
        int r;
        int64_t d[BRAID_MAX_RANK];
        ts_gen_partner_shape(G, a.rank, a.dims, false, &r, d);
        ei = ts_gen_leaf(G, ts_gen_dtype(G, TS_NUMS), r, d);
    }
    ts_val e = G->vals[ei];
    double mid = floor((e.v.lo + e.v.hi) * 2.0) / 4.0; /* a quarter */
    int fi = ts_gen_fill(G, e.dt, 0, NULL, mid);
    braid_op op = ts_gen_chance(G, 0.5) ? BRAID_OP_GT : BRAID_OP_LE;
    braid_tensor t = braid_binary(G->g, op, e.t, G->vals[fi].t);
    return ts_gen_emit(G, t, ts_iv_exact(0.0, 1.0), true);
}

bool ts_gen_where(ts_gen *G) {
    int ai = ts_gen_pick(G, (ts_want){TS_ALL, false, 0, false});
    if (ai < 0) return false;
    int ci = make_condition(G, ai);
    int bi = ts_gen_partner(G, ai, false);
    ts_val a = G->vals[ai], b = G->vals[bi], c = G->vals[ci];
    int r, r2;
    int64_t d[BRAID_MAX_RANK], d2[BRAID_MAX_RANK];
    if (!ts_broadcast_ok(a.rank, a.dims, b.rank, b.dims, &r, d) ||
        !ts_broadcast_ok(r, d, c.rank, c.dims, &r2, d2) ||
        ts_numel(r2, d2) > TS_NUMEL_LIMIT) {
        bi = ts_gen_leaf(G, a.dt, a.rank, a.dims); /* a's shape always fits */
        b = G->vals[bi];
    }
    if (ts_gen_chance(G, 0.5)) {
        ts_val t = a;
        a = b;
        b = t;
    }
    braid_tensor t = braid_where(G->g, c.t, a.t, b.t);
    ts_gen_emit(G, t, ts_iv_union(a.v, b.v), a.exact && b.exact);
    return true;
}

bool ts_gen_cast(ts_gen *G) {
    int xi = ts_gen_pick(G, (ts_want){TS_ALL, false, 0, false});
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    braid_dtype to = ts_gen_dtype(G, TS_ALL);
    bool to_float = braid_dtype_is_float(to);
    bool from_float = braid_dtype_is_float(x.dt);
    /* truncation and != 0 are discontinuous: exact operands only */
    if (!to_float && from_float && !x.exact) return false;
    if (to_float && !from_float && ts_iv_mag(x.v) > TS_MAG_LIMIT) return false;
    /* a checked narrowing from i64 only where every value fits (the range
     * errors: test_dtype_i64.c) */
    if (bg_cast_checked(x.dt, to) &&
        (x.v.lo < (double)INT32_MIN || x.v.hi > (double)INT32_MAX))
        return false;
    ts_iv v = ts_iv_cast(x.v, to, x.exact || !from_float);
    if (!ts_iv_ok(v, to)) return false;
    braid_tensor t = braid_cast(G->g, x.t, to);
    ts_gen_emit(G, t, v, x.exact || !from_float);
    return true;
}

/* ---- matmul -------------------------------------------------------------- */

/* Batch dims for the fresh operand: the pool operand's, possibly with
 * leading dims dropped, some set to 1, or one more leading dim. */
static int matmul_batch(ts_gen *G, const ts_val *x, int64_t *bd) {
    int nb = x->rank - 2;
    int mode = ts_gen_int(G, 0, 3);
    int drop = mode == 1 ? ts_gen_int(G, 0, nb) : 0;
    int extra = mode == 3 && x->rank < G->o.max_rank ? 1 : 0;
    int n = 0;
    if (extra) bd[n++] = ts_gen_int(G, 1, 3);
    for (int k = drop; k < nb; k++)
        bd[n++] = mode == 2 && ts_gen_chance(G, 0.5) ? 1 : x->dims[k];
    return n;
}

bool ts_gen_matmul(ts_gen *G) {
    int xi = ts_gen_pick(G, (ts_want){TS_FLOATS, false, 1, false});
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    if (x.rank == 1) { /* make it a row or a column */
        int64_t d[2] = {1, x.dims[0]};
        if (ts_gen_chance(G, 0.5)) {
            d[0] = x.dims[0];
            d[1] = 1;
        }
        xi = ts_gen_emit(G, braid_reshape(G->g, x.t, 2, d), x.v, x.exact);
        x = G->vals[xi];
    }
    bool pool_left = ts_gen_chance(G, 0.7);
    bool tx = ts_gen_chance(G, 0.3), ty = ts_gen_chance(G, 0.3);
    int64_t p = x.dims[x.rank - 2], q = x.dims[x.rank - 1];
    /* pool operand left: [.., M, K] (tx: [.., K, M]); right: [.., K, N]
     * (tx: [.., N, K]). The fresh operand gets the shared K. */
    int64_t K = pool_left ? (tx ? p : q) : (tx ? q : p);
    int64_t other = ts_gen_int(G, 1, (int)G->o.max_dim);
    if (K > TS_REDUCE_LIMIT) return false;
    int64_t bd[BRAID_MAX_RANK];
    int nb = matmul_batch(G, &x, bd);
    if (pool_left) {
        bd[nb] = ty ? other : K;
        bd[nb + 1] = ty ? K : other;
    } else {
        bd[nb] = ty ? K : other;
        bd[nb + 1] = ty ? other : K;
    }
    int yi = ts_gen_leaf(G, x.dt, nb + 2, bd);
    ts_val y = G->vals[yi];
    ts_val a = pool_left ? x : y, b = pool_left ? y : x;
    unsigned flags = ((pool_left ? tx : ty) ? BRAID_TRANSPOSE_A : 0u) |
                     ((pool_left ? ty : tx) ? BRAID_TRANSPOSE_B : 0u);
    ts_iv v = ts_iv_round(ts_iv_sum(ts_iv_mul(a.v, b.v), K, x.dt), x.dt);
    if (!ts_iv_ok(v, x.dt)) return false;
    ts_gen_emit(G, braid_matmul(G->g, a.t, b.t, flags), v, false);
    return true;
}

/* ---- reductions ---------------------------------------------------------- */

static const braid_op TS_REDUCE_OPS[] = {
    BRAID_OP_SUM, BRAID_OP_MEAN, BRAID_OP_REDUCE_MAX, BRAID_OP_REDUCE_MIN};

/* A random set of axes whose reduced element count is within the limit;
 * 0 (nothing to reduce) only for a scalar or when no axis fits. */
static unsigned reduce_axes(ts_gen *G, const ts_val *x) {
    unsigned mask = 0;
    for (int k = 0; k < x->rank; k++)
        if (ts_gen_chance(G, 0.5)) mask |= 1u << k;
    if (mask == 0 && x->rank > 0)
        mask = ts_gen_chance(G, 0.5) ? (1u << x->rank) - 1
                                     : 1u << ts_gen_int(G, 0, x->rank - 1);
    for (;;) {
        int64_t n = 1;
        int biggest = -1;
        for (int k = 0; k < x->rank; k++) {
            if (!(mask & (1u << k))) continue;
            n *= x->dims[k];
            if (biggest < 0 || x->dims[k] > x->dims[biggest]) biggest = k;
        }
        if (n <= TS_REDUCE_LIMIT) return mask;
        mask &= ~(1u << biggest);
    }
}

static ts_iv reduce_iv(braid_op op, const ts_val *x, int64_t n) {
    if (x->dt == BRAID_I32)
        return op == BRAID_OP_SUM
                   ? ts_iv_int(x->v.lo * (double)n, x->v.hi * (double)n)
                   : x->v;
    switch (op) {
    case BRAID_OP_SUM:
        return ts_iv_round(ts_iv_sum(x->v, n, x->dt), x->dt);
    case BRAID_OP_MEAN:
        return ts_iv_round(
            ts_iv_scale(ts_iv_sum(x->v, n, x->dt), 1.0 / (double)n), x->dt);
    default:
        return x->v; /* max/min pick an element */
    }
}

bool ts_gen_reduce(ts_gen *G) {
    braid_op op = TS_REDUCE_OPS[ts_gen_int(G, 0, 3)];
    ts_want w = {op == BRAID_OP_MEAN ? TS_FLOATS : TS_NUMS, false, 0, false};
    int xi = ts_gen_pick(G, w);
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    unsigned mask = reduce_axes(G, &x);
    if (mask == 0 && x.rank > 0)
        return false; /* naxes == 0 would mean every axis */
    int axes[BRAID_MAX_RANK], naxes = 0;
    int64_t n = 1, onumel = 1;
    for (int k = 0; k < x.rank; k++) {
        if (mask & (1u << k)) {
            n *= x.dims[k];
            /* negative axes count from the end */
            axes[naxes++] = ts_gen_chance(G, 0.3) ? k - x.rank : k;
        } else {
            onumel *= x.dims[k];
        }
    }
    if (naxes == x.rank && ts_gen_chance(G, 0.5))
        naxes = 0;                        /* the API's "all axes" */
    for (int i = naxes - 1; i > 0; i--) { /* any order is allowed */
        int j = ts_gen_int(G, 0, i), t = axes[i];
        axes[i] = axes[j];
        axes[j] = t;
    }
    bool keep = ts_gen_chance(G, 0.5);
    /* reducing no elements: mean NaN, max/min ±inf (or INT32_MIN/MAX) */
    bool special = n == 0 && onumel > 0 && op != BRAID_OP_SUM;
    bool exact = x.exact && (op == BRAID_OP_REDUCE_MAX ||
                             op == BRAID_OP_REDUCE_MIN || x.dt == BRAID_I32);
    ts_iv v = n == 0 ? ts_iv_exact(0.0, 0.0) : reduce_iv(op, &x, n);
    if (!special && !ts_iv_ok(v, x.dt)) return false;
    braid_tensor t;
    if (op == BRAID_OP_SUM)
        t = braid_sum(G->g, x.t, naxes, axes, keep);
    else if (op == BRAID_OP_MEAN)
        t = braid_mean(G->g, x.t, naxes, axes, keep);
    else if (op == BRAID_OP_REDUCE_MAX)
        t = braid_reduce_max(G->g, x.t, naxes, axes, keep);
    else
        t = braid_reduce_min(G->g, x.t, naxes, axes, keep);
    int ri = ts_gen_emit(G, t, v, exact || n == 0);
    G->vals[ri].special = special;
    return true;
}

/* ---- composites ---------------------------------------------------------- */

bool ts_gen_softmax(ts_gen *G) {
    int xi = ts_gen_pick(G, (ts_want){TS_FLOATS, false, 1, true});
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    braid_dtype dt = x.dt;
    int axis = ts_gen_int(G, 0, x.rank - 1);
    int64_t n = x.dims[axis];
    if (n > TS_REDUCE_LIMIT) return false;
    /* x - max(x) <= 0, exp of it in (0, 1], the sum >= 1 (the max's term) */
    ts_iv d = ts_iv_round(ts_iv_add(x.v, ts_iv_neg(x.v)), dt);
    d.hi = 0.0;
    ts_iv e = ts_iv_round(ts_iv_exp(d), dt);
    e.hi = 1.0;
    ts_iv s = ts_iv_round(ts_iv_sum(e, n, dt), dt);
    s.lo = fmax(s.lo, 0.99);
    ts_iv v = ts_iv_round(ts_iv_mul(e, ts_iv_recip(s)), dt);
    v.lo = 0.0;
    v.hi = 1.0;
    if (!ts_iv_ok(v, dt)) return false;
    int ax = ts_gen_chance(G, 0.3) ? axis - x.rank : axis;
    ts_gen_emit(G, braid_softmax(G->g, x.t, ax), v, false);
    return true;
}

/* gamma or beta for layer norm over n: [n] or a scalar, or none (-1). */
static int affine_param(ts_gen *G, braid_dtype dt, int64_t n) {
    if (ts_gen_chance(G, 0.5)) return -1;
    int64_t d[1] = {n};
    return ts_gen_leaf(G, dt, ts_gen_chance(G, 0.8) ? 1 : 0, d);
}

bool ts_gen_layer_norm(ts_gen *G) {
    static const double eps_choices[] = {0.1, 0.25, 0.5, 1.0};
    int xi = ts_gen_pick(G, (ts_want){TS_FLOATS, false, 1, true});
    if (xi < 0) return false;
    ts_val x = G->vals[xi];
    braid_dtype dt = x.dt;
    int64_t n = x.dims[x.rank - 1];
    double eps = eps_choices[ts_gen_int(G, 0, 3)];
    if (n > TS_REDUCE_LIMIT) return false;
    /* A large eps keeps rsqrt's slope small, so rows with (nearly) equal
     * elements, whose x - mean is pure rounding noise, stay harmless. */
    ts_iv mu =
        ts_iv_round(ts_iv_scale(ts_iv_sum(x.v, n, dt), 1.0 / (double)n), dt);
    ts_iv d = ts_iv_round(ts_iv_add(x.v, ts_iv_neg(mu)), dt);
    ts_iv sq = ts_iv_round(ts_iv_square(d), dt);
    ts_iv var =
        ts_iv_round(ts_iv_scale(ts_iv_sum(sq, n, dt), 1.0 / (double)n), dt);
    ts_iv ve =
        ts_iv_round(ts_iv_add(var, ts_iv_exact(0.99 * eps, 1.01 * eps)), dt);
    ts_iv r = ts_iv_round(ts_iv_recip(ts_iv_sqrt(ve)), dt);
    ts_iv y = ts_iv_round(ts_iv_mul(d, r), dt);
    /* |x_i - mean| / sqrt(var + eps) <= sqrt(n) */
    double bound =
        fmin(sqrt((double)n), ts_iv_mag(d) / sqrt(0.99 * eps)) * 1.01;
    y.lo = fmax(y.lo, -bound);
    y.hi = fmin(y.hi, bound);
    int gi = affine_param(G, dt, n), bi = affine_param(G, dt, n);
    if (gi >= 0) y = ts_iv_round(ts_iv_mul(y, G->vals[gi].v), dt);
    if (bi >= 0) y = ts_iv_round(ts_iv_add(y, G->vals[bi].v), dt);
    if (!ts_iv_ok(y, dt)) return false;
    braid_tensor t = braid_layer_norm(
        G->g, G->vals[xi].t, gi >= 0 ? G->vals[gi].t : BRAID_NONE,
        bi >= 0 ? G->vals[bi].t : BRAID_NONE, eps);
    ts_gen_emit(G, t, y, false);
    return true;
}

bool ts_gen_source(ts_gen *G) {
    int r;
    int64_t d[BRAID_MAX_RANK];
    ts_gen_shape(G, &r, d);
    ts_gen_leaf(G, ts_gen_dtype(G, TS_ALL), r, d);
    return true;
}

/* ---- conv ops ------------------------------------------------------------ */

/* conv or conv_transpose of a pool tensor of rank 3..5 (f32/f64: the CPU
 * kernels' dtypes) read as [N, C, spatial...], with a fresh weight: groups
 * 1 or C, 1..3 output channels per group, kernels 1..3, strides and
 * dilations 1..2, pads 0..1 at each end. Each output sums at most
 * C/groups · taps products, padding taps adding 0. */
bool ts_gen_conv(ts_gen *G) {
    unsigned fl = (1u << BRAID_F32) | (1u << BRAID_F64);
    int xi = ts_gen_pick(G, (ts_want){fl, false, 3, true});
    if (xi < 0 || G->vals[xi].rank > 5) return false;
    ts_val x = G->vals[xi];
    bool tr = ts_gen_chance(G, 0.3);
    int s = x.rank - 2;
    int64_t C = x.dims[1], G_ = ts_gen_chance(G, 0.3) ? C : 1;
    int64_t OCg = ts_gen_int(G, 1, 3), kv = 1;
    int64_t wd[5] = {tr ? C : G_ * OCg, tr ? OCg : C / G_};
    braid_conv_params p = {.groups = G_};
    int64_t out = x.dims[0] * G_ * OCg;
    for (int i = 0; i < s; i++) {
        int64_t in = x.dims[2 + i], k = ts_gen_int(G, 1, 3);
        int64_t st = ts_gen_int(G, 1, 2), d = ts_gen_int(G, 1, 2);
        int64_t pb = ts_gen_int(G, 0, 1), pe = ts_gen_int(G, 0, 1);
        int64_t span = (k - 1) * d + 1;
        int64_t o = tr ? st * (in - 1) + span - pb - pe
                       : (in + pb + pe - span) / st + 1;
        if ((!tr && in + pb + pe < span) || o < 1) return false;
        wd[2 + i] = k;
        kv *= k;
        out *= o;
        p.strides[i] = st;
        p.dilations[i] = d;
        p.pads[i] = pb;
        p.pads[s + i] = pe;
    }
    int64_t terms = (C / G_) * kv;
    if (terms > TS_REDUCE_LIMIT || out > TS_NUMEL_LIMIT) return false;
    int wi = ts_gen_leaf(G, x.dt, x.rank, wd);
    ts_val w = G->vals[wi];
    ts_iv prod = ts_iv_union(ts_iv_mul(x.v, w.v), ts_iv_exact(0, 0));
    ts_iv v = ts_iv_round(ts_iv_sum(prod, terms, x.dt), x.dt);
    if (!ts_iv_ok(v, x.dt)) return false;
    braid_tensor y = tr ? braid_conv_transpose(G->g, x.t, w.t, BRAID_NONE, &p)
                        : braid_conv(G->g, x.t, w.t, BRAID_NONE, &p);
    ts_gen_emit(G, y, v, false);
    return true;
}
