/* tests/support/random_graph_iv.c — the generator's drift model.
 *
 * A ts_iv says: every reference value r lies in [lo, hi], and a correct
 * executor's value x obeys |x - r| <= ea + er·|r|. The rules below derive
 * that bound for each op from its operands' bounds (first-order error
 * analysis with the second-order terms kept), plus a per-node term for the
 * executor computing in f32 (or f64) and rounding to the node's dtype where
 * the reference computes in f64. They are worst-case for elementwise ops;
 * for sums they assume rounding errors that do not all conspire (a few ulps
 * of the largest partial sum per term), which is what any summation order
 * an executor may pick actually shows. */
#include "tests/support/random_graph.h"

#include <math.h>

/* Unit roundoff of dtype dt. */
static double unit(braid_dtype dt) {
    switch (dt) {
    case BRAID_F64:
        return 0x1p-53;
    case BRAID_F16:
        return 0x1p-11;
    case BRAID_BF16:
        return 0x1p-8;
    default:
        return 0x1p-24;
    }
}

/* Unit roundoff of the precision executors compute dt in (f32 for f32,
 * f16 and bf16; f64 for f64). */
double ts_iv_compute_unit(braid_dtype dt) {
    return dt == BRAID_F64 ? 0x1p-53 : 0x1p-24;
}

/* Relative drift one node adds: a few ulps of compute error (libm-grade
 * functions), plus, for f16/bf16, one ulp of the storage type for when the
 * two sides round to different neighbours. */
static double rho(braid_dtype dt) {
    double r = 4.0 * ts_iv_compute_unit(dt);
    if (dt == BRAID_F16 || dt == BRAID_BF16) r += 2.0 * unit(dt);
    return r;
}

/* Absolute drift one rounding adds near zero (subnormal spacing). */
static double tiny(braid_dtype dt) {
    return dt == BRAID_F16 ? 0x1p-24 : 0x1p-126;
}

ts_iv ts_iv_exact(double lo, double hi) {
    return (ts_iv){lo, hi, 0.0, 0.0};
}

double ts_iv_mag(ts_iv a) {
    return fmax(fabs(a.lo), fabs(a.hi));
}

/* The largest absolute drift anywhere in the interval. */
static double total(ts_iv a) {
    return a.ea + a.er * ts_iv_mag(a);
}

static bool one_sign(ts_iv a) {
    return a.lo >= 0.0 || a.hi <= 0.0;
}

/* Smallest |r| over the interval (0 when it holds 0). */
static double min_mag(ts_iv a) {
    return one_sign(a) ? fmin(fabs(a.lo), fabs(a.hi)) : 0.0;
}

static ts_iv bad(void) {
    return (ts_iv){-INFINITY, INFINITY, INFINITY, INFINITY};
}

bool ts_iv_ok(ts_iv a, braid_dtype dt) {
    if (!braid_dtype_is_float(dt)) return true;
    double atol, rtol;
    ts_tolerance(dt, &atol, &rtol);
    return isfinite(a.lo) && isfinite(a.hi) && ts_iv_mag(a) <= TS_MAG_LIMIT &&
           a.ea <= 0.5 * atol && a.er <= 0.5 * rtol;
}

ts_iv ts_iv_round(ts_iv a, braid_dtype dt) {
    /* Rounded values may sit an ulp outside [lo, hi]; rounding never
     * changes a sign, so a bound at 0 stays there. */
    double wlo = fabs(a.lo) * 2.0 * unit(dt) + tiny(dt);
    double whi = fabs(a.hi) * 2.0 * unit(dt) + tiny(dt);
    a.lo = a.lo >= 0.0 ? fmax(0.0, a.lo - wlo) : a.lo - wlo;
    a.hi = a.hi <= 0.0 ? fmin(0.0, a.hi + whi) : a.hi + whi;
    a.er += rho(dt);
    a.ea += tiny(dt);
    return a;
}

ts_iv ts_iv_neg(ts_iv a) {
    return (ts_iv){-a.hi, -a.lo, a.ea, a.er};
}

/* | |x| - |r| | <= |x - r|, and |r| = ||r||: both drift terms carry over. */
ts_iv ts_iv_abs(ts_iv a) {
    return (ts_iv){min_mag(a), ts_iv_mag(a), a.ea, a.er};
}

/* relu(r) may be 0 where r is not, so relative drift becomes absolute. */
ts_iv ts_iv_relu(ts_iv a) {
    if (a.lo >= 0.0) return a;
    return (ts_iv){0.0, fmax(a.hi, 0.0), total(a), 0.0};
}

/* Same-signed terms keep relative drift; mixed signs may cancel. */
ts_iv ts_iv_add(ts_iv a, ts_iv b) {
    ts_iv r = {a.lo + b.lo, a.hi + b.hi, 0.0, 0.0};
    if ((a.lo >= 0.0 && b.lo >= 0.0) || (a.hi <= 0.0 && b.hi <= 0.0)) {
        r.ea = a.ea + b.ea;
        r.er = fmax(a.er, b.er);
    } else {
        r.ea = total(a) + total(b);
    }
    return r;
}

/* xy - rs = δs + rη + δη with |δ| <= ea_a + er_a|r|, |η| <= ea_b + er_b|s|. */
ts_iv ts_iv_mul(ts_iv a, ts_iv b) {
    double c[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
    ts_iv r = {c[0], c[0], 0.0, 0.0};
    for (int i = 1; i < 4; i++) {
        r.lo = fmin(r.lo, c[i]);
        r.hi = fmax(r.hi, c[i]);
    }
    double ma = ts_iv_mag(a), mb = ts_iv_mag(b);
    r.er = a.er + b.er + a.er * b.er;
    r.ea = a.ea * mb + b.ea * ma + a.ea * b.ea + a.ea * b.er * mb +
           a.er * b.ea * ma;
    return r;
}

ts_iv ts_iv_square(ts_iv a) {
    ts_iv r = ts_iv_mul(a, a);
    r.lo = min_mag(a) * min_mag(a);
    r.hi = ts_iv_mag(a) * ts_iv_mag(a);
    return r;
}

/* With q the relative drift of x against r, |1/x - 1/r| <= q/(1-q)·|1/r|. */
ts_iv ts_iv_recip(ts_iv a) {
    double m = min_mag(a);
    if (!one_sign(a) || m <= 0.0) return bad();
    double q = a.ea / m + a.er;
    if (q >= 0.5) return bad();
    return (ts_iv){1.0 / a.hi, 1.0 / a.lo, 0.0, q / (1.0 - q)};
}

/* e^x = e^r·e^(x-r): absolute drift in x is relative drift in e^x. */
ts_iv ts_iv_exp(ts_iv a) {
    return (ts_iv){exp(a.lo), exp(a.hi), 0.0, expm1(total(a))};
}

/* log x - log r = log(x/r), and x/r lies within 1 ± q. */
ts_iv ts_iv_log(ts_iv a) {
    if (a.lo <= 0.0) return bad();
    double q = a.ea / a.lo + a.er;
    if (q >= 0.5) return bad();
    return (ts_iv){log(a.lo), log(a.hi), -log1p(-q), 0.0};
}

ts_iv ts_iv_sqrt(ts_iv a) {
    if (a.lo < 0.0) return bad();
    ts_iv r = {sqrt(a.lo), sqrt(a.hi), 0.0, 0.0};
    double q = a.lo > 0.0 ? a.ea / a.lo + a.er : INFINITY;
    if (q < 0.5)
        r.er = 1.0 - sqrt(1.0 - q);
    else
        r.ea = sqrt(total(a));
    return r;
}

ts_iv ts_iv_lipschitz(ts_iv a, double lip, double lo, double hi) {
    return (ts_iv){lo, hi, lip * total(a), 0.0};
}

/* n terms each within a: same-signed terms sum with relative drift (plus
 * about n compute ulps); mixed ones drift absolutely. */
ts_iv ts_iv_sum(ts_iv a, int64_t n, braid_dtype dt) {
    if (n <= 0) return ts_iv_exact(0.0, 0.0);
    double k = (double)n, u = ts_iv_compute_unit(dt);
    ts_iv r = {k * a.lo, k * a.hi, 0.0, 0.0};
    if (one_sign(a)) {
        r.ea = k * a.ea;
        r.er = a.er + 4.0 * u * k;
    } else {
        r.ea = k * total(a) + 4.0 * u * k * ts_iv_mag(a);
    }
    return r;
}

ts_iv ts_iv_scale(ts_iv a, double s) {
    return (ts_iv){a.lo * s, a.hi * s, a.ea * s, a.er};
}

/* max/min are 1-Lipschitz in the max norm. */
ts_iv ts_iv_maxmin(ts_iv a, ts_iv b, bool is_max) {
    ts_iv r;
    r.lo = is_max ? fmax(a.lo, b.lo) : fmin(a.lo, b.lo);
    r.hi = is_max ? fmax(a.hi, b.hi) : fmin(a.hi, b.hi);
    r.ea = fmax(total(a), total(b));
    r.er = 0.0;
    return r;
}

/* Each element comes from one side, with that side's drift. */
ts_iv ts_iv_union(ts_iv a, ts_iv b) {
    return (ts_iv){fmin(a.lo, b.lo), fmax(a.hi, b.hi), fmax(a.ea, b.ea),
                   fmax(a.er, b.er)};
}

/* Float-to-float casts round once (except to f64); an exact operand gives
 * an exact result since both sides round the same bits. */
ts_iv ts_iv_cast(ts_iv a, braid_dtype to, bool exact) {
    if (to == BRAID_I32) return ts_iv_int(trunc(a.lo), trunc(a.hi));
    if (to == BRAID_I64) /* saturating at ±2^63, like the i32 rule */
        return ts_iv_exact(fmax(trunc(a.lo), -0x1p63), fmin(trunc(a.hi), 0x1p63));
    if (to == BRAID_BOOL) return ts_iv_exact(0.0, 1.0);
    /* widen by one rounding so the interval still holds the cast values */
    double w = to == BRAID_F64 ? 0.0 : 2.0 * unit(to);
    ts_iv r = {a.lo - fabs(a.lo) * w, a.hi + fabs(a.hi) * w, a.ea, a.er};
    if (exact) return ts_iv_exact(r.lo, r.hi);
    if (to != BRAID_F64) {
        r.er += 2.0 * unit(to);
        r.ea += tiny(to);
    }
    return r;
}

ts_iv ts_iv_int(double lo, double hi) {
    if (lo < (double)INT32_MIN || hi > (double)INT32_MAX)
        return ts_iv_exact((double)INT32_MIN, (double)INT32_MAX);
    return ts_iv_exact(lo, hi);
}
