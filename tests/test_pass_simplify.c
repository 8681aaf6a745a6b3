/* tests/test_pass_simplify.c — the simplify pass (passes/simplify*.c).
 *
 * Golden cases: tests/golden/simplify/<case>.graph is the input; the pass
 * runs alone on a plan built from it (verify, then simplify), and
 * <case>.expected holds braid_graph_print of the plan's graph afterwards:
 * plain .graph text, so a golden file reads back as a graph. Every golden
 * case also checks that the simplified graph has no more nodes and that
 * the reference evaluator gives bit-identical outputs before and after.
 * BRAID_UPDATE_GOLDEN=1 rewrites the .expected files (check diffs by eye).
 *
 * Property tests: random graphs (tests/support) compiled with simplify on
 * and off run bit-identically on the CPU executor (and, for "cpu,cuda:0"
 * plans, on the emulating executor), and the pass never adds nodes. One
 * batch grafts identity patterns and duplicates onto the random graphs so
 * every rule fires on random shapes and dtypes. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"
#include "passes/passes.h"
#include "passes/plan.h"
#include "runtime/runtime.h"
#include "tests/support/golden.h"
#include "tests/support/support.h"

/* ---- plans with only the passes under test ------------------------------- */

/* A plan for g (devices "cpu") as braid_compile prepares it, before any
 * pass has run. */
static bp_plan *plan_for(const braid_graph *g) {
    bp_plan *p = bp_calloc(1, sizeof *p, "plan");
    cr_assert_not_null(p);
    braid_compile_options_init(&p->in.opts);
    p->in.devs.devices[0] = (bp_device){BP_DEVICE_CPU, 0};
    p->in.devs.ndevices = 1;
    p->in.settings.max_streams = 1;
    p->in.devs.profile[0] = bp_default_profile(BP_DEVICE_CPU);
    p->res.graph = bg_graph_clone(g);
    cr_assert_not_null(p->res.graph);
    const braid_graph *pg = p->res.graph;
    p->res.inputs =
        bp_calloc(braid_graph_input_count(pg), sizeof *p->res.inputs, "in");
    p->res.outputs = bp_calloc(pg->noutputs, sizeof *p->res.outputs, "out");
    cr_assert(p->res.inputs && p->res.outputs);
    for (uint32_t i = 0; i < pg->nnodes; i++)
        if (pg->nodes[i].op == BRAID_OP_INPUT)
            p->res.inputs[p->res.ninputs++] =
                (bp_io){pg->nodes[i].name, i, bg_nbytes(&pg->nodes[i])};
    for (uint32_t i = 0; i < pg->noutputs; i++) {
        uint32_t id = pg->outputs[i].node;
        p->res.outputs[p->res.noutputs++] =
            (bp_io){pg->outputs[i].name, id, bg_nbytes(&pg->nodes[id])};
    }
    cr_assert_eq(bp_plan_sync_info(p), BRAID_OK);
    for (uint32_t id = 0; id < p->res.ninfo; id++)
        p->res.info[id].origin = id;
    return p;
}

/* Runs verify and simplify on a plan of g; checks the plan invariants the
 * next pass relies on. */
static bp_plan *simplified(const braid_graph *g) {
    bp_plan *p = plan_for(g);
    cr_assert_eq(bp_verify(p), BRAID_OK, "verify: %s", braid_last_error());
    braid_status s = bp_simplify(p);
    cr_assert_eq(s, BRAID_OK, "simplify: %s", braid_last_error());
    const braid_graph *pg = p->res.graph;
    cr_assert_eq(p->res.ninfo, pg->nnodes);
    cr_assert_eq(p->res.noutputs, pg->noutputs);
    for (uint32_t i = 0; i < pg->nnodes; i++)
        for (uint32_t k = 0; k < pg->nodes[i].ninputs; k++)
            cr_assert_lt(pg->nodes[i].inputs[k], i, "ids not topological");
    for (uint32_t i = 0; i < p->res.noutputs; i++) {
        cr_assert_eq(p->res.outputs[i].node, pg->outputs[i].node);
        cr_assert_str_eq(p->res.outputs[i].name, pg->outputs[i].name);
    }
    /* the pass leaves a graph the verifier still accepts */
    cr_assert_eq(bp_verify(p), BRAID_OK, "verify after simplify: %s",
                 braid_last_error());
    return p;
}

/* Nodes an output needs, plus every input: what compaction keeps. */
static uint32_t live_count(const braid_graph *g) {
    bool *live = calloc(g->nnodes + 1, 1);
    for (uint32_t i = 0; i < g->noutputs; i++)
        live[g->outputs[i].node] = 1;
    uint32_t n = 0;
    for (uint32_t id = g->nnodes; id-- > 0;) {
        const bg_node *x = &g->nodes[id];
        if (x->op == BRAID_OP_INPUT) live[id] = 1;
        if (!live[id]) continue;
        n++;
        for (uint32_t k = 0; k < x->ninputs; k++)
            live[x->inputs[k]] = 1;
    }
    free(live);
    return n;
}

static char *print_graph(const braid_graph *g) {
    char *text = NULL;
    size_t len = 0;
    cr_assert_eq(braid_graph_print(g, &text, &len), BRAID_OK);
    return text;
}

/* ---- reference before/after ---------------------------------------------- */

/* Reference outputs of a and b (same inputs and outputs by name) on random
 * inputs are bitwise equal. */
static void assert_same_reference(const braid_graph *a, const braid_graph *b,
                                  uint64_t seed) {
    ts_io *io = ts_io_new(a, seed);
    cr_assert_not_null(io);
    cr_assert_eq(
        braid_reference_run(a, io->in, io->ninputs, io->out, io->noutputs),
        BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(
        braid_reference_run(b, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s", braid_last_error());
    for (uint32_t i = 0; i < io->noutputs; i++)
        cr_assert(memcmp(io->out[i].data, io->ref[i].data, io->out[i].bytes) ==
                      0,
                  "output %s differs after simplify", io->out[i].name);
    ts_io_free(io);
}

/* ---- golden files -------------------------------------------------------- */

static void golden(const char *name) {
    const char *dir = BRAID_SOURCE_DIR "/tests/golden/simplify";
    char *in = ts_golden_path(dir, name, ".graph");
    braid_graph *g = ts_load_ok(in);
    free(in);
    bp_plan *p = simplified(g);
    cr_assert_leq(p->res.graph->nnodes, live_count(g), "%s: more nodes", name);
    assert_same_reference(g, p->res.graph, 1);
    char *got = print_graph(p->res.graph);
    ts_check_golden(dir, name, got);
    free(got);
    braid_plan_free(p);
    braid_graph_free(g);
}

#define GOLDEN(name)                                                           \
    Test(simplify_golden, name) {                                              \
        golden(#name);                                                         \
    }

GOLDEN(identity_mul_one)
GOLDEN(identity_add_zero)
GOLDEN(identity_neg_cast)
GOLDEN(identity_permute)
GOLDEN(identity_reshape)
GOLDEN(identity_broadcast_slice)
GOLDEN(identity_where)
GOLDEN(negative_broadcast_ones)
GOLDEN(cse_diamond)
GOLDEN(cse_sources)
GOLDEN(cse_hints)
GOLDEN(fold_f16)
GOLDEN(fold_splat)
GOLDEN(fold_chain)
GOLDEN(fold_not_exact)
GOLDEN(fold_compare_where)
GOLDEN(dead_nodes)

/* ---- folding details ----------------------------------------------------- */

static braid_tensor f16_constant(braid_graph *g, int64_t n, uint64_t seed) {
    uint16_t *v = malloc((size_t)n * sizeof *v);
    ts_fill_random(BRAID_F16, v, n, seed, -100.0, 100.0);
    braid_tensor t = braid_constant(g, BRAID_F16, 1, &n, v);
    free(v);
    return t;
}

static float h2f(const void *p, int64_t i) {
    return (float)bg_load(BRAID_F16, p, i);
}

/* Folding evaluates with graph/eval.c, not the runtime: a concat of more
 * operands than an elementwise op has, a wrapping i32 sum and a max all
 * fold into one constant holding the reference evaluator's bits. */
Test(simplify, folding_concat_sum_max_i32) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor part[5];
    uint32_t want[4] = {0, 0, 0, 0}; /* column sums, wrapping */
    for (int k = 0; k < 5; k++) {
        int64_t d[2] = {3, 4};
        int32_t v[12];
        ts_fill_random(BRAID_I32, v, 12, 40 + (uint64_t)k, -2.1e9, 2.1e9);
        for (int i = 0; i < 12; i++)
            want[i % 4] += (uint32_t)v[i];
        part[k] = braid_constant(g, BRAID_I32, 2, d, v);
    }
    braid_tensor c = braid_concat(g, 5, part, 0);
    braid_tensor s = braid_sum(g, c, 1, (int[]){0}, false);
    braid_tensor m = braid_max(g, s, braid_neg(g, s));
    braid_output(g, "m", m);
    bp_plan *p = simplified(g);
    const braid_graph *pg = p->res.graph;
    cr_assert_eq(pg->nnodes, 1, "everything folds into one constant");
    cr_assert_eq(pg->nodes[0].op, BRAID_OP_CONSTANT);
    const int32_t *got = pg->nodes[0].attr.data;
    for (int j = 0; j < 4; j++) {
        int32_t w = (int32_t)want[j], nw = (int32_t)(0u - want[j]);
        cr_expect_eq(got[j], w > nw ? w : nw, "column %d", j);
    }
    assert_same_reference(g, pg, 3);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Constants merge by their bytes, hashed in 32-byte blocks and a tail:
 * a constant equal to the first merges with it, and one differing from it
 * in a single byte (in each lane of a block, and in the tail) does not.
 * Every constant feeds its own output, so the merge is all simplify does. */
Test(simplify, cse_constants_by_every_byte) {
    enum { E = 131, N = 4 * E }; /* 16 blocks of 32 bytes, a 12-byte tail */
    int64_t d = E;
    uint8_t base[N];
    for (int i = 0; i < N; i++)
        base[i] = (uint8_t)(i * 37 + 11);
    braid_graph *g = braid_graph_new(NULL);
    const int flips[] = {-1, 0, 8, 16, 24, 31, 200, N - 4, N - 1};
    const int nflips = (int)(sizeof flips / sizeof flips[0]);
    for (int k = 0; k < nflips; k++) {
        uint8_t v[N];
        memcpy(v, base, N);
        if (flips[k] >= 0) v[flips[k]] ^= 0x40;
        char name[16];
        snprintf(name, sizeof name, "c%d", k);
        braid_output(g, name, braid_constant(g, BRAID_I32, 1, &d, v));
    }
    /* an exact duplicate of the unchanged one, made last */
    braid_output(g, "dup", braid_constant(g, BRAID_I32, 1, &d, base));
    bp_plan *p = simplified(g);
    const braid_graph *pg = p->res.graph;
    cr_assert_eq(pg->nnodes, (uint32_t)nflips,
                 "%u nodes: the duplicate merges, every changed byte keeps "
                 "its constant apart", pg->nnodes);
    cr_assert_eq(pg->outputs[0].node, pg->outputs[nflips].node,
                 "dup reads the first constant");
    for (int k = 1; k < nflips; k++)
        cr_assert_neq(pg->outputs[k].node, pg->outputs[0].node, "c%d", k);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Each folded node rounds to f16 like the executor's node would (computed
 * in f32, rounded on store), not once at the end. */
Test(simplify, folding_rounds_f16_per_node) {
    const int64_t n = 64;
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = f16_constant(g, n, 1), b = f16_constant(g, n, 2);
    braid_tensor c = braid_add(g, a, b);
    braid_tensor d = braid_mul(g, c, b);
    braid_tensor e = braid_div(g, d, a);
    braid_output(g, "e", e);
    bp_plan *p = simplified(g);
    const braid_graph *pg = p->res.graph;
    cr_assert_eq(pg->nnodes, 1, "everything folds into one constant");
    const bg_node *k = &pg->nodes[pg->outputs[0].node];
    cr_assert_eq(k->op, BRAID_OP_CONSTANT);
    cr_assert_eq(k->dtype, BRAID_F16);
    const void *da = g->nodes[a.id].attr.data, *db = g->nodes[b.id].attr.data;
    for (int64_t i = 0; i < n; i++) {
        uint16_t hc = bg_f32_to_f16(h2f(da, i) + h2f(db, i));
        uint16_t hd = bg_f32_to_f16(bg_f16_to_f32(hc) * h2f(db, i));
        uint16_t he = bg_f32_to_f16(bg_f16_to_f32(hd) / h2f(da, i));
        uint16_t got;
        memcpy(&got, (const char *)k->attr.data + 2 * i, 2);
        cr_assert_eq(got, he, "element %lld: 0x%04x, expected 0x%04x",
                     (long long)i, got, he);
    }
    /* and the executor without simplify computes the same bits */
    braid_compile_options o = ts_compile_options("cpu", BRAID_PASS_SIMPLIFY);
    braid_plan *plan = ts_compile_ok(g, &o);
    braid_exec *ex;
    cr_assert_eq(braid_exec_new(plan, &ex), BRAID_OK, "%s", braid_last_error());
    uint16_t out[64];
    braid_output_binding ob = {"e", out, sizeof out};
    cr_assert_eq(braid_run(ex, NULL, 0, &ob, 1), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert(memcmp(out, k->attr.data, sizeof out) == 0);
    braid_exec_free(ex);
    braid_plan_free(plan);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* A folded node keeps the origin of the node it replaces (messages and
 * dumps name the user's node). */
Test(simplify, folded_node_keeps_origin_name_and_hint) {
    braid_graph *g =
        ts_load_ok(BRAID_SOURCE_DIR "/tests/golden/simplify/fold_chain.graph");
    uint32_t q = BG_NONE;
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].name && strcmp(g->nodes[i].name, "bias") == 0) q = i;
    cr_assert_neq(q, BG_NONE);
    bp_plan *p = simplified(g);
    uint32_t k = BG_NONE;
    for (uint32_t i = 0; i < p->res.graph->nnodes; i++)
        if (p->res.graph->nodes[i].op == BRAID_OP_CONSTANT) k = i;
    cr_assert_neq(k, BG_NONE);
    cr_assert_eq(p->res.info[k].origin, q);
    cr_assert_str_eq(p->res.graph->nodes[k].name, "bias");
    cr_assert_str_eq(p->res.graph->nodes[k].device, "cuda:0");
    braid_plan_free(p);
    braid_graph_free(g);
}

/* bp_verify (run before simplify) re-infers each node from the types its
 * inputs claim: a node whose claim is wrong is named, and a wrong input
 * claim is caught at its first consumer whose inference disagrees. */
Test(simplify, verify_names_a_node_whose_type_is_wrong) {
    int64_t d = 4;
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, &d);
    braid_tensor y = braid_tanh(g, x);
    braid_output(g, "z", braid_add(g, y, x));
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
    for (int c = 0; c < 3; c++) {
        bp_plan *p = plan_for(g);
        cr_assert_eq(bp_verify(p), BRAID_OK, "%s", braid_last_error());
        uint32_t bad = c == 0 ? 2 : c == 1 ? y.id : x.id;
        p->res.graph->nodes[bad].dims[0] = 5;
        cr_assert_eq(bp_verify(p), BRAID_ERR_SHAPE);
        const char *want[3] = {"node 2 (add) says f32[5] but infers f32[4]",
                               "node 1 (tanh) says f32[5] but infers f32[4]",
                               "node 1 (tanh) says f32[4] but infers f32[5]"};
        cr_assert(strstr(braid_last_error(), want[c]), "case %d: %s", c,
                  braid_last_error());
        braid_plan_free(p);
    }
    braid_graph_free(g);
}

/* The pass is linear: a long chain of duplicated work (3n+1 nodes) and
 * many rewritten outputs simplify quickly. */
Test(simplify, long_chains_and_many_outputs, .timeout = 60) {
    const int n = 20000;
    int64_t d = 4;
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, &d);
    braid_tensor one = braid_fill(g, BRAID_F32, 0, NULL, 1.0);
    braid_tensor y = x;
    for (int i = 0; i < n; i++) {
        braid_tensor a = braid_add(g, y, x), b = braid_add(g, y, x);
        y = braid_mul(g, a, b);
    }
    braid_output(g, "y", y);
    for (int i = 0; i < 2000; i++) {
        char name[32];
        snprintf(name, sizeof name, "o%d", i);
        braid_output(g, name, braid_mul(g, x, one));
    }
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    bp_plan *p = simplified(g);
    cr_assert_eq(p->res.graph->nnodes, 1 + 2 * (uint32_t)n);
    for (uint32_t i = 1; i < p->res.noutputs; i++)
        cr_assert_eq(p->res.outputs[i].node, 0u);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- property: simplify on vs off ---------------------------------------- */

/* Devices the property tests compile for; with a GPU listed, plans run on
 * the emulating executor (runtime/runtime.h). */
static const char *devices = "cpu";

/* Compiles g for `devices` (disable: BRAID_PASS_* bits) and runs it on io's
 * inputs into outs. */
static void compile_and_run(const braid_graph *g, unsigned disable,
                            const ts_io *io, braid_output_binding *outs,
                            uint64_t seed) {
    braid_compile_options o = ts_compile_options(devices, disable);
    o.num_threads = 1;
    braid_plan *p;
    braid_exec *e;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "seed %llu: compile: %s",
                 (unsigned long long)seed, braid_last_error());
    braid_status s = strcmp(devices, "cpu") == 0
                         ? braid_exec_new(p, &e)
                         : br_exec_new_emulated(p, seed, &e);
    cr_assert_eq(s, BRAID_OK, "seed %llu: exec: %s", (unsigned long long)seed,
                 braid_last_error());
    cr_assert_eq(braid_run(e, io->in, io->ninputs, outs, io->noutputs),
                 BRAID_OK, "seed %llu: run: %s", (unsigned long long)seed,
                 braid_last_error());
    braid_exec_free(e);
    braid_plan_free(p);
}

static void log_graph(const braid_graph *g) {
    char *text = print_graph(g);
    cr_log_info("graph:\n%s", text);
    free(text);
}

/* Totals over a property run, logged at its end. */
static struct { long graphs, before, after, outputs, elements; } totals;

/* Simplify on and off give the same bits; the pass adds no nodes. */
static void check_graph(const braid_graph *g, uint64_t seed) {
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "seed %llu: %s",
                 (unsigned long long)seed, braid_graph_error(g));
    bp_plan *p = simplified(g);
    uint32_t before = live_count(g), after = p->res.graph->nnodes;
    if (after > before) log_graph(g);
    cr_assert_leq(after, before, "seed %llu: %u nodes became %u",
                  (unsigned long long)seed, before, after);
    braid_plan_free(p);
    totals.graphs++;
    totals.before += before;
    totals.after += after;
    ts_io *io = ts_io_new(g, seed);
    cr_assert_not_null(io);
    totals.outputs += io->noutputs;
    for (uint32_t i = 0; i < io->noutputs; i++)
        totals.elements += io->out_numel[i];
    compile_and_run(g, 0, io, io->out, seed);
    compile_and_run(g, BRAID_PASS_SIMPLIFY, io, io->ref, seed);
    for (uint32_t i = 0; i < io->noutputs; i++) {
        bool same =
            memcmp(io->out[i].data, io->ref[i].data, io->out[i].bytes) == 0;
        if (!same) log_graph(g);
        cr_assert(same, "seed %llu: output %s differs with simplify on",
                  (unsigned long long)seed, io->out[i].name);
    }
    ts_io_free(io);
}

static void log_totals(const char *what) {
    cr_log_info("%s: %ld graphs, %ld live nodes became %ld; %ld outputs, "
                "%ld elements compared bitwise",
                what, totals.graphs, totals.before, totals.after,
                totals.outputs, totals.elements);
}

Test(simplify_property, random_graphs_bitwise_equal, .timeout = 600) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    for (uint64_t seed = 0; seed < 300; seed++) {
        o.mixed_dtypes = seed % 2 == 1;
        o.device_hints = seed % 3 == 0;
        o.max_nodes = seed % 4 == 0 ? 30 : 12;
        braid_graph *g = ts_random_graph(900000 + seed, &o);
        check_graph(g, 900000 + seed);
        braid_graph_free(g);
    }
    log_totals("random graphs");
}

/* The same with a GPU in the plan (emulated): hints now place nodes on two
 * devices, with copies between them. */
Test(simplify_property, random_graphs_two_devices_bitwise_equal,
     .timeout = 600) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    o.mixed_dtypes = true;
    o.device_hints = true;
    devices = "cpu,cuda:0";
    for (uint64_t seed = 0; seed < 100; seed++) {
        braid_graph *g = ts_random_graph(800000 + seed, &o);
        check_graph(g, 800000 + seed);
        braid_graph_free(g);
    }
    log_totals("two-device graphs");
}

/* ---- random graphs with identities grafted on ---------------------------- */

static bool is_number(braid_dtype t) {
    return bg_op_accepts(BRAID_OP_ADD, t); /* the arithmetic dtypes */
}

static braid_tensor scalar_fill(braid_graph *g, braid_dtype t, double v) {
    return braid_fill(g, t, 0, NULL, v);
}

/* A copy of node id: same op, inputs and attributes (a subexpression for
 * CSE to find). */
static braid_tensor duplicate(braid_graph *g, uint32_t id) {
    bg_node n = g->nodes[id]; /* bg_build may move the node array */
    if (n.op == BRAID_OP_INPUT) return (braid_tensor){id};
    return (braid_tensor){bg_build(g, n.op, n.inputs, n.ninputs, n.dtype,
                                   n.rank, n.dims, &n.attr, NULL)};
}

/* Identity patterns on tensor x; each result becomes an output. */
static void graft(braid_graph *g, braid_tensor x, uint64_t *rng, int *nout) {
    braid_dtype t;
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    braid_tensor_info(g, x, &t, &rank, dims);
    int64_t numel = braid_tensor_numel(g, x);
    braid_tensor r[12];
    int n = 0;
    if (is_number(t)) {
        r[n++] = braid_mul(g, x, scalar_fill(g, t, 1.0));
        r[n++] = braid_div(g, scalar_fill(g, t, 1.0), x); /* not an identity */
        r[n++] = braid_add(g, scalar_fill(g, t, -0.0), x);
        r[n++] = braid_add(g, x, scalar_fill(g, t, 0.0));
        r[n++] = braid_sub(g, x, scalar_fill(g, t, 0.0));
        r[n++] = braid_neg(g, braid_neg(g, x));
    }
    r[n++] = braid_cast(g, x, t);
    int64_t flat = numel;
    r[n++] = braid_reshape(g, braid_reshape(g, x, 1, &flat), rank, dims);
    r[n++] = duplicate(g, x.id);
    if (rank >= 2) {
        int perm[BRAID_MAX_RANK];
        for (int i = 0; i < rank; i++)
            perm[i] = rank - 1 - i;
        braid_tensor p = braid_permute(g, x, perm);
        r[n++] = braid_permute(
            g, ts_rand_int(rng, 0, 1) ? p : braid_permute(g, p, perm), perm);
    }
    if (rank < BRAID_MAX_RANK && numel <= 512) {
        int64_t big[BRAID_MAX_RANK];
        big[0] = 2;
        memcpy(big + 1, dims, (size_t)rank * sizeof *dims);
        r[n++] = braid_broadcast_to(g, x, rank + 1, big);
    }
    braid_tensor c = braid_fill(g, BRAID_BOOL, 0, NULL, 1.0);
    r[n++] = braid_where(g, c, x, duplicate(g, x.id));
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "graft%d", (*nout)++);
        braid_output(g, name, r[i]);
    }
}

Test(simplify_property, grafted_identities_bitwise_equal, .timeout = 600) {
    ts_graph_options o;
    ts_graph_options_default(&o);
    o.mixed_dtypes = true;
    for (uint64_t seed = 0; seed < 150; seed++) {
        braid_graph *g = ts_random_graph(700000 + seed, &o);
        uint64_t rng = seed;
        int nout = 0;
        uint32_t n0 = g->nnodes;
        for (int k = 0; k < 3; k++)
            graft(g,
                  (braid_tensor){(uint32_t)ts_rand_int(&rng, 0, (int)n0 - 1)},
                  &rng, &nout);
        check_graph(g, 700000 + seed);
        braid_graph_free(g);
    }
    log_totals("grafted graphs");
}

/* ---- allocation failures ---------------------------------------------------
 */

/* Allocator that fails the fail_at-th allocation after being armed. */
static struct {
    bool armed;
    long count, fail_at;
} fa;

static void *failing_alloc(void *user, void *ptr, size_t old, size_t size) {
    (void)user;
    (void)old;
    if (size == 0) {
        free(ptr);
        return NULL;
    }
    if (fa.armed && fa.count++ == fa.fail_at) return NULL;
    return realloc(ptr, size);
}

/* Every allocation of the plan graph's allocator that simplify makes
 * (nodes, names, constant bytes, scratch graphs) may fail: the pass then
 * reports out of memory and the plan still frees cleanly. */
static void survives_allocation_failures(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/tests/golden/simplify/%s.graph",
             BRAID_SOURCE_DIR, name);
    braid_graph_options go = {failing_alloc, NULL};
    braid_graph *g = braid_graph_load(path, &go);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    bp_plan *ok = simplified(g);
    char *want = print_graph(ok->res.graph);
    braid_plan_free(ok);
    long failures = 0;
    for (long k = 0;; k++) {
        bp_plan *p = plan_for(g);
        fa.count = 0;
        fa.fail_at = k;
        fa.armed = true;
        braid_status s = bp_simplify(p);
        fa.armed = false;
        if (s == BRAID_OK) {
            char *got = print_graph(p->res.graph);
            cr_assert_str_eq(got, want);
            free(got);
            braid_plan_free(p);
            break;
        }
        cr_assert_eq(s, BRAID_ERR_OUT_OF_MEMORY, "%s: allocation %ld: %s", name,
                     k, braid_last_error());
        failures++;
        braid_plan_free(p);
    }
    cr_assert_gt(failures, 0, "%s: simplify allocated nothing", name);
    free(want);
    braid_graph_free(g);
}

Test(simplify, allocation_failures) {
    survives_allocation_failures("fold_chain");
    survives_allocation_failures("identity_permute");
    survives_allocation_failures("fold_splat");
}
