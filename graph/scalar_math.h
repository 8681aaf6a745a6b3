/* graph/scalar_math.h — braid's own f32 exp and tanh (prefix bg_).
 *
 * The C library's expf and tanhf are scalar calls, so a loop over them does
 * not vectorise, and glibc's tanhf costs about 20 ns. These two are written
 * so that GCC's vectoriser turns a loop calling them into SIMD code: only
 * arithmetic, bit operations on the IEEE representation, and selections
 * made with integer masks (a float `?:` is not if-converted under the
 * default -ftrapping-math). The CPU elementwise kernels and the fused-tile
 * interpreter both use them (through graph/scalar.h), so fused and unfused
 * results are identical.
 *
 * Accuracy, checked over every 7th f32 bit pattern against the f64 libm:
 *   bg_expf  ≤ 1.2 ulp (subnormal results rounded once; overflow to +inf
 *            from 88.7228 up, as for the correctly rounded function up to
 *            one ulp at the boundary; -inf → 0; NaN → NaN);
 *   bg_tanhf ≤ 1.5 ulp (odd: tanh(-0) = -0; ±inf → ±1; NaN → NaN).
 * The tests' drift model allows 4 ulp per op (tests/support). */
#ifndef BRAID_GRAPH_SCALAR_MATH_H
#define BRAID_GRAPH_SCALAR_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float bg_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t bg_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* All ones when c, else zero: a selection mask. */
static inline uint32_t bg_mask(int c) {
    return c ? 0xffffffffu : 0u;
}

/* m ? a : b without a branch or a float select. */
static inline float bg_select_f32(uint32_t m, float a, float b) {
    return bg_bits_f32((bg_f32_bits(a) & m) | (bg_f32_bits(b) & ~m));
}

/* exp(x) = 2^k · e^r with k = round(x / ln 2) and |r| ≤ ln 2 / 2. r is
 * x − k·ln 2 in two steps (ln 2's high part has trailing zero bits, so
 * k·LN2_HI is exact for |k| ≤ 256); e^r is its Taylor polynomial to r^7
 * (truncation below 0.1 ulp); 2^k is applied as two powers of two so that
 * k in [-150, 128] needs no special case and a subnormal result is rounded
 * once. Integer work is unsigned, so a NaN's garbage k is harmless. */
static inline float bg_expf(float x) {
    const float lo = -104.0f, hi = 89.0f; /* e^lo rounds to 0, e^hi to inf */
    const float magic = 12582912.0f;      /* 1.5 · 2^23: rounds to integer */
    uint32_t under = bg_mask(x < lo), over = bg_mask(x > hi);
    float xc = bg_select_f32(under, lo, bg_select_f32(over, hi, x));
    float kf = xc * 1.44269504088896341f + magic;
    uint32_t k = bg_f32_bits(kf) - bg_f32_bits(magic);
    kf -= magic;
    float r = xc - kf * 0.693145751953125f;
    r = r - kf * 1.42860682030941723212e-6f;
    float p = 1.0f / 5040;
    p = p * r + 1.0f / 720;
    p = p * r + 1.0f / 120;
    p = p * r + 1.0f / 24;
    p = p * r + 1.0f / 6;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    uint32_t k1 = ((k + 256u) >> 1) - 128u, k2 = k - k1;
    float y =
        p * bg_bits_f32((k1 + 127u) << 23) * bg_bits_f32((k2 + 127u) << 23);
    uint32_t nan = bg_mask((bg_f32_bits(x) & 0x7fffffffu) > 0x7f800000u);
    return bg_select_f32(nan, x, y);
}

/* tanh |x| = 1 − 2 / (e^{2|x|} + 1) from |x| = 0.55 up (the subtraction
 * then loses under one bit); below, the odd Taylor series to x^17
 * (truncation below 0.5 ulp at 0.55). The sign is copied back last. */
static inline float bg_tanhf(float x) {
    float a = fabsf(x);
    float big = 1.0f - 2.0f / (bg_expf(2.0f * a) + 1.0f);
    float s = a * a;
    float q = 6404582.0f / 10854718875.0f;
    q = q * s - 929569.0f / 638512875.0f;
    q = q * s + 21844.0f / 6081075.0f;
    q = q * s - 1382.0f / 155925.0f;
    q = q * s + 62.0f / 2835.0f;
    q = q * s - 17.0f / 315.0f;
    q = q * s + 2.0f / 15.0f;
    q = q * s - 1.0f / 3.0f;
    float small = a + a * s * q;
    /* |x| as bits orders like |x|; NaN bits are above 0.55's. */
    float t =
        bg_select_f32(bg_mask(bg_f32_bits(a) < bg_f32_bits(0.55f)), small, big);
    return copysignf(t, x);
}

#endif /* BRAID_GRAPH_SCALAR_MATH_H */
