/* tests/test_op_attention.c — the attention op (docs/ops.md, issue 14):
 * out[b,:,h,:] = softmax(q·kᵀ·scale + mask)·v per batch and head, a fully
 * masked row giving 0, computed by every executor like the reference
 * evaluator (float64).
 *
 *   - the builder and the node's rules: one node; errors name the op and
 *     stay sticky; the text format (scale=, causal) round-trips;
 *   - the reference on exact small cases (equal scores average v; a fully
 *     masked row is 0);
 *   - the CPU kernel against the reference on random shapes (S ≠ T, D not
 *     a power of two, T longer than a tile), masks of several broadcast
 *     shapes and none, causal, -inf entries and fully masked rows; f32,
 *     f16, bf16, f64; bit-identical on 1 and 3 threads;
 *   - GPU plans on the emulated executor and (built with CUDA) every
 *     generated kernel compiled by NVRTC for sm_90 (D 1 … 256, every
 *     dtype, mask, causal);
 *   - plan files (by op name, scale and flags kept), DOT; braid_grad
 *     against braid_grad of the unfused definition.
 * Tolerances: ts_tolerance of the dtype (f32 1e-4, f16 1e-2, bf16 5e-2,
 * f64 1e-9, atol and rtol alike); inputs in [-1, 1] (scores stay small,
 * so the kernels' float sums and exps differ from the reference's doubles
 * by a few float ulps). */
#define _POSIX_C_SOURCE 200809L
#include "tests/planfile_support.h"

#include <math.h>

#include "tests/support/op_cases.h"
#ifdef BRAID_HAVE_CUDA
#include "codegen/codegen.h"
#endif

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* ---- building ------------------------------------------------------------ */

typedef struct at_case {
    int64_t B, S, T, H, D;
    int mrank;        /* mask rank (0: no mask) */
    int64_t mdims[4]; /* mask dims */
    bool causal;
} at_case;

/* attention(q, k, v[, mask]) as output "y" of a new graph; inputs q, k,
 * v, mask in that order. */
static braid_graph *at_graph(braid_dtype dt, const at_case *c) {
    braid_graph *g = braid_graph_new(NULL);
    cr_assert(g);
    braid_tensor q = braid_input(g, "q", dt, 4, DIMS(c->B, c->S, c->H, c->D));
    braid_tensor k = braid_input(g, "k", dt, 4, DIMS(c->B, c->T, c->H, c->D));
    braid_tensor v = braid_input(g, "v", dt, 4, DIMS(c->B, c->T, c->H, c->D));
    braid_tensor m =
        c->mrank ? braid_input(g, "mask", dt, c->mrank, c->mdims) : BRAID_NONE;
    double scale = 1 / sqrt((double)(c->D > 0 ? c->D : 1));
    braid_output(g, "y",
                 braid_attention(g, q, k, v, m, scale,
                                 c->causal ? BRAID_ATTENTION_CAUSAL : 0));
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

static uint32_t at_node(const braid_plan *p) {
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        if (p->res.graph->nodes[id].op == BRAID_OP_ATTENTION) return id;
    cr_assert_fail("no attention node");
    return BG_NONE;
}

/* ---- running ------------------------------------------------------------- */

/* io for g: every input from [-1, 1]; in the mask (input 3), every 5th
 * element -inf and its first row (or element, for a rank-1 mask) all -inf:
 * fully masked query rows wherever that row broadcasts. */
static ts_io *make_io(const braid_graph *g, uint64_t seed) {
    ts_io *io = ts_io_new(g, seed);
    cr_assert(io);
    for (uint32_t i = 0; i < io->ninputs; i++) {
        const char *name;
        braid_tensor t;
        braid_dtype dt = BRAID_F32;
        int rank = 0;
        int64_t dims[BRAID_MAX_RANK];
        braid_graph_input(g, i, &name, &t);
        braid_tensor_info(g, t, &dt, &rank, dims);
        ts_fill_input(io, i, dt, TS_RANGE(-1, 1), seed + i);
        if (strcmp(name, "mask") != 0) continue;
        int64_t numel = 1, row = rank ? dims[rank - 1] : 1;
        for (int d = 0; d < rank; d++)
            numel *= dims[d];
        for (int64_t e = 0; e < numel; e++)
            if (e % 5 == 3 || (rank >= 2 && e < row))
                bg_store(dt, (void *)io->in[i].data, e, -INFINITY);
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

static const at_case cases[] = {
    {1, 1, 1, 1, 1, 0, {0}, false},
    {1, 5, 7, 2, 3, 0, {0}, false},
    {2, 6, 9, 3, 5, 1, {9}, false},
    {2, 16, 33, 3, 17, 2, {16, 33}, false},
    {1, 16, 16, 4, 16, 4, {1, 1, 16, 16}, false},
    {2, 7, 40, 2, 24, 4, {2, 1, 1, 40}, false},
    {2, 5, 70, 2, 33, 4, {2, 2, 5, 70}, true},
    {1, 12, 12, 2, 64, 0, {0}, true},
    {1, 9, 100, 1, 128, 3, {1, 9, 1}, false},
    {1, 3, 20, 1, 256, 2, {3, 20}, true},
    /* causal past one CPU task of 32 rows: later tasks' products stop at
       their last row's diagonal */
    {1, 80, 80, 2, 16, 0, {0}, true},
    {2, 40, 50, 2, 8, 2, {40, 50}, true},
    {2, 4, 0, 2, 8, 0, {0}, false}, /* T = 0: every row 0 */
};
#define NCASES (sizeof cases / sizeof *cases)

static void case_name(char *buf, size_t n, braid_dtype dt, const at_case *c) {
    snprintf(
        buf, n, "attention %s B%lld S%lld T%lld H%lld D%lld mask rank %d%s",
        braid_dtype_name(dt), (long long)c->B, (long long)c->S, (long long)c->T,
        (long long)c->H, (long long)c->D, c->mrank, c->causal ? " causal" : "");
}

/* ---- the builder and the node's rules --------------------------------------
 */

Test(op_attention, one_node) {
    at_case c = {2, 3, 5, 4, 8, 2, {3, 5}, true};
    braid_graph *g = at_graph(BRAID_F32, &c);
    uint32_t id = BG_NONE;
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == BRAID_OP_ATTENTION) id = i;
    cr_assert_neq(id, BG_NONE);
    const bg_node *n = bg_node_at(g, id);
    cr_assert_eq(n->ninputs, 4);
    cr_assert_eq(n->rank, 4);
    cr_assert_eq(n->dims[0], 2);
    cr_assert_eq(n->dims[1], 3);
    cr_assert_eq(n->dims[2], 4);
    cr_assert_eq(n->dims[3], 8);
    cr_assert_eq(n->attr.flags, BRAID_ATTENTION_CAUSAL);
    cr_assert_float_eq(n->attr.value[0], 1 / sqrt(8.0), 1e-15);
    braid_graph_free(g);
}

/* Each bad call fails naming attention; the error is sticky. */
Test(op_attention, builder_errors) {
    struct {
        braid_dtype qt, mt;
        int64_t q[4], k[4], v[4];
        int mrank;
        int64_t m[5];
        double scale;
        unsigned flags;
        braid_status want;
    } bad[] = {
        {BRAID_I32,
         BRAID_I32,
         {1, 2, 1, 4},
         {1, 3, 1, 4},
         {1, 3, 1, 4},
         0,
         {0},
         1,
         0,
         BRAID_ERR_DTYPE},
        {BRAID_F32,
         BRAID_F32,
         {1, 2, 1, 4},
         {1, 3, 1, 5},
         {1, 3, 1, 5},
         0,
         {0},
         1,
         0,
         BRAID_ERR_SHAPE},
        {BRAID_F32,
         BRAID_F32,
         {1, 2, 1, 4},
         {1, 3, 1, 4},
         {1, 4, 1, 4},
         0,
         {0},
         1,
         0,
         BRAID_ERR_SHAPE},
        {BRAID_F32,
         BRAID_F32,
         {1, 2, 1, 4},
         {1, 3, 2, 4},
         {1, 3, 2, 4},
         0,
         {0},
         1,
         0,
         BRAID_ERR_SHAPE},
        {BRAID_F32,
         BRAID_F32,
         {1, 2, 1, 4},
         {1, 3, 1, 4},
         {1, 3, 1, 4},
         2,
         {3, 3},
         1,
         0,
         BRAID_ERR_SHAPE},
        {BRAID_F32,
         BRAID_F32,
         {1, 2, 1, 4},
         {1, 3, 1, 4},
         {1, 3, 1, 4},
         5,
         {1, 1, 1, 2, 3},
         1,
         0,
         BRAID_ERR_SHAPE},
        {BRAID_F32,
         BRAID_F64,
         {1, 2, 1, 4},
         {1, 3, 1, 4},
         {1, 3, 1, 4},
         2,
         {2, 3},
         1,
         0,
         BRAID_ERR_DTYPE},
        {BRAID_F32,
         BRAID_F32,
         {1, 2, 1, 300},
         {1, 3, 1, 300},
         {1, 3, 1, 300},
         0,
         {0},
         1,
         0,
         BRAID_ERR_SHAPE},
        {BRAID_F32,
         BRAID_F32,
         {1, 2, 1, 4},
         {1, 3, 1, 4},
         {1, 3, 1, 4},
         0,
         {0},
         NAN,
         0,
         BRAID_ERR_INVALID_ARGUMENT},
        {BRAID_F32,
         BRAID_F32,
         {1, 2, 1, 4},
         {1, 3, 1, 4},
         {1, 3, 1, 4},
         0,
         {0},
         1,
         4,
         BRAID_ERR_INVALID_ARGUMENT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor q = braid_input(g, "q", bad[i].qt, 4, bad[i].q);
        braid_tensor k = braid_input(g, "k", bad[i].qt, 4, bad[i].k);
        braid_tensor v = braid_input(g, "v", bad[i].qt, 4, bad[i].v);
        braid_tensor m = bad[i].mrank ? braid_input(g, "m", bad[i].mt,
                                                    bad[i].mrank, bad[i].m)
                                      : BRAID_NONE;
        braid_tensor y =
            braid_attention(g, q, k, v, m, bad[i].scale, bad[i].flags);
        cr_assert_eq(y.id, BRAID_NONE.id, "case %zu accepted", i);
        cr_assert_eq(braid_graph_status(g), bad[i].want, "case %zu: %s", i,
                     braid_graph_error(g));
        cr_assert(strstr(braid_graph_error(g), "attention"), "case %zu: %s", i,
                  braid_graph_error(g));
        /* sticky: a good call now stays invalid */
        cr_assert_eq(braid_attention(g, q, q, q, BRAID_NONE, 1, 0).id,
                     BRAID_NONE.id);
        braid_graph_free(g);
    }
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor q = braid_input(g, "q", BRAID_F32, 4, DIMS(1, 2, 1, 4));
    cr_assert_eq(braid_attention(g, q, BRAID_NONE, q, BRAID_NONE, 1, 0).id,
                 BRAID_NONE.id);
    cr_assert(strstr(braid_graph_error(g), "attention"), "%s",
              braid_graph_error(g));
    braid_graph_free(g);
}

Test(op_attention, text_round_trip_and_rules) {
    const char *good = "braid-graph 1\n"
                       "%0 = input f16[1,2,3,4] name=\"q\"\n"
                       "%1 = input f16[1,5,3,4] name=\"k\"\n"
                       "%2 = input f16[2,5] name=\"m\"\n"
                       "%3 = attention %0, %1, %1, %2 scale=0.5 causal\n"
                       "%4 = attention %0, %1, %1 scale=0.25\n"
                       "output \"y\" = %3\n"
                       "output \"z\" = %4\n";
    braid_graph *g = braid_graph_parse(good, strlen(good), "t.graph", NULL);
    cr_assert(g && braid_graph_status(g) == BRAID_OK, "%s",
              g ? braid_graph_error(g) : braid_last_error());
    cr_assert_eq(bg_node_at(g, 3)->attr.value[0], 0.5);
    cr_assert_eq(bg_node_at(g, 3)->attr.flags, BRAID_ATTENTION_CAUSAL);
    cr_assert_eq(bg_node_at(g, 4)->attr.flags, 0);
    char *gt = NULL;
    cr_assert_eq(braid_graph_print(g, &gt, NULL), BRAID_OK);
    cr_assert(strstr(gt, "scale=0.5 causal"), "%s", gt);
    braid_graph *h = braid_graph_parse(gt, strlen(gt), "t2.graph", NULL);
    cr_assert(h && braid_graph_status(h) == BRAID_OK);
    cr_assert(bg_graph_equal(g, h));
    free(gt);
    braid_graph_free(h);
    braid_graph_free(g);
    static const char *bad[] = {
        "braid-graph 1\n%0 = input f32[1,2,3,4] name=\"q\"\n"
        "%1 = attention %0, %0, %0\n", /* no scale */
        "braid-graph 1\n%0 = input f32[1,2,3,4] name=\"q\"\n"
        "%1 = attention %0, %0 scale=1\n", /* two operands */
        "braid-graph 1\n%0 = input f32[1,2,3,4] name=\"q\"\n"
        "%1 = input f32[3] name=\"m\"\n"
        "%2 = attention %0, %0, %0, %1 scale=1\n", /* mask [3] vs T 2 */
        "braid-graph 1\n%0 = input f32[2,3,4] name=\"q\"\n"
        "%1 = attention %0, %0, %0 scale=1\n", /* rank 3 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        braid_graph *b =
            braid_graph_parse(bad[i], strlen(bad[i]), "t.graph", NULL);
        cr_assert(b == NULL || braid_graph_status(b) != BRAID_OK,
                  "case %zu accepted", i);
        braid_graph_free(b);
    }
}

/* ---- the reference: exact cases ---------------------------------------------
 */

/* q = 0: every score equal, so out = mean of v over the allowed keys; a
 * mask row of -inf gives 0. k, v [1,2,1,2]: v rows [1, 3], [3, 5]. Query
 * row 0 is fully masked, row 1 sees both keys → [2, 4]; causal, row 1
 * still sees both (j ≤ i), row 0 would see only key 0 but is masked. */
Test(op_attention, exact_small_cases) {
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (int ex = 0; ex < 3; ex++) {
        at_case c = {1, 2, 2, 1, 2, 2, {2, 2}, ex == 1};
        braid_graph *g = at_graph(dt, &c);
        braid_plan *p = ex == 2 ? NULL : compile_for(g, "cpu", ex ? 3 : 1);
        ts_io *io = ts_io_new(g, 1);
        cr_assert(io);
        const double vs[4] = {1, 3, 3, 5}, ms[4] = {-INFINITY, -INFINITY, 0, 0};
        for (int e = 0; e < 4; e++) {
            bg_store(dt, (void *)io->in[0].data, e, 0);
            bg_store(dt, (void *)io->in[1].data, e, e * 0.5);
            bg_store(dt, (void *)io->in[2].data, e, vs[e]);
            bg_store(dt, (void *)io->in[3].data, e, ms[e]);
        }
        if (p)
            cr_assert_eq(pf_run(p, io, false, 1), BRAID_OK, "%s",
                         braid_last_error());
        else
            cr_assert_eq(braid_reference_run(g, io->in, io->ninputs, io->out,
                                             io->noutputs),
                         BRAID_OK, "%s", braid_last_error());
        const double want[4] = {0, 0, 2, 4};
        for (int e = 0; e < 4; e++)
            cr_assert_eq(bg_load(dt, io->out[0].data, e), want[e],
                         "%s executor %d element %d: %g", braid_dtype_name(dt),
                         ex, e, bg_load(dt, io->out[0].data, e));
        ts_io_free(io);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* ---- the CPU kernel against the reference -----------------------------------
 */

Test(op_attention, cpu_matches_reference, .timeout = 300) {
    char what[160];
    uint64_t seed = 1;
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (size_t i = 0; i < NCASES; i++) {
        case_name(what, sizeof what, dt, &cases[i]);
        braid_graph *g = at_graph(dt, &cases[i]);
        braid_plan *p = compile_for(g, "cpu", 3);
        cr_assert_eq(count_op_in(p->res.graph, BRAID_OP_ATTENTION), 1, "%s",
                     what);
        ts_io *io = make_io(g, seed++);
        run_check(g, p, io, false, what);
        ts_io_free(io);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

/* Splitting over threads changes nothing: the same bits on 1 and 3. */
Test(op_attention, thread_count_independent) {
    at_case c = {2, 37, 70, 3, 40, 2, {37, 70}, false};
    braid_graph *g = at_graph(BRAID_F32, &c);
    braid_plan *p1 = compile_for(g, "cpu", 1), *p3 = compile_for(g, "cpu", 3);
    ts_io *a = make_io(g, 5), *b = make_io(g, 5);
    cr_assert_eq(pf_run(p1, a, false, 1), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(pf_run(p3, b, false, 1), BRAID_OK, "%s", braid_last_error());
    cr_assert(pf_same_outputs(a, b));
    ts_io_free(a);
    ts_io_free(b);
    braid_plan_free(p1);
    braid_plan_free(p3);
    braid_graph_free(g);
}

/* ---- GPU plans: emulated, and NVRTC
 * -------------------------------------------
 */

Test(op_attention, gpu_plans_emulated, .timeout = 300) {
    char what[160];
    uint64_t seed = 100;
    TS_FOR_DTYPES(dt, TS_DT(BRAID_F32) | TS_DT(BRAID_F16))
    for (size_t i = 0; i < NCASES; i++) {
        case_name(what, sizeof what, dt, &cases[i]);
        braid_graph *g = at_graph(dt, &cases[i]);
        hint_gpu(g);
        braid_plan *p = compile_for(g, "cpu,cuda:0", 2);
        cr_assert_eq(p->res.info[at_node(p)].device.kind, BP_DEVICE_CUDA, "%s",
                     what);
        ts_io *io = make_io(g, seed++);
        run_check(g, p, io, true, what);
        ts_io_free(io);
        braid_plan_free(p);
        braid_graph_free(g);
    }
}

#ifdef BRAID_HAVE_CUDA
/* Every case in every dtype in one graph, hinted to cuda:0. */
static braid_graph *kernel_zoo(void) {
    braid_graph *g = braid_graph_new(NULL);
    char name[32];
    int n = 0;
    TS_FOR_DTYPES(dt, TS_FLOATS)
    for (size_t i = 0; i < NCASES; i++) {
        const at_case *c = &cases[i];
        braid_tensor in[4];
        const char *nm[4] = {"q", "k", "v", "m"};
        int64_t sh[3][4] = {{c->B, c->S, c->H, c->D},
                            {c->B, c->T, c->H, c->D},
                            {c->B, c->T, c->H, c->D}};
        for (int k = 0; k < 3; k++) {
            snprintf(name, sizeof name, "%s%d", nm[k], n);
            in[k] = braid_input(g, name, dt, 4, sh[k]);
        }
        snprintf(name, sizeof name, "m%d", n);
        in[3] = c->mrank ? braid_input(g, name, dt, c->mrank, c->mdims)
                         : BRAID_NONE;
        snprintf(name, sizeof name, "y%d", n++);
        braid_output(g, name,
                     braid_attention(g, in[0], in[1], in[2], in[3], 0.3,
                                     c->causal ? BRAID_ATTENTION_CAUSAL : 0));
    }
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    hint_gpu(g);
    return g;
}

Test(op_attention, kernels_compile_for_sm90, .timeout = 300) {
    setenv("BRAID_CACHE_DIR", "", 1);
    braid_graph *g = kernel_zoo();
    braid_plan *p = compile_for(g, "cpu,cuda:0", 2);
    bc_source src;
    cr_assert_eq(bc_plan_source(p, &src), BRAID_OK, "%s", braid_last_error());
    uint32_t ats = 0;
    for (uint32_t i = 0; i < src.nkernels; i++) {
        const bc_kernel *k = &src.kernels[i];
        const bg_node *n = bg_node_at(p->res.graph, k->node);
        if (n->op != BRAID_OP_ATTENTION) continue;
        ats++;
        cr_assert_eq(k->kind, BC_KERNEL_ATTENTION);
        cr_assert_eq(k->nlaunch, bg_numel(n) > 0 ? 1u : 0u);
        const bc_launch *L = &k->launch[0];
        uint32_t threads = L->block[0] * L->block[1] * L->block[2];
        cr_assert(threads >= 32 && threads <= 1024 && threads % 32 == 0);
        cr_assert_eq(L->grid[1], (uint32_t)n->dims[2], "a block row per head");
        cr_assert_eq(L->grid[2], (uint32_t)n->dims[0],
                     "a block plane per batch");
    }
    cr_assert_eq(ats, 4 * NCASES);
    const char *dump = getenv("BRAID_CODEGEN_DUMP"); /* for reading */
    if (dump && *dump) {
        char path[1024];
        snprintf(path, sizeof path, "%s/attention_zoo.cu", dump);
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

/* ---- plan files, DOT, gradients
 * -----------------------------------------------
 */

static bool holds(const unsigned char *data, size_t size, const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= size; i++)
        if (memcmp(data + i, s, n) == 0) return true;
    return false;
}

Test(op_attention, planfile_round_trip) {
    for (int gpu = 0; gpu < 2; gpu++) {
        at_case c = {1, 6, 11, 2, 12, 2, {6, 11}, true};
        braid_graph *g = at_graph(BRAID_F32, &c);
        if (gpu) hint_gpu(g);
        braid_plan *p = pf_compile(g, gpu ? "cpu,cuda:0" : "cpu");
        size_t size;
        unsigned char *data = pf_save(p, &size);
        cr_assert(holds(data, size, "attention"), "stored by name");
        braid_plan *q = pf_load(data, size);
        uint32_t a = at_node(p), b = at_node(q);
        const bg_node *na = bg_node_at(p->res.graph, a);
        const bg_node *nb = bg_node_at(q->res.graph, b);
        cr_assert_eq(nb->attr.value[0], na->attr.value[0]);
        cr_assert_eq(nb->attr.flags, BRAID_ATTENTION_CAUSAL);
        cr_assert_eq(nb->ninputs, 4);
        cr_assert_eq(q->res.info[b].device.kind, p->res.info[a].device.kind);
        ts_io *x = make_io(g, 40), *y = make_io(g, 40);
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

Test(op_attention, dot_names_attention) {
    at_case c = {1, 2, 3, 1, 4, 0, {0}, true};
    braid_graph *g = at_graph(BRAID_F32, &c);
    braid_plan *p = compile_for(g, "cpu", 1);
    char *text = pf_text(p, true);
    cr_assert(strstr(text, "attention"), "%s", text);
    free(text);
    char *dot = NULL;
    size_t dlen = 0;
    FILE *f = open_memstream(&dot, &dlen);
    cr_assert(f);
    cr_assert_eq(braid_plan_to_dot(p, f), BRAID_OK);
    fclose(f);
    cr_assert(strstr(dot, "attention"), "%s", dot);
    free(dot);
    f = open_memstream(&dot, &dlen);
    cr_assert(f);
    cr_assert_eq(braid_graph_to_dot(g, f), BRAID_OK);
    fclose(f);
    cr_assert(strstr(dot, "attention") && strstr(dot, "causal"), "%s", dot);
    free(dot);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* attention(q, k, v, mask) built from matmul, softmax and the rest, as
 * the op's definition reads (graph/attention.h), with the same inputs. */
static braid_tensor at_unfused(braid_graph *g, braid_tensor q, braid_tensor k,
                               braid_tensor v, braid_tensor m, const at_case *c,
                               double scale) {
    static const int bhsd[4] = {0, 2, 1, 3};
    braid_tensor s = braid_matmul(g, braid_permute(g, q, bhsd),
                                  braid_permute(g, k, bhsd), BRAID_TRANSPOSE_B);
    s = braid_mul(g, s, braid_fill(g, BRAID_F64, 0, NULL, scale));
    if (braid_tensor_valid(m)) s = braid_add(g, s, m);
    if (c->causal) {
        braid_tensor keep =
            braid_ge(g, braid_iota(g, BRAID_I32, 2, DIMS(c->S, c->T), 0),
                     braid_iota(g, BRAID_I32, 2, DIMS(c->S, c->T), 1));
        s = braid_where(g, keep, s,
                        braid_fill(g, BRAID_F64, 0, NULL, -INFINITY));
    }
    braid_tensor y =
        braid_matmul(g, braid_softmax(g, s, 3), braid_permute(g, v, bhsd), 0);
    return braid_permute(g, y, bhsd);
}

/* The op's gradient rule (graph/grad_attention.c) against braid_grad of
 * the unfused definition, on the reference in f64: d/dq, dk, dv and dmask
 * of sum(y · w) for random inputs, causal and a broadcast mask, within
 * 1e-9. (tests/test_grad.c checks the rule against finite differences.) */
Test(op_attention, grad_matches_the_unfused_definition) {
    static const at_case cases[] = {
        {2, 3, 4, 2, 3, 0, {0}, false},
        {2, 3, 4, 2, 3, 3, {2, 1, 4}, true},
        {1, 4, 4, 3, 2, 4, {1, 3, 4, 1}, false},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const at_case *c = &cases[ci];
        braid_graph *gr[2];
        double scale = 1 / sqrt((double)c->D);
        for (int u = 0; u < 2; u++) {
            braid_graph *g = gr[u] = braid_graph_new(NULL);
            braid_tensor in[5] = {
                braid_input(g, "q", BRAID_F64, 4, DIMS(c->B, c->S, c->H, c->D)),
                braid_input(g, "k", BRAID_F64, 4, DIMS(c->B, c->T, c->H, c->D)),
                braid_input(g, "v", BRAID_F64, 4, DIMS(c->B, c->T, c->H, c->D)),
                braid_input(g, "w", BRAID_F64, 4, DIMS(c->B, c->S, c->H, c->D)),
                BRAID_NONE};
            if (c->mrank)
                in[4] = braid_input(g, "mask", BRAID_F64, c->mrank, c->mdims);
            braid_tensor y =
                u ? at_unfused(g, in[0], in[1], in[2], in[4], c, scale)
                  : braid_attention(g, in[0], in[1], in[2], in[4], scale,
                                    c->causal ? BRAID_ATTENTION_CAUSAL : 0);
            braid_tensor loss =
                braid_sum(g, braid_mul(g, y, in[3]), 0, NULL, false);
            const braid_tensor wrt[4] = {in[0], in[1], in[2], in[4]};
            braid_tensor d[4];
            size_t nw = c->mrank ? 4 : 3;
            cr_assert_eq(braid_grad(g, loss, nw, wrt, d), BRAID_OK,
                         "case %zu unfused %d: %s", ci, u,
                         braid_graph_error(g));
            static const char *const names[4] = {"dq", "dk", "dv", "dmask"};
            for (size_t i = 0; i < nw; i++)
                cr_assert_eq(braid_output(g, names[i], d[i]), BRAID_OK);
        }
        ts_io *io = ts_io_new(gr[0], 40 + ci), *io2 = ts_io_new(gr[1], 40 + ci);
        cr_assert_eq(braid_reference_run(gr[0], io->in, io->ninputs, io->ref,
                                         io->noutputs),
                     BRAID_OK, "%s", braid_last_error());
        cr_assert_eq(braid_reference_run(gr[1], io->in, io->ninputs, io2->ref,
                                         io2->noutputs),
                     BRAID_OK, "%s", braid_last_error());
        for (uint32_t o = 0; o < io->noutputs; o++) {
            const double *a = io->ref[o].data, *b = io2->ref[o].data;
            double worst = 0;
            for (int64_t e = 0; e < io->out_numel[o]; e++)
                worst = fmax(worst, fabs(a[e] - b[e]) / (1 + fabs(b[e])));
            cr_expect_leq(worst, 1e-9, "case %zu %s: off by %g", ci,
                          io->ref[o].name, worst);
        }
        ts_io_free(io);
        ts_io_free(io2);
        braid_graph_free(gr[0]);
        braid_graph_free(gr[1]);
    }
}
