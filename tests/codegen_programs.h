/* tests/codegen_programs.h — hand-built plans and random fused programs
 * for tests/test_codegen.c (static functions).
 *
 * A hand-built plan holds just what code generation reads: a graph whose
 * inputs are on the cpu and every other node on cuda:0, and programs for
 * its fused nodes. The random programs keep values bounded and away from
 * discontinuities (comparisons only see loads, which every executor holds
 * exactly), so a GPU run compares cleanly with the reference. */
#ifndef BRAID_TESTS_CODEGEN_PROGRAMS_H
#define BRAID_TESTS_CODEGEN_PROGRAMS_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "tests/support/support.h"

/* ---- hand-built plans
 * ------------------------------------------------------------- */

/* A plan holding only a graph and node info, as codegen needs: inputs on
 * the cpu, everything else on cuda:0. */
static bp_plan *hand_new(void) {
    bp_plan *p = calloc(1, sizeof *p);
    cr_assert_not_null(p);
    p->res.graph = braid_graph_new(NULL);
    cr_assert_not_null(p->res.graph);
    p->in.devs.devices[0] = (bp_device){BP_DEVICE_CPU, 0};
    p->in.devs.devices[1] = (bp_device){BP_DEVICE_CUDA, 0};
    p->in.devs.ndevices = 2;
    return p;
}

static braid_tensor hand_input(bp_plan *p, braid_dtype t, int rank,
                               const int64_t *dims) {
    char name[24];
    snprintf(name, sizeof name, "x%u", (unsigned)p->res.graph->nnodes);
    braid_tensor x = braid_input(p->res.graph, name, t, rank, dims);
    cr_assert_eq(braid_graph_status(p->res.graph), BRAID_OK, "%s",
                 braid_graph_error(p->res.graph));
    return x;
}

/* Gives nodes built since the last call their info: GPU unless inputs. */
static void hand_place(bp_plan *p) {
    cr_assert_eq(braid_graph_status(p->res.graph), BRAID_OK, "%s",
                 braid_graph_error(p->res.graph));
    uint32_t from = p->res.ninfo;
    cr_assert_eq(bp_plan_sync_info(p), BRAID_OK);
    for (uint32_t id = from; id < p->res.ninfo; id++)
        if (p->res.graph->nodes[id].op != BRAID_OP_INPUT)
            p->res.info[id].device = (bp_device){BP_DEVICE_CUDA, 0};
}

/* A fused node running prog (instr malloc'd; the plan takes it). */
static uint32_t hand_fused(bp_plan *p, const braid_tensor *in, uint32_t nin,
                           braid_dtype t, int rank, const int64_t *dims,
                           bp_program *prog) {
    hand_place(p);
    uint32_t ids[16];
    for (uint32_t k = 0; k < nin; k++)
        ids[k] = in[k].id;
    uint32_t id =
        bp_plan_add_node(p, BRAID_OP_FUSED, ids, nin, t, rank, dims, NULL);
    cr_assert_neq(id, BG_NONE);
    p->res.info[id].device = (bp_device){BP_DEVICE_CUDA, 0};
    p->res.info[id].program = bp_plan_add_program(p, prog);
    cr_assert_neq(p->res.info[id].program, BG_NONE);
    return id;
}

/* ---- random fused programs
 * ------------------------------------------------------ */

/* A program being generated. */
typedef struct pgen {
    uint64_t st;     /* random state */
    bp_instr *ins;   /* instructions (malloc'd) */
    uint32_t n, cap; /* used / allocated */
} pgen;

static int pg_int(pgen *g, int lo, int hi) {
    return ts_rand_int(&g->st, lo, hi);
}

static uint32_t pg_add(pgen *g, braid_op op, braid_dtype t, uint32_t a,
                       uint32_t b, uint32_t c) {
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 32;
        g->ins = realloc(g->ins, g->cap * sizeof *g->ins);
        cr_assert_not_null(g->ins);
    }
    g->ins[g->n] = (bp_instr){.op = op,
                              .dtype = t,
                              .arg = {a, b, c},
                              .input = BG_NONE,
                              .source = BG_NONE};
    return g->n++;
}

static uint32_t pg_load(pgen *g, uint32_t k, braid_dtype t) {
    uint32_t i = pg_add(g, BP_INSTR_LOAD, t, BG_NONE, BG_NONE, BG_NONE);
    g->ins[i].input = k;
    return i;
}

static uint32_t pg_const(pgen *g, braid_dtype t, double v) {
    uint32_t i = pg_add(g, BP_INSTR_CONST, t, BG_NONE, BG_NONE, BG_NONE);
    g->ins[i].value = v; /* values below are exact in every dtype */
    return i;
}

/* A bool comparing two loads (exact on both sides). */
static uint32_t pg_compare(pgen *g, const uint32_t *ld, const braid_dtype *ldt,
                           int nld) {
    int i = pg_int(g, 0, nld - 1), j = pg_int(g, 0, nld - 1);
    braid_op cmp = BRAID_OP_EQ + pg_int(g, 0, 5);
    if (ldt[i] == BRAID_BOOL) cmp = BRAID_OP_NE;
    uint32_t y = ldt[j] == ldt[i]
                     ? ld[j]
                     : pg_add(g, BRAID_OP_CAST, ldt[i], ld[j], 0, 0);
    return pg_add(g, cmp, BRAID_BOOL, ld[i], y, 0);
}

/* A value of dtype t from the loads (ld, of dtypes ldt) through depth
 * random ops that keep values bounded and away from discontinuities:
 * comparisons only see loads, which both sides hold exactly. */
static uint32_t pg_body(pgen *g, braid_dtype t, const uint32_t *ld,
                        const braid_dtype *ldt, int nld, int depth) {
    static const braid_op fun[] = {
        BRAID_OP_NEG,  BRAID_OP_ABS, BRAID_OP_TANH,  BRAID_OP_SIGMOID,
        BRAID_OP_SIN,  BRAID_OP_COS, BRAID_OP_RELU,  BRAID_OP_GELU,
        BRAID_OP_SILU, BRAID_OP_ERF, BRAID_OP_SQUARE};
    static const braid_op ifun[] = {BRAID_OP_NEG, BRAID_OP_ABS, BRAID_OP_SQUARE,
                                    BRAID_OP_RELU};
    static const braid_op bin[] = {BRAID_OP_ADD, BRAID_OP_SUB, BRAID_OP_MUL,
                                   BRAID_OP_MAX, BRAID_OP_MIN, BRAID_OP_DIV};
    bool integer = t == BRAID_I32;
    uint32_t v[64], nv = 0;
    for (int k = 0; k < nld; k++)
        v[nv++] =
            ldt[k] == t ? ld[k] : pg_add(g, BRAID_OP_CAST, t, ld[k], 0, 0);
    for (int d = 0; d < depth && nv < 60; d++) {
        uint32_t a = v[pg_int(g, 0, (int)nv - 1)],
                 b = v[pg_int(g, 0, (int)nv - 1)];
        int r = pg_int(g, 0, 9);
        if (r < 4) {
            braid_op op =
                integer ? ifun[pg_int(g, 0, 3)] : fun[pg_int(g, 0, 10)];
            /* large arguments would turn an ulp into a different value */
            if (op == BRAID_OP_SIN || op == BRAID_OP_COS)
                a = pg_add(g, BRAID_OP_TANH, t, a, 0, 0);
            v[nv++] = pg_add(g, op, t, a, 0, 0);
        } else if (r < 8) {
            braid_op op = bin[pg_int(g, 0, integer ? 5 : 4)];
            v[nv++] = pg_add(g, op, t, a, b, 0);
        } else if (r == 8) {
            uint32_t c = pg_const(g, t, integer ? -3.0 : 0.5);
            v[nv++] = pg_add(g, BRAID_OP_MUL, t, a, c, 0);
        } else {
            uint32_t c = pg_compare(g, ld, ldt, nld);
            v[nv++] = pg_add(g, BRAID_OP_WHERE, t, c, a, b);
        }
    }
    uint32_t y = v[nv - 1];
    for (uint32_t k = 0; k < (uint32_t)nld; k++) /* every load feeds it */
        y = pg_add(g, BRAID_OP_ADD, t, y, v[k], 0);
    return y;
}

static braid_dtype pg_dtype(pgen *g, bool floats_only) {
    static const braid_dtype all[] = {BRAID_F32, BRAID_F16, BRAID_BF16,
                                      BRAID_F64, BRAID_I32, BRAID_F32};
    return all[pg_int(g, 0, floats_only ? 3 : 5)];
}

/* An operand shape broadcasting to (rank, dims). */
static int pg_shape(pgen *g, int rank, const int64_t *dims, int64_t *out) {
    int drop = pg_int(g, 0, 3) == 0 ? pg_int(g, 0, rank) : 0;
    for (int d = drop; d < rank; d++)
        out[d - drop] = pg_int(g, 0, 2) == 0 ? 1 : dims[d];
    return rank - drop;
}

/* Adds a fused node: ELEMENTWISE or REDUCE over (rank, dims). */
static void pg_node(bp_plan *p, pgen *g, bp_program_kind kind, int rank,
                    const int64_t *dims, uint8_t axes) {
    g->ins = NULL;
    g->n = g->cap = 0;
    int nin = pg_int(g, 1, 4);
    braid_dtype t = pg_dtype(g, false), ldt[4];
    braid_tensor in[4];
    uint32_t ld[4];
    for (int k = 0; k < nin; k++) {
        int64_t sd[BRAID_MAX_RANK];
        int sr = k == 0 ? rank : pg_shape(g, rank, dims, sd);
        if (k == 0) memcpy(sd, dims, (size_t)rank * sizeof *sd);
        ldt[k] = pg_int(g, 0, 3) == 0 ? pg_dtype(g, false) : t;
        if (pg_int(g, 0, 9) == 0) ldt[k] = BRAID_BOOL;
        in[k] = hand_input(p, ldt[k], sr, sd);
        ld[k] = pg_load(g, (uint32_t)k, ldt[k]);
    }
    uint32_t y = pg_body(g, t, ld, ldt, nin, pg_int(g, 1, 6));
    bp_program prog = {.kind = kind, .rank = (uint8_t)rank, .axes = axes};
    memcpy(prog.dims, dims, (size_t)rank * sizeof *dims);
    int orank = rank;
    int64_t od[BRAID_MAX_RANK];
    memcpy(od, dims, (size_t)rank * sizeof *dims);
    if (kind == BP_PROGRAM_REDUCE) {
        braid_op op = BRAID_OP_SUM + pg_int(g, 0, 3);
        if (t == BRAID_I32 && op == BRAID_OP_MEAN) op = BRAID_OP_SUM;
        pg_add(g, op, t, y, 0, 0);
        prog.flags = pg_int(g, 0, 1) ? BG_KEEPDIMS : 0;
        orank = 0;
        for (int d = 0; d < rank; d++) {
            if (!((axes >> d) & 1))
                od[orank++] = dims[d];
            else if (prog.flags)
                od[orank++] = 1;
        }
    } else if (pg_int(g, 0, 3) == 0) { /* store as another dtype */
        braid_dtype u = pg_int(g, 0, 4) == 0 ? BRAID_BOOL : pg_dtype(g, false);
        if (u == BRAID_BOOL || u == BRAID_I32) y = pg_compare(g, ld, ldt, nin);
        if (u == BRAID_I32)
            y = pg_add(g, BRAID_OP_CAST, BRAID_I32, y, 0, 0);
        else if (u != BRAID_BOOL)
            y = pg_add(g, BRAID_OP_CAST, u, y, 0, 0);
    }
    prog.ninstr = g->n;
    prog.instr = g->ins;
    hand_fused(p, in, (uint32_t)nin, g->ins[g->n - 1].dtype, orank, od, &prog);
}

/* A variable of the hand plan (GPU, zero-initialised: tests bind their own
 * bytes to the fused node reading it). */
static braid_tensor hand_variable(bp_plan *p, braid_dtype t, int rank,
                                  const int64_t *dims) {
    char name[24];
    snprintf(name, sizeof name, "v%u", (unsigned)p->res.graph->nnodes);
    braid_tensor x =
        braid_variable(p->res.graph, name, t, rank, dims, braid_init_fill(0));
    cr_assert_eq(braid_graph_status(p->res.graph), BRAID_OK, "%s",
                 braid_graph_error(p->res.graph));
    hand_place(p);
    p->res.info[x.id].noop = true; /* executor-owned bytes, as the memory
                                      pass marks variables: no kernel */
    return x;
}

/* An ELEMENTWISE program over (rank, dims) of dtype t (a float one) that
 * reads one to three inputs and one or two variables of the space's shape,
 * and stores a value computed from all of them into each variable before
 * the result (an optimizer's moments: m' = f(m, g) stored, the result
 * reading m'), maybe cast to another float dtype. Returns the number of
 * STOREs. */
static uint32_t pg_store_node(bp_plan *p, pgen *g, int rank,
                              const int64_t *dims) {
    g->ins = NULL;
    g->n = g->cap = 0;
    braid_dtype t = pg_dtype(g, true);
    int nin = pg_int(g, 1, 3), nvar = pg_int(g, 1, 2);
    braid_tensor in[5];
    braid_dtype ldt[5];
    uint32_t ld[5];
    for (int k = 0; k < nin; k++) {
        int64_t sd[BRAID_MAX_RANK];
        int sr = pg_shape(g, rank, dims, sd);
        ldt[k] = pg_int(g, 0, 3) == 0 ? pg_dtype(g, true) : t;
        in[k] = hand_input(p, ldt[k], sr, sd);
        ld[k] = pg_load(g, (uint32_t)k, ldt[k]);
    }
    uint32_t stored[2];
    for (int j = 0; j < nvar; j++) {
        int k = nin + j;
        ldt[k] = t;
        in[k] = hand_variable(p, t, rank, dims);
        ld[k] = pg_load(g, (uint32_t)k, t);
        /* the new value: from the variable's old one and the inputs */
        uint32_t v = pg_body(g, t, ld, ldt, k + 1, pg_int(g, 1, 4));
        v = pg_add(g, BRAID_OP_MUL, t, v, pg_const(g, t, 0.5), 0);
        stored[j] = v;
        uint32_t s = pg_add(g, BP_INSTR_STORE, t, v, BG_NONE, BG_NONE);
        g->ins[s].input = (uint32_t)k;
    }
    /* the result reads the stored values (and everything else) */
    uint32_t y = pg_body(g, t, ld, ldt, nin + nvar, pg_int(g, 1, 4));
    for (int j = 0; j < nvar; j++)
        y = pg_add(g, BRAID_OP_SUB, t, y, stored[j], 0);
    braid_dtype u = pg_dtype(g, true); /* a result of another width: the
                                          GPU's vector width follows it */
    if (u != t) y = pg_add(g, BRAID_OP_CAST, u, y, 0, 0);
    bp_program prog = {.kind = BP_PROGRAM_ELEMENTWISE,
                       .rank = (uint8_t)rank,
                       .ninstr = g->n,
                       .instr = g->ins};
    memcpy(prog.dims, dims, (size_t)rank * sizeof *dims);
    hand_fused(p, in, (uint32_t)(nin + nvar), u, rank, dims, &prog);
    return (uint32_t)nvar;
}

/* A matmul epilogue: bias add, maybe an activation, maybe a cast. */
static void pg_epilogue(bp_plan *p, pgen *g, int64_t m, int64_t k, int64_t n) {
    g->ins = NULL;
    g->n = g->cap = 0;
    braid_dtype t = pg_dtype(g, true);
    unsigned flags = (unsigned)pg_int(g, 0, 3);
    int64_t ad[2] = {m, k}, bd[2] = {k, n}, cd[1] = {n}, od[2] = {m, n};
    if (flags & BRAID_TRANSPOSE_A) ad[0] = k, ad[1] = m;
    if (flags & BRAID_TRANSPOSE_B) bd[0] = n, bd[1] = k;
    braid_tensor in[3] = {hand_input(p, t, 2, ad), hand_input(p, t, 2, bd),
                          hand_input(p, t, 1, cd)};
    pg_load(g, 0, t);
    pg_load(g, 1, t);
    uint32_t mm = pg_add(g, BRAID_OP_MATMUL, t, 0, 1, 0);
    uint32_t y = pg_add(g, BRAID_OP_ADD, t, mm, pg_load(g, 2, t), 0);
    static const braid_op act[] = {BRAID_OP_RELU, BRAID_OP_GELU, BRAID_OP_SILU,
                                   BRAID_OP_TANH};
    if (pg_int(g, 0, 2)) y = pg_add(g, act[pg_int(g, 0, 3)], t, y, 0, 0);
    if (pg_int(g, 0, 3) == 0) y = pg_add(g, BRAID_OP_CAST, BRAID_F16, y, 0, 0);
    bp_program prog = {.kind = BP_PROGRAM_MATMUL,
                       .rank = 2,
                       .flags = flags,
                       .ninstr = g->n,
                       .instr = g->ins};
    memcpy(prog.dims, od, sizeof od);
    hand_fused(p, in, 3, g->ins[y].dtype, 2, od, &prog);
}

#endif /* BRAID_TESTS_CODEGEN_PROGRAMS_H */
