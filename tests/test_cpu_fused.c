/* tests/test_cpu_fused.c — the CPU tile interpreter for fused nodes
 * (runtime/cpu/cpu_fused*.c) against the unfused kernels and the reference.
 *
 * For each program kind, random graphs of random shapes and dtypes (with
 * broadcasting) run three ways: fused, unfused (BRAID_PASS_FUSE off) and
 * by the reference evaluator. ELEMENTWISE and MATMUL programs use the
 * unfused kernels' own loops, so fused and unfused agree bit for bit;
 * REDUCE programs sum in another order, so they agree within tolerance.
 * Every fused run is repeated on 1 and on 3 threads: bit for bit the same
 * (the tiling never depends on the thread count). Larger shapes cover the
 * multi-tile, split-reduction and row-reduction paths, and 300 random DAGs
 * (tests/support) compiled with fusion on match the reference. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "runtime/runtime.h"
#include "support/support.h"

/* ---- running a graph three ways ------------------------------------------ */

/* Output buffers shaped like io's. */
typedef struct outs {
    braid_output_binding *b; /* one per graph output */
    uint32_t n;              /* entries */
} outs;

static outs outs_new(const ts_io *io) {
    outs o = {calloc(io->noutputs + 1, sizeof *o.b), io->noutputs};
    cr_assert(o.b);
    for (uint32_t i = 0; i < o.n; i++) {
        o.b[i] = io->out[i];
        o.b[i].data = calloc(io->out[i].bytes + 1, 1);
        cr_assert(o.b[i].data);
    }
    return o;
}

static void outs_free(outs o) {
    for (uint32_t i = 0; i < o.n; i++)
        free(o.b[i].data);
    free(o.b);
}

/* Programs of each kind in a plan. */
typedef struct kinds {
    uint32_t n[BP_PROGRAM_KIND_COUNT]; /* by bp_program_kind */
} kinds;

/* Compiles g for the cpu (optional passes in `disable` off) with `threads`
 * threads, runs it on io's inputs into out; counts its programs. */
static kinds run(const braid_graph *g, unsigned disable, int threads,
                 const ts_io *io, const braid_output_binding *out) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    o.num_threads = threads;
    o.disable_passes = disable;
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    kinds k = {{0}};
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        if (p->res.graph->nodes[id].op != BRAID_OP_FUSED) continue;
        const bp_program *pr = &p->res.programs[p->res.info[id].program];
        cr_assert_eq(br_fused_check(p->res.graph, id, pr), BRAID_OK, "%s",
                     braid_last_error());
        k.n[pr->kind]++;
    }
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_run(e, io->in, io->ninputs, out, io->noutputs), BRAID_OK,
                 "%s", braid_last_error());
    braid_exec_free(e);
    braid_plan_free(p);
    return k;
}

static bool same_bits(const outs *a, const outs *b, char *msg, size_t size) {
    for (uint32_t i = 0; i < a->n; i++)
        if (memcmp(a->b[i].data, b->b[i].data, a->b[i].bytes) != 0) {
            snprintf(msg, size, "output %s differs", a->b[i].name);
            return false;
        }
    return true;
}

/* The three-way comparison of one graph; returns the fused plan's
 * programs. `exact`: fused and unfused must agree bit for bit. */
static kinds check_graph(const braid_graph *g, uint64_t seed, bool exact) {
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    ts_io *io = ts_io_new(g, seed);
    cr_assert(io);
    outs unfused = outs_new(io), one = outs_new(io);
    kinds k = run(g, 0, 3, io, io->out);
    run(g, BRAID_PASS_FUSE, 3, io, unfused.b);
    run(g, 0, 1, io, one.b);
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s", braid_last_error());
    char msg[512] = "";
    outs fused = {io->out, io->noutputs};
    bool ok = ts_io_compare(io, msg, sizeof msg) &&
              same_bits(&fused, &one, msg, sizeof msg) &&
              (!exact || same_bits(&fused, &unfused, msg, sizeof msg));
    if (!ok) ts_log_graph(g);
    cr_assert(ok, "seed %llu: %s", (unsigned long long)seed, msg);
    /* the unfused run against the reference too */
    braid_output_binding *own = io->out;
    io->out = unfused.b;
    ok = ts_io_compare(io, msg, sizeof msg);
    io->out = own;
    if (!ok) ts_log_graph(g);
    cr_assert(ok, "seed %llu, unfused: %s", (unsigned long long)seed, msg);
    outs_free(unfused);
    outs_free(one);
    ts_io_free(io);
    return k;
}

/* ---- random elementwise graphs ---------------------------------------------
 */

typedef struct gen {
    braid_graph *g; /* the graph being built */
    uint64_t rng;   /* its random state */
    braid_dtype dt; /* the chain's dtype */
    int rank;       /* the output's shape */
    int64_t dims[BRAID_MAX_RANK];
    int ninputs; /* inputs made so far */
} gen;

static int pick(gen *G, int n) {
    return ts_rand_int(&G->rng, 0, n - 1);
}

/* A shape broadcasting to the output's: trailing dims kept or made 1. */
static int partner(gen *G, int64_t *dims) {
    int r = G->rank - pick(G, G->rank + 1);
    for (int i = 0; i < r; i++) {
        int64_t d = G->dims[G->rank - r + i];
        dims[i] = pick(G, 3) == 0 ? 1 : d;
    }
    return r;
}

static braid_tensor input(gen *G, braid_dtype dt, bool full) {
    char name[16];
    snprintf(name, sizeof name, "in%d", G->ninputs++);
    int64_t dims[BRAID_MAX_RANK];
    int r = full ? G->rank : partner(G, dims);
    return braid_input(G->g, name, dt, r, full ? G->dims : dims);
}

/* A second operand: another input (maybe broadcast), a scalar fill, or a
 * constant, all-equal or not. */
static braid_tensor operand(gen *G) {
    switch (pick(G, 5)) {
    case 0:
        return braid_fill(G->g, G->dt, 0, NULL, 1 + pick(G, 3));
    case 1: {
        int64_t n = G->dims[G->rank - 1], d[1] = {n};
        double v[64];
        bool equal = pick(G, 2);
        for (int64_t i = 0; i < n; i++)
            v[i] = equal ? 3 : (double)(i % 5) - 2;
        char buf[64 * 8];
        for (int64_t i = 0; i < n; i++)
            bg_store(G->dt, buf, i, v[i]);
        return braid_constant(G->g, G->dt, 1, d, buf);
    }
    default:
        return input(G, G->dt, false);
    }
}

/* One op applied to x, keeping float values within a few units (tanh after
 * products) and never feeding a computed float to a discontinuity. */
static braid_tensor step(gen *G, braid_tensor x) {
    braid_graph *g = G->g;
    bool fl = braid_dtype_is_float(G->dt);
    static const braid_op bin[] = {BRAID_OP_ADD, BRAID_OP_SUB, BRAID_OP_MUL,
                                   BRAID_OP_MAX, BRAID_OP_MIN};
    static const braid_op fun[] = {BRAID_OP_TANH, BRAID_OP_SIGMOID,
                                   BRAID_OP_SIN,  BRAID_OP_COS,
                                   BRAID_OP_EXP,  BRAID_OP_GELU};
    static const braid_op un[] = {BRAID_OP_NEG, BRAID_OP_ABS, BRAID_OP_RELU,
                                  BRAID_OP_SQUARE};
    switch (pick(G, 6)) {
    case 0:
    case 1: {
        braid_op op = bin[pick(G, 5)];
        braid_tensor y = operand(G);
        x = pick(G, 2) ? braid_binary(g, op, x, y) : braid_binary(g, op, y, x);
        return fl && op == BRAID_OP_MUL ? braid_tanh(g, x) : x;
    }
    case 2: /* exp of a bounded value */
        return fl ? braid_unary(g, fun[pick(G, 6)], braid_tanh(g, x)) : x;
    case 3: {
        braid_op op = un[pick(G, 4)];
        x = braid_unary(g, op, x);
        return fl && op == BRAID_OP_SQUARE ? braid_tanh(g, x) : x;
    }
    case 4: { /* a selection on exact inputs */
        braid_tensor a = input(G, BRAID_I32, false);
        braid_tensor b = input(G, BRAID_I32, false);
        braid_tensor c = braid_binary(g, BRAID_OP_LT + pick(G, 4), a, b);
        return braid_where(g, c, x, braid_cast(g, a, G->dt));
    }
    default: /* a cast of an exact input */
        return braid_add(g, x,
                         braid_cast(g, input(G, BRAID_BOOL, false), G->dt));
    }
}

static braid_graph *elementwise_graph(uint64_t seed, int64_t max_dim) {
    gen G = {braid_graph_new(NULL), seed * 7919 + 1, BRAID_F32, 0, {0}, 0};
    static const braid_dtype dts[] = {BRAID_F32, BRAID_F32,  BRAID_F64,
                                      BRAID_F16, BRAID_BF16, BRAID_I32};
    G.dt = dts[pick(&G, 6)];
    G.rank = 1 + pick(&G, 4);
    for (int i = 0; i < G.rank; i++)
        G.dims[i] = 1 + pick(&G, (int)max_dim);
    G.dims[G.rank - 1] = G.dims[G.rank - 1] > 64 ? 64 : G.dims[G.rank - 1];
    bool low = G.dt == BRAID_F16 || G.dt == BRAID_BF16;
    braid_tensor x = input(&G, G.dt, true);
    int nops = 2 + pick(&G, low ? 3 : 7);
    for (int i = 0; i < nops; i++)
        x = step(&G, x);
    braid_output(G.g, "y", x);
    return G.g;
}

Test(cpu_fused, elementwise_random_shapes_and_dtypes) {
    uint32_t programs = 0;
    for (uint64_t seed = 0; seed < 150; seed++) {
        braid_graph *g = elementwise_graph(seed, 7);
        programs += check_graph(g, seed, true).n[BP_PROGRAM_ELEMENTWISE];
        braid_graph_free(g);
    }
    cr_assert_geq(programs, 120, "only %u fused programs", (unsigned)programs);
}

/* Many tiles per thread: inputs broadcast along rows and columns. */
Test(cpu_fused, elementwise_many_tiles) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t d[2] = {700, 1500}, row[1] = {1500}, col[2] = {700, 1};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, d);
    braid_tensor r = braid_input(g, "r", BRAID_F32, 1, row);
    braid_tensor c = braid_input(g, "c", BRAID_F32, 2, col);
    braid_tensor y = braid_tanh(g, braid_mul(g, braid_add(g, x, r), c));
    y = braid_sub(g, braid_sigmoid(g, y), braid_exp(g, braid_neg(g, c)));
    braid_output(g, "y", y);
    kinds k = check_graph(g, 1, true);
    /* exp(-c) on the [700, 1] column is a group of its own */
    cr_assert_eq(k.n[BP_PROGRAM_ELEMENTWISE], 2);
    braid_graph_free(g);
}

/* ---- reductions
 * ---------------------------------------------------------------- */

/* A reduction over the given axes of a short prologue on x (shape dims). */
static braid_graph *reduce_graph(uint64_t seed, braid_dtype dt, int rank,
                                 const int64_t *dims, int naxes,
                                 const int *axes) {
    uint64_t rng = seed * 104729 + 3;
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", dt, rank, dims);
    braid_tensor b = braid_input(g, "b", dt, 1, &dims[rank - 1]);
    bool fl = braid_dtype_is_float(dt);
    switch (ts_rand_int(&rng, 0, 3)) {
    case 0:
        x = braid_square(g, x);
        break;
    case 1:
        x = braid_mul(g, braid_abs(g, x), b);
        break;
    case 2:
        x = fl ? braid_exp(g, braid_tanh(g, braid_sub(g, x, b)))
               : braid_neg(g, braid_sub(g, x, b));
        break;
    default: /* a broadcast_to absorbed into the prologue */
        x = braid_relu(g, braid_broadcast_to(g, b, rank, dims));
        break;
    }
    bool keep = ts_rand_int(&rng, 0, 1);
    braid_tensor y;
    switch (ts_rand_int(&rng, 0, fl ? 3 : 2)) {
    case 0:
        y = braid_sum(g, x, naxes, axes, keep);
        break;
    case 1:
        y = braid_reduce_max(g, x, naxes, axes, keep);
        break;
    case 2:
        y = braid_reduce_min(g, x, naxes, axes, keep);
        break;
    default:
        y = braid_mean(g, x, naxes, axes, keep);
        break;
    }
    braid_output(g, "y", y);
    return g;
}

Test(cpu_fused, reduce_random_shapes_axes_and_dtypes) {
    static const braid_dtype dts[] = {BRAID_F32, BRAID_F64, BRAID_I32,
                                      BRAID_F16};
    for (uint64_t seed = 0; seed < 120; seed++) {
        uint64_t rng = seed + 11;
        int rank = ts_rand_int(&rng, 1, 4), axes[BRAID_MAX_RANK], naxes = 0;
        int64_t dims[BRAID_MAX_RANK];
        for (int i = 0; i < rank; i++) {
            dims[i] = ts_rand_int(&rng, 1, 9);
            if (ts_rand_int(&rng, 0, 1)) axes[naxes++] = i;
        }
        if (naxes == 0) axes[naxes++] = ts_rand_int(&rng, 0, rank - 1);
        braid_dtype dt = dts[seed % 4];
        braid_graph *g = reduce_graph(seed, dt, rank, dims, naxes, axes);
        uint32_t k = check_graph(g, seed, false).n[BP_PROGRAM_REDUCE];
        cr_assert_eq(k, 1, "seed %llu", (unsigned long long)seed);
        braid_graph_free(g);
    }
}

/* The arrangements: split over pieces (few long outputs), whole outputs
 * per tile, long outputs per thread, rows accumulated elementwise. */
Test(cpu_fused, reduce_large_paths) {
    static const struct {
        int rank;
        int64_t dims[3];
        int naxes;
        int axes[3];
    } cases[] = {
        {1, {70001}, 1, {0}},          /* one output, split in pieces */
        {2, {3, 50000}, 1, {1}},       /* few long outputs */
        {2, {40, 9000}, 1, {1}},       /* many long outputs */
        {2, {300, 7}, 1, {1}},         /* several outputs per tile */
        {2, {2000, 100}, 1, {0}},      /* rows */
        {3, {5, 64, 300}, 2, {0, 2}},  /* kept axis between reduced ones */
        {3, {30, 20, 150}, 2, {0, 1}}, /* rows over two reduced axes */
        {3, {2, 3000, 4}, 1, {1}},     /* kept inner run too short: runs */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (uint64_t s = 0; s < 4; s++) {
            braid_dtype dt = s == 3   ? BRAID_I32
                             : s == 2 ? BRAID_F64
                                      : BRAID_F32;
            braid_graph *g =
                reduce_graph(i * 4 + s, dt, cases[i].rank, cases[i].dims,
                             cases[i].naxes, cases[i].axes);
            kinds k = check_graph(g, i * 4 + s, false);
            cr_assert_eq(k.n[BP_PROGRAM_REDUCE], 1, "case %zu", i);
            braid_graph_free(g);
        }
    }
}

/* ---- matmul epilogues
 * ------------------------------------------------------------ */

static braid_graph *matmul_graph(uint64_t seed) {
    uint64_t rng = seed * 31 + 5;
    static const braid_dtype dts[] = {BRAID_F32, BRAID_F32, BRAID_F64,
                                      BRAID_F16};
    static const braid_op acts[] = {BRAID_OP_RELU, BRAID_OP_GELU,
                                    BRAID_OP_SILU, BRAID_OP_SIGMOID,
                                    BRAID_OP_TANH, BRAID_OP_ADD};
    braid_dtype dt = dts[seed % 4];
    int64_t M = ts_rand_int(&rng, 1, 40), N = ts_rand_int(&rng, 1, 40);
    int64_t K = ts_rand_int(&rng, 1, dt == BRAID_F16 ? 8 : 40);
    int64_t B = ts_rand_int(&rng, 1, 3);
    unsigned flags = (unsigned)ts_rand_int(&rng, 0, 3);
    bool batch = ts_rand_int(&rng, 0, 1);
    int64_t a[3] = {B, flags & BRAID_TRANSPOSE_A ? K : M,
                    flags & BRAID_TRANSPOSE_A ? M : K};
    int64_t b[2] = {flags & BRAID_TRANSPOSE_B ? N : K,
                    flags & BRAID_TRANSPOSE_B ? K : N};
    int64_t bias[2] = {1, N};
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = batch ? braid_input(g, "a", dt, 3, a)
                           : braid_input(g, "a", dt, 2, a + 1);
    braid_tensor w = braid_input(g, "b", dt, 2, b);
    bool row = ts_rand_int(&rng, 0, 1);
    braid_tensor c = row ? braid_input(g, "c", dt, 2, bias)
                         : braid_input(g, "c", dt, 1, bias + 1);
    braid_tensor m = braid_matmul(g, x, w, flags);
    braid_tensor y =
        ts_rand_int(&rng, 0, 1) ? braid_add(g, m, c) : braid_add(g, c, m);
    braid_op act = acts[ts_rand_int(&rng, 0, 5)];
    if (act != BRAID_OP_ADD) y = braid_unary(g, act, y);
    braid_output(g, "y", y);
    return g;
}

Test(cpu_fused, matmul_bias_activation) {
    for (uint64_t seed = 0; seed < 80; seed++) {
        braid_graph *g = matmul_graph(seed);
        kinds k = check_graph(g, seed, true);
        cr_assert_eq(k.n[BP_PROGRAM_MATMUL], 1, "seed %llu",
                     (unsigned long long)seed);
        braid_graph_free(g);
    }
}

/* A product big enough for many epilogue tiles. */
Test(cpu_fused, matmul_large_epilogue) {
    braid_graph *g = braid_graph_new(NULL);
    /* 800 columns: br_gemm splits them in two blocks, on 1 or 3 threads
     * alike (the bit-for-bit comparison of check_graph) */
    int64_t a[2] = {300, 64}, b[2] = {64, 800}, c[1] = {800};
    braid_tensor y =
        braid_add(g,
                  braid_matmul(g, braid_input(g, "a", BRAID_F32, 2, a),
                               braid_input(g, "b", BRAID_F32, 2, b), 0),
                  braid_input(g, "c", BRAID_F32, 1, c));
    braid_output(g, "y", braid_gelu(g, y));
    cr_assert_eq(check_graph(g, 9, true).n[BP_PROGRAM_MATMUL], 1);
    braid_graph_free(g);
}

/* ---- random DAGs
 * -------------------------------------------------------------------- */

Test(cpu_fused, random_graphs_with_fusion_match_reference) {
    uint32_t programs = 0;
    for (uint64_t seed = 0; seed < 300; seed++) {
        ts_graph_options o;
        ts_graph_options_default(&o);
        o.mixed_dtypes = seed % 3 != 0;
        braid_graph *g = ts_random_graph(seed + 5000, &o);
        ts_io *io = ts_io_new(g, seed);
        cr_assert(io);
        kinds k = run(g, 0, 0, io, io->out);
        programs += k.n[0] + k.n[1] + k.n[2];
        cr_assert_eq(
            braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
            BRAID_OK);
        char msg[512];
        bool ok = ts_io_compare(io, msg, sizeof msg);
        if (!ok) ts_log_graph(g);
        cr_assert(ok, "seed %llu: %s", (unsigned long long)seed + 5000, msg);
        ts_io_free(io);
        braid_graph_free(g);
    }
    cr_assert_geq(programs, 150, "only %u fused nodes", (unsigned)programs);
    cr_log_info("%u fused nodes in 300 random graphs", (unsigned)programs);
}

/* ---- the program check
 * ------------------------------------------------------------------ */

/* br_fused_check refuses programs the interpreter could not run safely. */
Test(cpu_fused, check_refuses_malformed_programs) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t d[1] = {8};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, d);
    braid_tensor y = braid_exp(g, braid_neg(g, x));
    braid_output(g, "y", y);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK);
    uint32_t f = p->res.outputs[0].node;
    cr_assert_eq(p->res.graph->nodes[f].op, BRAID_OP_FUSED);
    bp_program *pr = &p->res.programs[p->res.info[f].program];
    cr_assert_eq(br_fused_check(p->res.graph, f, pr), BRAID_OK);
    cr_assert_neq(br_fused_check(p->res.graph, f, NULL), BRAID_OK);
    bp_instr saved = pr->instr[1];
    pr->instr[1].arg[0] = 5; /* an operand computed later */
    cr_assert_neq(br_fused_check(p->res.graph, f, pr), BRAID_OK);
    cr_assert(strstr(braid_last_error(), "instruction 1"), "%s",
              braid_last_error());
    pr->instr[1] = saved;
    pr->instr[0].input = 3; /* a missing input */
    cr_assert_neq(br_fused_check(p->res.graph, f, pr), BRAID_OK);
    pr->instr[0].input = 0;
    pr->dims[0] = 9; /* another shape than the node's */
    cr_assert_neq(br_fused_check(p->res.graph, f, pr), BRAID_OK);
    pr->dims[0] = 8;
    pr->instr[2].dtype = BRAID_I32; /* exp on i32 */
    cr_assert_neq(br_fused_check(p->res.graph, f, pr), BRAID_OK);
    pr->instr[2].dtype = BRAID_F32;
    cr_assert_eq(br_fused_check(p->res.graph, f, pr), BRAID_OK);
    braid_plan_free(p);
    braid_graph_free(g);
}
