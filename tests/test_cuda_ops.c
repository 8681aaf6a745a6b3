/* tests/test_cuda_ops.c — every elementwise op (unary, binary, comparisons,
 * where, cast) run on a GPU (every op node hinted to cuda:0, plan compiled
 * for "cpu,cuda:0") against the reference evaluator: random shapes, the
 * broadcasting edge cases (size-1 dims, scalars, rank mismatch, empty
 * tensors), every dtype each op accepts, and fused chains. Skipped without
 * a CUDA device.
 *
 * Tolerances: ts_tolerance per output dtype (f64 1e-9, f32 1e-4, f16 1e-2,
 * bf16 5e-2, atol and rtol alike; i32/bool exact) — the GPU's libm is
 * within a few ulps of the host's, far inside those. */
#include <math.h>

#include "tests/test_cuda_common.h"

#define SEEDS 3

/* ---- unary --------------------------------------------------------------- */

static void unary_case(braid_op op, braid_dtype dt, uint64_t seed, ts_range r) {
    uint64_t st = seed * 1000003u + (uint64_t)op;
    ts_shape s = seed == 2 ? ts_scalar_shape() : ts_random_shape(&st, 1, 4, 9);
    if (seed == 1 && op == BRAID_OP_NEG) s.dims[0] = 0; /* empty */
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor y = braid_unary(g, op, ts_shape_input(g, "x", dt, &s));
    char what[160], sb[64];
    snprintf(what, sizeof what, "%s %s%s seed %llu", bg_op(op)->name,
             braid_dtype_name(dt), ts_shape_str(&s, sb, sizeof sb),
             (unsigned long long)seed);
    TC_CHECK(g, y, &r, seed, what);
    braid_graph_free(g);
}

static void unary_all(braid_op op, unsigned dtypes, ts_range r) {
    TC_REQUIRE_GPU();
    TS_FOR_DTYPES(dt, dtypes)
    for (uint64_t seed = 0; seed < SEEDS; seed++)
        unary_case(op, dt, seed, dt == BRAID_I32 ? TS_I32_FULL : r);
    cr_assert_gt(tc_gpu_cases, 0, "no case ran on the GPU");
}

#define UNARY_TEST(name, OP, DTYPES, RANGE)                                    \
    Test(cuda_ops, name) {                                                     \
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
    TC_CHECK(g, y, rs, seed, what);
    braid_graph_free(g);
}

/* Eight seeds: one per ts_shape_pair variant (equal, scalars, size-1 dims,
 * rank mismatch, empty). */
static void binary_all(braid_op op, unsigned dtypes, ts_range fa, ts_range fb,
                       ts_range ia, ts_range ib) {
    TC_REQUIRE_GPU();
    TS_FOR_DTYPES(dt, dtypes)
    for (uint64_t seed = 0; seed < 8; seed++)
        binary_case(op, dt, seed, dt == BRAID_I32 ? ia : fa,
                    dt == BRAID_I32 ? ib : fb);
    cr_assert_gt(tc_gpu_cases, 0, "no case ran on the GPU");
}

Test(cuda_ops, add) {
    binary_all(BRAID_OP_ADD, TS_NUMS, TS_RANGE(-4, 4), TS_RANGE(-4, 4),
               TS_I32_FULL, TS_I32_FULL);
}
Test(cuda_ops, sub) {
    binary_all(BRAID_OP_SUB, TS_NUMS, TS_RANGE(-4, 4), TS_RANGE(-4, 4),
               TS_I32_FULL, TS_I32_FULL);
}
Test(cuda_ops, mul) {
    binary_all(BRAID_OP_MUL, TS_NUMS, TS_RANGE(-4, 4), TS_RANGE(-4, 4),
               TS_I32_FULL, TS_I32_FULL);
}
Test(cuda_ops, div) { /* i32 divisors include 0 */
    binary_all(BRAID_OP_DIV, TS_NUMS, TS_RANGE(-4, 4),
               ((ts_range){0.25, 4, true, false}), TS_RANGE(-1000, 1000),
               TS_RANGE(-5, 5));
}
Test(cuda_ops, pow) {
    binary_all(BRAID_OP_POW, TS_FLOATS, TS_RANGE(0.25, 3), TS_RANGE(-2, 2),
               TS_RANGE(0, 0), TS_RANGE(0, 0));
}
Test(cuda_ops, max) {
    binary_all(BRAID_OP_MAX, TS_NUMS, TS_RANGE(-4, 4), TS_RANGE(-4, 4),
               TS_I32_FULL, TS_I32_FULL);
}
Test(cuda_ops, min) {
    binary_all(BRAID_OP_MIN, TS_NUMS, TS_RANGE(-4, 4), TS_RANGE(-4, 4),
               TS_I32_FULL, TS_I32_FULL);
}

Test(cuda_ops, i32_division_edges) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    int32_t a[6] = {INT32_MIN, INT32_MIN, 7, -7, 0, INT32_MAX};
    int32_t b[6] = {-1, 0, -2, 0, 0, -1};
    braid_tensor ca = braid_input(g, "a", BRAID_I32, 1, TC_DIMS(6));
    braid_tensor x = braid_input(g, "b", BRAID_I32, 1, TC_DIMS(6));
    braid_tensor y = braid_div(g, ca, x);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    tc_hint_all(g, "cuda:0");
    ts_io *io = ts_io_new(g, 1);
    memcpy((void *)io->in[0].data, a, sizeof a);
    memcpy((void *)io->in[1].data, b, sizeof b);
    braid_compile_options o = tc_options();
    cr_assert_eq(tc_run(g, &o, io, 1, NULL), BRAID_OK, "%s",
                 braid_last_error());
    const int32_t *out = io->out[0].data;
    cr_expect_eq(out[0], INT32_MIN);
    cr_expect_eq(out[1], 0);
    cr_expect_eq(out[2], -3);
    cr_expect_eq(out[3], 0);
    cr_expect_eq(out[5], -INT32_MAX);
    ts_io_free(io);
    braid_graph_free(g);
}

Test(cuda_ops, nan_propagation) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    float a[4] = {NAN, 1, 2, NAN}, b[4] = {0, NAN, 1, NAN};
    braid_tensor ca = braid_input(g, "a", BRAID_F32, 1, TC_DIMS(4));
    braid_tensor x = braid_input(g, "b", BRAID_F32, 1, TC_DIMS(4));
    braid_tensor m = braid_add(g, braid_max(g, ca, x), braid_min(g, x, ca));
    braid_tensor r = braid_add(g, braid_reduce_max(g, ca, 0, NULL, false),
                               braid_reduce_min(g, x, 0, NULL, false));
    braid_tensor y = braid_add(g, braid_relu(g, m), r);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    tc_hint_all(g, "cuda:0");
    ts_io *io = ts_io_new(g, 1);
    memcpy((void *)io->in[0].data, a, sizeof a);
    memcpy((void *)io->in[1].data, b, sizeof b);
    braid_compile_options o = tc_options();
    cr_assert_eq(tc_run(g, &o, io, 1, NULL), BRAID_OK, "%s",
                 braid_last_error());
    char msg[256];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    ts_io_free(io);
    braid_graph_free(g);
}

/* ---- comparisons and where ----------------------------------------------- */

static void compare_all(braid_op op) {
    TC_REQUIRE_GPU();
    bool eq = op == BRAID_OP_EQ || op == BRAID_OP_NE;
    TS_FOR_DTYPES(dt, eq ? TS_ALL : TS_NUMS)
    for (uint64_t seed = 0; seed < 8; seed++)
        binary_case(op, dt, seed, TS_SMALL_INTS, TS_SMALL_INTS);
}

Test(cuda_ops, eq) {
    compare_all(BRAID_OP_EQ);
}
Test(cuda_ops, ne) {
    compare_all(BRAID_OP_NE);
}
Test(cuda_ops, lt) {
    compare_all(BRAID_OP_LT);
}
Test(cuda_ops, le) {
    compare_all(BRAID_OP_LE);
}
Test(cuda_ops, gt) {
    compare_all(BRAID_OP_GT);
}
Test(cuda_ops, ge) {
    compare_all(BRAID_OP_GE);
}

Test(cuda_ops, where) {
    TC_REQUIRE_GPU();
    TS_FOR_DTYPES(dt, TS_ALL)
    for (uint64_t seed = 0; seed < 8; seed++) {
        uint64_t st = seed * 4242 + dt;
        ts_shape c, a, b;
        ts_shape_pair(&st, (int)seed, &c, &a);
        b = a;
        for (int k = 0; k < b.rank; k++)
            if (ts_rand_int(&st, 0, 2) == 0) b.dims[k] = 1;
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor y = braid_where(g, ts_shape_input(g, "c", BRAID_BOOL, &c),
                                     ts_shape_input(g, "a", dt, &a),
                                     ts_shape_input(g, "b", dt, &b));
        char what[96];
        snprintf(what, sizeof what, "where %s seed %llu", braid_dtype_name(dt),
                 (unsigned long long)seed);
        TC_CHECK(g, y, NULL, seed, what);
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
#define NSPECIALS ((int)(sizeof CAST_SPECIALS / sizeof CAST_SPECIALS[0]))

static void cast_case(braid_dtype from, braid_dtype to, uint64_t seed) {
    uint64_t st = seed * 99991 + from * 7 + to;
    ts_shape s = ts_random_shape(&st, 1, 3, 9);
    s.dims[0] += 4;
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = ts_shape_input(g, "x", from, &s);
    braid_tensor y = braid_cast(g, x, to);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    tc_hint_all(g, "cuda:0");
    ts_io *io = ts_io_new(g, seed);
    void *xb = (void *)io->in[0].data;
    int64_t n = (int64_t)(io->in[0].bytes / braid_dtype_size(from));
    /* i64: the i32 range, so checked narrowings (on the cpu) succeed */
    if (bg_dtype_is_int(from))
        ts_fill_random(from, xb, n, seed, -2147483648.0, 2147483647.0);
    else if (from != BRAID_BOOL)
        ts_fill_random(from, xb, n, seed, -300.0, 300.0);
    for (int64_t k = 0; braid_dtype_is_float(from) && k < n; k++)
        if (ts_rand_int(&st, 0, 2) == 0)
            bg_store(from, xb, k,
                     CAST_SPECIALS[ts_rand_int(&st, 0, NSPECIALS - 1)]);
    braid_compile_options o = tc_options();
    braid_status s2 = tc_run(g, &o, io, 1, NULL);
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
    TC_REQUIRE_GPU();
    TS_FOR_DTYPES(to, TS_ALL)
    for (uint64_t seed = 0; seed < 2; seed++)
        cast_case(from, to, seed);
}

Test(cuda_ops, cast_from_f32) {
    cast_from(BRAID_F32);
}
Test(cuda_ops, cast_from_f16) {
    cast_from(BRAID_F16);
}
Test(cuda_ops, cast_from_bf16) {
    cast_from(BRAID_BF16);
}
Test(cuda_ops, cast_from_f64) {
    cast_from(BRAID_F64);
}
Test(cuda_ops, cast_from_i32) {
    cast_from(BRAID_I32);
}
Test(cuda_ops, cast_from_bool) {
    cast_from(BRAID_BOOL);
}
Test(cuda_ops, cast_from_i64) {
    cast_from(BRAID_I64);
}

/* ---- fused chains -------------------------------------------------------- */

/* A chain of elementwise ops with broadcasting and a cast in the middle:
 * the fuse pass makes it one kernel (or a few); results must not change. */
static braid_tensor chain(braid_graph *g, braid_dtype dt, const ts_shape *sa,
                          const ts_shape *sb) {
    braid_tensor a = ts_shape_input(g, "a", dt, sa);
    braid_tensor b = ts_shape_input(g, "b", dt, sb);
    braid_tensor t = braid_mul(g, braid_add(g, a, b), braid_sigmoid(g, a));
    t = braid_sub(g, braid_tanh(g, t), braid_abs(g, b));
    braid_tensor c = braid_cast(g, braid_gt(g, t, a), dt);
    t = braid_where(g, braid_lt(g, a, b), t, braid_mul(g, c, b));
    return braid_add(g, braid_gelu(g, t),
                     braid_exp(g, braid_neg(g, braid_square(g, a))));
}

Test(cuda_ops, fused_chains) {
    TC_REQUIRE_GPU();
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (uint64_t seed = 0; seed < 8; seed++) {
        uint64_t st = seed * 31337 + dt;
        ts_shape a, b;
        ts_shape_pair(&st, (int)seed, &a, &b);
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor y = chain(g, dt, &a, &b);
        char what[96];
        snprintf(what, sizeof what, "chain %s seed %llu", braid_dtype_name(dt),
                 (unsigned long long)seed);
        ts_range r[2] = {TS_RANGE(-2, 2), TS_RANGE(-2, 2)};
        TC_CHECK(g, y, r, seed, what);
        braid_graph_free(g);
    }
    cr_assert_gt(tc_gpu_cases, 0, "no case ran on the GPU");
}

Test(cuda_ops, fused_chain_large_vectorised) {
    /* 2^20 + 3 elements: the 16-byte vector path plus a scalar tail, and
       offsets that are not multiples of 16 for a sliced input */
    TC_REQUIRE_GPU();
    for (int variant = 0; variant < 2; variant++) {
        braid_graph *g = braid_graph_new(NULL);
        int64_t n = (1 << 20) + 3;
        braid_tensor x = braid_input(g, "x", BRAID_F32, 1, TC_DIMS(n + 1));
        braid_tensor b = braid_input(g, "b", BRAID_F32, 1, TC_DIMS(1));
        if (variant == 1)
            x = braid_slice(g, x, TC_DIMS(1), TC_DIMS(n + 1), NULL);
        else
            x = braid_slice(g, x, TC_DIMS(0), TC_DIMS(n), NULL);
        braid_tensor y = braid_add(
            g,
            braid_sqrt(g, braid_add(g, braid_square(g, braid_sin(g, x)),
                                    braid_square(g, braid_cos(g, x)))),
            braid_mul(g, x, b));
        char what[64];
        snprintf(what, sizeof what, "large chain variant %d", variant);
        ts_range r[2] = {TS_RANGE(-3, 3), TS_RANGE(-2, 2)};
        TC_CHECK(g, y, r, (uint64_t)variant + 5, what);
        braid_graph_free(g);
    }
}
