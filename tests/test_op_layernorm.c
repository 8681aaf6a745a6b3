/* tests/test_op_layernorm.c — the layer_norm op (docs/ops.md, issue 14):
 * one node over the last axis, y = (x - mean)·rsqrt(var + eps)·gamma +
 * beta, computed by every executor like the reference evaluator (float64).
 *
 *   - the builder: braid_layer_norm makes one node; an absent gamma or
 *     beta is a fill of 1 or 0; a gamma or beta of one row in another
 *     rank ([1, C]) is reshaped in; one that broadcasts otherwise (a
 *     scalar, [N, C]) is applied after the node; errors name the op;
 *   - the reference on exact small cases;
 *   - the CPU kernel against the reference: f32, f16, bf16, f64; rows of
 *     1, 7, 33, 768, 1000, 8192, 20001 (longer than the kernel's chunk);
 *     values offset far from 0; random shapes; bit-identical on 1 and 3
 *     threads;
 *   - GPU plans on the emulated executor (CPU kernels, GPU plan), and
 *     (built with CUDA) every generated kernel compiled by NVRTC for
 *     sm_90: sub-warp groups, warps, blocks and the long-row path;
 *   - plan files (the node by op name, eps kept), the text format (eps=)
 *     and DOT.
 * Tolerances: ts_tolerance of the dtype (f32 1e-4, f16 1e-2, bf16 5e-2,
 * f64 1e-9, atol and rtol alike): the kernels round each step to f16/bf16
 * where the reference rounds only the result. */
#define _POSIX_C_SOURCE 200809L
#include "tests/planfile_support.h"

#include <math.h>

#include "tests/support/op_cases.h"
#ifdef BRAID_HAVE_CUDA
#include "codegen/codegen.h"
#endif

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* ---- building ------------------------------------------------------------ */

/* layer_norm(x, gamma, beta) over the last axis as output "y"; gamma and
 * beta inputs [C] when affine. */
static braid_graph *ln_graph(braid_dtype dt, int rank, const int64_t *dims,
                             bool affine, double eps) {
    braid_graph *g = braid_graph_new(NULL);
    cr_assert(g);
    braid_tensor x = braid_input(g, "x", dt, rank, dims);
    braid_tensor gm = BRAID_NONE, bt = BRAID_NONE;
    if (affine) {
        gm = braid_input(g, "gamma", dt, 1, &dims[rank - 1]);
        bt = braid_input(g, "beta", dt, 1, &dims[rank - 1]);
    }
    braid_output(g, "y", braid_layer_norm(g, x, gm, bt, eps));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

static void hint_gpu(braid_graph *g) {
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++) {
        braid_op op = g->nodes[id].op;
        if (op != BRAID_OP_INPUT && op != BRAID_OP_CONSTANT)
            cr_assert_eq(braid_set_device(g, (braid_tensor){id}, "cuda:0"),
                         BRAID_OK);
    }
}

static braid_plan *compile_for(const braid_graph *g, const char *devices,
                               int threads) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.archs = "none";
    o.num_threads = threads;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    return p;
}

static uint32_t count_op_in(const braid_graph *g, braid_op op) {
    uint32_t n = 0;
    for (uint32_t id = 0; id < g->nnodes; id++)
        n += g->nodes[id].op == op;
    return n;
}

static uint32_t ln_node(const braid_plan *p) {
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        if (p->res.graph->nodes[id].op == BRAID_OP_LAYER_NORM) return id;
    cr_assert_fail("no layer_norm node");
    return BG_NONE;
}

/* ---- running ------------------------------------------------------------- */

/* io for g: x from r, gamma from [0.5, 2], beta from [-1, 1]. */
static ts_io *make_io(const braid_graph *g, ts_range r, uint64_t seed) {
    ts_io *io = ts_io_new(g, seed);
    cr_assert(io);
    for (uint32_t i = 0; i < io->ninputs; i++) {
        const char *name;
        braid_tensor t;
        braid_dtype dt = BRAID_F32;
        braid_graph_input(g, i, &name, &t);
        braid_tensor_info(g, t, &dt, NULL, NULL);
        ts_range ri = !strcmp(name, "gamma")  ? TS_RANGE(0.5, 2)
                      : !strcmp(name, "beta") ? TS_RANGE(-1, 1)
                                              : r;
        ts_fill_input(io, i, dt, ri, seed + i);
    }
    return io;
}

static void run_check(const braid_graph *g, const braid_plan *p, ts_io *io,
                      bool emulate, const char *what) {
    cr_assert_eq(pf_run(p, io, emulate, 3), BRAID_OK, "%s: %s", what,
                 braid_last_error());
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s: %s", what, braid_last_error());
    char msg[512];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s: %s", what, msg);
}

/* ---- the builder -----------------------------------------------------------
 */

Test(op_layernorm, one_node_with_fills_for_absent_operands) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 3, DIMS(2, 3, 8));
    braid_tensor gm = braid_input(g, "gamma", BRAID_F32, 1, DIMS(8));
    braid_tensor y = braid_layer_norm(g, x, gm, BRAID_NONE, 1e-5);
    const bg_node *n = bg_node_at(g, y.id);
    cr_assert_eq(n->op, BRAID_OP_LAYER_NORM);
    cr_assert_eq(n->ninputs, 3);
    cr_assert_eq(n->inputs[0], x.id);
    cr_assert_eq(n->inputs[1], gm.id);
    const bg_node *b = bg_node_at(g, n->inputs[2]);
    cr_assert_eq(b->op, BRAID_OP_FILL);
    cr_assert_eq(b->attr.value[0], 0.0);
    cr_assert_eq(b->rank, 1);
    cr_assert_eq(b->dims[0], 8);
    cr_assert_eq(n->attr.value[0], 1e-5);
    cr_assert_eq(n->rank, 3);
    cr_assert_eq(n->dtype, BRAID_F32);
    /* no gamma: a fill of 1 */
    braid_tensor y2 = braid_layer_norm(g, x, BRAID_NONE, BRAID_NONE, 0);
    const bg_node *n2 = bg_node_at(g, y2.id);
    cr_assert_eq(n2->op, BRAID_OP_LAYER_NORM);
    cr_assert_eq(bg_node_at(g, n2->inputs[1])->attr.value[0], 1.0);
    /* gamma [1, 1, 8]: reshaped to [8] and taken in */
    braid_tensor g3 = braid_input(g, "g3", BRAID_F32, 3, DIMS(1, 1, 8));
    braid_tensor y3 = braid_layer_norm(g, x, g3, g3, 0.1);
    const bg_node *n3 = bg_node_at(g, y3.id);
    cr_assert_eq(n3->op, BRAID_OP_LAYER_NORM);
    cr_assert_eq(bg_node_at(g, n3->inputs[1])->op, BRAID_OP_RESHAPE);
    /* a scalar gamma and a [3, 8] beta broadcast: applied after */
    braid_tensor s = braid_input(g, "s", BRAID_F32, 0, NULL);
    braid_tensor t = braid_input(g, "t", BRAID_F32, 2, DIMS(3, 8));
    braid_tensor y4 = braid_layer_norm(g, x, s, t, 0.1);
    const bg_node *n4 = bg_node_at(g, y4.id);
    cr_assert_eq(n4->op, BRAID_OP_ADD);
    const bg_node *m4 = bg_node_at(g, n4->inputs[0]);
    cr_assert_eq(m4->op, BRAID_OP_MUL);
    cr_assert_eq(bg_node_at(g, m4->inputs[0])->op, BRAID_OP_LAYER_NORM);
    /* a row gamma with a broadcasting beta: gamma in, beta after */
    braid_tensor y5 = braid_layer_norm(g, x, gm, t, 0.1);
    const bg_node *n5 = bg_node_at(g, y5.id);
    cr_assert_eq(n5->op, BRAID_OP_ADD);
    const bg_node *l5 = bg_node_at(g, n5->inputs[0]);
    cr_assert_eq(l5->op, BRAID_OP_LAYER_NORM);
    cr_assert_eq(l5->inputs[1], gm.id);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    braid_graph_free(g);
}

/* The node's own checks (the text parser and plan loader build through
 * them): gamma/beta of the row length and x's dtype, eps finite >= 0. */
Test(op_layernorm, node_rules) {
    static const char *bad[] = {
        "braid-graph 1\n%0 = input f32[2,3] name=\"x\"\n%1 = input f32[4] "
        "name=\"g\"\n"
        "%2 = input f32[3] name=\"b\"\n%3 = layer_norm %0, %1, %2 eps=0\n",
        "braid-graph 1\n%0 = input f32[2,3] name=\"x\"\n%1 = input f64[3] "
        "name=\"g\"\n"
        "%2 = input f32[3] name=\"b\"\n%3 = layer_norm %0, %1, %2 eps=0\n",
        "braid-graph 1\n%0 = input f32[2,3] name=\"x\"\n%1 = input f32[3] "
        "name=\"g\"\n"
        "%2 = input f32[1,3] name=\"b\"\n%3 = layer_norm %0, %1, %2 eps=0\n",
        "braid-graph 1\n%0 = input f32[2,3] name=\"x\"\n%1 = input f32[3] "
        "name=\"g\"\n"
        "%2 = input f32[3] name=\"b\"\n%3 = layer_norm %0, %1, %2 eps=-1\n",
        "braid-graph 1\n%0 = input f32[2,3] name=\"x\"\n%1 = input f32[3] "
        "name=\"g\"\n"
        "%2 = input f32[3] name=\"b\"\n%3 = layer_norm %0, %1, %2\n",
        "braid-graph 1\n%0 = input i32[2,3] name=\"x\"\n%1 = input i32[3] "
        "name=\"g\"\n"
        "%2 = input i32[3] name=\"b\"\n%3 = layer_norm %0, %1, %2 eps=0\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        braid_graph *g =
            braid_graph_parse(bad[i], strlen(bad[i]), "t.graph", NULL);
        cr_assert(g == NULL || braid_graph_status(g) != BRAID_OK,
                  "case %zu accepted", i);
        braid_graph_free(g);
    }
    const char *good = "braid-graph 1\n"
                       "%0 = input f16[2,3] name=\"x\"\n"
                       "%1 = input f16[3] name=\"g\"\n"
                       "%2 = input f16[3] name=\"b\"\n"
                       "%3 = layer_norm %0, %1, %2 eps=0.25\n"
                       "output \"y\" = %3\n";
    braid_graph *g = braid_graph_parse(good, strlen(good), "t.graph", NULL);
    cr_assert(g && braid_graph_status(g) == BRAID_OK, "%s",
              g ? braid_graph_error(g) : braid_last_error());
    cr_assert_eq(bg_node_at(g, 3)->attr.value[0], 0.25);
    braid_graph_free(g);
}

Test(op_layernorm, builder_errors) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor i = braid_input(g, "i", BRAID_I32, 2, DIMS(2, 3));
    cr_assert_eq(braid_layer_norm(g, i, BRAID_NONE, BRAID_NONE, 0).id,
                 BRAID_NONE.id);
    cr_assert_eq(braid_graph_status(g), BRAID_ERR_DTYPE);
    cr_assert(strstr(braid_graph_error(g), "layer_norm"), "%s",
              braid_graph_error(g));
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(2, 3));
    cr_assert_eq(braid_layer_norm(g, x, BRAID_NONE, BRAID_NONE, -1).id,
                 BRAID_NONE.id);
    cr_assert_eq(braid_graph_status(g), BRAID_ERR_INVALID_ARGUMENT);
    braid_graph_free(g);
}

/* ---- the reference: exact cases ---------------------------------------------
 */

/* x = [1, 3] per row: mean 2, var 1, x̂ = [-1, 1]; with eps 0, gamma
 * [2, 3] and beta [0.5, -0.5]: [-1.5, 2.5]; every dtype holds these, and
 * every executor gives them exactly. Row [5, 5, 5, 5] with eps 0.25: 0·2 +
 * beta. */
Test(op_layernorm, exact_small_cases) {
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (int ex = 0; ex < 3; ex++) {
        braid_graph *g = ln_graph(dt, 2, DIMS(2, 2), true, 0);
        braid_plan *p = ex == 2 ? NULL : compile_for(g, "cpu", ex ? 3 : 1);
        ts_io *io = ts_io_new(g, 1);
        cr_assert(io);
        const double xs[4] = {1, 3, -3, -1}, gs[2] = {2, 3},
                     bs[2] = {0.5, -0.5};
        for (int k = 0; k < 4; k++)
            bg_store(dt, (void *)io->in[0].data, k, xs[k]);
        for (int k = 0; k < 2; k++) {
            bg_store(dt, (void *)io->in[1].data, k, gs[k]);
            bg_store(dt, (void *)io->in[2].data, k, bs[k]);
        }
        if (p)
            cr_assert_eq(pf_run(p, io, false, 1), BRAID_OK, "%s",
                         braid_last_error());
        else
            cr_assert_eq(braid_reference_run(g, io->in, io->ninputs, io->out,
                                             io->noutputs),
                         BRAID_OK, "%s", braid_last_error());
        const double want[4] = {-1.5, 2.5, -1.5, 2.5};
        for (int k = 0; k < 4; k++)
            cr_assert_eq(bg_load(dt, io->out[0].data, k), want[k],
                         "%s executor %d element %d: %g", braid_dtype_name(dt),
                         ex, k, bg_load(dt, io->out[0].data, k));
        ts_io_free(io);
        braid_plan_free(p);
        braid_graph_free(g);
    }
    braid_graph *g = ln_graph(BRAID_F64, 1, DIMS(4), true, 0.25);
    ts_io *io = ts_io_new(g, 1);
    for (int k = 0; k < 4; k++) {
        bg_store(BRAID_F64, (void *)io->in[0].data, k, 5);
        bg_store(BRAID_F64, (void *)io->in[1].data, k, 2);
        bg_store(BRAID_F64, (void *)io->in[2].data, k, k);
    }
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->out, io->noutputs),
        BRAID_OK);
    for (int k = 0; k < 4; k++)
        cr_assert_eq(bg_load(BRAID_F64, io->out[0].data, k), (double)k);
    ts_io_free(io);
    braid_graph_free(g);
}

/* x = [1, 2, 3, 4], eps 1e-3: the textbook formula in double. */
Test(op_layernorm, reference_formula) {
    braid_graph *g = ln_graph(BRAID_F64, 2, DIMS(1, 4), false, 1e-3);
    ts_io *io = ts_io_new(g, 1);
    for (int k = 0; k < 4; k++)
        bg_store(BRAID_F64, (void *)io->in[0].data, k, k + 1);
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->out, io->noutputs),
        BRAID_OK);
    for (int k = 0; k < 4; k++) {
        double want = (k + 1 - 2.5) / sqrt(1.25 + 1e-3);
        cr_assert_float_eq(bg_load(BRAID_F64, io->out[0].data, k), want, 1e-15);
    }
    ts_io_free(io);
    braid_graph_free(g);
}

/* ---- CPU results ------------------------------------------------------------
 */

static void cpu_case(braid_dtype dt, int64_t rows, int64_t C, bool affine,
                     ts_range r, uint64_t seed) {
    char what[128];
    snprintf(what, sizeof what, "%s [%lld, %lld]%s in [%g, %g]",
             braid_dtype_name(dt), (long long)rows, (long long)C,
             affine ? " affine" : "", r.lo, r.hi);
    braid_graph *g = ln_graph(dt, 2, DIMS(rows, C), affine, 1e-5);
    braid_plan *p3 = compile_for(g, "cpu", 3), *p1 = compile_for(g, "cpu", 1);
    cr_assert_eq(count_op_in(p3->res.graph, BRAID_OP_LAYER_NORM), 1, "%s",
                 what);
    ts_io *io = make_io(g, r, seed), *one = make_io(g, r, seed);
    run_check(g, p3, io, false, what);
    cr_assert_eq(pf_run(p1, one, false, 0), BRAID_OK);
    cr_assert(pf_same_outputs(io, one), "%s: 1 and 3 threads differ", what);
    ts_io_free(io);
    ts_io_free(one);
    braid_plan_free(p1);
    braid_plan_free(p3);
    braid_graph_free(g);
}

static const int64_t row_lengths[] = {1, 7, 33, 768, 1000, 8192, 20001};

Test(op_layernorm, cpu_matches_reference, .timeout = 120) {
    uint64_t seed = 10;
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (size_t i = 0; i < sizeof row_lengths / sizeof *row_lengths; i++) {
        int64_t C = row_lengths[i], rows = C >= 1000 ? 3 : 37;
        cpu_case(dt, rows, C, true, TS_RANGE(-4, 4), seed++);
        cpu_case(dt, rows, C, false, TS_RANGE(-4, 4), seed++);
    }
    /* far from 0, small spread: the two-pass variance keeps its digits
     * (E[x²] - E[x]² in f32 would lose about 1e-4 at [10, 11]) */
    cpu_case(BRAID_F32, 5, 768, true, TS_RANGE(10, 11), seed++);
    cpu_case(BRAID_F64, 5, 768, true, TS_RANGE(1e3, 1e3 + 1), seed++);
}

/* Random shapes (rank 1..4): row lengths log-uniform in 1..50000, as many
 * rows as keep a case under 2^17 elements, every float dtype. */
Test(op_layernorm, cpu_random_shapes, .timeout = 120) {
    uint64_t st = 0x1a7e;
    for (int i = 0; i < 12; i++) {
        int64_t C = (int64_t)exp(ts_rand_unit(&st) * log(50000.0)) + 1;
        if (C > 50000) C = 50000;
        int64_t most = ((int64_t)1 << 17) / C;
        int64_t rows = 1 + (int64_t)(ts_rand_unit(&st) * (double)most);
        braid_dtype dt =
            (braid_dtype[]){BRAID_F32, BRAID_F16, BRAID_BF16, BRAID_F64}[i % 4];
        int rank = 1 + i % 4;
        int64_t dims[4] = {1, 1, 1, C};
        if (rank == 1) rows = 1;
        if (rank >= 2) dims[3 - 1] = rows;
        braid_graph *g = ln_graph(dt, rank, dims + 4 - rank, i % 3 != 0, 1e-5);
        braid_plan *p = compile_for(g, "cpu", 2);
        ts_io *io = make_io(g, TS_RANGE(-8, 8), 200 + (uint64_t)i);
        char what[96];
        snprintf(what, sizeof what, "random %d: %s rank %d rows %lld C %lld", i,
                 braid_dtype_name(dt), rank, (long long)rows, (long long)C);
        run_check(g, p, io, false, what);
        ts_io_free(io);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* Nothing fuses into a layer_norm: an elementwise producer is its own
 * fused node, the consumer too. */
Test(op_layernorm, producer_fused_apart) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, DIMS(5, 12));
    braid_tensor h = braid_add(g, braid_mul(g, x, x), x);
    braid_tensor y = braid_layer_norm(g, h, BRAID_NONE, BRAID_NONE, 1e-5);
    braid_output(g, "y", braid_tanh(g, y));
    braid_plan *p = compile_for(g, "cpu", 2);
    cr_assert_eq(count_op_in(p->res.graph, BRAID_OP_LAYER_NORM), 1);
    uint32_t in = p->res.graph->nodes[ln_node(p)].inputs[0];
    cr_assert_eq(p->res.graph->nodes[in].op, BRAID_OP_FUSED);
    ts_io *io = make_io(g, TS_RANGE(-2, 2), 3);
    run_check(g, p, io, false, "producer");
    ts_io_free(io);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- GPU plans
 * ---------------------------------------------------------------- */

/* Independent layer norms on cuda:0 covering the kernel's shapes: groups
 * of 1..32 lanes, a warp, blocks, the long-row path, every dtype, with and
 * without gamma/beta, and an input read at an odd offset (a view). */
static braid_graph *kernel_zoo(void) {
    static const int64_t lens[] = {1, 7, 33, 768, 1000, 8192, 20001};
    braid_graph *g = braid_graph_new(NULL);
    int n = 0;
    char name[32];
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        int64_t C = lens[i];
        snprintf(name, sizeof name, "x%d", n);
        braid_tensor x = braid_input(g, name, dt, 2, DIMS(3, C));
        braid_tensor gm = BRAID_NONE, bt = BRAID_NONE;
        if (i % 2 == 0) {
            snprintf(name, sizeof name, "gamma%d", n);
            gm = braid_input(g, name, dt, 1, &C);
            snprintf(name, sizeof name, "beta%d", n);
            bt = braid_input(g, name, dt, 1, &C);
        }
        snprintf(name, sizeof name, "y%d", n++);
        braid_output(g, name, braid_layer_norm(g, x, gm, bt, 1e-5));
    }
    braid_tensor flat = braid_input(g, "flat", BRAID_F32, 1, DIMS(4 * 64 + 1));
    braid_tensor sl = braid_slice(g, flat, DIMS(1), DIMS(4 * 64 + 1), NULL);
    braid_tensor v = braid_reshape(g, sl, 2, DIMS(4, 64));
    braid_output(g, "yv", braid_layer_norm(g, v, BRAID_NONE, BRAID_NONE, 0.5));
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    hint_gpu(g);
    return g;
}

Test(op_layernorm, kernel_zoo_emulated, .timeout = 120) {
    braid_graph *g = kernel_zoo();
    braid_plan *p = compile_for(g, "cpu,cuda:0", 2);
    cr_assert_eq(count_op_in(p->res.graph, BRAID_OP_LAYER_NORM), 4 * 7 + 1);
    uint32_t id = ln_node(p);
    cr_assert_eq(p->res.info[id].device.kind, BP_DEVICE_CUDA);
    ts_io *io = make_io(g, TS_RANGE(-6, 6), 30);
    run_check(g, p, io, true, "kernel zoo");
    ts_io_free(io);
    braid_plan_free(p);
    braid_graph_free(g);
}

#ifdef BRAID_HAVE_CUDA
Test(op_layernorm, kernels_compile_for_sm90, .timeout = 300) {
    setenv("BRAID_CACHE_DIR", "", 1);
    braid_graph *g = kernel_zoo();
    braid_plan *p = compile_for(g, "cpu,cuda:0", 2);
    bc_source src;
    cr_assert_eq(bc_plan_source(p, &src), BRAID_OK, "%s", braid_last_error());
    uint32_t lns = 0, blocks = 0, longp = 0;
    for (uint32_t i = 0; i < src.nkernels; i++) {
        const bc_kernel *k = &src.kernels[i];
        const bg_node *n = bg_node_at(p->res.graph, k->node);
        if (n->op != BRAID_OP_LAYER_NORM) continue;
        lns++;
        cr_assert_eq(k->kind, BC_KERNEL_LAYER_NORM);
        cr_assert_eq(k->nlaunch, 1);
        cr_assert_eq(k->extra, BC_EXTRA_NONE);
        const bc_launch *L = &k->launch[0];
        uint32_t threads = L->block[0] * L->block[1] * L->block[2];
        cr_assert(threads >= 32 && threads <= 1024 && threads % 32 == 0);
        int64_t C = n->dims[n->rank - 1], R = bg_numel(n) / C;
        if (C > 32 * 32) {
            cr_assert_eq(L->grid[0], (uint32_t)R, "block per row");
            blocks++;
        }
        longp += C >= 20000;
    }
    cr_assert_eq(lns, 4 * 7 + 1);
    cr_assert_geq(blocks, 8);
    cr_assert_geq(longp, 4);
    cr_assert(strstr(src.text, "_bsum("), "block path generated");
    const char *dump = getenv("BRAID_CODEGEN_DUMP"); /* for reading */
    if (dump && *dump) {
        char path[1024];
        snprintf(path, sizeof path, "%s/layernorm_zoo.cu", dump);
        FILE *f = fopen(path, "w");
        if (f) {
            fputs(src.text, f);
            fclose(f);
        }
    }
    bc_binary bin;
    char err[16384];
    braid_status s =
        bc_compile(src.text, "kernel.cu", 90, &bin, err, sizeof err);
    cr_assert_eq(s, BRAID_OK, "%s", err);
    bc_binary_free(&bin);
    bc_source_free(&src);
    braid_plan_free(p);
    braid_graph_free(g);
}
#endif

/* ---- plan files, text, DOT --------------------------------------------------
 */

static bool holds(const unsigned char *data, size_t size, const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= size; i++)
        if (memcmp(data + i, s, n) == 0) return true;
    return false;
}

Test(op_layernorm, planfile_round_trip) {
    for (int gpu = 0; gpu < 2; gpu++) {
        braid_graph *g = ln_graph(BRAID_F32, 3, DIMS(2, 5, 300), true, 0.125);
        if (gpu) hint_gpu(g);
        braid_plan *p = pf_compile(g, gpu ? "cpu,cuda:0" : "cpu");
        size_t size;
        unsigned char *data = pf_save(p, &size);
        cr_assert(holds(data, size, "layer_norm"), "stored by name");
        braid_plan *q = pf_load(data, size);
        uint32_t a = ln_node(p), b = ln_node(q);
        const bg_node *na = bg_node_at(p->res.graph, a);
        const bg_node *nb = bg_node_at(q->res.graph, b);
        cr_assert_eq(nb->attr.value[0], 0.125);
        cr_assert_eq(memcmp(nb->dims, na->dims, sizeof na->dims), 0);
        cr_assert_eq(q->res.info[b].device.kind, p->res.info[a].device.kind);
        ts_io *x = make_io(g, TS_RANGE(-4, 4), 40),
              *y = make_io(g, TS_RANGE(-4, 4), 40);
        cr_assert_eq(pf_run(p, x, gpu, 1), BRAID_OK, "%s", braid_last_error());
        cr_assert_eq(pf_run(q, y, gpu, 1), BRAID_OK, "%s", braid_last_error());
        cr_assert(pf_same_outputs(x, y));
        run_check(g, q, y, gpu, "loaded plan");
        ts_io_free(x);
        ts_io_free(y);
        free(data);
        braid_plan_free(q);
        braid_graph_free(g);
        braid_plan_free(p);
    }
}

Test(op_layernorm, text_and_dumps_name_layer_norm) {
    braid_graph *g = ln_graph(BRAID_F32, 2, DIMS(3, 8), true, 1e-5);
    braid_plan *p = compile_for(g, "cpu", 1);
    char *text = pf_text(p, true);
    cr_assert(strstr(text, "layer_norm"), "%s", text);
    free(text);
    char *gt = NULL;
    cr_assert_eq(braid_graph_print(g, &gt, NULL), BRAID_OK);
    cr_assert(strstr(gt, "layer_norm") && strstr(gt, "eps="), "%s", gt);
    braid_graph *h = braid_graph_parse(gt, strlen(gt), "ln.graph", NULL);
    cr_assert(h && braid_graph_status(h) == BRAID_OK, "%s",
              h ? braid_graph_error(h) : "out of memory");
    char *ht = NULL;
    cr_assert_eq(braid_graph_print(h, &ht, NULL), BRAID_OK);
    cr_assert_str_eq(ht, gt);
    free(ht);
    free(gt);
    braid_graph_free(h);
    char *dot = NULL;
    size_t dlen = 0;
    FILE *f = open_memstream(&dot, &dlen);
    cr_assert(f);
    cr_assert_eq(braid_plan_to_dot(p, f), BRAID_OK);
    fclose(f);
    cr_assert(strstr(dot, "layer_norm"), "%s", dot);
    free(dot);
    braid_plan_free(p);
    braid_graph_free(g);
}
