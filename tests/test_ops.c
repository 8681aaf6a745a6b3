/* tests/test_ops.c — every elementwise op (unary, binary, comparisons,
 * where, cast) on the CPU executor against the reference evaluator: random
 * shapes (several seeds each), the broadcasting edge cases (size-1 dims,
 * scalars, rank mismatch, empty tensors) and every dtype each op accepts.
 * Matmul, reductions, shape ops, sources and composites are in
 * test_ops_structural.c.
 *
 * Tolerances: ts_tolerance per output dtype (f64 1e-9, f32 1e-4, f16 1e-2,
 * bf16 5e-2, atol and rtol alike; i32/bool exact). Inputs are direct graph
 * inputs, which executor and reference read bit for bit, so ops with
 * discontinuities (floor, comparisons, casts to i32) can be fed anything. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"
#include "tests/support/op_cases.h"

#define SEEDS 6

/* Runs g (output y) against the reference; asserts with what + details. */
#define CHECK(g, y, ranges, seed, what)                                        \
    do {                                                                       \
        char msg_[700];                                                        \
        cr_assert(                                                             \
            ts_check_graph((g), (y), (ranges), (seed), msg_, sizeof msg_),     \
            "%s: %s", (what), msg_);                                           \
    } while (0)

/* ---- unary --------------------------------------------------------------- */

static void unary_case(braid_op op, braid_dtype dt, uint64_t seed, ts_range r) {
    uint64_t st = seed * 1000003u + (uint64_t)op;
    ts_shape s =
        seed % 6 == 5 ? ts_scalar_shape() : ts_random_shape(&st, 1, 4, 5);
    if (seed % 6 == 4) s.dims[0] = 0; /* empty */
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor y = braid_unary(g, op, ts_shape_input(g, "x", dt, &s));
    char what[160], sb[64];
    snprintf(what, sizeof what, "%s %s%s seed %llu", bg_op(op)->name,
             braid_dtype_name(dt), ts_shape_str(&s, sb, sizeof sb),
             (unsigned long long)seed);
    CHECK(g, y, &r, seed, what);
    braid_graph_free(g);
}

/* i32 ops get the whole int32 range, so square wraps and neg/abs meet
 * values near INT32_MIN. */
static void unary_all(braid_op op, unsigned dtypes, ts_range r) {
    TS_FOR_DTYPES(dt, dtypes)
    for (uint64_t seed = 0; seed < SEEDS; seed++)
        unary_case(op, dt, seed, dt == BRAID_I32 ? TS_I32_FULL : r);
}

#define UNARY_TEST(name, OP, DTYPES, RANGE)                                    \
    Test(ops, name) {                                                          \
        unary_all(OP, DTYPES, RANGE);                                          \
    }

UNARY_TEST(neg, BRAID_OP_NEG, TS_NUMS, TS_RANGE(-4, 4))
UNARY_TEST(abs, BRAID_OP_ABS, TS_NUMS, TS_RANGE(-4, 4))
UNARY_TEST(exp, BRAID_OP_EXP, TS_FLOATS, TS_RANGE(-5, 5))
UNARY_TEST(log, BRAID_OP_LOG, TS_FLOATS, TS_RANGE(0.05, 8))
UNARY_TEST(sqrt, BRAID_OP_SQRT, TS_FLOATS, TS_RANGE(0, 8))
UNARY_TEST(rsqrt, BRAID_OP_RSQRT, TS_FLOATS, TS_RANGE(0.05, 8))
UNARY_TEST(sin, BRAID_OP_SIN, TS_FLOATS, TS_RANGE(-6, 6))
UNARY_TEST(cos, BRAID_OP_COS, TS_FLOATS, TS_RANGE(-6, 6))
/* away from the poles at ±π/2, where an ulp of x is many of tan(x) */
UNARY_TEST(tan, BRAID_OP_TAN, TS_FLOATS, TS_RANGE(-1.2, 1.2))
UNARY_TEST(tanh, BRAID_OP_TANH, TS_FLOATS, TS_RANGE(-4, 4))
UNARY_TEST(sigmoid, BRAID_OP_SIGMOID, TS_FLOATS, TS_RANGE(-8, 8))
UNARY_TEST(relu, BRAID_OP_RELU, TS_NUMS, TS_RANGE(-4, 4))
UNARY_TEST(gelu, BRAID_OP_GELU, TS_FLOATS, TS_RANGE(-4, 4))
UNARY_TEST(silu, BRAID_OP_SILU, TS_FLOATS, TS_RANGE(-4, 4))
UNARY_TEST(erf, BRAID_OP_ERF, TS_FLOATS, TS_RANGE(-3, 3))
UNARY_TEST(floor, BRAID_OP_FLOOR, TS_FLOATS, TS_RANGE(-4, 4))
UNARY_TEST(ceil, BRAID_OP_CEIL, TS_FLOATS, TS_RANGE(-4, 4))
UNARY_TEST(reciprocal, BRAID_OP_RECIPROCAL, TS_FLOATS,
           ((ts_range){0.25, 4, true, false}))
UNARY_TEST(square, BRAID_OP_SQUARE, TS_NUMS, TS_RANGE(-8, 8))

/* ---- binary -------------------------------------------------------------- */

static void binary_case(braid_op op, braid_dtype dt, uint64_t seed, ts_range ra,
                        ts_range rb) {
    uint64_t st = seed * 7777 + (uint64_t)op;
    ts_shape a, b;
    ts_shape_pair(&st, (int)seed, &a, &b);
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor y = braid_binary(g, op, ts_shape_input(g, "a", dt, &a),
                                  ts_shape_input(g, "b", dt, &b));
    char what[200], sa[64], sb[64];
    snprintf(what, sizeof what, "%s %s%s %s seed %llu", bg_op(op)->name,
             braid_dtype_name(dt), ts_shape_str(&a, sa, sizeof sa),
             ts_shape_str(&b, sb, sizeof sb), (unsigned long long)seed);
    ts_range rs[2] = {ra, rb};
    CHECK(g, y, rs, seed, what);
    braid_graph_free(g);
}

/* Eight seeds: one per shape_pair variant. */
static void binary_all(braid_op op, unsigned dtypes, ts_range fa, ts_range fb,
                       ts_range ia, ts_range ib) {
    TS_FOR_DTYPES(dt, dtypes)
    for (uint64_t seed = 0; seed < 8; seed++)
        binary_case(op, dt, seed, dt == BRAID_I32 ? ia : fa,
                    dt == BRAID_I32 ? ib : fb);
}

Test(ops, add) {
    binary_all(BRAID_OP_ADD, TS_NUMS, TS_RANGE(-4, 4), TS_RANGE(-4, 4),
               TS_I32_FULL, TS_I32_FULL);
}
Test(ops, sub) {
    binary_all(BRAID_OP_SUB, TS_NUMS, TS_RANGE(-4, 4), TS_RANGE(-4, 4),
               TS_I32_FULL, TS_I32_FULL);
}
Test(ops, mul) {
    binary_all(BRAID_OP_MUL, TS_NUMS, TS_RANGE(-4, 4), TS_RANGE(-4, 4),
               TS_I32_FULL, TS_I32_FULL);
}
Test(ops, div) { /* i32 divisors include 0 */
    binary_all(BRAID_OP_DIV, TS_NUMS, TS_RANGE(-4, 4),
               ((ts_range){0.25, 4, true, false}), TS_RANGE(-1000, 1000),
               TS_RANGE(-5, 5));
}
Test(ops, pow) {
    binary_all(BRAID_OP_POW, TS_FLOATS, TS_RANGE(0.25, 3), TS_RANGE(-2, 2),
               TS_RANGE(0, 0), TS_RANGE(0, 0));
}
Test(ops, max) {
    binary_all(BRAID_OP_MAX, TS_NUMS, TS_RANGE(-4, 4), TS_RANGE(-4, 4),
               TS_I32_FULL, TS_I32_FULL);
}
Test(ops, min) {
    binary_all(BRAID_OP_MIN, TS_NUMS, TS_RANGE(-4, 4), TS_RANGE(-4, 4),
               TS_I32_FULL, TS_I32_FULL);
}

Test(ops, i32_division_edges) {
    braid_graph *g = braid_graph_new(NULL);
    int32_t a[6] = {INT32_MIN, INT32_MIN, 7, -7, 0, INT32_MAX};
    int32_t b[6] = {-1, 0, -2, 0, 0, -1};
    braid_tensor ca = braid_constant(g, BRAID_I32, 1, (int64_t[]){6}, a);
    braid_tensor x = braid_input(g, "b", BRAID_I32, 1, (int64_t[]){6});
    braid_tensor y = braid_div(g, ca, x);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    ts_io *io = ts_io_new(g, 1);
    memcpy((void *)io->in[0].data, b, sizeof b);
    cr_assert_eq(ts_run_both(g, io), BRAID_OK, "%s", braid_last_error());
    char msg[256];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    const int32_t *out = io->out[0].data;
    cr_expect_eq(out[0], INT32_MIN);
    cr_expect_eq(out[1], 0);
    cr_expect_eq(out[2], -3);
    ts_io_free(io);
    braid_graph_free(g);
}

Test(ops, nan_propagation) {
    /* NaN through max/min (either side), reductions and relu */
    braid_graph *g = braid_graph_new(NULL);
    float a[4] = {NAN, 1, 2, NAN}, b[4] = {0, NAN, 1, NAN};
    braid_tensor ca = braid_constant(g, BRAID_F32, 1, (int64_t[]){4}, a);
    braid_tensor x = braid_input(g, "b", BRAID_F32, 1, (int64_t[]){4});
    braid_tensor m = braid_add(g, braid_max(g, ca, x), braid_min(g, x, ca));
    braid_tensor r = braid_add(g, braid_reduce_max(g, ca, 0, NULL, false),
                               braid_reduce_min(g, x, 0, NULL, false));
    braid_tensor y = braid_add(g, braid_relu(g, m), r);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    ts_io *io = ts_io_new(g, 1);
    memcpy((void *)io->in[0].data, b, sizeof b);
    cr_assert_eq(ts_run_both(g, io), BRAID_OK, "%s", braid_last_error());
    char msg[256];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    ts_io_free(io);
    braid_graph_free(g);
}

/* ---- comparisons and where ----------------------------------------------- */

/* TS_SMALL_INTS: small integers (as any dtype), so equal elements occur. */

static void compare_all(braid_op op) {
    bool eq = op == BRAID_OP_EQ || op == BRAID_OP_NE;
    TS_FOR_DTYPES(dt, eq ? TS_ALL : TS_NUMS)
    for (uint64_t seed = 0; seed < 8; seed++)
        binary_case(op, dt, seed, TS_SMALL_INTS, TS_SMALL_INTS);
}

Test(ops, eq) {
    compare_all(BRAID_OP_EQ);
}
Test(ops, ne) {
    compare_all(BRAID_OP_NE);
}
Test(ops, lt) {
    compare_all(BRAID_OP_LT);
}
Test(ops, le) {
    compare_all(BRAID_OP_LE);
}
Test(ops, gt) {
    compare_all(BRAID_OP_GT);
}
Test(ops, ge) {
    compare_all(BRAID_OP_GE);
}

Test(ops, where) {
    TS_FOR_DTYPES(dt, TS_ALL)
    for (uint64_t seed = 0; seed < 8; seed++) {
        uint64_t st = seed * 4242 + dt;
        ts_shape c, a, b;
        ts_shape_pair(&st, (int)seed, &c, &a);
        b = a; /* b: a with some dims 1, so all three broadcast */
        for (int k = 0; k < b.rank; k++)
            if (ts_rand_int(&st, 0, 2) == 0) b.dims[k] = 1;
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor y = braid_where(g, ts_shape_input(g, "c", BRAID_BOOL, &c),
                                     ts_shape_input(g, "a", dt, &a),
                                     ts_shape_input(g, "b", dt, &b));
        char what[96];
        snprintf(what, sizeof what, "where %s seed %llu", braid_dtype_name(dt),
                 (unsigned long long)seed);
        CHECK(g, y, NULL, seed, what);
        braid_graph_free(g);
    }
}

/* ---- casts --------------------------------------------------------------- */

/* Values that hit every cast rule: truncation, saturation, NaN, ±inf, f16
 * overflow, ties of f16/bf16 rounding, -0. */
static const double CAST_SPECIALS[] = {
    NAN,          INFINITY, -INFINITY,    3e9, -3e9, 70000.0,
    2.5,          -2.5,     -0.0,         0.0, 0.1,  1.0 + 0x1p-11,
    1.0 + 0x1p-8, 65519.0,  2147483520.0, -1.9};

static void cast_case(braid_dtype from, braid_dtype to, uint64_t seed) {
    uint64_t st = seed * 99991 + from * 7 + to;
    ts_shape s = ts_random_shape(&st, 1, 3, 6);
    s.dims[0] += 4; /* room for the specials */
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor y = braid_cast(g, ts_shape_input(g, "x", from, &s), to);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    ts_io *io = ts_io_new(g, seed);
    void *x = (void *)io->in[0].data;
    int64_t n = (int64_t)(io->in[0].bytes / braid_dtype_size(from));
    /* i64: the i32 range, so that checked narrowings succeed (their range
     * errors are tested in test_dtype_i64.c) */
    if (bg_dtype_is_int(from))
        ts_fill_random(from, x, n, seed, -2147483648.0, 2147483647.0);
    else if (from != BRAID_BOOL)
        ts_fill_random(from, x, n, seed, -300.0, 300.0);
    for (int64_t k = 0; braid_dtype_is_float(from) && k < n; k++)
        if (ts_rand_int(&st, 0, 2) == 0) /* a third of them special */
            bg_store(from, x, k,
                     CAST_SPECIALS[ts_rand_int(
                         &st, 0,
                         (int)(sizeof CAST_SPECIALS / sizeof CAST_SPECIALS[0]) -
                             1)]);
    braid_status s2 = ts_run_both(g, io);
    cr_assert_eq(s2, BRAID_OK, "cast %s->%s: %s", braid_dtype_name(from),
                 braid_dtype_name(to), braid_last_error());
    char msg[512];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "cast %s->%s seed %llu: %s",
              braid_dtype_name(from), braid_dtype_name(to),
              (unsigned long long)seed, msg);
    ts_io_free(io);
    braid_graph_free(g);
}

static void cast_from(braid_dtype from) {
    TS_FOR_DTYPES(to, TS_ALL)
    for (uint64_t seed = 0; seed < 3; seed++)
        cast_case(from, to, seed);
}

Test(ops, cast_from_f32) {
    cast_from(BRAID_F32);
}
Test(ops, cast_from_f16) {
    cast_from(BRAID_F16);
}
Test(ops, cast_from_bf16) {
    cast_from(BRAID_BF16);
}
Test(ops, cast_from_f64) {
    cast_from(BRAID_F64);
}
Test(ops, cast_from_i32) {
    cast_from(BRAID_I32);
}
Test(ops, cast_from_bool) {
    cast_from(BRAID_BOOL);
}
Test(ops, cast_from_i64) {
    cast_from(BRAID_I64);
}
