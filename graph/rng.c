/* graph/rng.c — counter-based random numbers (Philox-4x32-10) and the
 * deterministic elementary functions the normal generator needs.
 *
 * Why braid has its own log and cos: random_normal must give the same bits
 * on the CPU and on every GPU, because a plan may place the generator on
 * either device and tests compare them exactly. libm's log/cos and CUDA's
 * log/cos are both accurate to about an ulp but they are different
 * functions, so their last bits differ. The two functions below use only
 * IEEE-754 + - * / (correctly rounded everywhere), integer bit operations
 * and exact operations (scaling by powers of two, Sterbenz subtractions), so
 * the same C source compiled for a GPU gives the same bits — provided FMA
 * contraction is off (-std=c11 makes GCC use -ffp-contract=off; the CUDA
 * code generator must pass --fmad=false). sqrt is correctly rounded by IEEE,
 * so libm's sqrt (and CUDA's __dsqrt_rn) already agree everywhere.
 *
 * Accuracy: both are within a few ulps (≈ 1e-15 relative) of the true
 * values; tests/test_rng.c checks them against libm / long double. */
#include "graph/internal.h"

#include <math.h>
#include <string.h>

/* ---- Philox-4x32-10 ---------------------------------------------------------
 */

#define BG_PHILOX_M0 0xD2511F53u
#define BG_PHILOX_M1 0xCD9E8D57u
#define BG_PHILOX_W0 0x9E3779B9u /* key schedule increments */
#define BG_PHILOX_W1 0xBB67AE85u

static uint32_t bg_mulhilo(uint32_t a, uint32_t b, uint32_t *lo) {
    uint64_t p = (uint64_t)a * b;
    *lo = (uint32_t)p;
    return (uint32_t)(p >> 32);
}

/* Key = (low32(seed), high32(seed)); counter = (low32(i), high32(i), 0, 0). */
void bg_philox(uint64_t seed, uint64_t counter, uint32_t out[4]) {
    uint32_t c[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), 0, 0};
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k0 += BG_PHILOX_W0;
            k1 += BG_PHILOX_W1;
        }
        uint32_t lo0, lo1;
        uint32_t hi0 = bg_mulhilo(BG_PHILOX_M0, c[0], &lo0);
        uint32_t hi1 = bg_mulhilo(BG_PHILOX_M1, c[2], &lo1);
        uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
        c[0] = n0;
        c[1] = lo1;
        c[2] = n2;
        c[3] = lo0;
    }
    memcpy(out, c, sizeof c);
}

/* 53 random bits from two words: an integer in [0, 2^53). */
static uint64_t bg_bits53(uint32_t hi, uint32_t lo) {
    return ((uint64_t)hi << 21) | (lo >> 11);
}

#define BG_TWO_M53 0x1p-53

double bg_random_uniform_at(uint64_t seed, int64_t i, double low, double high) {
    uint32_t w[4];
    bg_philox(seed, (uint64_t)i, w);
    double u = (double)bg_bits53(w[0], w[1]) * BG_TWO_M53; /* exact, [0,1) */
    return low + u * (high - low);
}

/* Box–Muller with u1 in (0, 1] (so log never sees 0) and u2 in [0, 1). */
double bg_random_normal_at(uint64_t seed, int64_t i, double mean,
                           double stddev) {
    uint32_t w[4];
    bg_philox(seed, (uint64_t)i, w);
    double u1 = (double)(bg_bits53(w[0], w[1]) + 1) * BG_TWO_M53;
    double u2 = (double)bg_bits53(w[2], w[3]) * BG_TWO_M53;
    double radius = sqrt(-2.0 * bg_det_log(u1));
    return mean + stddev * (radius * bg_det_cos2pi(u2));
}

/* ---- log
 * ------------------------------------------------------------------------ */

/* ln 2 split so that k * BG_LN2_HI is exact for |k| < 2^21. */
#define BG_LN2_HI 0x1.62e42fee00000p-1
#define BG_LN2_LO 1.9082149292705877e-10

/* x = 2^k · m with m in (√½, √2], then log m = 2·atanh(s), s = (m-1)/(m+1),
 * |s| ≤ 0.1716, as its Taylor series 2s + 2s³/3 + 2s⁵/5 + ... (through s²³,
 * the first omitted term is below 1e-18 relative). */
double bg_det_log(double x) {
    if (x != x || x < 0) return NAN;
    if (x == 0) return -INFINITY;
    if (x == INFINITY) return x;
    int k = 0;
    if (x < 0x1p-1022) { /* subnormal: make it normal first (exact) */
        x *= 0x1p54;
        k = -54;
    }
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    k += (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    double m;
    memcpy(&m, &bits, sizeof m); /* [1, 2) */
    if (m > 1.4142135623730951) {
        m *= 0.5;
        k += 1;
    }
    double f = m - 1.0; /* exact (Sterbenz) */
    double s = f / (2.0 + f);
    double z = s * s;
    double r = 0.086956521739130432;  /* 2/23 */
    r = 0.095238095238095233 + z * r; /* 2/21 */
    r = 0.10526315789473684 + z * r;  /* 2/19 */
    r = 0.11764705882352941 + z * r;  /* 2/17 */
    r = 0.13333333333333333 + z * r;  /* 2/15 */
    r = 0.15384615384615385 + z * r;  /* 2/13 */
    r = 0.18181818181818182 + z * r;  /* 2/11 */
    r = 0.22222222222222221 + z * r;  /* 2/9 */
    r = 0.2857142857142857 + z * r;   /* 2/7 */
    r = 0.40000000000000002 + z * r;  /* 2/5 */
    r = 0.66666666666666663 + z * r;  /* 2/3 */
    double log_m = 2.0 * s + s * (z * r);
    double dk = (double)k;
    return dk * BG_LN2_HI + (log_m + dk * BG_LN2_LO);
}

/* ---- cos(2πu)
 * ------------------------------------------------------------------- */

#define BG_PI_2 1.5707963267948966

/* Taylor series on [0, π/4]; the first omitted terms are below 1e-17. */
static double bg_sin_kernel(double x) {
    double z = x * x;
    double p = 2.8114572543455206e-15;  /* 1/17! */
    p = -7.647163731819816e-13 + z * p; /* -1/15! */
    p = 1.6059043836821613e-10 + z * p; /* 1/13! */
    p = -2.505210838544172e-08 + z * p; /* -1/11! */
    p = 2.7557319223985893e-06 + z * p; /* 1/9! */
    p = -0.0001984126984126984 + z * p; /* -1/7! */
    p = 0.008333333333333333 + z * p;   /* 1/5! */
    p = -0.16666666666666666 + z * p;   /* -1/3! */
    return x + x * (z * p);
}

static double bg_cos_kernel(double x) {
    double z = x * x;
    double p = 4.779477332387385e-14;    /* 1/16! */
    p = -1.1470745597729725e-11 + z * p; /* -1/14! */
    p = 2.08767569878681e-09 + z * p;    /* 1/12! */
    p = -2.755731922398589e-07 + z * p;  /* -1/10! */
    p = 2.48015873015873e-05 + z * p;    /* 1/8! */
    p = -0.001388888888888889 + z * p;   /* -1/6! */
    p = 0.041666666666666664 + z * p;    /* 1/4! */
    return (1.0 - 0.5 * z) + (z * z) * p;
}

/* The argument is a fraction of a turn, so range reduction is exact: 4u
 * splits into a quadrant q and a remainder r in [0, 1) without rounding,
 * and r > ½ is folded to 1 - r (exact) to stay within [0, π/4]. Only the
 * final r·π/2 rounds, which keeps the result within a few ulps even near
 * the zeros of cos. Values of u outside [0, 1) are wrapped first. */
double bg_det_cos2pi(double u) {
    if (!(u >= 0.0 && u < 1.0)) {
        if (u != u || u == INFINITY || u == -INFINITY) return NAN;
        u -= floor(u); /* exact for |u| < 2^52; larger u are integers */
        if (u >= 1.0) u = 0.0;
    }
    double t = u * 4.0;
    int q = (int)t;
    double r = t - (double)q;
    bool fold = r > 0.5;
    double x = (fold ? 1.0 - r : r) * BG_PI_2;
    /* cos(qπ/2 + a): q=0 cos a, 1: -sin a, 2: -cos a, 3: sin a; folding
     * swaps sin and cos. */
    bool use_sin = (q & 1) != fold;
    double v = use_sin ? bg_sin_kernel(x) : bg_cos_kernel(x);
    return (q == 1 || q == 2) ? -v : v;
}
