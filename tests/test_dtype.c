/* tests/test_dtype.c — f16/bf16 conversions and bg_load/bg_store. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Independent decoding of a half, with ldexp. */
static double half_value(uint16_t h) {
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
    if (e == 31) v = m ? NAN : INFINITY;
    return (h & 0x8000) ? -v : v;
}

/* Reference f32 → f16: the nearest finite half (ties to the even
 * encoding), or inf at or beyond 65520. Brute force over candidates. */
static uint16_t ref_to_half(float f) {
    double x = fabs((double)f);
    uint16_t sign = signbit(f) ? 0x8000 : 0;
    if (x >= 65520.0) return sign | 0x7c00;
    uint16_t lo = 0;
    for (int step = 1 << 14; step; step >>= 1) /* largest half <= x */
        if (lo + step <= 0x7bff && half_value((uint16_t)(lo + step)) <= x)
            lo = (uint16_t)(lo + step);
    if (lo == 0x7bff) return sign | lo;
    double dl = x - half_value(lo), dh = half_value((uint16_t)(lo + 1)) - x;
    uint16_t r = dl < dh    ? lo
                 : dh < dl  ? (uint16_t)(lo + 1)
                 : (lo & 1) ? (uint16_t)(lo + 1)
                            : lo;
    return sign | r;
}

Test(dtype, f16_exact_values) {
    struct {
        float f;
        uint16_t h;
    } cases[] = {
        {0.0f, 0x0000},      {-0.0f, 0x8000},
        {1.0f, 0x3c00},      {-2.0f, 0xc000},
        {0.5f, 0x3800},      {65504.0f, 0x7bff},
        {0.1f, 0x2e66},      {0x1p-14f, 0x0400},
        {0x1p-24f, 0x0001},  {1023 * 0x1p-24f, 0x03ff},
        {INFINITY, 0x7c00},  {-INFINITY, 0xfc00},
        {1e10f, 0x7c00},     {-1e10f, 0xfc00},
        {1e-10f, 0x0000},    {-1e-10f, 0x8000},
        {0x1p-149f, 0x0000}, {FLT_MAX, 0x7c00},
        {3.140625f, 0x4248},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(bg_f32_to_f16(cases[i].f), cases[i].h,
                     "%a -> 0x%04x, want 0x%04x", cases[i].f,
                     bg_f32_to_f16(cases[i].f), cases[i].h);
        if (half_value(cases[i].h) == (double)cases[i].f) /* exact ones */
            cr_assert_eq(f32_bits(bg_f16_to_f32(cases[i].h)),
                         f32_bits(cases[i].f), "0x%04x", cases[i].h);
    }
}

Test(dtype, f16_rounding_ties_and_overflow) {
    /* halfway between 1 and 1+2^-10: ties to even */
    cr_assert_eq(bg_f32_to_f16(1.0f + 0x1p-11f), 0x3c00);
    cr_assert_eq(bg_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3c02);
    cr_assert_eq(bg_f32_to_f16(1.0f + 0x1p-11f + 0x1p-23f), 0x3c01);
    cr_assert_eq(bg_f32_to_f16(1.0f + 0x1p-11f - 0x1p-24f), 0x3c00);
    /* 2047.5 .. 2048 region: carry into the exponent */
    cr_assert_eq(bg_f32_to_f16(2047.5f), 0x6800);
    cr_assert_eq(bg_f32_to_f16(65519.0f), 0x7bff);
    cr_assert_eq(bg_f32_to_f16(65520.0f), 0x7c00);
    cr_assert_eq(bg_f32_to_f16(-65520.0f), 0xfc00);
    /* subnormal ties */
    cr_assert_eq(bg_f32_to_f16(0x1p-25f), 0x0000);
    cr_assert_eq(bg_f32_to_f16(0x1.000002p-25f), 0x0001);
    cr_assert_eq(bg_f32_to_f16(3 * 0x1p-25f), 0x0002);
    cr_assert_eq(bg_f32_to_f16(5 * 0x1p-25f), 0x0002);
    cr_assert_eq(bg_f32_to_f16(-5 * 0x1p-25f), 0x8002);
    /* largest subnormal + half unit rounds to the smallest normal */
    cr_assert_eq(bg_f32_to_f16(1023.5f * 0x1p-24f), 0x0400);
    cr_assert_eq(bg_f32_to_f16(0x1.ffcp-15f), 0x03ff + 1);
}

Test(dtype, f16_nan_stays_nan) {
    uint32_t nans[] = {0x7fc00000u, 0x7f800001u, 0xffc00000u, 0x7fffffffu,
                       0x7f802000u};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t h = bg_f32_to_f16(bits_f32(nans[i]));
        cr_assert_eq(h & 0x7c00, 0x7c00);
        cr_assert_neq(h & 0x3ff, 0, "0x%08x -> 0x%04x", nans[i], h);
        cr_assert_eq(h >> 15, nans[i] >> 31);
    }
    cr_assert(isnan(bg_f16_to_f32(0x7e00)));
    cr_assert(isnan(bg_f16_to_f32(0xfc01)));
    cr_assert(isinf(bg_f16_to_f32(0xfc00)) && bg_f16_to_f32(0xfc00) < 0);
}

Test(dtype, f16_round_trip_all_halves) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = bg_f16_to_f32((uint16_t)h);
        double want = half_value((uint16_t)h);
        if (isnan(want)) {
            cr_assert(isnan(f), "0x%04x", h);
            uint16_t back = bg_f32_to_f16(f);
            cr_assert((back & 0x7c00) == 0x7c00 && (back & 0x3ff), "0x%04x", h);
            cr_assert_eq(back & 0x8000, h & 0x8000);
            continue;
        }
        cr_assert_eq((double)f, want, "0x%04x: %a vs %a", h, f, want);
        cr_assert_eq(signbit(f) != 0, (h & 0x8000) != 0);
        cr_assert_eq(bg_f32_to_f16(f), h, "0x%04x", h);
    }
}

Test(dtype, f16_matches_reference_rounding) {
    uint64_t s = 12345;
    for (int i = 0; i < 200000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        /* exponents concentrated on the half range (2^-27 .. 2^17) */
        uint32_t bits = (uint32_t)(s >> 32);
        uint32_t exp = 100 + (uint32_t)((s >> 20) % 45);
        bits = (bits & 0x807fffffu) | (exp << 23);
        if (i % 4 == 0) /* exact ties: low 13 bits = 0x1000 */
            bits = (bits & ~0x1fffu) | 0x1000u;
        float f = bits_f32(bits);
        cr_assert_eq(bg_f32_to_f16(f), ref_to_half(f), "%a", f);
    }
}

Test(dtype, bf16_values) {
    cr_assert_eq(bg_f32_to_bf16(1.0f), 0x3f80);
    cr_assert_eq(bg_f32_to_bf16(-0.0f), 0x8000);
    cr_assert_eq(bg_f32_to_bf16(bits_f32(0x3f808000u)), 0x3f80); /* tie, even */
    cr_assert_eq(bg_f32_to_bf16(bits_f32(0x3f818000u)), 0x3f82); /* tie, odd */
    cr_assert_eq(bg_f32_to_bf16(bits_f32(0x3f808001u)), 0x3f81);
    cr_assert_eq(bg_f32_to_bf16(bits_f32(0x3f807fffu)), 0x3f80);
    cr_assert_eq(bg_f32_to_bf16(FLT_MAX), 0x7f80); /* rounds up to inf */
    cr_assert_eq(bg_f32_to_bf16(bits_f32(0x7f7f7fffu)), 0x7f7f);
    cr_assert_eq(bg_f32_to_bf16(-INFINITY), 0xff80);
    cr_assert_eq(bg_f32_to_bf16(0x1p-149f), 0x0000); /* subnormal tie → 0 */
    cr_assert_eq(bg_f32_to_bf16(bits_f32(0x00018000u)), 0x0002);
    uint32_t nans[] = {0x7f800001u, 0x7fc00000u, 0xff800001u, 0x7f80ffffu};
    for (size_t i = 0; i < 4; i++) {
        uint16_t h = bg_f32_to_bf16(bits_f32(nans[i]));
        cr_assert((h & 0x7f80) == 0x7f80 && (h & 0x7f), "0x%08x", nans[i]);
        cr_assert_eq(h >> 15, nans[i] >> 31);
    }
    cr_assert_eq(f32_bits(bg_bf16_to_f32(0x4049)), 0x40490000u);
}

Test(dtype, bf16_round_trip_all) {
    for (uint32_t h = 0; h < 65536; h++) {
        float f = bg_bf16_to_f32((uint16_t)h);
        cr_assert_eq(f32_bits(f), h << 16);
        uint16_t back = bg_f32_to_bf16(f);
        if (isnan(f))
            cr_assert(isnan(bg_bf16_to_f32(back)) && (back >> 15) == (h >> 15));
        else
            cr_assert_eq(back, h, "0x%04x", h);
    }
}

Test(dtype, load_store_floats) {
    unsigned char buf[64];
    memset(buf, 0xab, sizeof buf);
    bg_store(BRAID_F32, buf, 3, 0.1);
    float f;
    memcpy(&f, buf + 12, 4);
    cr_assert_eq(f, 0.1f);
    cr_assert_eq(bg_load(BRAID_F32, buf, 3), (double)0.1f);
    cr_assert_eq(buf[11], 0xab);
    bg_store(BRAID_F64, buf, 1, 0.1);
    cr_assert_eq(bg_load(BRAID_F64, buf, 1), 0.1);
    bg_store(BRAID_F16, buf, 5, 1.0);
    uint16_t h;
    memcpy(&h, buf + 10, 2);
    cr_assert_eq(h, 0x3c00);
    cr_assert_eq(bg_load(BRAID_F16, buf, 5), 1.0);
    bg_store(BRAID_BF16, buf, 0, -3.0);
    memcpy(&h, buf, 2);
    cr_assert_eq(h, 0xc040);
    cr_assert_eq(bg_load(BRAID_BF16, buf, 0), -3.0);
    bg_store(BRAID_F32, buf, 0, 1e300);
    cr_assert(isinf(bg_load(BRAID_F32, buf, 0)));
    bg_store(BRAID_F32, buf, 0, NAN);
    cr_assert(isnan(bg_load(BRAID_F32, buf, 0)));
    bg_store(BRAID_F16, buf, 0, -1e6);
    cr_assert(isinf(bg_load(BRAID_F16, buf, 0)) &&
              bg_load(BRAID_F16, buf, 0) < 0);
}

Test(dtype, f64_to_f16_goes_through_f32) {
    /* Just above a half tie; f32 rounds it onto the tie, which then goes
     * to even: 1.0, not the 1+2^-10 a direct rounding would give. */
    double v = 1.0 + 0x1p-11 + 0x1p-40;
    uint16_t h;
    bg_store(BRAID_F16, &h, 0, v);
    cr_assert_eq(h, 0x3c00);
    bg_store(BRAID_BF16, &h, 0, 1.0 + 0x1p-8 + 0x1p-40);
    cr_assert_eq(h, 0x3f80);
}

Test(dtype, load_store_i32_semantics) {
    struct {
        double in;
        int32_t out;
    } cases[] = {
        {0, 0},
        {2.7, 2},
        {-2.7, -2},
        {-0.5, 0},
        {3e9, INT32_MAX},
        {-3e9, INT32_MIN},
        {NAN, 0},
        {-NAN, 0},
        {INFINITY, INT32_MAX},
        {-INFINITY, INT32_MIN},
        {2147483647.0, INT32_MAX},
        {2147483647.9, INT32_MAX},
        {2147483646.9, 2147483646},
        {-2147483648.0, INT32_MIN},
        {-2147483648.9, INT32_MIN},
        {-2147483647.9, -2147483647},
        {123456789.0, 123456789},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t buf[2] = {7, 7};
        bg_store(BRAID_I32, buf, 1, cases[i].in);
        cr_assert_eq(buf[1], cases[i].out, "%g -> %d", cases[i].in, buf[1]);
        cr_assert_eq(buf[0], 7);
        cr_assert_eq(bg_load(BRAID_I32, buf, 1), (double)cases[i].out);
    }
}

Test(dtype, load_store_bool_semantics) {
    double in[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, NAN, INFINITY};
    unsigned char want[] = {0, 0, 1, 1, 1, 1, 1, 1};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        unsigned char b[3] = {9, 9, 9};
        bg_store(BRAID_BOOL, b, 1, in[i]);
        cr_assert_eq(b[1], want[i], "%g", in[i]);
        cr_assert(b[0] == 9 && b[2] == 9);
        cr_assert_eq(bg_load(BRAID_BOOL, b, 1), (double)want[i]);
    }
    unsigned char two = 2;
    cr_assert_eq(bg_load(BRAID_BOOL, &two, 0), 1.0);
    /* bool → x is 0/1 through load then store */
    unsigned char one = 1;
    float f;
    bg_store(BRAID_F32, &f, 0, bg_load(BRAID_BOOL, &one, 0));
    cr_assert_eq(f, 1.0f);
}
