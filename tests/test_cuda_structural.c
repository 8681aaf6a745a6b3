/* tests/test_cuda_structural.c — reductions (axes, keepdims, empty axes,
 * large rows), shape ops, sources, composites (softmax, layer norm) and
 * broadcasting edge cases run on a GPU against the reference evaluator;
 * generators bit for bit against the CPU executor. Skipped without a CUDA
 * device.
 *
 * Tolerances: ts_tolerance per output dtype (f32 1e-4; sums over at most a
 * few thousand terms of magnitude ≤ 2 stay inside it in any order). */
#include <math.h>

#include "tests/test_cuda_common.h"

#define SEEDS 4

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

/* big: shapes up to 64 per dim (rows long enough for warp shuffles and
 * several blocks). */
static void reduce_case(braid_op op, braid_dtype dt, uint64_t seed, bool empty,
                        bool big) {
    uint64_t st = seed * 5555 + (uint64_t)op * 17 + dt;
    ts_shape s =
        ts_random_shape(&st, seed % 5 == 0 ? 0 : 1, big ? 3 : 4, big ? 64 : 5);
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
    ts_range r = dt == BRAID_I32 ? TS_I32_FULL : TS_RANGE(-2, 2);
    TC_CHECK(g, y, &r, seed, what);
    braid_graph_free(g);
}

static void reduce_all(braid_op op) {
    TC_REQUIRE_GPU();
    TS_FOR_DTYPES(dt, op == BRAID_OP_MEAN ? TS_FLOATS : TS_NUMS)
    for (uint64_t seed = 0; seed < 8; seed++)
        reduce_case(op, dt, seed, false, seed >= 5);
    for (uint64_t seed = 1; seed < 3; seed++)
        reduce_case(op, BRAID_F32, seed, true, false);
    cr_assert_gt(tc_gpu_cases, 0, "no case ran on the GPU");
}

Test(cuda_structural, sum) {
    reduce_all(BRAID_OP_SUM);
}
Test(cuda_structural, mean) {
    reduce_all(BRAID_OP_MEAN);
}
Test(cuda_structural, reduce_max) {
    reduce_all(BRAID_OP_REDUCE_MAX);
}
Test(cuda_structural, reduce_min) {
    reduce_all(BRAID_OP_REDUCE_MIN);
}

Test(cuda_structural, reduce_long_rows_and_full) {
    /* one row of 2^16 + 5, the full reduction of 300 × 301, the first axis
       of 1000 × 33: block-level and multi-block paths */
    TC_REQUIRE_GPU();
    static const struct {
        int rank;
        int64_t dims[2];
        int naxes;
        int axis;
    } cases[] = {{1, {65541, 0}, 1, 0},
                 {2, {300, 301}, 0, 0},
                 {2, {1000, 33}, 1, 0},
                 {2, {33, 1000}, 1, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int op = 0; op < 4; op++) {
            static const braid_op ops[] = {BRAID_OP_SUM, BRAID_OP_MEAN,
                                           BRAID_OP_REDUCE_MAX,
                                           BRAID_OP_REDUCE_MIN};
            braid_graph *g = braid_graph_new(NULL);
            braid_tensor x =
                braid_input(g, "x", BRAID_F32, cases[c].rank, cases[c].dims);
            braid_tensor y = reduce(g, ops[op], braid_mul(g, x, x),
                                    cases[c].naxes, &cases[c].axis, false);
            char what[96];
            snprintf(what, sizeof what, "%s case %zu", bg_op(ops[op])->name, c);
            ts_range r = TS_RANGE(-1, 1);
            TC_CHECK(g, y, &r, c * 4 + (size_t)op, what);
            braid_graph_free(g);
        }
}

/* ---- shape ops ----------------------------------------------------------- */

typedef braid_tensor (*shape_op_fn)(braid_graph *g, braid_tensor x,
                                    const ts_shape *s, uint64_t *st);

/* The shape op, then ×2 (or not, for bool) so it feeds GPU compute. */
static void shape_op_all(shape_op_fn fn, const char *name, int min_rank) {
    TC_REQUIRE_GPU();
    TS_FOR_DTYPES(dt, TS_ALL)
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        uint64_t st = seed * 3131 + dt;
        ts_shape s = ts_random_shape(&st, min_rank, 5, 5);
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = ts_shape_input(g, "x", dt, &s);
        /* i64 and bool have no arithmetic: they reach the GPU as they are */
        if (dt != BRAID_BOOL && dt != BRAID_I64) x = braid_add(g, x, x);
        braid_tensor y = fn(g, x, &s, &st);
        char what[128], sb[64];
        snprintf(what, sizeof what, "%s %s%s seed %llu", name,
                 braid_dtype_name(dt), ts_shape_str(&s, sb, sizeof sb),
                 (unsigned long long)seed);
        TC_CHECK(g, y, NULL, seed, what);
        braid_graph_free(g);
    }
}

static braid_tensor do_reshape(braid_graph *g, braid_tensor x,
                               const ts_shape *s, uint64_t *st) {
    int64_t n = 1;
    for (int k = 0; k < s->rank; k++)
        n *= s->dims[k];
    int64_t last = 1;
    for (int64_t c = 1; c <= n; c++)
        if (n % c == 0 && ts_rand_int(st, 0, 2) == 0) last = c;
    int64_t d[3] = {-1, 1, last};
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

static braid_tensor do_slice(braid_graph *g, braid_tensor x, const ts_shape *s,
                             uint64_t *st) {
    int64_t start[BRAID_MAX_RANK], stop[BRAID_MAX_RANK], step[BRAID_MAX_RANK];
    for (int k = 0; k < s->rank; k++) {
        int64_t d = s->dims[k];
        start[k] = ts_rand_int(st, -(int)d - 1, (int)d);
        stop[k] = ts_rand_int(st, -(int)d - 2, (int)d + 2);
        /* negative steps walk backwards (ONNX Slice); stop -d-2 clamps to
         * "through element 0" */
        step[k] = ts_rand_int(st, 1, 3) * (ts_rand_int(st, 0, 1) ? -1 : 1);
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
        p.dims[axis] = ts_rand_int(st, 0, 3);
        char name[16];
        snprintf(name, sizeof name, "p%d", i);
        parts[i] = i == 2 ? x : ts_shape_input(g, name, dt, &p);
    }
    return braid_concat(g, n, parts, axis);
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

Test(cuda_structural, reshape) {
    shape_op_all(do_reshape, "reshape", 0);
}
Test(cuda_structural, permute) {
    shape_op_all(do_permute, "permute", 1);
}
Test(cuda_structural, slice) {
    shape_op_all(do_slice, "slice", 1);
}
Test(cuda_structural, concat) {
    shape_op_all(do_concat, "concat", 1);
}
Test(cuda_structural, broadcast_to) {
    shape_op_all(do_broadcast, "broadcast_to", 0);
}

/* ---- sources ------------------------------------------------------------- */

/* The source on the GPU must equal the CPU executor's bit for bit (and
 * the reference within tolerance). 5000 elements: too big to be folded
 * into a constant at compile time. */
static void source_bits(braid_tensor (*make)(braid_graph *, braid_dtype,
                                             int64_t, uint64_t),
                        braid_dtype dt, uint64_t seed, const char *name) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor src = make(g, dt, 5000, seed);
    cr_assert_eq(braid_output(g, "src", src), BRAID_OK, "%s: %s", name,
                 braid_graph_error(g));
    tc_hint_all(g, "cuda:0");
    ts_io *gpu = ts_io_new(g, seed), *cpu = ts_io_new(g, seed);
    braid_compile_options o = tc_options();
    uint32_t nodes = 0;
    cr_assert_eq(tc_run(g, &o, gpu, 2, &nodes), BRAID_OK, "%s: %s", name,
                 braid_last_error());
    cr_assert_eq(ts_run_both(g, cpu), BRAID_OK, "%s: %s", name,
                 braid_last_error());
    char msg[512];
    cr_assert(ts_io_compare(gpu, msg, sizeof msg), "%s %s: %s", name,
              braid_dtype_name(dt), msg);
    cr_assert(memcmp(gpu->out[0].data, cpu->out[0].data, gpu->out[0].bytes) ==
                  0,
              "%s %s seed %llu: GPU and CPU bits differ", name,
              braid_dtype_name(dt), (unsigned long long)seed);
    cr_assert_gt(nodes, 0, "%s: nothing ran on the GPU", name);
    ts_io_free(gpu);
    ts_io_free(cpu);
    braid_graph_free(g);
}

static braid_tensor make_fill(braid_graph *g, braid_dtype dt, int64_t n,
                              uint64_t seed) {
    static const double values[] = {0.1,   -2.5,    3.0, 1e10,
                                    -1e10, 70000.0, NAN, 0};
    return braid_fill(g, dt, 2, TC_DIMS(n / 10, 10), values[seed % 8]);
}
static braid_tensor make_iota(braid_graph *g, braid_dtype dt, int64_t n,
                              uint64_t seed) {
    return braid_iota(g, dt, 2, TC_DIMS(n / 10, 10), (int)(seed % 2));
}
static braid_tensor make_uniform(braid_graph *g, braid_dtype dt, int64_t n,
                                 uint64_t seed) {
    return braid_random_uniform(g, dt, 1, TC_DIMS(n), seed * 977 + 3,
                                -1.0 - (double)seed, 2.0);
}
static braid_tensor make_normal(braid_graph *g, braid_dtype dt, int64_t n,
                                uint64_t seed) {
    return braid_random_normal(g, dt, 1, TC_DIMS(n), seed * 131 + 9,
                               0.5 * (double)seed, 1.5);
}

#define SOURCE_TEST(name, MAKE, DTYPES)                                        \
    Test(cuda_structural, name) {                                              \
        TC_REQUIRE_GPU();                                                      \
        TS_FOR_DTYPES(dt, DTYPES)                                              \
        for (uint64_t seed = 0; seed < 3; seed++)                              \
            source_bits(MAKE, dt, seed, #name);                                \
    }

SOURCE_TEST(fill_bits, make_fill, TS_ALL)
SOURCE_TEST(iota_bits, make_iota, TS_NUMS)
SOURCE_TEST(random_uniform_bits, make_uniform, TS_FLOATS)
SOURCE_TEST(random_normal_bits, make_normal, TS_FLOATS)

Test(cuda_structural, generator_feeds_compute) {
    /* random data made on the GPU for a GPU consumer */
    TC_REQUIRE_GPU();
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (uint64_t seed = 0; seed < 3; seed++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", dt, 2, TC_DIMS(33, 65));
        braid_tensor r =
            braid_random_normal(g, dt, 2, TC_DIMS(33, 65), seed + 1, 0, 1);
        braid_tensor y = braid_add(g, braid_mul(g, x, r),
                                   braid_iota(g, dt, 2, TC_DIMS(33, 65), 1));
        TC_CHECK(g, y, NULL, seed, "generator feeds compute");
        braid_graph_free(g);
    }
}

/* ---- composites ---------------------------------------------------------- */

Test(cuda_structural, softmax) {
    TC_REQUIRE_GPU();
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        uint64_t st = seed * 2024 + dt;
        ts_shape s = ts_random_shape(&st, 1, 3, seed == 3 ? 200 : 8);
        int axis = ts_rand_int(&st, -s.rank, s.rank - 1);
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor y = braid_softmax(g, ts_shape_input(g, "x", dt, &s), axis);
        char what[96];
        snprintf(what, sizeof what, "softmax %s axis %d seed %llu",
                 braid_dtype_name(dt), axis, (unsigned long long)seed);
        ts_range r = TS_RANGE(-6, 6);
        TC_CHECK(g, y, &r, seed, what);
        braid_graph_free(g);
    }
}

Test(cuda_structural, layer_norm) {
    TC_REQUIRE_GPU();
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (uint64_t seed = 0; seed < SEEDS; seed++) {
        uint64_t st = seed * 4049 + dt;
        ts_shape s = ts_random_shape(&st, 1, 3, 40);
        s.dims[s.rank - 1] += 3;
        ts_shape p = {1, {s.dims[s.rank - 1]}};
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = ts_shape_input(g, "x", dt, &s);
        braid_tensor gm =
            seed & 1 ? ts_shape_input(g, "g", dt, &p) : BRAID_NONE;
        braid_tensor bt =
            seed & 2 ? ts_shape_input(g, "b", dt, &p) : BRAID_NONE;
        double eps = dt == BRAID_F16 || dt == BRAID_BF16 ? 0.1 : 1e-5;
        braid_tensor y = braid_layer_norm(g, x, gm, bt, eps);
        char what[96];
        snprintf(what, sizeof what, "layer_norm %s seed %llu",
                 braid_dtype_name(dt), (unsigned long long)seed);
        TC_CHECK(g, y, NULL, seed, what);
        braid_graph_free(g);
    }
}

/* ---- broadcasting across op kinds ---------------------------------------- */

Test(cuda_structural, broadcast_variants) {
    TC_REQUIRE_GPU();
    static const braid_op ops[] = {BRAID_OP_ADD, BRAID_OP_MUL, BRAID_OP_MAX,
                                   BRAID_OP_EQ};
    for (int variant = 0; variant < 8; variant++)
        TS_FOR_DTYPES(dt, TS_NUMS)
    for (int o = 0; o < 4; o++) {
        uint64_t st = (uint64_t)variant * 5 + (uint64_t)o + dt * 101;
        ts_shape a, b;
        ts_shape_pair(&st, variant, &a, &b);
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
        TC_CHECK(g, y, r, (uint64_t)variant, what);
        braid_graph_free(g);
    }
}
