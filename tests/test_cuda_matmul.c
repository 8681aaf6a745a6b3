/* tests/test_cuda_matmul.c — matmul on a GPU through cuBLAS against the
 * reference evaluator: every float dtype, the four transpose combinations,
 * batch broadcasting (one side, both sides, rank mismatch), empty
 * dimensions, BLAS-sized products, fused bias + activation epilogues
 * (including one whose epilogue changes the dtype), the cuBLASLt bias /
 * bias + relu epilogue path (every transpose, [N] and [1, N] biases, both
 * add orders, odd sizes, strided and folded batches, TF32, NaN kept by
 * relu) and the cases that must keep the cuBLAS path (gelu, f64, broadcast
 * batches), TF32 when allowed, and a 1024³ product against the CPU
 * executor. Skipped without a CUDA device.
 *
 * Tolerances: ts_tolerance (f32 1e-4 relative + absolute: sums of ≤ 200
 * products of magnitude ≤ 2·2; f16 / bf16 also cover cuBLASLt adding the
 * bias before the one rounding, half an ulp of the product away from
 * rounding the product first); TF32: 0.1 absolute for sums of 256
 * products of magnitude ≤ 1 (TF32 keeps 10 mantissa bits, 2^-11 relative
 * per product, random signs), 0.05 for the cuBLASLt cases' 64; 1024³:
 * 1e-3 relative to the largest |value|. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "tests/test_cuda_common.h"

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
    TC_CHECK(g, y, r, seed, what);
    braid_graph_free(g);
}

Test(cuda_matmul, small_and_transposed) {
    TC_REQUIRE_GPU();
    ts_shape none = ts_scalar_shape();
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (unsigned flags = 0; flags < 4; flags++)
        for (uint64_t seed = 0; seed < 3; seed++) {
            uint64_t st = seed * 13 + flags + dt * 100;
            matmul_case(dt, &none, &none, ts_rand_int(&st, 1, 9),
                        ts_rand_int(&st, 1, 9), ts_rand_int(&st, 1, 9), flags,
                        seed, 2);
        }
    cr_assert_gt(tc_gpu_cases, 0, "no case ran on the GPU");
}

Test(cuda_matmul, batch_broadcast) {
    TC_REQUIRE_GPU();
    /* batch shapes for a and b: equal, one side none, 1 vs B, rank
     * mismatch, both broadcasting (a loop of strided-batched calls) */
    static const ts_shape cases[][2] = {
        {{1, {3}}, {1, {3}}},
        {{1, {3}}, {0, {0}}},
        {{0, {0}}, {2, {2, 3}}},
        {{2, {1, 3}}, {2, {4, 1}}},
        {{3, {2, 1, 3}}, {1, {3}}},
        {{1, {1}}, {2, {2, 2}}},
        {{3, {2, 3, 1}}, {3, {1, 3, 2}}},
        {{2, {5, 4}}, {2, {5, 4}}},
    };
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint64_t st = c * 31 + dt;
        matmul_case(dt, &cases[c][0], &cases[c][1], ts_rand_int(&st, 1, 6),
                    ts_rand_int(&st, 1, 6), ts_rand_int(&st, 1, 6),
                    (unsigned)(c % 4), c, 2);
    }
}

Test(cuda_matmul, blas_sized) {
    TC_REQUIRE_GPU();
    ts_shape none = ts_scalar_shape(), batch = {1, {3}};
    TS_FOR_DTYPES(dt, TS_FLOATS) {
        matmul_case(dt, &none, &none, 67, 129, 33, 0, 1, 1);
        matmul_case(dt, &batch, &none, 40, 70, 50, BRAID_TRANSPOSE_B, 2, 1);
        matmul_case(dt, &none, &batch, 64, 64, 64,
                    BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B, 3, 1);
        matmul_case(dt, &batch, &batch, 128, 96, 80, BRAID_TRANSPOSE_A, 4, 1);
    }
}

Test(cuda_matmul, empty_dims) {
    TC_REQUIRE_GPU();
    ts_shape none = ts_scalar_shape(), batch0 = {1, {0}};
    TS_FOR_DTYPES(dt, TS_FLOATS) {
        matmul_case(dt, &none, &none, 3, 0, 4, 0, 1, 1); /* K = 0: zeros */
        matmul_case(dt, &none, &none, 0, 3, 4, 0, 2, 1);
        matmul_case(dt, &none, &none, 3, 4, 0, BRAID_TRANSPOSE_B, 3, 1);
        matmul_case(dt, &batch0, &none, 3, 4, 5, 0, 4, 1);
    }
}

/* ---- epilogues ----------------------------------------------------------- */

/* act(x·w + b), optionally cast to `to`: fuse makes a MATMUL program. */
static void epilogue_case(braid_dtype dt, int act, braid_dtype to,
                          uint64_t seed) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t M = 37 + (int64_t)seed, K = 64, N = 48;
    braid_tensor x = braid_input(g, "x", dt, 2, TC_DIMS(M, K));
    braid_tensor w = braid_input(g, "w", dt, 2, TC_DIMS(K, N));
    braid_tensor b = braid_input(g, "b", dt, 1, TC_DIMS(N));
    braid_tensor y = braid_add(g, braid_matmul(g, x, w, 0), b);
    y = act == 0 ? braid_relu(g, y) : act == 1 ? braid_gelu(g, y) : y;
    if (to != dt) y = braid_cast(g, y, to);
    char what[96];
    snprintf(what, sizeof what, "epilogue %s act %d to %s seed %llu",
             braid_dtype_name(dt), act, braid_dtype_name(to),
             (unsigned long long)seed);
    ts_range r[3] = {TS_RANGE(-1, 1), TS_RANGE(-1, 1), TS_RANGE(-1, 1)};
    TC_CHECK(g, y, r, seed, what);
    braid_graph_free(g);
}

Test(cuda_matmul, bias_activation_epilogues) {
    TC_REQUIRE_GPU();
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (int act = 0; act < 3; act++)
        epilogue_case(dt, act, dt, (uint64_t)act);
    epilogue_case(BRAID_F32, 1, BRAID_F16, 7); /* epilogue changes dtype */
    epilogue_case(BRAID_F64, 0, BRAID_F32, 8); /* ... and size */
    epilogue_case(BRAID_BF16, 1, BRAID_F32, 9);
}

Test(cuda_matmul, mlp_two_layers) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, TC_DIMS(64, 96));
    braid_tensor w1 = braid_input(g, "w1", BRAID_F32, 2, TC_DIMS(96, 128));
    braid_tensor b1 = braid_input(g, "b1", BRAID_F32, 1, TC_DIMS(128));
    braid_tensor w2 = braid_input(g, "w2", BRAID_F32, 2, TC_DIMS(128, 32));
    braid_tensor h = braid_gelu(g, braid_add(g, braid_matmul(g, x, w1, 0), b1));
    braid_tensor y = braid_softmax(g, braid_matmul(g, h, w2, 0), -1);
    ts_range r[4] = {TS_RANGE(-1, 1), TS_RANGE(-0.2, 0.2), TS_RANGE(-1, 1),
                     TS_RANGE(-0.2, 0.2)};
    TC_CHECK(g, y, r, 1, "mlp");
    braid_graph_free(g);
}

/* ---- cuBLASLt bias epilogues --------------------------------------------- */

/* One matmul + bias [+ activation] case for the cuBLASLt path. */
typedef struct lt_case {
    braid_dtype dt;  /* operands', bias's and result's dtype */
    int act;         /* 0 none, 1 relu, 2 gelu */
    unsigned flags;  /* BRAID_TRANSPOSE_A / _B */
    ts_shape ba, bb; /* batch dims of x and w */
    int64_t m, k, n; /* the product */
    bool bias_2d;    /* bias [1, N] instead of [N] */
    bool bias_first; /* bias + matmul instead of matmul + bias */
    bool tf32;       /* allow_tf32 */
    int expect_lt;   /* LT_YES: the executor log must show the cuBLASLt
                        path, LT_NO the cuBLAS path, LT_ANY either
                        (cuBLASLt's heuristic may decline odd sizes) */
} lt_case;

/* Set by a test: run_lt_case adds a residual r of the result's shape after
 * the epilogue, 1: (…) + r, 2: r + (…) (cuBLASLt's C with beta 1). */
static int lt_residual;

enum { LT_NO, LT_YES, LT_ANY };

/* Set by a test: run_lt_case puts NaNs into x (one element) and the bias
 * (one element), so a row and a column of the result are NaN. */
static bool lt_inject_nan;

/* Element i of buffer p (dtype t) becomes a quiet NaN. */
static void set_nan(braid_dtype t, void *p, int64_t i) {
    if (t == BRAID_F32) {
        ((float *)p)[i] = NAN;
        return;
    }
    ((uint16_t *)p)[i] = t == BRAID_F16 ? 0x7E00u : 0x7FC0u;
}

static braid_graph *lt_graph(const lt_case *c, braid_tensor *y) {
    ts_shape a = c->ba, b = c->bb;
    bool ta = c->flags & BRAID_TRANSPOSE_A, tb = c->flags & BRAID_TRANSPOSE_B;
    a.dims[a.rank++] = ta ? c->k : c->m;
    a.dims[a.rank++] = ta ? c->m : c->k;
    b.dims[b.rank++] = tb ? c->n : c->k;
    b.dims[b.rank++] = tb ? c->k : c->n;
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = ts_shape_input(g, "x", c->dt, &a);
    braid_tensor w = ts_shape_input(g, "w", c->dt, &b);
    braid_tensor bias = c->bias_2d
                            ? braid_input(g, "bias", c->dt, 2, TC_DIMS(1, c->n))
                            : braid_input(g, "bias", c->dt, 1, TC_DIMS(c->n));
    braid_tensor mm = braid_matmul(g, x, w, c->flags);
    braid_tensor t =
        c->bias_first ? braid_add(g, bias, mm) : braid_add(g, mm, bias);
    *y = c->act == 1 ? braid_relu(g, t) : c->act == 2 ? braid_gelu(g, t) : t;
    if (lt_residual) {
        int rank = 0;
        int64_t dims[BRAID_MAX_RANK];
        braid_tensor_info(g, mm, NULL, &rank, dims);
        braid_tensor r = braid_input(g, "r", c->dt, rank, dims);
        *y = lt_residual == 1 ? braid_add(g, *y, r) : braid_add(g, r, *y);
    }
    return g;
}

/* Runs the case three times (warm-up, CUDA-graph capture, replay) against
 * the reference; checks which path the executor log names. */
static void run_lt_case(const lt_case *c, uint64_t seed) {
    braid_tensor y;
    braid_graph *g = lt_graph(c, &y);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    tc_hint_all(g, "cuda:0");
    ts_io *io = ts_io_new(g, seed);
    for (uint32_t i = 0; i < io->ninputs; i++)
        ts_fill_input(io, i, c->dt, TS_RANGE(-1, 1), seed + i);
    if (lt_inject_nan) { /* inputs x, w, bias in that order */
        set_nan(c->dt, (void *)(uintptr_t)io->in[0].data, 5);
        set_nan(c->dt, (void *)(uintptr_t)io->in[2].data, 3);
    }
    braid_compile_options o = tc_options();
    o.allow_tf32 = c->tf32;
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    const char *log = br_cuda_log(br_exec_cuda(e));
    char what[160];
    snprintf(what, sizeof what,
             "%s act %d flags %u batches %d/%d %lldx%lldx%lld seed %llu",
             braid_dtype_name(c->dt), c->act, c->flags, c->ba.rank, c->bb.rank,
             (long long)c->m, (long long)c->k, (long long)c->n,
             (unsigned long long)seed);
    bool lt = strstr(log, "in one cublasLtMatmul") != NULL;
    const char *line = strstr(log, "cublaslt: node");
    cr_assert(line, "%s: no decision logged:\n%s", what, log);
    if (c->expect_lt == LT_ANY) /* which one it was, for the record */
        cr_log_info("%s: %.*s", what, (int)strcspn(line, "\n"), line);
    else if (lt != (c->expect_lt == LT_YES))
        cr_log_info("executor log:\n%s", log);
    cr_assert(c->expect_lt == LT_ANY || lt == (c->expect_lt == LT_YES),
              "%s: cuBLASLt path %s", what,
              lt ? "taken, not expected" : "expected, not taken");
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s", braid_last_error());
    for (int r = 0; r < 3; r++) {
        memset(io->out[0].data, 0xA5, io->out[0].bytes);
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "%s run %d: %s", what, r, braid_last_error());
        if (c->tf32) { /* 10 mantissa bits per product: 64 terms ≤ 1 */
            const float *got = io->out[0].data, *want = io->ref[0].data;
            double err = 0;
            for (int64_t i = 0; i < io->out_numel[0]; i++)
                err = fmax(err, fabs((double)got[i] - want[i]));
            cr_assert_lt(err, 0.05, "%s run %d: TF32 error %g", what, r, err);
            continue;
        }
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "%s run %d: %s", what, r,
                  msg);
    }
    cr_assert(!strstr(br_cuda_log(br_exec_cuda(e)), "addresses differ"),
              "%s: a run found moved addresses:\n%s", what,
              br_cuda_log(br_exec_cuda(e)));
    braid_exec_free(e);
    braid_plan_free(p);
    ts_io_free(io);
    braid_graph_free(g);
}

Test(cuda_matmul, cublaslt_bias_epilogues) {
    TC_REQUIRE_GPU();
    ts_shape none = ts_scalar_shape();
    static const braid_dtype dts[] = {BRAID_F32, BRAID_F16, BRAID_BF16};
    uint64_t seed = 1;
    /* sizes whose rows are 16-byte multiples in every dtype: cuBLASLt
       must take bias alone; bias + relu only if its ReLU keeps NaN */
    for (size_t d = 0; d < 3; d++)
        for (int act = 0; act < 2; act++)
            for (unsigned flags = 0; flags < 4; flags++) {
                lt_case c = {dts[d], act, flags, none,  none,  40 + 8 * flags,
                             64,     48,  false, false, false, LT_YES};
                c.expect_lt = act == 0 ? LT_YES : LT_ANY;
                c.bias_2d = flags == 1;
                c.bias_first = flags == 2;
                run_lt_case(&c, seed++);
            }
    /* odd sizes (rows not 16-byte multiples, M, N, K not multiples of 8):
       cuBLASLt may decline them; either path must be right */
    for (size_t d = 0; d < 3; d++)
        for (unsigned flags = 0; flags < 4; flags++) {
            lt_case c = {dts[d], 1,          flags, none,
                         none,   37 + flags, 19,    7 + 2 * flags,
                         false,  false,      false, LT_ANY};
            run_lt_case(&c, seed++);
        }
}

/* matmul + bias + a residual of the result's shape (a transformer's
 * h + proj(x)): one cublasLtMatmul with C = the residual, beta 1, for
 * every dtype, transpose, bias form and operand order, and a plain
 * strided batch; + relu before the residual is the cuBLAS path (ReLU
 * would apply after C). */
Test(cuda_matmul, cublaslt_residual_epilogue) {
    TC_REQUIRE_GPU();
    ts_shape none = ts_scalar_shape(), b3 = {1, {3}};
    static const braid_dtype dts[] = {BRAID_F32, BRAID_F16, BRAID_BF16};
    uint64_t seed = 500;
    for (size_t d = 0; d < 3; d++)
        for (unsigned flags = 0; flags < 4; flags++) {
            lt_case c = {dts[d],         0,     flags, none,       none,
                         32 + 8 * flags, 64,    48,    flags == 1, flags == 2,
                         false,          LT_YES};
            lt_residual = 1 + (int)(flags % 2);
            run_lt_case(&c, seed++);
        }
    lt_residual = 1;
    lt_case batch = {BRAID_F32, 0,  0,     b3,    b3,    24,
                     32,        40, false, false, false, LT_YES};
    run_lt_case(&batch, seed++);
    lt_residual = 2; /* relu before the residual: the cuBLAS path */
    lt_case relu = {BRAID_F32, 1,  0,     none,  none,  32,
                    64,        48, false, false, false, LT_NO};
    run_lt_case(&relu, seed++);
    lt_residual = 0;
}

Test(cuda_matmul, cublaslt_batches_and_tf32) {
    TC_REQUIRE_GPU();
    ts_shape none = ts_scalar_shape(), b3 = {1, {3}}, b23 = {2, {2, 3}};
    /* a plain strided batch (bias alone; bias + relu, either path) */
    lt_case c = {BRAID_F32, 0,  0,     b3,    b3,    24,
                 32,        24, false, false, false, LT_YES};
    run_lt_case(&c, 101);
    c.dt = BRAID_BF16;
    c.flags = BRAID_TRANSPOSE_A | BRAID_TRANSPOSE_B;
    run_lt_case(&c, 102);
    c.act = 1;
    c.expect_lt = LT_ANY;
    run_lt_case(&c, 105);
    /* w broadcast, x contiguous: one product of 2·3·24 rows */
    lt_case f = {
        BRAID_F16, 0,     BRAID_TRANSPOSE_B, b23, none, 24, 32, 24, true, false,
        false,     LT_YES};
    run_lt_case(&f, 103);
    /* TF32 allowed */
    lt_case t = {BRAID_F32, 0,  0,     none,  none, 96,
                 64,        80, false, false, true, LT_YES};
    run_lt_case(&t, 104);
}

/* NaN in x and in the bias: braid's relu keeps it (docs/ops.md). The
 * executor must check that cuBLASLt's RELU_BIAS does before using it (the
 * mock's drops NaN with MOCK_LT_RELU_DROPS_NAN=1; a GPU ignores that). */
Test(cuda_matmul, cublaslt_relu_keeps_nan) {
    TC_REQUIRE_GPU();
    ts_shape none = ts_scalar_shape();
    static const braid_dtype dts[] = {BRAID_F32, BRAID_F16, BRAID_BF16};
    lt_inject_nan = true;
    for (int drops = 0; drops < 2; drops++) {
        if (drops)
            setenv("MOCK_LT_RELU_DROPS_NAN", "1", 1);
        else
            unsetenv("MOCK_LT_RELU_DROPS_NAN");
        for (size_t d = 0; d < 3; d++) {
            lt_case c = {dts[d], 1,  0,     none,  none,  40,
                         64,     48, false, false, false, LT_ANY};
            run_lt_case(&c, 300 + d);
            c.act = 0; /* bias alone: NaN + x is NaN in cuBLASLt too */
            c.expect_lt = LT_YES;
            run_lt_case(&c, 310 + d);
        }
    }
    unsetenv("MOCK_LT_RELU_DROPS_NAN");
}

Test(cuda_matmul, cublaslt_falls_back_exactly) {
    TC_REQUIRE_GPU();
    ts_shape none = ts_scalar_shape(), b3 = {1, {3}}, b31 = {2, {3, 1}},
             b14 = {2, {1, 4}};
    /* gelu: cuBLASLt's is not the erf form */
    lt_case c = {BRAID_F32, 2,  0,     none,  none,  40,
                 64,        48, false, false, false, LT_NO};
    run_lt_case(&c, 201);
    c.dt = BRAID_F16;
    run_lt_case(&c, 202);
    /* f64 */
    lt_case d = {BRAID_F64, 1, 0,     none,  none,  17,
                 33,        9, false, false, false, LT_NO};
    run_lt_case(&d, 203);
    /* x broadcast over w's batch; both broadcasting; x transposed with a
       broadcast w (no single product) */
    lt_case e = {BRAID_F32, 1,  0,     none,  b3,    9,
                 16,        12, false, false, false, LT_NO};
    run_lt_case(&e, 204);
    e.ba = b31;
    e.bb = b14;
    run_lt_case(&e, 205);
    e.ba = b3;
    e.bb = none;
    e.flags = BRAID_TRANSPOSE_A;
    run_lt_case(&e, 206);
}

/* ---- TF32 and a large product -------------------------------------------- */

/* Runs y = a·b (n×n) with options o into out; a and b from seed. */
static void run_square(int64_t n, const braid_compile_options *o, bool gpu,
                       float *out, uint64_t seed) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = braid_input(g, "a", BRAID_F32, 2, TC_DIMS(n, n));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 2, TC_DIMS(n, n));
    braid_tensor y = braid_matmul(g, a, b, 0);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    if (gpu) tc_hint_all(g, "cuda:0");
    ts_io *io = ts_io_new(g, seed);
    ts_fill_input(io, 0, BRAID_F32, TS_RANGE(-1, 1), seed);
    ts_fill_input(io, 1, BRAID_F32, TS_RANGE(-1, 1), seed + 1);
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    cr_assert_eq(braid_compile(g, o, &p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    braid_output_binding ob = {"y", out, (size_t)(n * n) * sizeof(float)};
    cr_assert_eq(braid_run(e, io->in, io->ninputs, &ob, 1), BRAID_OK, "%s",
                 braid_last_error());
    braid_exec_free(e);
    braid_plan_free(p);
    ts_io_free(io);
    braid_graph_free(g);
}

Test(cuda_matmul, tf32_only_when_allowed) {
    TC_REQUIRE_GPU();
    int64_t n = 256;
    float *cpu = malloc(n * n * sizeof *cpu),
          *full = malloc(n * n * sizeof *full),
          *tf32 = malloc(n * n * sizeof *tf32);
    braid_compile_options o = tc_options();
    braid_compile_options c = o;
    c.devices = "cpu";
    run_square(n, &c, false, cpu, 5);
    run_square(n, &o, true, full, 5);
    o.allow_tf32 = true;
    run_square(n, &o, true, tf32, 5);
    double err_full = 0, err_tf32 = 0;
    for (int64_t i = 0; i < n * n; i++) {
        err_full = fmax(err_full, fabs((double)full[i] - cpu[i]));
        err_tf32 = fmax(err_tf32, fabs((double)tf32[i] - cpu[i]));
    }
    cr_log_info("max |error| vs CPU: f32 %.3g, tf32 %.3g", err_full, err_tf32);
    cr_assert_lt(err_full, 2e-4, "f32 matmul off by %g (TF32 used?)", err_full);
    cr_assert_lt(err_tf32, 0.1, "TF32 matmul off by %g", err_tf32);
    free(cpu);
    free(full);
    free(tf32);
}

Test(cuda_matmul, large_against_cpu) {
    TC_REQUIRE_GPU();
    int64_t n = 1024;
    float *cpu = malloc(n * n * sizeof *cpu),
          *gpu = malloc(n * n * sizeof *gpu);
    braid_compile_options o = tc_options(), c = tc_options();
    c.devices = "cpu";
    c.num_threads = 0;
    run_square(n, &c, false, cpu, 11);
    run_square(n, &o, true, gpu, 11);
    double big = 0, err = 0;
    for (int64_t i = 0; i < n * n; i++) {
        big = fmax(big, fabs((double)cpu[i]));
        err = fmax(err, fabs((double)gpu[i] - cpu[i]));
    }
    cr_assert_lt(err, 1e-3 * big, "1024^3: max error %g (largest %g)", err,
                 big);
    free(cpu);
    free(gpu);
}
