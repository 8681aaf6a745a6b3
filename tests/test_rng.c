/* tests/test_rng.c — Philox, the random generators and braid's own
 * deterministic log / cos(2πu). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"
#include "graph/internal.h"

#define N_SAMPLES 100000

Test(rng, philox_known_answer) {
    /* Random123's published vector for philox4x32-10, ctr = 0, key = 0. */
    uint32_t out[4];
    bg_philox(0, 0, out);
    cr_assert_eq(out[0], 0x6627e8d5u, "0x%08x", out[0]);
    cr_assert_eq(out[1], 0xe169c58du, "0x%08x", out[1]);
    cr_assert_eq(out[2], 0xbc57ac4cu, "0x%08x", out[2]);
    cr_assert_eq(out[3], 0x9b00dbd8u, "0x%08x", out[3]);
}

Test(rng, philox_uses_all_key_and_counter_bits) {
    uint32_t a[4], b[4];
    bg_philox(1, 5, a);
    bg_philox(1ull | (1ull << 32), 5, b);
    cr_assert(memcmp(a, b, sizeof a) != 0);
    bg_philox(1, 5ull | (1ull << 32), b);
    cr_assert(memcmp(a, b, sizeof a) != 0);
    bg_philox(1, 5, b);
    cr_assert(memcmp(a, b, sizeof a) == 0);
}

Test(rng, determinism_and_seeds_differ) {
    int same = 0;
    for (int64_t i = 0; i < 1000; i++) {
        double u = bg_random_uniform_at(7, i, -1, 1);
        cr_assert_eq(u, bg_random_uniform_at(7, i, -1, 1));
        double n = bg_random_normal_at(7, i, 0, 1);
        cr_assert_eq(n, bg_random_normal_at(7, i, 0, 1));
        same += u == bg_random_uniform_at(8, i, -1, 1);
        same += n == bg_random_normal_at(8, i, 0, 1);
        same += u == bg_random_uniform_at(7, i + 1, -1, 1);
    }
    cr_assert_eq(same, 0);
}

Test(rng, uniform_is_53_bits_scaled) {
    for (int64_t i = 0; i < 100; i++) {
        uint32_t w[4];
        bg_philox(99, (uint64_t)i, w);
        uint64_t bits = ((uint64_t)w[0] << 21) | (w[1] >> 11);
        cr_assert_eq(bg_random_uniform_at(99, i, 0, 1),
                     ldexp((double)bits, -53));
    }
}

/* Pinned outputs: every device must produce exactly these bits. */
Test(rng, golden_values) {
    double u = bg_random_uniform_at(42, 3, -2, 5);
    double n = bg_random_normal_at(42, 3, 1, 3);
    double u0 = bg_random_uniform_at(0, 0, 0, 1);
    cr_assert_eq(u, 0x1.8db88f9bd8e4ap+1, "%a", u);
    cr_assert_eq(n, -0x1.0a282406ee18p+0, "%a", n);
    cr_assert_eq(
        u0, ldexp((double)(((uint64_t)0x6627e8d5u << 21) | (0xe169c58du >> 11)),
                  -53));
}

Test(rng, uniform_statistics) {
    double sum = 0, sum2 = 0, low = -3, high = 5;
    int hist[10] = {0};
    for (int64_t i = 0; i < N_SAMPLES; i++) {
        double v = bg_random_uniform_at(123, i, low, high);
        cr_assert(v >= low && v <= high, "%g", v);
        double u = (v - low) / (high - low);
        sum += u;
        sum2 += u * u;
        hist[(int)(u * 10) > 9 ? 9 : (int)(u * 10)]++;
    }
    double mean = sum / N_SAMPLES, var = sum2 / N_SAMPLES - mean * mean;
    /* 5 sigma: sd(mean) = sqrt(1/12/N) ≈ 9.1e-4; sd(var) ≈ 2.4e-4 */
    cr_assert(fabs(mean - 0.5) < 5 * 9.2e-4, "mean %g", mean);
    cr_assert(fabs(var - 1.0 / 12) < 5 * 2.4e-4, "var %g", var);
    for (int b = 0; b < 10; b++) /* sd(count) ≈ 95 */
        cr_assert(abs(hist[b] - N_SAMPLES / 10) < 500, "bucket %d: %d", b,
                  hist[b]);
    /* a degenerate range gives the constant */
    cr_assert_eq(bg_random_uniform_at(1, 2, 4.5, 4.5), 4.5);
}

Test(rng, normal_statistics) {
    double sum = 0, sum2 = 0, sum4 = 0;
    int tails = 0;
    for (int64_t i = 0; i < N_SAMPLES; i++) {
        double z = bg_random_normal_at(2024, i, 0, 1);
        cr_assert(isfinite(z));
        sum += z;
        sum2 += z * z;
        sum4 += z * z * z * z;
        tails += fabs(z) > 2;
    }
    double mean = sum / N_SAMPLES, var = sum2 / N_SAMPLES - mean * mean;
    cr_assert(fabs(mean) < 5 / sqrt(N_SAMPLES), "mean %g", mean);
    cr_assert(fabs(var - 1) < 5 * sqrt(2.0 / N_SAMPLES), "var %g", var);
    cr_assert(fabs(sum4 / N_SAMPLES - 3) < 0.15, "kurtosis %g",
              sum4 / N_SAMPLES);
    /* P(|z| > 2) = 0.0455; sd of the count ≈ 66 */
    cr_assert(abs(tails - 4550) < 350, "tails %d", tails);
    /* mean and stddev apply */
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < 20000; i++) {
        double v = bg_random_normal_at(5, i, 3, 0.5);
        s += v;
        s2 += v * v;
    }
    double m = s / 20000, sd = sqrt(s2 / 20000 - m * m);
    cr_assert(fabs(m - 3) < 0.02 && fabs(sd - 0.5) < 0.01, "%g %g", m, sd);
    cr_assert_eq(bg_random_normal_at(5, 1, 3, 0), 3.0);
}

static double rel_err(double got, double want) {
    if (got == want) return 0;
    return fabs(got - want) / fabs(want);
}

Test(rng, det_log_matches_libm) {
    uint64_t s = 77;
    double worst = 0;
    for (int i = 0; i < 300000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double x;
        if (i % 3 == 0) { /* the generator's domain: k · 2^-53 in (0, 1] */
            x = ldexp((double)((s >> 11) + 1), -53);
        } else if (i % 3 == 1) { /* close to 1 */
            x = 1 + ldexp((double)(int64_t)(s >> 40) - 8388608.0,
                          -30 - (int)(s % 20));
        } else { /* any positive double, subnormals included */
            uint64_t bits = (s >> 1) & 0x7fefffffffffffffull;
            memcpy(&x, &bits, sizeof x);
            if (x == 0) continue;
        }
        double e = rel_err(bg_det_log(x), log(x));
        if (e > worst) worst = e;
        cr_assert(e <= 1e-14, "log(%a): %a vs %a", x, bg_det_log(x), log(x));
    }
    cr_log_info("det_log worst relative error %.3g", worst);
    cr_assert_eq(bg_det_log(1.0), 0.0);
    cr_assert(isinf(bg_det_log(0.0)) && bg_det_log(0.0) < 0);
    cr_assert(isnan(bg_det_log(-1.0)));
    cr_assert(isnan(bg_det_log(NAN)));
    cr_assert(isinf(bg_det_log(INFINITY)));
    cr_assert(rel_err(bg_det_log(DBL_MAX), log(DBL_MAX)) < 1e-15);
    cr_assert(rel_err(bg_det_log(0x1p-1074), log(0x1p-1074)) < 1e-15);
    cr_assert(rel_err(bg_det_log(0x1p-53), log(0x1p-53)) < 1e-15);
}

Test(rng, det_cos2pi_matches_long_double) {
    const long double two_pi = 6.283185307179586476925286766559005768L;
    uint64_t s = 3;
    double worst = 0;
    for (int i = 0; i < 300000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double u = ldexp((double)(s >> 11), -53);
        if (i < 64) /* exact quarter points and neighbours */
            u = i / 64.0;
        double got = bg_det_cos2pi(u);
        double want = (double)cosl(two_pi * (long double)u);
        double err = fabs(got - want);
        cr_assert(err <= 1e-14 * fabs(want) + 1e-18, "cos2pi(%a): %a vs %a", u,
                  got, want);
        if (fabs(want) > 1e-3 && err / fabs(want) > worst)
            worst = err / fabs(want);
    }
    cr_log_info("det_cos2pi worst relative error %.3g", worst);
    cr_assert_eq(bg_det_cos2pi(0.0), 1.0);
    cr_assert_eq(bg_det_cos2pi(0.5), -1.0);
    cr_assert(fabs(bg_det_cos2pi(0.25)) < 1e-300);
    /* out-of-range arguments are wrapped to a turn */
    cr_assert(rel_err(bg_det_cos2pi(1.125), bg_det_cos2pi(0.125)) < 1e-15);
    cr_assert(rel_err(bg_det_cos2pi(-0.25 + 1e-3), bg_det_cos2pi(0.75 + 1e-3)) <
              1e-12);
    cr_assert(isnan(bg_det_cos2pi(NAN)));
    cr_assert(isnan(bg_det_cos2pi(INFINITY)));
}
