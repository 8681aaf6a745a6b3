/* graph/dtype.c — f16/bf16 conversions and the load/store semantics every
 * executor must reproduce bit for bit.
 *
 * The conversions work on bit patterns with integer arithmetic only, so they
 * give the same result whatever the host's floating-point environment, and
 * the CUDA code generator can emit the same logic. */
#include "graph/graph.h"

#include <string.h>

static uint32_t bg_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bg_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Rounds m >> shift to nearest, ties to even (shift ≥ 1). */
static uint32_t bg_shift_rne(uint32_t m, unsigned shift) {
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1))) r++;
    return r;
}

float bg_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0) {
        /* zero or subnormal: mant × 2^-24, exact in f32 */
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    if (exp == 31) /* inf or NaN; the payload is kept */
        return bg_bits_f32(sign | 0x7f800000u | (mant << 13));
    return bg_bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t bg_f32_to_f16(float f) {
    uint32_t x = bg_f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    x &= 0x7fffffffu;
    if (x > 0x7f800000u) /* NaN: keep the top payload bits, force quiet */
        return (uint16_t)(sign | 0x7e00 | ((x >> 13) & 0x3ff));
    if (x >= 0x477ff000u) /* ≥ 65520 rounds past 65504: inf */
        return (uint16_t)(sign | 0x7c00);
    int e = (int)(x >> 23) - 127;
    uint32_t mant = x & 0x7fffffu;
    if (e >= -14) {
        /* normal: drop 13 mantissa bits; a carry bumps the exponent */
        uint32_t r = ((uint32_t)(e + 15) << 10 | (mant >> 13));
        uint32_t rem = mant & 0x1fff;
        if (rem > 0x1000 || (rem == 0x1000 && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    /* subnormal half: value / 2^-24 = (mant | 2^23) >> -(e + 1) */
    unsigned shift = (unsigned)(-(e + 1));
    if (shift > 24) /* below half of the smallest subnormal (or f32 denormal) */
        return sign;
    return (uint16_t)(sign | bg_shift_rne(mant | 0x800000u, shift));
}

float bg_bf16_to_f32(uint16_t h) {
    return bg_bits_f32((uint32_t)h << 16);
}

uint16_t bg_f32_to_bf16(float f) {
    uint32_t x = bg_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it NaN and quiet */
        return (uint16_t)((x >> 16) | 0x40);
    /* round to nearest even on the low 16 bits; overflow reaches inf */
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

double bg_load(braid_dtype t, const void *buf, int64_t i) {
    const unsigned char *p = buf;
    size_t at = (size_t)i * braid_dtype_size(t);
    switch (t) {
    case BRAID_F32: {
        float v;
        memcpy(&v, p + at, sizeof v);
        return v;
    }
    case BRAID_F16:
    case BRAID_BF16: {
        uint16_t h;
        memcpy(&h, p + at, sizeof h);
        return t == BRAID_F16 ? bg_f16_to_f32(h) : bg_bf16_to_f32(h);
    }
    case BRAID_F64: {
        double v;
        memcpy(&v, p + at, sizeof v);
        return v;
    }
    case BRAID_I32: {
        int32_t v;
        memcpy(&v, p + at, sizeof v);
        return v;
    }
    case BRAID_BOOL:
        return p[at] != 0;
    case BRAID_I64: {
        int64_t v;
        memcpy(&v, p + at, sizeof v);
        return (double)v;
    }
    case BRAID_DTYPE_COUNT_:
        break;
    }
    return 0.0;
}

/* Truncation toward zero with saturation; NaN gives 0 (the comparisons
 * below are false for NaN, so it must be caught first). */
static int32_t bg_to_i32(double v) {
    if (v != v) return 0;
    if (v >= 2147483647.0) return INT32_MAX;
    if (v <= -2147483648.0) return INT32_MIN;
    return (int32_t)v;
}

/* The same for int64: 2^63 is the first double past INT64_MAX. */
static int64_t bg_to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

void bg_store(braid_dtype t, void *buf, int64_t i, double v) {
    unsigned char *p = buf;
    size_t at = (size_t)i * braid_dtype_size(t);
    switch (t) {
    case BRAID_F32: {
        float f = (float)v;
        memcpy(p + at, &f, sizeof f);
        return;
    }
    case BRAID_F16:
    case BRAID_BF16: {
        /* f64 → f16/bf16 rounds through f32, as every executor does */
        float f = (float)v;
        uint16_t h = t == BRAID_F16 ? bg_f32_to_f16(f) : bg_f32_to_bf16(f);
        memcpy(p + at, &h, sizeof h);
        return;
    }
    case BRAID_F64:
        memcpy(p + at, &v, sizeof v);
        return;
    case BRAID_I32: {
        int32_t x = bg_to_i32(v);
        memcpy(p + at, &x, sizeof x);
        return;
    }
    case BRAID_BOOL:
        p[at] = v != 0; /* NaN != 0 is true */
        return;
    case BRAID_I64: {
        int64_t x = bg_to_i64(v);
        memcpy(p + at, &x, sizeof x);
        return;
    }
    case BRAID_DTYPE_COUNT_:
        return;
    }
}

/* ---- integer dtypes ------------------------------------------------------ */

int64_t bg_load_int(braid_dtype t, const void *buf, int64_t i) {
    const unsigned char *p = buf;
    size_t at = (size_t)i * braid_dtype_size(t);
    switch (t) {
    case BRAID_I64: {
        int64_t v;
        memcpy(&v, p + at, sizeof v);
        return v;
    }
    case BRAID_I32: {
        int32_t v;
        memcpy(&v, p + at, sizeof v);
        return v;
    }
    default:
        return bg_to_i64(bg_load(t, buf, i));
    }
}

void bg_store_int(braid_dtype t, void *buf, int64_t i, int64_t v) {
    unsigned char *p = (unsigned char *)buf + (size_t)i * braid_dtype_size(t);
    if (t == BRAID_I64) {
        memcpy(p, &v, sizeof v);
    } else if (t == BRAID_I32) {
        int32_t x = (int32_t)v;
        memcpy(p, &x, sizeof x);
    }
}

void bg_int_range(braid_dtype t, int64_t *lo, int64_t *hi) {
    switch (t) {
    case BRAID_I32:
        *lo = INT32_MIN, *hi = INT32_MAX;
        return;
    default:
        *lo = INT64_MIN, *hi = INT64_MAX;
        return;
    }
}

bool bg_cast_checked(braid_dtype from, braid_dtype to) {
    return from == BRAID_I64 && to != BRAID_I64 && bg_dtype_is_int(to);
}

bool bg_int_fits(braid_dtype to, int64_t v) {
    int64_t lo, hi;
    bg_int_range(to, &lo, &hi);
    return v >= lo && v <= hi;
}

braid_status bg_cast_range_error(const braid_graph *g, uint32_t id,
                                 int64_t index, int64_t value) {
    const bg_node *n = bg_node_at(g, id);
    braid_dtype from = bg_node_at(g, n->inputs[0])->dtype;
    return bg_set_last_error(
        BRAID_ERR_INVALID_ARGUMENT,
        "node %u%s%s%s (cast %s -> %s): element %lld is %lld, which does not "
        "fit %s (a cast from i64 is range-checked, never wrapped)",
        (unsigned)id, n->name ? " \"" : "", n->name ? n->name : "",
        n->name ? "\"" : "", braid_dtype_name(from),
        braid_dtype_name(n->dtype), (long long)index, (long long)value,
        braid_dtype_name(n->dtype));
}
