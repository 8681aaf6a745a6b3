/* tests/test_ops_structural.c — matmul (transposes, batch broadcasting,
 * BLAS-sized, empty), reductions (axes, keepdims, empty axes), shape ops,
 * sources, composites, broadcasting edge cases across op kinds and output
 * bindings, on the CPU executor against the reference evaluator, for every
 * dtype each op accepts. Elementwise ops are in test_ops.c.
 *
 * Tolerances: ts_tolerance per output dtype (f64 1e-9, f32 1e-4, f16 1e-2,
 * bf16 5e-2, atol and rtol alike; i32/bool exact). Sums and matmuls
 * over at most a few hundred terms of magnitude ≤ 2 stay far inside the f32
 * tolerance. */
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

/* ---- matmul -------------------------------------------------------------- */

/* a [.., M, K] (or [.., K, M]) × b [.., K, N] (or [.., N, K]) with the given
 * batch dims on each side. */
static void matmul_case(braid_dtype dt, const ts_shape *ba, const ts_shape *bb,
                        int64_t M, int64_t K, int64_t N, unsigned flags,
                        uint64_t seed, double mag) {
    ts_shape a = *ba, b = *bb;
    bool ta = flags & BRAID_TRANSPOSE_A, tb = flags & BRAID_TRANSPOSE_B;
    a.dims[a.rank++] = ta ? K : M;
    a.dims[a.rank++] = ta ? M : K;
    b.dims[b.rank++] = tb ? N : K;
    b.dims[b.rank++] = tb ? K : N;
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor y = braid_matmul(g, ts_shape_input(g, "a", dt, &a),
                                  ts_shape_input(g, "b", dt, &b), flags);
    char what[200], sa[64], sb[64];
    snprintf(what, sizeof what, "matmul %s %s x %s flags %u seed %llu",
             braid_dtype_name(dt), ts_shape_str(&a, sa, sizeof sa),
             ts_shape_str(&b, sb, sizeof sb), flags, (unsigned long long)seed);
    ts_range r[2] = {TS_RANGE(-mag, mag), TS_RANGE(-mag, mag)};
    CHECK(g, y, r, seed, what);
    braid_graph_free(g);
}

Test(ops_structural, matmul) {
    ts_shape none = ts_scalar_shape();
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        uint64_t st = seed + dt * 100;
        matmul_case(dt, &none, &none, ts_rand_int(&st, 1, 7),
                    ts_rand_int(&st, 1, 7), ts_rand_int(&st, 1, 7), 0, seed, 2);
    }
}

Test(ops_structural, matmul_transposes) {
    ts_shape none = ts_scalar_shape();
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (unsigned flags = 0; flags < 4; flags++)
        for (uint64_t seed = 0; seed < 3; seed++) {
            uint64_t st = seed * 13 + flags + dt * 100;
            matmul_case(dt, &none, &none, ts_rand_int(&st, 1, 6),
                        ts_rand_int(&st, 1, 6), ts_rand_int(&st, 1, 6), flags,
                        seed, 2);
        }
}

Test(ops_structural, matmul_batch_broadcast) {
    /* batch shapes for a and b: equal, one side none, 1 vs B, rank
     * mismatch, both broadcasting */
    static const ts_shape cases[][2] = {
        {{1, {3}}, {1, {3}}},       {{1, {3}}, {0, {0}}},
        {{0, {0}}, {2, {2, 3}}},    {{2, {1, 3}}, {2, {4, 1}}},
        {{3, {2, 1, 3}}, {1, {3}}}, {{1, {1}}, {2, {2, 2}}},
    };
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint64_t st = c * 31 + dt;
        matmul_case(dt, &cases[c][0], &cases[c][1], ts_rand_int(&st, 1, 5),
                    ts_rand_int(&st, 1, 5), ts_rand_int(&st, 1, 5),
                    (unsigned)(c % 4), c, 2);
    }
}

Test(ops_structural, matmul_large) {
    /* big enough for a BLAS path; small magnitudes keep f32 sums tight */
    ts_shape none = ts_scalar_shape(), batch = {1, {2}};
    TS_FOR_DTYPES(dt, TS_FLOATS) {
        matmul_case(dt, &none, &none, 67, 129, 33, 0, 1, 1);
        matmul_case(dt, &batch, &none, 40, 70, 50, BRAID_TRANSPOSE_B, 2, 1);
        matmul_case(dt, &none, &batch, 64, 64, 64,
                    BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B, 3, 1);
    }
}

Test(ops_structural, matmul_empty) {
    ts_shape none = ts_scalar_shape();
    TS_FOR_DTYPES(dt, TS_FLOATS) {
        matmul_case(dt, &none, &none, 3, 0, 4, 0, 1, 1); /* K = 0: zeros */
        matmul_case(dt, &none, &none, 0, 3, 4, 0, 2, 1);
        matmul_case(dt, &none, &none, 3, 4, 0, BRAID_TRANSPOSE_B, 3, 1);
    }
}

/* ---- reductions ---------------------------------------------------------- */

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

static void reduce_case(braid_op op, braid_dtype dt, uint64_t seed,
                        bool empty) {
    uint64_t st = seed * 5555 + (uint64_t)op * 17 + dt;
    ts_shape s = ts_random_shape(&st, seed % 5 == 0 ? 0 : 1, 4, 5);
    if (empty && s.rank > 0) s.dims[ts_rand_int(&st, 0, s.rank - 1)] = 0;
    int axes[BRAID_MAX_RANK], naxes = 0;
    for (int k = 0; k < s.rank; k++)
        if (ts_rand_int(&st, 0, 1))
            axes[naxes++] = ts_rand_int(&st, 0, 1) ? k : k - s.rank;
    bool keep = ts_rand_int(&st, 0, 1);
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor y =
        reduce(g, op, ts_shape_input(g, "x", dt, &s), naxes, axes, keep);
    char what[160], sb[64];
    snprintf(what, sizeof what, "%s %s%s naxes %d keep %d seed %llu",
             bg_op(op)->name, braid_dtype_name(dt),
             ts_shape_str(&s, sb, sizeof sb), naxes, keep,
             (unsigned long long)seed);
    ts_range r =
        dt == BRAID_I32 ? TS_I32_FULL : TS_RANGE(-2, 2); /* i32 sums wrap */
    CHECK(g, y, &r, seed, what);
    braid_graph_free(g);
}

static void reduce_all(braid_op op) {
    TS_FOR_DTYPES(dt, op == BRAID_OP_MEAN ? TS_FLOATS : TS_NUMS)
    for (uint64_t seed = 0; seed < 8; seed++)
        reduce_case(op, dt, seed, false);
}

Test(ops_structural, sum) {
    reduce_all(BRAID_OP_SUM);
}
Test(ops_structural, mean) {
    reduce_all(BRAID_OP_MEAN);
}
Test(ops_structural, reduce_max) {
    reduce_all(BRAID_OP_REDUCE_MAX);
}
Test(ops_structural, reduce_min) {
    reduce_all(BRAID_OP_REDUCE_MIN);
}

Test(ops_structural, reduce_over_empty_axes) {
    static const braid_op ops[] = {BRAID_OP_SUM, BRAID_OP_MEAN,
                                   BRAID_OP_REDUCE_MAX, BRAID_OP_REDUCE_MIN};
    for (int o = 0; o < 4; o++)
        TS_FOR_DTYPES(dt, ops[o] == BRAID_OP_MEAN ? TS_FLOATS : TS_NUMS)
    for (uint64_t seed = 1; seed < 5; seed++)
        reduce_case(ops[o], dt, seed, true);
}

/* ---- shape ops ----------------------------------------------------------- */

/* Each shape op over every dtype, on one input of a random shape. */
typedef braid_tensor (*shape_op_fn)(braid_graph *g, braid_tensor x,
                                    const ts_shape *s, uint64_t *st);

static void shape_op_all(shape_op_fn fn, const char *name, int min_rank) {
    TS_FOR_DTYPES(dt, TS_ALL)
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        uint64_t st = seed * 3131 + dt;
        ts_shape s = ts_random_shape(&st, min_rank, 5, 4);
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor y = fn(g, ts_shape_input(g, "x", dt, &s), &s, &st);
        char what[128], sb[64];
        snprintf(what, sizeof what, "%s %s%s seed %llu", name,
                 braid_dtype_name(dt), ts_shape_str(&s, sb, sizeof sb),
                 (unsigned long long)seed);
        CHECK(g, y, NULL, seed, what);
        braid_graph_free(g);
    }
}

static braid_tensor do_reshape(braid_graph *g, braid_tensor x,
                               const ts_shape *s, uint64_t *st) {
    /* split the element count into (rest, last) with last a divisor */
    int64_t n = 1, d[3];
    for (int k = 0; k < s->rank; k++)
        n *= s->dims[k];
    int64_t last = 1;
    for (int64_t c = 1; c <= n; c++)
        if (n % c == 0 && ts_rand_int(st, 0, 2) == 0) last = c;
    d[0] = ts_rand_int(st, 0, 1) ? -1 : n / last;
    d[1] = 1;
    d[2] = last;
    return braid_reshape(g, x, 3, d);
}

static braid_tensor do_permute(braid_graph *g, braid_tensor x,
                               const ts_shape *s, uint64_t *st) {
    int perm[BRAID_MAX_RANK];
    for (int k = 0; k < s->rank; k++)
        perm[k] = k;
    for (int k = s->rank - 1; k > 0; k--) {
        int j = ts_rand_int(st, 0, k), t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
    }
    return braid_permute(g, x, perm);
}

static braid_tensor do_transpose(braid_graph *g, braid_tensor x,
                                 const ts_shape *s, uint64_t *st) {
    (void)s;
    (void)st;
    return braid_transpose(g, x);
}

static braid_tensor do_slice(braid_graph *g, braid_tensor x, const ts_shape *s,
                             uint64_t *st) {
    int64_t start[BRAID_MAX_RANK], stop[BRAID_MAX_RANK], step[BRAID_MAX_RANK];
    for (int k = 0; k < s->rank; k++) {
        int64_t d = s->dims[k];
        /* Python-style bounds, negative and past-the-end ones included */
        start[k] = ts_rand_int(st, -(int)d - 1, (int)d);
        stop[k] = ts_rand_int(st, -(int)d, (int)d + 2);
        step[k] = ts_rand_int(st, 1, 3);
    }
    return braid_slice(g, x, start, stop, step);
}

static braid_tensor do_concat(braid_graph *g, braid_tensor x, const ts_shape *s,
                              uint64_t *st) {
    int axis = ts_rand_int(st, 0, s->rank - 1);
    braid_dtype dt;
    braid_tensor_info(g, x, &dt, NULL, NULL);
    braid_tensor parts[4] = {x};
    int n = ts_rand_int(st, 1, 4);
    for (int i = 1; i < n; i++) {
        ts_shape p = *s;
        p.dims[axis] = ts_rand_int(st, 0, 3); /* 0: an empty piece */
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        parts[i] = i == 2 ? x : ts_shape_input(g, name, dt, &p);
    }
    return braid_concat(g, n, parts,
                        ts_rand_int(st, 0, 1) ? axis : axis - s->rank);
}

static braid_tensor do_broadcast(braid_graph *g, braid_tensor x,
                                 const ts_shape *s, uint64_t *st) {
    ts_shape t;
    t.rank = s->rank + ts_rand_int(st, 0, 2);
    int extra = t.rank - s->rank;
    for (int k = 0; k < extra; k++)
        t.dims[k] = ts_rand_int(st, 1, 3);
    for (int k = 0; k < s->rank; k++)
        t.dims[extra + k] =
            s->dims[k] == 1 ? ts_rand_int(st, 1, 3) : s->dims[k];
    return braid_broadcast_to(g, x, t.rank, t.dims);
}

Test(ops_structural, reshape) {
    shape_op_all(do_reshape, "reshape", 0);
}
Test(ops_structural, permute) {
    shape_op_all(do_permute, "permute", 1);
}
Test(ops_structural, transpose) {
    shape_op_all(do_transpose, "transpose", 2);
}
Test(ops_structural, slice) {
    shape_op_all(do_slice, "slice", 1);
}
Test(ops_structural, concat) {
    shape_op_all(do_concat, "concat", 1);
}
Test(ops_structural, broadcast_to) {
    shape_op_all(do_broadcast, "broadcast_to", 0);
}

/* ---- sources ------------------------------------------------------------- */

/* y = source op; also source + x so the source feeds a computation. */
static void source_case(braid_tensor (*make)(braid_graph *, braid_dtype,
                                             const ts_shape *, uint64_t),
                        braid_dtype dt, uint64_t seed, const char *name) {
    uint64_t st = seed * 1234567 + dt;
    ts_shape s =
        seed % 5 == 0 ? ts_scalar_shape() : ts_random_shape(&st, 1, 4, 5);
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor src = make(g, dt, &s, seed);
    cr_assert(braid_tensor_valid(src), "%s: %s", name, braid_graph_error(g));
    braid_tensor y = src;
    if (bg_op_accepts(BRAID_OP_MAX, dt)) {
        cr_assert_eq(braid_output(g, "src", src), BRAID_OK);
        y = braid_max(g, src, ts_shape_input(g, "x", dt, &s));
    }
    char what[128], sb[64];
    snprintf(what, sizeof what, "%s %s%s seed %llu", name, braid_dtype_name(dt),
             ts_shape_str(&s, sb, sizeof sb), (unsigned long long)seed);
    CHECK(g, y, NULL, seed, what);
    braid_graph_free(g);
}

static braid_tensor make_fill(braid_graph *g, braid_dtype dt, const ts_shape *s,
                              uint64_t seed) {
    /* includes values that round, saturate (i32), overflow f16, and NaN */
    static const double values[] = {0.1,   -2.5,    3.0, 1e10,
                                    -1e10, 70000.0, NAN, 0.0};
    return braid_fill(g, dt, s->rank, s->dims, values[seed % 8]);
}

static braid_tensor make_iota(braid_graph *g, braid_dtype dt, const ts_shape *s,
                              uint64_t seed) {
    if (s->rank == 0) /* iota needs an axis */
        return braid_iota(g, dt, 1, (int64_t[]){5}, 0);
    return braid_iota(g, dt, s->rank, s->dims, (int)(seed % (uint64_t)s->rank));
}

static braid_tensor make_uniform(braid_graph *g, braid_dtype dt,
                                 const ts_shape *s, uint64_t seed) {
    return braid_random_uniform(g, dt, s->rank, s->dims, seed * 977 + 3,
                                -1.0 - (double)seed, 2.0);
}

static braid_tensor make_normal(braid_graph *g, braid_dtype dt,
                                const ts_shape *s, uint64_t seed) {
    return braid_random_normal(g, dt, s->rank, s->dims, seed * 131 + 9,
                               0.5 * (double)seed, 1.5);
}

static braid_tensor make_constant(braid_graph *g, braid_dtype dt,
                                  const ts_shape *s, uint64_t seed) {
    int64_t n = 1;
    for (int k = 0; k < s->rank; k++)
        n *= s->dims[k];
    void *buf = malloc((size_t)n * braid_dtype_size(dt) + 1);
    ts_fill_random(dt, buf, n, seed, -3, 3);
    braid_tensor t = braid_constant(g, dt, s->rank, s->dims, buf);
    free(buf);
    return t;
}

#define SOURCE_TEST(name, MAKE, DTYPES)                                        \
    Test(ops_structural, name) {                                               \
        TS_FOR_DTYPES(dt, DTYPES)                                              \
        for (uint64_t seed = 0; seed < 8; seed++)                              \
            source_case(MAKE, dt, seed, #name);                                \
    }

SOURCE_TEST(fill, make_fill, TS_ALL)
SOURCE_TEST(iota, make_iota, TS_NUMS)
SOURCE_TEST(random_uniform, make_uniform, TS_FLOATS)
SOURCE_TEST(random_normal, make_normal, TS_FLOATS)
SOURCE_TEST(constant, make_constant, TS_ALL)

/* ---- composites ---------------------------------------------------------- */

Test(ops_structural, softmax) {
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        uint64_t st = seed * 2024 + dt;
        ts_shape s = ts_random_shape(&st, 1, 4, 6);
        int axis = ts_rand_int(&st, -s.rank, s.rank - 1);
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor y = braid_softmax(g, ts_shape_input(g, "x", dt, &s), axis);
        char what[96];
        snprintf(what, sizeof what, "softmax %s axis %d seed %llu",
                 braid_dtype_name(dt), axis, (unsigned long long)seed);
        ts_range r = TS_RANGE(-6, 6);
        CHECK(g, y, &r, seed, what);
        braid_graph_free(g);
    }
}

Test(ops_structural, layer_norm) {
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        uint64_t st = seed * 4049 + dt;
        ts_shape s = ts_random_shape(&st, 1, 3, 6);
        s.dims[s.rank - 1] += 3; /* rows of at least 4 elements */
        ts_shape p = {1, {s.dims[s.rank - 1]}};
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = ts_shape_input(g, "x", dt, &s);
        braid_tensor gm =
            seed & 1 ? ts_shape_input(g, "g", dt, &p) : BRAID_NONE;
        braid_tensor bt =
            seed & 2 ? ts_shape_input(g, "b", dt, &p) : BRAID_NONE;
        /* half-precision rows whose elements nearly agree would amplify a
         * one-ulp difference in the mean by 1/sqrt(var + eps): a larger eps
         * keeps that bounded */
        double eps = dt == BRAID_F16 || dt == BRAID_BF16 ? 0.1 : 1e-5;
        braid_tensor y = braid_layer_norm(g, x, gm, bt, eps);
        char what[96];
        snprintf(what, sizeof what, "layer_norm %s seed %llu",
                 braid_dtype_name(dt), (unsigned long long)seed);
        CHECK(g, y, NULL, seed, what);
        braid_graph_free(g);
    }
}

/* ---- broadcasting edge cases across op kinds ----------------------------- */

/* add, mul, max, eq and where over one shape_pair variant. */
static void broadcast_variant(int variant) {
    static const braid_op ops[] = {BRAID_OP_ADD, BRAID_OP_MUL, BRAID_OP_MAX,
                                   BRAID_OP_EQ};
    TS_FOR_DTYPES(dt, TS_NUMS)
    for (uint64_t seed = 0; seed < 4; seed++) {
        for (int o = 0; o < 4; o++) {
            uint64_t st = seed * 77 + (uint64_t)variant * 5 + (uint64_t)o;
            ts_shape a, b;
            ts_shape_pair(&st, variant, &a, &b);
            /* a chain: op(a, b) then where(cond, result, a) */
            braid_graph *g = braid_graph_new(NULL);
            braid_tensor ta = ts_shape_input(g, "a", dt, &a),
                         tb = ts_shape_input(g, "b", dt, &b);
            braid_tensor y = braid_binary(g, ops[o], ta, tb);
            if (ops[o] != BRAID_OP_EQ)
                y = braid_where(g, braid_gt(g, ta, tb), y, ta);
            char what[160], sa[64], sb[64];
            snprintf(what, sizeof what, "%s %s%s %s", bg_op(ops[o])->name,
                     braid_dtype_name(dt), ts_shape_str(&a, sa, sizeof sa),
                     ts_shape_str(&b, sb, sizeof sb));
            ts_range r[2] = {TS_SMALL_INTS, TS_SMALL_INTS};
            CHECK(g, y, r, seed, what);
            braid_graph_free(g);
        }
    }
}

Test(ops_structural, broadcast_scalars) {
    broadcast_variant(1);
    broadcast_variant(2);
    broadcast_variant(5);
}
Test(ops_structural, broadcast_size_one_dims) {
    broadcast_variant(3);
    broadcast_variant(6);
}
Test(ops_structural, broadcast_rank_mismatch) {
    broadcast_variant(4);
}
Test(ops_structural, broadcast_empty) {
    broadcast_variant(7);
}

/* ---- outputs ------------------------------------------------------------- */

Test(ops_structural, outputs_input_and_shared_node) {
    braid_graph *g = braid_graph_new(NULL);
    ts_shape s = {2, {3, 4}};
    braid_tensor x = ts_shape_input(g, "x", BRAID_F32, &s);
    braid_tensor e = braid_exp(g, x);
    cr_assert_eq(braid_output(g, "x_out", x), BRAID_OK);
    cr_assert_eq(braid_output(g, "e1", e), BRAID_OK);
    cr_assert_eq(braid_output(g, "e2", e), BRAID_OK);
    CHECK(g, braid_sum(g, e, 0, NULL, false), NULL, 3, "outputs");
    braid_graph_free(g);
}
