/* tests/test_reference.c — the reference evaluator against hand-computed
 * values for every op (small literal inputs, exact expectations). Binding
 * errors and evaluation order are in test_reference_errors.c.
 *
 * Expectations are exact: float results are written as literals or as the
 * float64 formula rounded to the node's dtype, which is the reference's
 * definition. Composites (softmax, layer norm) are checked in f64 against
 * the formula with |diff| ≤ 1e-15·scale, since the node-by-node rounding
 * order may differ from the closed formula in the last bit. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"
#include "tests/support/support.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
#define IN(name, arr) ((braid_input_binding){(name), (arr), sizeof(arr)})

/* ---- helpers ------------------------------------------------------------- */

/* Equal as numbers, NaN equal to NaN (and -0 equal to +0). */
static bool same(double a, double b) {
    return (isnan(a) && isnan(b)) || a == b;
}

static void expect_f32(const float *got, const float *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        cr_expect(same(got[i], want[i]), "[%zu]: got %.9g, want %.9g", i,
                  (double)got[i], (double)want[i]);
}

static void expect_f64(const double *got, const double *want, size_t n,
                       double tol) {
    for (size_t i = 0; i < n; i++)
        cr_expect(same(got[i], want[i]) || fabs(got[i] - want[i]) <= tol,
                  "[%zu]: got %.17g, want %.17g", i, got[i], want[i]);
}

static void expect_i32(const int32_t *got, const int32_t *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(got[i], want[i], "[%zu]: got %d, want %d", i, got[i],
                     want[i]);
}

static void expect_bool(const uint8_t *got, const uint8_t *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(got[i], want[i], "[%zu]: got %u, want %u", i, got[i],
                     want[i]);
}

static void expect_shape(const braid_graph *g, braid_tensor t, int rank,
                         const int64_t *dims) {
    int r;
    int64_t d[BRAID_MAX_RANK];
    cr_assert_eq(braid_tensor_info(g, t, NULL, &r, d), BRAID_OK);
    cr_assert_eq(r, rank);
    for (int k = 0; k < rank; k++)
        cr_assert_eq(d[k], dims[k], "dim %d: %lld, want %lld", k,
                     (long long)d[k], (long long)dims[k]);
}

/* ---- unary --------------------------------------------------------------- */

static const float UNARY_X[6] = {-2.5f, -1.0f, -0.0f, 0.5f, 1.0f, 3.25f};

/* op(x) on UNARY_X (or its absolute value + 0.5 where the op needs a
 * positive operand), against want(x) computed in double, rounded to f32. */
static void check_unary(braid_op op, double (*want)(double), bool positive) {
    braid_graph *g = braid_graph_new(NULL);
    float x[6], out[6], exp_out[6];
    for (int i = 0; i < 6; i++) {
        x[i] = positive ? fabsf(UNARY_X[i]) + 0.5f : UNARY_X[i];
        exp_out[i] = (float)want((double)x[i]);
    }
    braid_tensor in = braid_input(g, "x", BRAID_F32, 1, DIMS(6));
    braid_input_binding b = IN("x", x);
    ts_run_ref(g, braid_unary(g, op, in), &b, 1, out, sizeof out);
    expect_f32(out, exp_out, 6);
    braid_graph_free(g);
}

static double d_rsqrt(double x) {
    return 1.0 / sqrt(x);
}
static double d_sigmoid(double x) {
    return 1.0 / (1.0 + exp(-x));
}
static double d_gelu(double x) {
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}
static double d_silu(double x) {
    return x * d_sigmoid(x);
}
static double d_recip(double x) {
    return 1.0 / x;
}

Test(reference, unary_transcendental) {
    check_unary(BRAID_OP_EXP, exp, false);
    check_unary(BRAID_OP_LOG, log, true);
    check_unary(BRAID_OP_SQRT, sqrt, true);
    check_unary(BRAID_OP_RSQRT, d_rsqrt, true);
    check_unary(BRAID_OP_SIN, sin, false);
    check_unary(BRAID_OP_COS, cos, false);
    check_unary(BRAID_OP_TAN, tan, false);
    check_unary(BRAID_OP_TANH, tanh, false);
    check_unary(BRAID_OP_SIGMOID, d_sigmoid, false);
    check_unary(BRAID_OP_GELU, d_gelu, false);
    check_unary(BRAID_OP_SILU, d_silu, false);
    check_unary(BRAID_OP_ERF, erf, false);
    check_unary(BRAID_OP_RECIPROCAL, d_recip, false);
}

Test(reference, unary_literals) {
    static const struct {
        braid_op op;
        float want[6];
    } cases[] = {
        {BRAID_OP_NEG, {2.5f, 1.0f, 0.0f, -0.5f, -1.0f, -3.25f}},
        {BRAID_OP_ABS, {2.5f, 1.0f, 0.0f, 0.5f, 1.0f, 3.25f}},
        {BRAID_OP_RELU, {0.0f, 0.0f, 0.0f, 0.5f, 1.0f, 3.25f}},
        {BRAID_OP_FLOOR, {-3.0f, -1.0f, 0.0f, 0.0f, 1.0f, 3.0f}},
        {BRAID_OP_CEIL, {-2.0f, -1.0f, 0.0f, 1.0f, 1.0f, 4.0f}},
        {BRAID_OP_SQUARE, {6.25f, 1.0f, 0.0f, 0.25f, 1.0f, 10.5625f}},
        {BRAID_OP_RECIPROCAL,
         {-0.4f, -1.0f, -INFINITY, 2.0f, 1.0f, 1.0f / 3.25f}},
    };
    for (size_t c = 0; c < NELEM(cases); c++) {
        braid_graph *g = braid_graph_new(NULL);
        float out[6];
        braid_tensor x = braid_input(g, "x", BRAID_F32, 1, DIMS(6));
        braid_input_binding b = IN("x", UNARY_X);
        ts_run_ref(g, braid_unary(g, cases[c].op, x), &b, 1, out, sizeof out);
        expect_f32(out, cases[c].want, 6);
        braid_graph_free(g);
    }
}

Test(reference, unary_nan_and_domain_edges) {
    braid_graph *g = braid_graph_new(NULL);
    float x[4] = {NAN, -1.0f, 0.0f, INFINITY}, out[4];
    braid_tensor in = braid_input(g, "x", BRAID_F32, 1, DIMS(4));
    braid_tensor y = braid_add(g, braid_relu(g, in), braid_log(g, in));
    braid_input_binding b = IN("x", x);
    ts_run_ref(g, y, &b, 1, out, sizeof out);
    /* relu keeps NaN; log(-1) = NaN, log(0) = -inf, log(inf) = inf */
    expect_f32(out, (float[]){NAN, NAN, -INFINITY, INFINITY}, 4);
    braid_graph_free(g);
}

Test(reference, unary_i32_wraps) {
    int32_t x[5] = {INT32_MIN, -7, 0, 46341, 65536}, out[5];
    static const struct {
        braid_op op;
        int32_t want[5];
    } cases[] = {
        {BRAID_OP_NEG, {INT32_MIN, 7, 0, -46341, -65536}},
        {BRAID_OP_ABS, {INT32_MIN, 7, 0, 46341, 65536}},
        {BRAID_OP_RELU, {0, 0, 0, 46341, 65536}},
        /* 46341² = 2147488281 wraps; 65536² = 2^32 wraps to 0 */
        {BRAID_OP_SQUARE, {0, 49, 0, -2147479015, 0}},
    };
    for (size_t c = 0; c < NELEM(cases); c++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor in = braid_input(g, "x", BRAID_I32, 1, DIMS(5));
        braid_input_binding b = IN("x", x);
        ts_run_ref(g, braid_unary(g, cases[c].op, in), &b, 1, out, sizeof out);
        expect_i32(out, cases[c].want, 5);
        braid_graph_free(g);
    }
}

/* ---- binary -------------------------------------------------------------- */

Test(reference, add_broadcasts_column_and_row) {
    braid_graph *g = braid_graph_new(NULL);
    float a[2] = {1, 2}, b[3] = {10, 20, 30}, out[6];
    braid_tensor x = braid_input(g, "a", BRAID_F32, 2, DIMS(2, 1));
    braid_tensor y = braid_input(g, "b", BRAID_F32, 1, DIMS(3));
    braid_tensor s = braid_add(g, x, y);
    expect_shape(g, s, 2, DIMS(2, 3));
    braid_input_binding in[2] = {IN("a", a), IN("b", b)};
    ts_run_ref(g, s, in, 2, out, sizeof out);
    expect_f32(out, (float[]){11, 21, 31, 12, 22, 32}, 6);
    braid_graph_free(g);
}

/* op(a, b) over [4] f32 literals. */
static void check_binary_f32(braid_op op, const float *a, const float *b,
                             const float *want) {
    braid_graph *g = braid_graph_new(NULL);
    float out[4];
    braid_tensor x = braid_input(g, "a", BRAID_F32, 1, DIMS(4));
    braid_tensor y = braid_input(g, "b", BRAID_F32, 1, DIMS(4));
    braid_input_binding in[2] = {{"a", a, 16}, {"b", b, 16}};
    ts_run_ref(g, braid_binary(g, op, x, y), in, 2, out, sizeof out);
    expect_f32(out, want, 4);
    braid_graph_free(g);
}

Test(reference, binary_f32_literals) {
    const float a[4] = {1.5f, -2.0f, 9.0f, 0.0f};
    const float b[4] = {2.0f, 4.0f, -3.0f, 0.5f};
    check_binary_f32(BRAID_OP_SUB, a, b, (float[]){-0.5f, -6.0f, 12.0f, -0.5f});
    check_binary_f32(BRAID_OP_MUL, a, b, (float[]){3.0f, -8.0f, -27.0f, 0.0f});
    check_binary_f32(BRAID_OP_DIV, a, b, (float[]){0.75f, -0.5f, -3.0f, 0.0f});
    check_binary_f32(BRAID_OP_MAX, a, b, (float[]){2.0f, 4.0f, 9.0f, 0.5f});
    check_binary_f32(BRAID_OP_MIN, a, b, (float[]){1.5f, -2.0f, -3.0f, 0.0f});
    const float base[4] = {2.0f, 9.0f, 4.0f, 0.0f};
    const float ex[4] = {10.0f, 0.5f, -1.0f, 0.0f};
    check_binary_f32(BRAID_OP_POW, base, ex,
                     (float[]){1024.0f, 3.0f, 0.25f, 1.0f});
    /* x/0 in floats is ±inf or NaN, as IEEE says */
    check_binary_f32(BRAID_OP_DIV, (float[]){1, -1, 0, 2},
                     (float[]){0, 0, 0, INFINITY},
                     (float[]){INFINITY, -INFINITY, NAN, 0});
}

Test(reference, max_min_propagate_nan) {
    const float a[4] = {NAN, 1.0f, NAN, -INFINITY};
    const float b[4] = {1.0f, NAN, NAN, 3.0f};
    check_binary_f32(BRAID_OP_MAX, a, b, (float[]){NAN, NAN, NAN, 3.0f});
    check_binary_f32(BRAID_OP_MIN, a, b, (float[]){NAN, NAN, NAN, -INFINITY});
}

/* op(a, b) over [n] i32 literals. */
static void check_binary_i32(braid_op op, const int32_t *a, const int32_t *b,
                             const int32_t *want, int64_t n) {
    braid_graph *g = braid_graph_new(NULL);
    int32_t out[8];
    braid_tensor x = braid_input(g, "a", BRAID_I32, 1, &n);
    braid_tensor y = braid_input(g, "b", BRAID_I32, 1, &n);
    size_t bytes = (size_t)n * 4;
    braid_input_binding in[2] = {{"a", a, bytes}, {"b", b, bytes}};
    ts_run_ref(g, braid_binary(g, op, x, y), in, 2, out, bytes);
    expect_i32(out, want, (size_t)n);
    braid_graph_free(g);
}

Test(reference, i32_arithmetic_wraps) {
    const int32_t M = INT32_MAX, m = INT32_MIN;
    check_binary_i32(BRAID_OP_ADD, (int32_t[]){M, m, 5, -5},
                     (int32_t[]){1, -1, 7, 2}, (int32_t[]){m, M, 12, -3}, 4);
    check_binary_i32(BRAID_OP_SUB, (int32_t[]){m, M, 5, 0},
                     (int32_t[]){1, -1, 7, m}, (int32_t[]){M, m, -2, m}, 4);
    /* Products of two int32 need up to 62 bits: a double would lose the low
     * ones. (2^31-1)² mod 2^32 = 1; 123456789·987654321 mod 2^32 wraps to
     * -67153019; 100000² mod 2^32 = 1410065408. */
    check_binary_i32(BRAID_OP_MUL, (int32_t[]){M, m, 123456789, 100000, 65536},
                     (int32_t[]){M, m, 987654321, 100000, 65536},
                     (int32_t[]){1, 0, -67153019, 1410065408, 0}, 5);
    check_binary_i32(BRAID_OP_MAX, (int32_t[]){m, 3, -4}, (int32_t[]){M, 2, -4},
                     (int32_t[]){M, 3, -4}, 3);
    check_binary_i32(BRAID_OP_MIN, (int32_t[]){m, 3, -4}, (int32_t[]){M, 2, -4},
                     (int32_t[]){m, 2, -4}, 3);
}

Test(reference, i32_division_truncates_and_defines_zero) {
    const int32_t m = INT32_MIN;
    check_binary_i32(BRAID_OP_DIV, (int32_t[]){7, -7, 7, -7, 5, 0, m, m},
                     (int32_t[]){2, 2, -2, -2, 0, 0, -1, 1},
                     (int32_t[]){3, -3, -3, 3, 0, 0, m, m}, 8);
}

Test(reference, f16_results_round_to_nearest_even) {
    braid_graph *g = braid_graph_new(NULL);
    /* 1 + 2^-11 is halfway between f16 neighbours 1 and 1 + 2^-10: even
     * wins (1); 1 + 3·2^-11 is halfway between 1+2^-10 and 1+2^-9: even
     * wins (1 + 2^-9). */
    uint16_t a[2] = {bg_f32_to_f16(1.0f), bg_f32_to_f16(1.0f + 0x1p-10f)};
    uint16_t b[2] = {bg_f32_to_f16(0x1p-11f), bg_f32_to_f16(0x1p-11f)};
    uint16_t out[2];
    braid_tensor x = braid_input(g, "a", BRAID_F16, 1, DIMS(2));
    braid_tensor y = braid_input(g, "b", BRAID_F16, 1, DIMS(2));
    braid_input_binding in[2] = {IN("a", a), IN("b", b)};
    ts_run_ref(g, braid_add(g, x, y), in, 2, out, sizeof out);
    cr_expect_eq(bg_f16_to_f32(out[0]), 1.0f);
    cr_expect_eq(bg_f16_to_f32(out[1]), 1.0f + 0x1p-9f);
    braid_graph_free(g);
}

/* ---- comparisons and where ----------------------------------------------- */

Test(reference, comparisons) {
    const float a[4] = {1.0f, 2.0f, NAN, 3.0f}, b[4] = {2.0f, 2.0f, NAN, 1.0f};
    static const struct {
        braid_op op;
        uint8_t want[4];
    } cases[] = {
        {BRAID_OP_EQ, {0, 1, 0, 0}}, {BRAID_OP_NE, {1, 0, 1, 1}},
        {BRAID_OP_LT, {1, 0, 0, 0}}, {BRAID_OP_LE, {1, 1, 0, 0}},
        {BRAID_OP_GT, {0, 0, 0, 1}}, {BRAID_OP_GE, {0, 1, 0, 1}},
    };
    for (size_t c = 0; c < NELEM(cases); c++) {
        braid_graph *g = braid_graph_new(NULL);
        uint8_t out[4];
        braid_tensor x = braid_input(g, "a", BRAID_F32, 1, DIMS(4));
        braid_tensor y = braid_input(g, "b", BRAID_F32, 1, DIMS(4));
        braid_input_binding in[2] = {IN("a", a), IN("b", b)};
        ts_run_ref(g, braid_binary(g, cases[c].op, x, y), in, 2, out,
                   sizeof out);
        expect_bool(out, cases[c].want, 4);
        braid_graph_free(g);
    }
}

Test(reference, bool_equality) {
    braid_graph *g = braid_graph_new(NULL);
    uint8_t a[4] = {0, 0, 1, 1}, b[4] = {0, 1, 0, 1}, out[4];
    braid_tensor x = braid_input(g, "a", BRAID_BOOL, 1, DIMS(4));
    braid_tensor y = braid_input(g, "b", BRAID_BOOL, 1, DIMS(4));
    braid_input_binding in[2] = {IN("a", a), IN("b", b)};
    ts_run_ref(g, braid_eq(g, x, y), in, 2, out, sizeof out);
    expect_bool(out, (uint8_t[]){1, 0, 0, 1}, 4);
    braid_graph_free(g);
}

Test(reference, where_broadcasts_all_three) {
    braid_graph *g = braid_graph_new(NULL);
    uint8_t c[2] = {1, 0};
    int32_t a[3] = {1, 2, 3}, b[1] = {-9}, out[6];
    braid_tensor tc = braid_input(g, "c", BRAID_BOOL, 2, DIMS(2, 1));
    braid_tensor ta = braid_input(g, "a", BRAID_I32, 1, DIMS(3));
    braid_tensor tb = braid_input(g, "b", BRAID_I32, 0, NULL);
    braid_tensor w = braid_where(g, tc, ta, tb);
    expect_shape(g, w, 2, DIMS(2, 3));
    braid_input_binding in[3] = {IN("c", c), IN("a", a), IN("b", b)};
    ts_run_ref(g, w, in, 3, out, sizeof out);
    expect_i32(out, (int32_t[]){1, 2, 3, -9, -9, -9}, 6);
    braid_graph_free(g);
}

/* ---- casts --------------------------------------------------------------- */

Test(reference, cast_float_to_i32_truncates_and_saturates) {
    braid_graph *g = braid_graph_new(NULL);
    float x[9] = {1.9f,     -1.9f,     3e9f,  -3e9f,        NAN,
                  INFINITY, -INFINITY, -0.5f, 2147483520.0f};
    int32_t out[9];
    braid_tensor in = braid_input(g, "x", BRAID_F32, 1, DIMS(9));
    braid_input_binding b = IN("x", x);
    ts_run_ref(g, braid_cast(g, in, BRAID_I32), &b, 1, out, sizeof out);
    expect_i32(out,
               (int32_t[]){1, -1, INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN,
                           0, 2147483520},
               9);
    braid_graph_free(g);
}

Test(reference, cast_to_and_from_bool) {
    braid_graph *g = braid_graph_new(NULL);
    float x[5] = {0.0f, -0.0f, NAN, 0.1f, -3.0f};
    float back[5];
    braid_tensor in = braid_input(g, "x", BRAID_F32, 1, DIMS(5));
    braid_tensor b = braid_cast(g, in, BRAID_BOOL);
    braid_input_binding bind = IN("x", x);
    ts_run_ref(g, braid_cast(g, b, BRAID_F32), &bind, 1, back, sizeof back);
    expect_f32(back, (float[]){0, 0, 1, 1, 1}, 5);
    braid_graph_free(g);
}

Test(reference, cast_to_f16_and_bf16_rounds) {
    braid_graph *g = braid_graph_new(NULL);
    /* i32 → f16: 2049 is a tie between 2048 and 2050: even (2048) wins;
     * 65519 rounds down to the largest f16, 65504; 65520 overflows. */
    int32_t xi[3] = {2049, 65519, 65520};
    uint16_t out[3];
    braid_tensor in = braid_input(g, "x", BRAID_I32, 1, DIMS(3));
    braid_input_binding b = IN("x", xi);
    ts_run_ref(g, braid_cast(g, in, BRAID_F16), &b, 1, out, sizeof out);
    cr_expect_eq(bg_f16_to_f32(out[0]), 2048.0f);
    cr_expect_eq(bg_f16_to_f32(out[1]), 65504.0f);
    cr_expect(isinf(bg_f16_to_f32(out[2])));
    braid_graph_free(g);

    /* f64 → f16 goes through f32: 1 + 2^-11 + 2^-40 would round up to
     * 1 + 2^-10 directly, but becomes the tie 1 + 2^-11 in f32, then 1. */
    g = braid_graph_new(NULL);
    double xd[2] = {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-8};
    uint16_t h[2], bf[2];
    braid_tensor d = braid_input(g, "x", BRAID_F64, 1, DIMS(2));
    braid_tensor bft = braid_cast(g, d, BRAID_BF16);
    cr_assert_eq(braid_output(g, "bf", bft), BRAID_OK);
    braid_input_binding bd = IN("x", xd);
    braid_output_binding extra = {"bf", bf, sizeof bf};
    cr_assert_eq(braid_output(g, "y", braid_cast(g, d, BRAID_F16)), BRAID_OK);
    braid_output_binding outs[2] = {{"y", h, sizeof h}, extra};
    cr_assert_eq(braid_reference_run(g, &bd, 1, outs, 2), BRAID_OK, "%s",
                 braid_last_error());
    cr_expect_eq(bg_f16_to_f32(h[0]), 1.0f);
    cr_expect_eq(bg_f16_to_f32(h[1]), 1.0f + 0x1p-8f);
    /* bf16 keeps 8 significant bits: 1 + 2^-8 is a tie, even (1) wins */
    cr_expect_eq(bg_bf16_to_f32(bf[0]), 1.0f);
    cr_expect_eq(bg_bf16_to_f32(bf[1]), 1.0f);
    braid_graph_free(g);
}

/* ---- matmul -------------------------------------------------------------- */

/* [[1,2,3],[4,5,6]] · [[7,8],[9,10],[11,12]] = [[58,64],[139,154]] */
static const float MM_A[6] = {1, 2, 3, 4, 5, 6};
static const float MM_AT[6] = {1, 4, 2, 5, 3, 6};
static const float MM_B[6] = {7, 8, 9, 10, 11, 12};
static const float MM_BT[6] = {7, 9, 11, 8, 10, 12};
static const float MM_C[4] = {58, 64, 139, 154};

static void check_matmul_flags(unsigned flags) {
    braid_graph *g = braid_graph_new(NULL);
    bool ta = flags & BRAID_TRANSPOSE_A, tb = flags & BRAID_TRANSPOSE_B;
    braid_tensor a =
        braid_input(g, "a", BRAID_F32, 2, ta ? DIMS(3, 2) : DIMS(2, 3));
    braid_tensor b =
        braid_input(g, "b", BRAID_F32, 2, tb ? DIMS(2, 3) : DIMS(3, 2));
    braid_tensor c = braid_matmul(g, a, b, flags);
    expect_shape(g, c, 2, DIMS(2, 2));
    float out[4];
    braid_input_binding in[2] = {{"a", ta ? MM_AT : MM_A, sizeof MM_A},
                                 {"b", tb ? MM_BT : MM_B, sizeof MM_B}};
    ts_run_ref(g, c, in, 2, out, sizeof out);
    expect_f32(out, MM_C, 4);
    braid_graph_free(g);
}

Test(reference, matmul_2x3_by_3x2_all_transposes) {
    check_matmul_flags(0);
    check_matmul_flags(BRAID_TRANSPOSE_A);
    check_matmul_flags(BRAID_TRANSPOSE_B);
    check_matmul_flags(BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B);
}

Test(reference, matmul_batch_broadcast) {
    braid_graph *g = braid_graph_new(NULL);
    /* a: two batches [2,1,2,3] (A and 2A); b: three batches [3,2] ...
     * broadcast to [2,3]: b batch k is B + k. */
    float a[12], b[18], out[24];
    for (int i = 0; i < 6; i++) {
        a[i] = MM_A[i];
        a[6 + i] = 2 * MM_A[i];
        for (int k = 0; k < 3; k++)
            b[6 * k + i] = MM_B[i] + (float)k;
    }
    braid_tensor ta = braid_input(g, "a", BRAID_F32, 4, DIMS(2, 1, 2, 3));
    braid_tensor tb = braid_input(g, "b", BRAID_F32, 3, DIMS(3, 3, 2));
    braid_tensor c = braid_matmul(g, ta, tb, 0);
    expect_shape(g, c, 4, DIMS(2, 3, 2, 2));
    braid_input_binding in[2] = {IN("a", a), IN("b", b)};
    ts_run_ref(g, c, in, 2, out, sizeof out);
    /* (s·A)(B + k) = s·(AB + k·rowsum(A)); rowsums of A: 6, 15 */
    const float rows[2] = {6, 15};
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < 4; i++) {
                float want =
                    (float)(s + 1) * (MM_C[i] + (float)k * rows[i / 2]);
                cr_expect_eq(out[(s * 3 + k) * 4 + i], want, "s%d k%d [%d]", s,
                             k, i);
            }
    braid_graph_free(g);
}

Test(reference, matmul_empty_k_gives_zeros) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = braid_input(g, "a", BRAID_F64, 2, DIMS(2, 0));
    braid_tensor b = braid_input(g, "b", BRAID_F64, 2, DIMS(0, 3));
    double out[6];
    braid_input_binding in[2] = {{"a", NULL, 0}, {"b", NULL, 0}};
    ts_run_ref(g, braid_matmul(g, a, b, 0), in, 2, out, sizeof out);
    expect_f64(out, (double[]){0, 0, 0, 0, 0, 0}, 6, 0.0);
    braid_graph_free(g);
}

/* ---- reductions ---------------------------------------------------------- */

static const float R_X[6] = {1, 2, 3, 4, 5, 6}; /* [2,3] */

static braid_tensor reduce(braid_graph *g, braid_op op, braid_tensor x,
                           int naxes, const int *axes, bool keep) {
    switch (op) {
    case BRAID_OP_SUM:
        return braid_sum(g, x, naxes, axes, keep);
    case BRAID_OP_MEAN:
        return braid_mean(g, x, naxes, axes, keep);
    case BRAID_OP_REDUCE_MAX:
        return braid_reduce_max(g, x, naxes, axes, keep);
    default:
        return braid_reduce_min(g, x, naxes, axes, keep);
    }
}

/* op over axis (or every axis when axis < 0) of R_X. */
static void check_reduce(braid_op op, int axis, bool keep, int rank,
                         const int64_t *dims, const float *want, size_t n) {
    braid_graph *g = braid_graph_new(NULL);
    float out[6];
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));
    braid_tensor r = reduce(g, op, x, axis < 0 ? 0 : 1, &axis, keep);
    expect_shape(g, r, rank, dims);
    braid_input_binding b = IN("x", R_X);
    ts_run_ref(g, r, &b, 1, out, n * sizeof(float));
    expect_f32(out, want, n);
    braid_graph_free(g);
}

Test(reference, reductions_with_axes_and_keepdims) {
    check_reduce(BRAID_OP_SUM, 1, true, 2, DIMS(2, 1), (float[]){6, 15}, 2);
    check_reduce(BRAID_OP_SUM, 0, false, 1, DIMS(3), (float[]){5, 7, 9}, 3);
    check_reduce(BRAID_OP_SUM, -1, false, 0, NULL, (float[]){21}, 1);
    check_reduce(BRAID_OP_MEAN, -1, true, 2, DIMS(1, 1), (float[]){3.5f}, 1);
    check_reduce(BRAID_OP_MEAN, 1, false, 1, DIMS(2), (float[]){2, 5}, 2);
    check_reduce(BRAID_OP_REDUCE_MAX, 0, false, 1, DIMS(3), (float[]){4, 5, 6},
                 3);
    check_reduce(BRAID_OP_REDUCE_MIN, 1, true, 2, DIMS(2, 1), (float[]){1, 4},
                 2);
}

Test(reference, reductions_propagate_nan) {
    braid_graph *g = braid_graph_new(NULL);
    float x[6] = {1, NAN, 3, 4, 5, 6}, mx[2], mn[2], sm[2];
    braid_tensor in = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));
    int ax = 1;
    cr_assert_eq(braid_output(g, "mx", braid_reduce_max(g, in, 1, &ax, false)),
                 BRAID_OK);
    cr_assert_eq(braid_output(g, "mn", braid_reduce_min(g, in, 1, &ax, false)),
                 BRAID_OK);
    cr_assert_eq(braid_output(g, "sm", braid_sum(g, in, 1, &ax, false)),
                 BRAID_OK);
    braid_input_binding b = IN("x", x);
    braid_output_binding o[3] = {{"mx", mx, 8}, {"mn", mn, 8}, {"sm", sm, 8}};
    cr_assert_eq(braid_reference_run(g, &b, 1, o, 3), BRAID_OK, "%s",
                 braid_last_error());
    expect_f32(mx, (float[]){NAN, 6}, 2);
    expect_f32(mn, (float[]){NAN, 4}, 2);
    expect_f32(sm, (float[]){NAN, 15}, 2);
    braid_graph_free(g);
}

Test(reference, reductions_over_nothing) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 0));
    braid_tensor xi = braid_input(g, "xi", BRAID_I32, 2, DIMS(2, 0));
    int ax = 1;
    float s[2], m[2], mx[2], mn[2];
    int32_t imx[2], imn[2], is[2];
    cr_assert_eq(braid_output(g, "s", braid_sum(g, x, 1, &ax, false)),
                 BRAID_OK);
    cr_assert_eq(braid_output(g, "m", braid_mean(g, x, 1, &ax, false)),
                 BRAID_OK);
    cr_assert_eq(braid_output(g, "mx", braid_reduce_max(g, x, 1, &ax, false)),
                 BRAID_OK);
    cr_assert_eq(braid_output(g, "mn", braid_reduce_min(g, x, 1, &ax, false)),
                 BRAID_OK);
    cr_assert_eq(braid_output(g, "is", braid_sum(g, xi, 1, &ax, false)),
                 BRAID_OK);
    cr_assert_eq(braid_output(g, "imx", braid_reduce_max(g, xi, 1, &ax, false)),
                 BRAID_OK);
    cr_assert_eq(braid_output(g, "imn", braid_reduce_min(g, xi, 1, &ax, false)),
                 BRAID_OK);
    braid_input_binding in[2] = {{"x", NULL, 0}, {"xi", NULL, 0}};
    braid_output_binding o[7] = {{"s", s, 8},    {"m", m, 8},   {"mx", mx, 8},
                                 {"mn", mn, 8},  {"is", is, 8}, {"imx", imx, 8},
                                 {"imn", imn, 8}};
    cr_assert_eq(braid_reference_run(g, in, 2, o, 7), BRAID_OK, "%s",
                 braid_last_error());
    expect_f32(s, (float[]){0, 0}, 2);
    expect_f32(m, (float[]){NAN, NAN}, 2);
    expect_f32(mx, (float[]){-INFINITY, -INFINITY}, 2);
    expect_f32(mn, (float[]){INFINITY, INFINITY}, 2);
    expect_i32(is, (int32_t[]){0, 0}, 2);
    expect_i32(imx, (int32_t[]){INT32_MIN, INT32_MIN}, 2);
    expect_i32(imn, (int32_t[]){INT32_MAX, INT32_MAX}, 2);
    braid_graph_free(g);
}

Test(reference, i32_sum_wraps) {
    braid_graph *g = braid_graph_new(NULL);
    int32_t x[4] = {INT32_MAX, 1, INT32_MIN, -1}, out[2];
    braid_tensor in = braid_input(g, "x", BRAID_I32, 2, DIMS(2, 2));
    int ax = 1;
    braid_input_binding b = IN("x", x);
    ts_run_ref(g, braid_sum(g, in, 1, &ax, false), &b, 1, out, sizeof out);
    expect_i32(out, (int32_t[]){INT32_MIN, INT32_MAX}, 2);
    braid_graph_free(g);
}

/* ---- shape ops ----------------------------------------------------------- */

Test(reference, reshape_keeps_c_order) {
    braid_graph *g = braid_graph_new(NULL);
    float out[6];
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));
    braid_tensor r = braid_reshape(g, x, 3, DIMS(3, -1, 1));
    expect_shape(g, r, 3, DIMS(3, 2, 1));
    braid_input_binding b = IN("x", R_X);
    ts_run_ref(g, r, &b, 1, out, sizeof out);
    expect_f32(out, R_X, 6);
    braid_graph_free(g);
}

Test(reference, permute_and_transpose) {
    braid_graph *g = braid_graph_new(NULL);
    float out[6];
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));
    braid_input_binding b = IN("x", R_X);
    ts_run_ref(g, braid_transpose(g, x), &b, 1, out, sizeof out);
    expect_f32(out, (float[]){1, 4, 2, 5, 3, 6}, 6);
    braid_graph_free(g);

    /* [2,3,4] with perm [2,0,1]: out[i][j][k] = in[j][k][i] */
    g = braid_graph_new(NULL);
    int32_t v[24], o3[24];
    for (int i = 0; i < 24; i++)
        v[i] = i;
    braid_tensor t = braid_input(g, "x", BRAID_I32, 3, DIMS(2, 3, 4));
    braid_tensor p = braid_permute(g, t, (const int[]){2, 0, 1});
    expect_shape(g, p, 3, DIMS(4, 2, 3));
    braid_input_binding bi = IN("x", v);
    ts_run_ref(g, p, &bi, 1, o3, sizeof o3);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++)
                cr_expect_eq(o3[(i * 2 + j) * 3 + k], j * 12 + k * 4 + i);
    braid_graph_free(g);
}

Test(reference, slice_with_steps_and_negative_bounds) {
    braid_graph *g = braid_graph_new(NULL);
    int32_t x[12], out[4];
    for (int i = 0; i < 12; i++)
        x[i] = i; /* [3,4]: row r holds 4r .. 4r+3 */
    braid_tensor in = braid_input(g, "x", BRAID_I32, 2, DIMS(3, 4));
    /* rows 0 and 2 (step 2), columns -3 .. end (1, 2, 3) with step 2: 1, 3 */
    braid_tensor s = braid_slice(g, in, DIMS(0, -3), DIMS(3, 100), DIMS(2, 2));
    expect_shape(g, s, 2, DIMS(2, 2));
    braid_input_binding b = IN("x", x);
    ts_run_ref(g, s, &b, 1, out, sizeof out);
    expect_i32(out, (int32_t[]){1, 3, 9, 11}, 4);
    braid_graph_free(g);
}

Test(reference, concat_along_an_axis) {
    braid_graph *g = braid_graph_new(NULL);
    float a[2] = {1, 2}, b[4] = {3, 4, 5, 6}, out[6];
    braid_tensor ta = braid_input(g, "a", BRAID_F32, 2, DIMS(2, 1));
    braid_tensor tb = braid_input(g, "b", BRAID_F32, 2, DIMS(2, 2));
    braid_tensor e = braid_input(g, "e", BRAID_F32, 2, DIMS(2, 0));
    braid_tensor c = braid_concat(g, 3, (braid_tensor[]){ta, e, tb}, -1);
    expect_shape(g, c, 2, DIMS(2, 3));
    braid_input_binding in[3] = {IN("a", a), IN("b", b), {"e", NULL, 0}};
    ts_run_ref(g, c, in, 3, out, sizeof out);
    expect_f32(out, (float[]){1, 3, 4, 2, 5, 6}, 6);
    braid_graph_free(g);
}

Test(reference, broadcast_to_repeats) {
    braid_graph *g = braid_graph_new(NULL);
    uint8_t x[3] = {1, 0, 1}, out[6];
    braid_tensor in = braid_input(g, "x", BRAID_BOOL, 2, DIMS(1, 3));
    braid_input_binding b = IN("x", x);
    ts_run_ref(g, braid_broadcast_to(g, in, 3, DIMS(2, 1, 3)), &b, 1, out,
               sizeof out);
    expect_bool(out, (uint8_t[]){1, 0, 1, 1, 0, 1}, 6);
    braid_graph_free(g);
}

/* ---- sources ------------------------------------------------------------- */

Test(reference, fill_iota_constant) {
    braid_graph *g = braid_graph_new(NULL);
    float f[4];
    int32_t i1[6], i0[6];
    uint16_t c[3];
    cr_assert_eq(
        braid_output(g, "f", braid_fill(g, BRAID_F32, 2, DIMS(2, 2), 0.1)),
        BRAID_OK);
    cr_assert_eq(
        braid_output(g, "i1", braid_iota(g, BRAID_I32, 2, DIMS(2, 3), 1)),
        BRAID_OK);
    cr_assert_eq(
        braid_output(g, "i0", braid_iota(g, BRAID_I32, 2, DIMS(2, 3), 0)),
        BRAID_OK);
    uint16_t cd[3] = {bg_f32_to_f16(1.5f), bg_f32_to_f16(-2.0f),
                      bg_f32_to_f16(65504.0f)};
    cr_assert_eq(
        braid_output(g, "c", braid_constant(g, BRAID_F16, 1, DIMS(3), cd)),
        BRAID_OK);
    braid_output_binding o[4] = {{"f", f, sizeof f},
                                 {"i1", i1, sizeof i1},
                                 {"i0", i0, sizeof i0},
                                 {"c", c, sizeof c}};
    cr_assert_eq(braid_reference_run(g, NULL, 0, o, 4), BRAID_OK, "%s",
                 braid_last_error());
    expect_f32(f, (float[]){0.1f, 0.1f, 0.1f, 0.1f}, 4);
    expect_i32(i1, (int32_t[]){0, 1, 2, 0, 1, 2}, 6);
    expect_i32(i0, (int32_t[]){0, 0, 0, 1, 1, 1}, 6);
    cr_expect_eq(memcmp(c, cd, sizeof c), 0);
    braid_graph_free(g);
}

Test(reference, random_ops_equal_bg_random_at) {
    braid_graph *g = braid_graph_new(NULL);
    float u[12];
    double n[12];
    uint16_t h[12];
    cr_assert_eq(braid_output(g, "u",
                              braid_random_uniform(g, BRAID_F32, 2, DIMS(3, 4),
                                                   7, -1.0, 2.0)),
                 BRAID_OK);
    cr_assert_eq(braid_output(g, "n",
                              braid_random_normal(g, BRAID_F64, 1, DIMS(12), 42,
                                                  0.5, 3.0)),
                 BRAID_OK);
    cr_assert_eq(braid_output(g, "h",
                              braid_random_normal(g, BRAID_F16, 1, DIMS(12), 42,
                                                  0.5, 3.0)),
                 BRAID_OK);
    braid_output_binding o[3] = {
        {"u", u, sizeof u}, {"n", n, sizeof n}, {"h", h, sizeof h}};
    cr_assert_eq(braid_reference_run(g, NULL, 0, o, 3), BRAID_OK, "%s",
                 braid_last_error());
    for (int i = 0; i < 12; i++) {
        cr_expect_eq(u[i], (float)bg_random_uniform_at(7, i, -1.0, 2.0));
        cr_expect_eq(n[i], bg_random_normal_at(42, i, 0.5, 3.0));
        cr_expect_eq(
            h[i], bg_f32_to_f16((float)bg_random_normal_at(42, i, 0.5, 3.0)));
    }
    braid_graph_free(g);
}

/* ---- composites ---------------------------------------------------------- */

Test(reference, softmax_f64) {
    braid_graph *g = braid_graph_new(NULL);
    double x[6] = {1, 2, 3, -1, 0, 1000}, out[6];
    braid_tensor in = braid_input(g, "x", BRAID_F64, 2, DIMS(2, 3));
    braid_input_binding b = IN("x", x);
    ts_run_ref(g, braid_softmax(g, in, 1), &b, 1, out, sizeof out);
    double s0 = exp(-2) + exp(-1) + 1;
    expect_f64(out, (double[]){exp(-2) / s0, exp(-1) / s0, 1 / s0, 0, 0, 1}, 6,
               1e-15);
    braid_graph_free(g);
}

Test(reference, layer_norm_f64_with_gamma_beta) {
    braid_graph *g = braid_graph_new(NULL);
    double x[4] = {1, 3, 2, 2}, gm[2] = {2, 3}, bt[2] = {10, 20}, out[4];
    braid_tensor in = braid_input(g, "x", BRAID_F64, 2, DIMS(2, 2));
    braid_tensor tg = braid_input(g, "g", BRAID_F64, 1, DIMS(2));
    braid_tensor tb = braid_input(g, "b", BRAID_F64, 1, DIMS(2));
    braid_input_binding in3[3] = {IN("x", x), IN("g", gm), IN("b", bt)};
    ts_run_ref(g, braid_layer_norm(g, in, tg, tb, 0.25), in3, 3, out,
               sizeof out);
    /* row 0: mean 2, var 1 → (∓1)/sqrt(1.25); row 1: all equal → 0 */
    double r = 1.0 / sqrt(1.25);
    expect_f64(out, (double[]){10 - 2 * r, 20 + 3 * r, 10, 20}, 4, 1e-14);
    braid_graph_free(g);
}
