/* tests/test_cpu_kernels.c — every CPU kernel against the reference
 * evaluator: each op on each dtype it accepts, with broadcasting, strides,
 * empty tensors and sizes large enough to split over threads.
 *
 * Tolerances: ts_tolerance per dtype (f32 1e-4 abs + rel, f16 1e-2, bf16
 * 5e-2, f64 1e-9; i32 and bool exact). Generators, shape ops, comparisons,
 * where and casts must match bit for bit. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "braid/braid.h"
#include "tests/support/support.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})
#define AXES(...) ((const int[]){__VA_ARGS__})

static const braid_dtype float_types[] = {BRAID_F32, BRAID_F64, BRAID_F16,
                                          BRAID_BF16};

/* Input i of io refilled from [lo, hi] (seeded by i). */
static void refill(ts_io *io, const braid_graph *g, uint32_t i, double lo,
                   double hi) {
    const char *name;
    braid_tensor t;
    braid_dtype dt;
    cr_assert_eq(braid_graph_input(g, i, &name, &t), BRAID_OK);
    braid_tensor_info(g, t, &dt, NULL, NULL);
    ts_fill_random(dt, (void *)io->in[i].data, braid_tensor_numel(g, t),
                   1000 + i, lo, hi);
}

/* Runs io through a plan with threads workers and the reference. exact:
 * every output must match bit for bit (else ts_tolerance). */
static void run_compare(const braid_graph *g, ts_io *io, int threads,
                        bool exact) {
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    braid_plan *p;
    braid_exec *e;
    ts_cpu_exec(g, threads, &p, &e);
    cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s", braid_last_error());
    char msg[512];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    for (uint32_t i = 0; exact && i < io->noutputs; i++) {
        braid_dtype t = io->out_dtype[i];
        for (int64_t k = 0; k < io->out_numel[i]; k++) {
            double x = bg_load(t, io->out[i].data, k);
            double r = bg_load(t, io->ref[i].data, k);
            cr_assert(x == r || (isnan(x) && isnan(r)),
                      "output %s element %lld: %.17g vs reference %.17g",
                      io->out[i].name, (long long)k, x, r);
        }
    }
    braid_exec_free(e);
    braid_plan_free(p);
}

/* Fresh io for g, run with 1 and with 3 threads. */
static void check(const braid_graph *g, uint64_t seed, bool exact,
                  void (*prep)(ts_io *, const braid_graph *)) {
    for (int threads = 1; threads <= 3; threads += 2) {
        ts_io *io = ts_io_new(g, seed);
        cr_assert_not_null(io);
        if (prep) prep(io, g);
        run_compare(g, io, threads, exact);
        ts_io_free(io);
    }
}

/* ---- elementwise --------------------------------------------------------- */

/* Input 1 ("p") positive, for log, sqrt, rsqrt, pow, reciprocal, div. */
static void positive_second(ts_io *io, const braid_graph *g) {
    refill(io, g, 1, 0.25, 2.0);
}

Test(cpu_kernels, unary_float_ops) {
    static const braid_op any[] = {
        BRAID_OP_NEG,  BRAID_OP_ABS,   BRAID_OP_EXP,     BRAID_OP_SIN,
        BRAID_OP_COS,  BRAID_OP_TANH,  BRAID_OP_SIGMOID, BRAID_OP_RELU,
        BRAID_OP_GELU, BRAID_OP_SILU,  BRAID_OP_ERF,     BRAID_OP_FLOOR,
        BRAID_OP_CEIL, BRAID_OP_SQUARE};
    static const braid_op pos[] = {BRAID_OP_LOG, BRAID_OP_SQRT, BRAID_OP_RSQRT,
                                   BRAID_OP_RECIPROCAL};
    for (size_t d = 0; d < 4; d++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x =
            braid_input(g, "x", float_types[d], 3, DIMS(3, 41, 67));
        braid_tensor p = braid_input(g, "p", float_types[d], 2, DIMS(5, 7));
        char name[32];
        for (size_t i = 0; i < sizeof any / sizeof *any; i++) {
            snprintf(name, sizeof name, "a%zu", i);
            braid_output(g, name, braid_unary(g, any[i], x));
        }
        for (size_t i = 0; i < sizeof pos / sizeof *pos; i++) {
            snprintf(name, sizeof name, "p%zu", i);
            braid_output(g, name, braid_unary(g, pos[i], p));
        }
        check(g, 10 + d, false, positive_second);
        braid_graph_free(g);
    }
}

Test(cpu_kernels, unary_i32_ops_wrap) {
    braid_graph *g = braid_graph_new(NULL);
    int32_t edge[] = {INT32_MIN, INT32_MAX, -1, 0, 1, 46341, -46341, 7};
    braid_tensor c = braid_constant(g, BRAID_I32, 1, DIMS(8), edge);
    braid_tensor x = braid_input(g, "x", BRAID_I32, 2, DIMS(90, 100));
    const braid_op ops[] = {BRAID_OP_NEG, BRAID_OP_ABS, BRAID_OP_SQUARE,
                            BRAID_OP_RELU};
    char name[32];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "x%d", i);
        braid_output(g, name, braid_unary(g, ops[i], x));
        snprintf(name, sizeof name, "c%d", i);
        braid_output(g, name, braid_unary(g, ops[i], c));
    }
    check(g, 3, true, NULL);
    /* wraparound, computed by hand */
    ts_io *io = ts_io_new(g, 3);
    run_compare(g, io, 2, true);
    const int32_t *neg = io->out[1].data, *sq = io->out[5].data;
    cr_assert_eq(neg[0], INT32_MIN);
    cr_assert_eq(neg[1], -INT32_MAX);
    cr_assert_eq(sq[5], (int32_t)(46341u * 46341u));
    ts_io_free(io);
    braid_graph_free(g);
}

Test(cpu_kernels, binary_ops_broadcast) {
    static const braid_dtype types[] = {BRAID_F32, BRAID_F64, BRAID_F16,
                                        BRAID_BF16, BRAID_I32};
    static const braid_op ops[] = {BRAID_OP_ADD, BRAID_OP_SUB, BRAID_OP_MUL,
                                   BRAID_OP_DIV, BRAID_OP_MAX, BRAID_OP_MIN,
                                   BRAID_OP_POW};
    for (size_t d = 0; d < 5; d++) {
        braid_dtype t = types[d];
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor a = braid_input(g, "a", t, 3, DIMS(4, 1, 2100));
        braid_tensor b = braid_input(g, "b", t, 2, DIMS(3, 1));
        braid_tensor s = braid_input(g, "s", t, 0, NULL);
        braid_tensor a2 = braid_input(g, "a2", t, 3, DIMS(4, 1, 2100));
        char name[32];
        for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
            if (ops[i] == BRAID_OP_POW && t == BRAID_I32) continue;
            braid_tensor base = ops[i] == BRAID_OP_POW ? b : a;
            braid_tensor expo = ops[i] == BRAID_OP_POW ? a : b;
            snprintf(name, sizeof name, "ab%zu", i);
            braid_output(g, name, braid_binary(g, ops[i], base, expo));
            snprintf(name, sizeof name, "sa%zu", i);
            braid_output(g, name, braid_binary(g, ops[i], s, a2));
            snprintf(name, sizeof name, "as%zu", i);
            braid_output(g, name, braid_binary(g, ops[i], a2, s));
            snprintf(name, sizeof name, "aa%zu", i);
            braid_output(g, name, braid_binary(g, ops[i], a, a2));
        }
        check(g, 20 + d, t == BRAID_I32, positive_second);
        braid_graph_free(g);
    }
}

Test(cpu_kernels, i32_division_edges) {
    braid_graph *g = braid_graph_new(NULL);
    int32_t av[] = {7, -7, 7, -7, INT32_MIN, INT32_MIN, 5, 0};
    int32_t bv[] = {2, 2, -2, -2, -1, 1, 0, 0};
    braid_tensor a = braid_constant(g, BRAID_I32, 1, DIMS(8), av);
    braid_tensor b = braid_constant(g, BRAID_I32, 1, DIMS(8), bv);
    braid_output(g, "q", braid_div(g, a, b));
    braid_output(g, "s", braid_add(g, a, a));
    ts_io *io = ts_io_new(g, 1);
    run_compare(g, io, 1, true);
    const int32_t *q = io->out[0].data, *s = io->out[1].data;
    const int32_t want[] = {3, -3, -3, 3, INT32_MIN, INT32_MIN, 0, 0};
    cr_assert_arr_eq(q, want, sizeof want);
    cr_assert_eq(s[4], 0); /* INT32_MIN + INT32_MIN wraps */
    ts_io_free(io);
    braid_graph_free(g);
}

/* Small integers (as any dtype) so comparisons see equal values often. */
static void small_integers(ts_io *io, const braid_graph *g) {
    for (uint32_t i = 0; i < io->ninputs; i++)
        refill(io, g, i, -2, 2);
    for (uint32_t i = 0; i < io->ninputs; i++) {
        const char *name;
        braid_tensor t;
        braid_dtype dt;
        braid_graph_input(g, i, &name, &t);
        braid_tensor_info(g, t, &dt, NULL, NULL);
        for (int64_t k = 0; k < braid_tensor_numel(g, t); k++)
            bg_store(dt, (void *)io->in[i].data, k,
                     round(bg_load(dt, io->in[i].data, k)));
    }
}

Test(cpu_kernels, comparisons_and_where) {
    static const braid_dtype types[] = {BRAID_F32,  BRAID_F64, BRAID_F16,
                                        BRAID_BF16, BRAID_I32, BRAID_BOOL};
    for (size_t d = 0; d < 6; d++) {
        braid_dtype t = types[d];
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor a = braid_input(g, "a", t, 2, DIMS(300, 40));
        braid_tensor b = braid_input(g, "b", t, 1, DIMS(40));
        braid_tensor c = braid_input(g, "c", BRAID_BOOL, 3, DIMS(2, 1, 40));
        char name[32];
        for (braid_op op = BRAID_OP_EQ; op <= BRAID_OP_GE; op++) {
            if (t == BRAID_BOOL && op > BRAID_OP_NE) break;
            snprintf(name, sizeof name, "c%d", (int)op);
            braid_output(g, name, braid_binary(g, op, a, b));
        }
        braid_output(g, "w", braid_where(g, c, a, b));
        braid_output(g, "w2", braid_where(g, braid_ne(g, a, b), b, a));
        check(g, 40 + d, true, small_integers);
        braid_graph_free(g);
    }
}

/* pow by a uniform 2 or 3 takes x·x / x·x·x (runtime/cpu/
 * cpu_kernels_elementwise.c): random bases of both signs against the
 * reference, alone and fused into a chain, on every float dtype; then the
 * special values exactly as pow gives them. */
Test(cpu_kernels, pow_by_two_and_three) {
    for (size_t d = 0; d < 4; d++) {
        braid_dtype t = float_types[d];
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", t, 3, DIMS(3, 41, 67));
        char name[32];
        for (int e = 2; e <= 3; e++) {
            braid_tensor c = braid_fill(g, t, 0, NULL, e);
            braid_tensor y = braid_pow(g, x, c);
            snprintf(name, sizeof name, "pow%d", e);
            braid_output(g, name, y);
            snprintf(name, sizeof name, "fused%d", e);
            braid_output(
                g, name,
                braid_tanh(
                    g, braid_mul(g, y, braid_fill(g, t, 0, NULL, 0.044715))));
        }
        check(g, 40 + d, false, NULL);
        braid_graph_free(g);
    }
    braid_graph *g = braid_graph_new(NULL);
    static const float xv[] = {-0.0f, 0.0f,   INFINITY, -INFINITY,
                               NAN,   1e-30f, -1e30f,   -2.5f};
    braid_tensor x = braid_constant(g, BRAID_F32, 1, DIMS(8), xv);
    braid_output(g, "sq",
                 braid_pow(g, x, braid_fill(g, BRAID_F32, 0, NULL, 2)));
    braid_output(g, "cube",
                 braid_pow(g, x, braid_fill(g, BRAID_F32, 0, NULL, 3)));
    ts_io *io = ts_io_new(g, 1);
    run_compare(g, io, 1, false);
    for (int k = 0; k < 2; k++) {
        const float *o = io->out[k].data;
        for (int i = 0; i < 8; i++) {
            float want = powf(xv[i], (float)(k + 2));
            cr_expect(o[i] == want ? signbit(o[i]) == signbit(want)
                                   : isnan(o[i]) && isnan(want),
                      "pow(%g, %d): %g, powf gives %g", (double)xv[i], k + 2,
                      (double)o[i], (double)want);
        }
    }
    ts_io_free(io);
    braid_graph_free(g);
}

Test(cpu_kernels, nan_propagation) {
    braid_graph *g = braid_graph_new(NULL);
    float av[] = {NAN, 1, NAN, -INFINITY, 2}, bv[] = {1, NAN, NAN, 3, 2};
    braid_tensor a = braid_constant(g, BRAID_F32, 1, DIMS(5), av);
    braid_tensor b = braid_constant(g, BRAID_F32, 1, DIMS(5), bv);
    braid_output(g, "max", braid_max(g, a, b));
    braid_output(g, "min", braid_min(g, a, b));
    braid_output(g, "relu", braid_relu(g, a));
    braid_output(g, "rmax", braid_reduce_max(g, a, 0, NULL, false));
    braid_output(g, "rmin", braid_reduce_min(g, b, 0, NULL, false));
    braid_output(g, "eq", braid_eq(g, a, b));
    ts_io *io = ts_io_new(g, 1);
    run_compare(g, io, 2, true);
    const float *mx = io->out[0].data;
    cr_assert(isnan(mx[0]) && isnan(mx[1]) && isnan(mx[2]));
    cr_assert_eq(mx[3], 3.0f);
    cr_assert(isnan(*(const float *)io->out[3].data));
    ts_io_free(io);
    braid_graph_free(g);
}

Test(cpu_kernels, casts_between_every_dtype) {
    /* Values that test rounding, truncation, saturation, NaN and inf. */
    static const double vals[] = {0,         -0.0,         0.5,
                                  -0.5,      1.5,          -2.5,
                                  2.5,       1e10,         -1e10,
                                  65504,     70000,        NAN,
                                  INFINITY,  -INFINITY,    3.14159265358979,
                                  1e-8,      2147483647.0, -2147483648.0,
                                  123456789, -7.99,        1.0009765625,
                                  257};
    const int n = sizeof vals / sizeof *vals;
    for (int from = 0; from < BRAID_DTYPE_COUNT_; from++) {
        unsigned char buf[sizeof vals];
        /* i64: values that fit i32, so the checked narrowing succeeds
         * (its range errors: test_dtype_i64.c) */
        for (int i = 0; i < n; i++)
            bg_store((braid_dtype)from, buf, i,
                     from == BRAID_I64 && fabs(vals[i]) > 2147483647.0
                         ? 0.0
                         : vals[i]);
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor c = braid_constant(g, (braid_dtype)from, 1, DIMS(n), buf);
        braid_tensor x =
            braid_input(g, "x", (braid_dtype)from, 2, DIMS(100, 100));
        char name[32];
        for (int to = 0; to < BRAID_DTYPE_COUNT_; to++) {
            snprintf(name, sizeof name, "c%d", to);
            braid_output(g, name, braid_cast(g, c, (braid_dtype)to));
            snprintf(name, sizeof name, "x%d", to);
            braid_output(g, name, braid_cast(g, x, (braid_dtype)to));
        }
        check(g, 60 + (uint64_t)from, true, NULL);
        braid_graph_free(g);
    }
}

/* ---- reductions ---------------------------------------------------------- */

Test(cpu_kernels, reductions_over_axis_sets) {
    static const braid_dtype types[] = {BRAID_F32, BRAID_F64, BRAID_F16,
                                        BRAID_BF16, BRAID_I32};
    static const int sets[][5] = {{1, 0},       {1, 1},    {1, 2},    {1, 3},
                                  {2, 0, 2},    {2, 1, 3}, {2, 2, 3}, {2, 0, 1},
                                  {3, 0, 1, 3}, {0}};
    static const braid_op ops[] = {BRAID_OP_SUM, BRAID_OP_MEAN,
                                   BRAID_OP_REDUCE_MAX, BRAID_OP_REDUCE_MIN};
    for (size_t d = 0; d < 5; d++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", types[d], 4, DIMS(6, 5, 40, 3));
        char name[32];
        for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
            for (int o = 0; o < 4; o++) {
                if (ops[o] == BRAID_OP_MEAN && types[d] == BRAID_I32) continue;
                bool keep = (s + (size_t)o) % 2 == 0;
                braid_tensor r;
                const int *ax = &sets[s][1];
                int na = sets[s][0];
                switch (ops[o]) {
                case BRAID_OP_SUM:
                    r = braid_sum(g, x, na, ax, keep);
                    break;
                case BRAID_OP_MEAN:
                    r = braid_mean(g, x, na, ax, keep);
                    break;
                case BRAID_OP_REDUCE_MAX:
                    r = braid_reduce_max(g, x, na, ax, keep);
                    break;
                default:
                    r = braid_reduce_min(g, x, na, ax, keep);
                    break;
                }
                snprintf(name, sizeof name, "r%zu_%d", s, o);
                braid_output(g, name, r);
            }
        }
        check(g, 80 + d, types[d] == BRAID_I32, NULL);
        braid_graph_free(g);
    }
}

Test(cpu_kernels, reductions_long_runs_and_empty) {
    braid_graph *g = braid_graph_new(NULL);
    /* runs of 70000: split over threads in pieces */
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 70000));
    braid_tensor i = braid_input(g, "i", BRAID_I32, 1, DIMS(100000));
    braid_tensor z = braid_input(g, "z", BRAID_F32, 3, DIMS(3, 0, 4));
    braid_tensor zi = braid_input(g, "zi", BRAID_I32, 2, DIMS(0, 2));
    braid_output(g, "rows", braid_sum(g, x, 1, AXES(1), false));
    braid_output(g, "rmax", braid_reduce_max(g, x, 1, AXES(-1), true));
    braid_output(g, "mean", braid_mean(g, x, 0, NULL, false));
    braid_output(g, "cols", braid_sum(g, x, 1, AXES(0), false));
    braid_output(g, "isum", braid_sum(g, i, 0, NULL, false));
    braid_output(g, "imin", braid_reduce_min(g, i, 0, NULL, false));
    braid_output(g, "zsum", braid_sum(g, z, 1, AXES(1), false));
    braid_output(g, "zmean", braid_mean(g, z, 1, AXES(1), false));
    braid_output(g, "zmax", braid_reduce_max(g, z, 2, AXES(0, 1), false));
    braid_output(g, "zimax", braid_reduce_max(g, zi, 1, AXES(0), false));
    braid_output(g, "zimin", braid_reduce_min(g, zi, 1, AXES(0), false));
    braid_output(g, "zisum", braid_sum(g, zi, 0, NULL, false));
    check(g, 7, false, NULL);
    ts_io *io = ts_io_new(g, 7);
    run_compare(g, io, 4, false);
    cr_assert_eq(((const float *)io->out[6].data)[0], 0.0f);
    cr_assert(isnan(((const float *)io->out[7].data)[0]));
    cr_assert_eq(((const float *)io->out[8].data)[0], -INFINITY);
    cr_assert_eq(((const int32_t *)io->out[9].data)[0], INT32_MIN);
    cr_assert_eq(((const int32_t *)io->out[10].data)[1], INT32_MAX);
    cr_assert_eq(((const int32_t *)io->out[11].data)[0], 0);
    ts_io_free(io);
    braid_graph_free(g);
}

/* ---- matmul -------------------------------------------------------------- */

Test(cpu_kernels, matmul_shapes_transposes_dtypes) {
    for (size_t d = 0; d < 4; d++) {
        braid_dtype t = float_types[d];
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor a = braid_input(g, "a", t, 2, DIMS(5, 7));
        braid_tensor at = braid_input(g, "at", t, 2, DIMS(7, 5));
        braid_tensor b = braid_input(g, "b", t, 2, DIMS(7, 3));
        braid_tensor bt = braid_input(g, "bt", t, 2, DIMS(3, 7));
        braid_output(g, "nn", braid_matmul(g, a, b, 0));
        braid_output(g, "tn", braid_matmul(g, at, b, BRAID_TRANSPOSE_A));
        braid_output(g, "nt", braid_matmul(g, a, bt, BRAID_TRANSPOSE_B));
        braid_output(
            g, "tt",
            braid_matmul(g, at, bt, BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B));
        /* batch dims broadcast on either side */
        braid_tensor a4 = braid_input(g, "a4", t, 4, DIMS(3, 1, 5, 7));
        braid_tensor b4 = braid_input(g, "b4", t, 4, DIMS(1, 4, 7, 6));
        braid_tensor b3 = braid_input(g, "b3", t, 3, DIMS(2, 7, 3));
        braid_output(g, "bb", braid_matmul(g, a4, b4, 0));
        braid_output(g, "ab3", braid_matmul(g, a, b3, 0));
        braid_output(g, "a4b", braid_matmul(g, a4, b, 0));
        /* many small products (spread over threads), one larger */
        braid_tensor sa = braid_input(g, "sa", t, 3, DIMS(40, 9, 11));
        braid_tensor sb = braid_input(g, "sb", t, 3, DIMS(40, 8, 11));
        braid_output(g, "small", braid_matmul(g, sa, sb, BRAID_TRANSPOSE_B));
        braid_tensor la = braid_input(g, "la", t, 2, DIMS(70, 60));
        braid_tensor lb = braid_input(g, "lb", t, 2, DIMS(60, 90));
        braid_output(g, "large", braid_matmul(g, la, lb, 0));
        /* products br_gemm splits over the pool: by rows (M > N), by
         * columns through both transposes, and many large ones spread
         * whole (blocks of 16-multiples with a short last one) */
        braid_tensor ra = braid_input(g, "ra", t, 2, DIMS(200, 40));
        braid_tensor rb = braid_input(g, "rb", t, 2, DIMS(40, 90));
        braid_output(g, "rows", braid_matmul(g, ra, rb, 0));
        braid_tensor ca = braid_input(g, "ca", t, 2, DIMS(30, 70));
        braid_tensor cb = braid_input(g, "cb", t, 2, DIMS(600, 30));
        braid_output(
            g, "cols",
            braid_matmul(g, ca, cb, BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B));
        braid_tensor ma = braid_input(g, "ma", t, 3, DIMS(13, 64, 70));
        braid_tensor mb = braid_input(g, "mb", t, 3, DIMS(13, 70, 80));
        braid_output(g, "many", braid_matmul(g, ma, mb, 0));
        /* empty: K = 0 gives zeros, M = 0 nothing */
        braid_tensor k0a = braid_input(g, "k0a", t, 2, DIMS(3, 0));
        braid_tensor k0b = braid_input(g, "k0b", t, 2, DIMS(0, 4));
        braid_output(g, "k0", braid_matmul(g, k0a, k0b, 0));
        braid_tensor m0 = braid_input(g, "m0", t, 2, DIMS(0, 7));
        braid_output(g, "m0", braid_matmul(g, m0, b, 0));
        check(g, 100 + d, false, NULL);
        braid_graph_free(g);
    }
}

/* ---- shape ops ----------------------------------------------------------- */

Test(cpu_kernels, shape_ops_every_element_size) {
    static const braid_dtype types[] = {BRAID_BOOL, BRAID_F16, BRAID_F32,
                                        BRAID_F64, BRAID_I32};
    for (size_t d = 0; d < 5; d++) {
        braid_dtype t = types[d];
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor x = braid_input(g, "x", t, 4, DIMS(3, 4, 5, 60));
        braid_tensor y = braid_input(g, "y", t, 4, DIMS(3, 2, 5, 60));
        braid_tensor e = braid_input(g, "e", t, 4, DIMS(3, 0, 5, 60));
        braid_tensor s = braid_input(g, "s", t, 2, DIMS(3, 1));
        braid_output(g, "reshape", braid_reshape(g, x, 2, DIMS(-1, 30)));
        braid_output(g, "perm", braid_permute(g, x, (const int[]){3, 1, 0, 2}));
        braid_output(g, "perm2",
                     braid_permute(g, x, (const int[]){0, 1, 3, 2}));
        braid_output(g, "t", braid_transpose(g, y));
        /* permutes moving the innermost axis, long enough for the tiled
         * copy (tiles 32 x 64; sizes not multiples of them) */
        braid_tensor w = braid_input(g, "w", t, 2, DIMS(67, 130));
        braid_tensor z = braid_input(g, "z", t, 3, DIMS(2, 37, 70));
        braid_tensor h = braid_input(g, "h", t, 4, DIMS(1, 20, 3, 16));
        braid_output(g, "tw", braid_transpose(g, w));
        braid_output(g, "pz", braid_permute(g, z, (const int[]){2, 0, 1}));
        braid_output(g, "pz2", braid_permute(g, z, (const int[]){0, 2, 1}));
        braid_output(g, "ph", braid_permute(g, h, (const int[]){0, 2, 3, 1}));
        braid_output(g, "slice",
                     braid_slice(g, x, DIMS(1, 0, 1, 3), DIMS(3, 4, 5, 60),
                                 DIMS(1, 2, 3, 7)));
        braid_output(
            g, "slice_neg",
            braid_slice(g, x, DIMS(-2, 1, 0, -10), DIMS(3, 3, 5, 60), NULL));
        braid_output(g, "cat1",
                     braid_concat(g, 3, (const braid_tensor[]){x, e, y}, 1));
        braid_output(g, "cat3",
                     braid_concat(g, 2, (const braid_tensor[]){x, x}, 3));
        braid_output(g, "cat0",
                     braid_concat(g, 2, (const braid_tensor[]){x, x}, 0));
        braid_output(g, "bcast", braid_broadcast_to(g, s, 3, DIMS(2, 3, 400)));
        braid_output(g, "bcast2",
                     braid_broadcast_to(g, y, 5, DIMS(2, 3, 2, 5, 60)));
        check(g, 120 + d, true, NULL);
        braid_graph_free(g);
    }
}

/* ---- sources ------------------------------------------------------------- */

Test(cpu_kernels, sources_match_bit_for_bit) {
    braid_graph *g = braid_graph_new(NULL);
    char name[32];
    for (int t = 0; t < BRAID_DTYPE_COUNT_; t++) {
        braid_dtype dt = (braid_dtype)t;
        snprintf(name, sizeof name, "fill%d", t);
        braid_output(g, name, braid_fill(g, dt, 2, DIMS(100, 90), 2.7182818));
        if (!bg_op_accepts(BRAID_OP_IOTA, dt)) continue;
        snprintf(name, sizeof name, "iota%d", t);
        braid_output(g, name, braid_iota(g, dt, 3, DIMS(3, 70, 50), 1));
        snprintf(name, sizeof name, "iota0_%d", t);
        braid_output(g, name, braid_iota(g, dt, 1, DIMS(3000), 0));
        if (!braid_dtype_is_float(dt)) continue;
        snprintf(name, sizeof name, "u%d", t);
        braid_output(g, name,
                     braid_random_uniform(g, dt, 2, DIMS(300, 41),
                                          7 + (uint64_t)t, -3, 5));
        snprintf(name, sizeof name, "n%d", t);
        braid_output(g, name,
                     braid_random_normal(g, dt, 2, DIMS(300, 41), 99, 1, 2));
    }
    /* a generator feeding arithmetic */
    braid_tensor r =
        braid_random_uniform(g, BRAID_F32, 1, DIMS(20000), 3, 0, 1);
    braid_output(g, "sum", braid_sum(g, braid_mul(g, r, r), 0, NULL, false));
    check(g, 1, false, NULL);
    ts_io *io = ts_io_new(g, 1);
    run_compare(g, io, 2, false);
    for (uint32_t i = 0; i + 1 < io->noutputs; i++)
        cr_assert_arr_eq(io->out[i].data, io->ref[i].data, io->out[i].bytes,
                         "%s differs from the reference", io->out[i].name);
    ts_io_free(io);
    braid_graph_free(g);
}

Test(cpu_kernels, empty_tensors) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(0, 5));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 1, DIMS(5));
    braid_output(g, "add", braid_add(g, x, b));
    braid_output(g, "exp", braid_exp(g, x));
    braid_output(g, "perm", braid_transpose(g, x));
    braid_output(g, "cast", braid_cast(g, x, BRAID_F16));
    braid_output(g, "fill", braid_fill(g, BRAID_F32, 2, DIMS(0, 3), 1));
    braid_output(g, "sum", braid_sum(g, x, 1, AXES(1), false));
    check(g, 1, true, NULL);
    braid_graph_free(g);
}
