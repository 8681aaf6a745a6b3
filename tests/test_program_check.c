/* tests/test_program_check.c — bp_program_check (passes/program.c), the one
 * checker of fused programs.
 *
 *   - every rule broken once, on a copy of a program the fuse pass made,
 *     is refused with a message naming what broke; the unbroken copies
 *     are accepted;
 *   - every program the fuse pass makes over random graphs (cpu, and cpu
 *     plus a GPU with hints, chunking on) is accepted;
 *   - its three users refuse the same broken program: the plan verifier,
 *     the code generator and a plan file (naming the node and field). */
#define _POSIX_C_SOURCE 200809L /* open_memstream in planfile_support.h */
#include "tests/planfile_support.h"

#include "codegen/codegen.h"

/* ---- fixtures -------------------------------------------------------------
 */

/* A compiled plan for cpu and its one fused node of program kind `kind`. */
typedef struct fixture {
    braid_graph *g;
    braid_plan *p;
    uint32_t id;      /* the fused node */
    bp_program *pr;   /* its program (in the plan) */
    bp_program saved; /* the program as compiled */
    bp_instr *instr;  /* a copy of its instructions */
} fixture;

static void fixture_init(fixture *f, braid_graph *g, bp_program_kind kind) {
    f->g = g;
    f->p = pf_compile(g, "cpu");
    f->id = BG_NONE;
    for (uint32_t id = 0; id < f->p->res.graph->nnodes; id++)
        if (f->p->res.graph->nodes[id].op == BRAID_OP_FUSED &&
            f->p->res.programs[f->p->res.info[id].program].kind == kind)
            f->id = id;
    cr_assert_neq(f->id, BG_NONE, "no %s program", bp_program_kind_name(kind));
    f->pr = &f->p->res.programs[f->p->res.info[f->id].program];
    f->saved = *f->pr;
    f->instr = malloc(f->pr->ninstr * sizeof *f->instr);
    cr_assert_not_null(f->instr);
    memcpy(f->instr, f->pr->instr, f->pr->ninstr * sizeof *f->instr);
}

/* Puts the program back as compiled. */
static void restore(fixture *f) {
    *f->pr = f->saved;
    memcpy(f->pr->instr, f->instr, f->pr->ninstr * sizeof *f->instr);
}

static void fixture_free(fixture *f) {
    restore(f);
    free(f->instr);
    braid_plan_free(f->p);
    braid_graph_free(f->g);
}

/* The program as it stands is refused with a message holding `want`; then
 * the compiled one is restored and accepted. */
static void refused(fixture *f, const char *want) {
    char why[256] = "unset";
    cr_assert_not(
        bp_program_check(f->pr, f->p->res.graph, f->id, why, sizeof why),
        "accepted; expected \"%s\"", want);
    cr_assert(strstr(why, want), "message \"%s\", expected \"%s\"", why, want);
    restore(f);
    cr_assert(bp_program_check(f->pr, f->p->res.graph, f->id, why, sizeof why),
              "%s", why);
}

/* The index of graph node `node` among the fused node's inputs. */
static uint32_t input_of(const fixture *f, braid_tensor t) {
    const bg_node *n = &f->p->res.graph->nodes[f->id];
    for (uint32_t k = 0; k < n->ninputs; k++)
        if (f->p->res.info[n->inputs[k]].origin == t.id) return k;
    cr_assert_fail("tensor %u is not an input of the fused node",
                   (unsigned)t.id);
    return 0;
}

static braid_tensor in(braid_graph *g, const char *name, braid_dtype t,
                       int rank, int64_t d0, int64_t d1) {
    int64_t d[2] = {d0, d1};
    return braid_input(g, name, t, rank, rank == 2 ? d : d + 1);
}

/* relu(where(m, x·y, cast(k)) + 1): inputs x f32[4,8], y f32[8],
 * k i32[4,8], m bool[4,8]. */
typedef struct ew {
    fixture f;
    braid_tensor x, y, k, m;
} ew;

static void ew_init(ew *e) {
    braid_graph *g = braid_graph_new(NULL);
    e->x = in(g, "x", BRAID_F32, 2, 4, 8);
    e->y = in(g, "y", BRAID_F32, 1, 0, 8);
    e->k = in(g, "k", BRAID_I32, 2, 4, 8);
    e->m = in(g, "m", BRAID_BOOL, 2, 4, 8);
    braid_tensor v = braid_where(g, e->m, braid_mul(g, e->x, e->y),
                                 braid_cast(g, e->k, BRAID_F32));
    v = braid_relu(g, braid_add(g, v, braid_fill(g, BRAID_F32, 0, NULL, 1.0)));
    braid_output(g, "out", v);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    fixture_init(&e->f, g, BP_PROGRAM_ELEMENTWISE);
}

/* Replaces the program's instructions by n of ins (n ≤ the compiled
 * count; the result must keep the node's dtype to pass). */
static void set_instr(fixture *f, const bp_instr *ins, uint32_t n) {
    cr_assert_leq(n, f->saved.ninstr);
    memcpy(f->pr->instr, ins, n * sizeof *ins);
    f->pr->ninstr = n;
}

#define LOAD(t, k)                                                             \
    ((bp_instr){.op = BP_INSTR_LOAD,                                           \
                .dtype = (t),                                                  \
                .arg = {BG_NONE, BG_NONE, BG_NONE},                            \
                .input = (k),                                                  \
                .source = BG_NONE})
#define OP(o, t, a, b, c)                                                      \
    ((bp_instr){.op = (o),                                                     \
                .dtype = (t),                                                  \
                .arg = {(a), (b), (c)},                                        \
                .input = BG_NONE,                                              \
                .source = BG_NONE})
#define N BG_NONE

/* ---- header rules -------------------------------------------------------- */

Test(program_check, header_rules) {
    ew e;
    ew_init(&e);
    fixture *f = &e.f;
    char why[128];
    cr_assert_not(
        bp_program_check(NULL, f->p->res.graph, f->id, why, sizeof why));
    cr_assert(strstr(why, "no program"), "%s", why);
    cr_assert_not(
        bp_program_check(f->pr, f->p->res.graph, 100000, why, sizeof why));
    cr_assert(strstr(why, "not in the graph"), "%s", why);
    /* a NULL or empty err buffer is allowed */
    cr_assert_not(bp_program_check(NULL, f->p->res.graph, f->id, NULL, 0));

    f->pr->ninstr = 0;
    refused(f, "ninstr 0");
    f->pr->instr = NULL;
    refused(f, "ninstr 0");
    f->pr->ninstr = BP_PROGRAM_MAX_INSTR + 1;
    refused(f, "ninstr 257");
    f->pr->kind = (bp_program_kind)7;
    refused(f, "kind 7 unknown");
    f->pr->rank = 9;
    refused(f, "rank 9");
    f->pr->dims[1] = -8;
    refused(f, "dims[1] = -8 is negative");
    f->pr->dims[0] = (int64_t)1 << 30;
    f->pr->dims[1] = (int64_t)1 << 30;
    refused(f, "2^50");
    f->pr->flags = BG_KEEPDIMS;
    refused(f, "flags 0x1; elementwise programs allow 0x0");
    f->pr->axes = 1;
    refused(f, "axes 0x1");
    fixture_free(f);
}

/* ---- instruction rules -----------------------------------------------------
 */

Test(program_check, instruction_rules) {
    ew e;
    ew_init(&e);
    fixture *f = &e.f;
    uint32_t x = input_of(f, e.x), y = input_of(f, e.y), k = input_of(f, e.k),
             m = input_of(f, e.m);
    const braid_dtype F = BRAID_F32, I = BRAID_I32, B = BRAID_BOOL;

    /* accepted: where / compare / cast over every input */
    bp_instr good[] = {LOAD(F, x),
                       LOAD(F, y),
                       OP(BRAID_OP_GT, B, 0, 1, N),
                       LOAD(I, k),
                       OP(BRAID_OP_CAST, F, 3, N, N),
                       LOAD(B, m),
                       OP(BRAID_OP_EQ, B, 5, 2, N),
                       OP(BRAID_OP_WHERE, F, 6, 4, 0)};
    set_instr(f, good, 8);
    char why[256];
    cr_assert(bp_program_check(f->pr, f->p->res.graph, f->id, why, sizeof why),
              "%s", why);
    restore(f);

    f->pr->instr[0].dtype = (braid_dtype)99;
    refused(f, "instruction 0: dtype 99 unknown");
    set_instr(f, (bp_instr[]){LOAD(F, 9)}, 1);
    refused(f, "instruction 0: load of input 9; the node has 4");
    set_instr(f, (bp_instr[]){LOAD(I, x)}, 1);
    refused(f, "instruction 0: load dtype i32 differs from input");
    set_instr(f, (bp_instr[]){LOAD(F, x), OP(BRAID_OP_NEG, F, 1, N, N)}, 2);
    refused(f, "instruction 1: operand 0 (1) is not an earlier instruction");
    set_instr(f, (bp_instr[]){LOAD(F, x), OP(BRAID_OP_COUNT_ + 5, F, 0, N, N)},
              2);
    refused(f, "instruction 1: op");
    set_instr(f, (bp_instr[]){LOAD(F, x), OP(BRAID_OP_RESHAPE, F, 0, N, N)}, 2);
    refused(f, "instruction 1: reshape cannot be in a program");
    set_instr(f, (bp_instr[]){LOAD(F, x), OP(BRAID_OP_COPY, F, 0, N, N)}, 2);
    refused(f, "instruction 1: copy cannot be in a program");
    set_instr(
        f, (bp_instr[]){LOAD(F, x), LOAD(I, k), OP(BRAID_OP_ADD, F, 0, 1, N)},
        3);
    refused(f, "instruction 2: add into f32: operand dtypes differ");
    set_instr(f,
              (bp_instr[]){LOAD(I, k), OP(BRAID_OP_EXP, I, 0, N, N),
                           OP(BRAID_OP_CAST, F, 1, N, N)},
              3);
    refused(f, "instruction 1: exp into i32: expected a float dtype");
    set_instr(f,
              (bp_instr[]){LOAD(I, k), LOAD(I, k), OP(BRAID_OP_POW, I, 0, 1, N),
                           OP(BRAID_OP_CAST, F, 2, N, N)},
              4);
    refused(f, "instruction 2: pow into i32: expected a float dtype");
    set_instr(f,
              (bp_instr[]){LOAD(B, m), OP(BRAID_OP_ADD, B, 0, 0, N),
                           OP(BRAID_OP_CAST, F, 1, N, N)},
              3);
    refused(f, "instruction 1: add into bool: expected a float or i32");
    set_instr(f, (bp_instr[]){LOAD(F, x), OP(BRAID_OP_LT, F, 0, 0, N)}, 2);
    refused(f, "instruction 1: lt into f32: a comparison's result must be "
               "bool");
    set_instr(f,
              (bp_instr[]){LOAD(F, x), LOAD(I, k), OP(BRAID_OP_EQ, B, 0, 1, N),
                           OP(BRAID_OP_CAST, F, 2, N, N)},
              4);
    refused(f, "instruction 2: eq into bool: operands of different dtypes");
    set_instr(f,
              (bp_instr[]){LOAD(B, m), OP(BRAID_OP_LT, B, 0, 0, N),
                           OP(BRAID_OP_CAST, F, 1, N, N)},
              3);
    refused(f, "instruction 1: lt into bool: an order comparison of bool");
    set_instr(f, (bp_instr[]){LOAD(F, x), OP(BRAID_OP_WHERE, F, 0, 0, 0)}, 2);
    refused(f, "instruction 1: where into f32: expected a bool condition");
    set_instr(f, (bp_instr[]){LOAD(F, x), OP(BRAID_OP_SUM, F, 0, N, N)}, 2);
    refused(f, "instruction 1: sum is not a reduce program's last");
    set_instr(
        f,
        (bp_instr[]){LOAD(F, x), LOAD(F, x), OP(BRAID_OP_MATMUL, F, 0, 1, N)},
        3);
    refused(f, "instruction 2: a matmul outside instruction 2 of a matmul");
    set_instr(f, (bp_instr[]){LOAD(I, k)}, 1);
    refused(f, "instruction 0: the result's dtype i32 differs from the "
               "node's f32");
    fixture_free(f);
}

/* A load of an input that does not broadcast to the space, and a space
 * that is not the node's shape. */
Test(program_check, space_rules) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = in(g, "x", BRAID_F32, 2, 4, 8);
    braid_tensor c = in(g, "c", BRAID_F32, 2, 4, 1);
    braid_output(g, "out", braid_exp(g, braid_add(g, x, c)));
    fixture f;
    fixture_init(&f, g, BP_PROGRAM_ELEMENTWISE);
    uint32_t kc = input_of(&f, c);
    f.pr->dims[0] = 2;
    refused(&f, "does not broadcast to the iteration space [2,8]");
    for (uint32_t i = 0; i < f.pr->ninstr; i++)
        if (f.pr->instr[i].op == BP_INSTR_LOAD && f.pr->instr[i].input == kc)
            f.pr->instr[i].input = 1 - kc; /* x everywhere: still fine */
    f.pr->dims[1] = 1;
    f.pr->dims[0] = 4;
    refused(&f, "does not broadcast");
    fixture_free(&f);

    g = braid_graph_new(NULL);
    x = in(g, "x", BRAID_F32, 2, 4, 8);
    braid_tensor y = in(g, "y", BRAID_F32, 1, 0, 4);
    braid_tensor r = braid_reshape(g, y, 2, (int64_t[]){4, 1});
    braid_output(g, "out", braid_exp(g, braid_mul(g, x, r)));
    fixture_init(&f, g, BP_PROGRAM_ELEMENTWISE);
    f.pr->rank = 3; /* [1,4,8]: another shape than the node's */
    f.pr->dims[0] = 1;
    f.pr->dims[1] = 4;
    f.pr->dims[2] = 8;
    refused(&f, "the iteration space [1,4,8] (axes 0x0) does not give the "
                "node's shape f32[4,8]");
    fixture_free(&f);
}

/* REDUCE programs: the reduction last, its dtype rule, axes and flags,
 * the reduced shape. */
Test(program_check, reduce_rules) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = in(g, "x", BRAID_F32, 2, 4, 8);
    int ax = 1;
    braid_output(g, "out", braid_mean(g, braid_exp(g, x), 1, &ax, false));
    fixture f;
    fixture_init(&f, g, BP_PROGRAM_REDUCE);
    uint32_t last = f.pr->ninstr - 1;
    f.pr->axes = 1;
    refused(&f, "does not give the node's shape");
    f.pr->axes = 4;
    refused(&f, "axes 0x4; reduce programs of rank 2 expect axes below");
    f.pr->flags = BG_KEEPDIMS;
    refused(&f, "does not give the node's shape");
    f.pr->flags = 2;
    refused(&f, "flags 0x2");
    f.pr->ninstr = last; /* ends before the reduction */
    refused(&f, "must end with a reduction");
    f.pr->instr[last].dtype = BRAID_I32;
    f.pr->instr[last - 1].dtype = BRAID_I32;
    refused(&f, "instruction");
    f.pr->kind = BP_PROGRAM_ELEMENTWISE;
    f.pr->axes = 0;
    f.pr->flags = 0;
    refused(&f, "is not a reduce program's last instruction");
    fixture_free(&f);

    g = braid_graph_new(NULL);
    braid_tensor k = in(g, "k", BRAID_I32, 2, 4, 8);
    braid_output(g, "out", braid_sum(g, braid_abs(g, k), 1, &ax, false));
    fixture_init(&f, g, BP_PROGRAM_REDUCE);
    f.pr->instr[f.pr->ninstr - 1].op = BRAID_OP_MEAN;
    refused(&f, "mean of i32 into i32 (expected one float dtype)");
    fixture_free(&f);
}

/* MATMUL programs: the head, the matmul's shapes and dtypes. */
Test(program_check, matmul_rules) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = in(g, "a", BRAID_F32, 2, 4, 8);
    braid_tensor w = in(g, "w", BRAID_F32, 2, 8, 6);
    braid_tensor b = in(g, "b", BRAID_F32, 1, 0, 6);
    braid_output(g, "out",
                 braid_relu(g, braid_add(g, braid_matmul(g, a, w, 0), b)));
    fixture f;
    fixture_init(&f, g, BP_PROGRAM_MATMUL);
    f.pr->instr[0].input = 1;
    refused(&f, "instruction 0: a matmul program starts LOAD 0, LOAD 1");
    f.pr->instr[2].op = BRAID_OP_ADD;
    refused(&f, "instruction 2: a matmul program starts");
    f.pr->instr[2].arg[0] = 1;
    refused(&f, "instruction 2: matmul operands 1, 1");
    f.pr->flags = BRAID_TRANSPOSE_A;
    refused(&f, "instruction 2: the matmul of inputs 0 and 1 does not give");
    f.pr->instr[2].dtype = BRAID_F16; /* operands f32: refused */
    refused(&f, "instruction 2: matmul of f32 and f32 into f16");
    f.pr->flags = 4;
    refused(&f, "flags 0x4; matmul programs allow 0x3");
    f.pr->ninstr = 2;
    refused(&f, "a matmul program starts");
    fixture_free(&f);
}

/* The CPU interpreter's one limit of its own: a MATMUL program's matmul
 * has the node's dtype (it is computed in the output). The GPU puts it in
 * scratch, so the IR allows it. */
Test(program_check, cpu_matmul_limit) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = in(g, "a", BRAID_F32, 2, 4, 8);
    braid_tensor w = in(g, "w", BRAID_F32, 2, 8, 6);
    braid_tensor b = in(g, "b", BRAID_F32, 1, 0, 6);
    braid_output(g, "out",
                 braid_relu(g, braid_add(g, braid_matmul(g, a, w, 0), b)));
    fixture f;
    fixture_init(&f, g, BP_PROGRAM_MATMUL);
    cr_assert_eq(br_fused_check(f.p->res.graph, f.id, f.pr), BRAID_OK);
    uint32_t last = f.pr->ninstr - 1; /* relu → cast to f16 */
    f.pr->instr[last].op = BRAID_OP_CAST;
    f.pr->instr[last].dtype = BRAID_F16;
    f.p->res.graph->nodes[f.id].dtype = BRAID_F16;
    char why[256];
    cr_assert(bp_program_check(f.pr, f.p->res.graph, f.id, why, sizeof why),
              "%s", why);
    cr_assert_neq(br_fused_check(f.p->res.graph, f.id, f.pr), BRAID_OK);
    cr_assert(strstr(braid_last_error(), "instruction 2: the matmul is f32, "
                                         "the node f16"),
              "%s", braid_last_error());
    f.p->res.graph->nodes[f.id].dtype = BRAID_F32;
    fixture_free(&f);
}

/* Kind 3 was the fused softmax before softmax became an op: unknown now,
 * so plan files that hold it are refused. A softmax node is no fused node:
 * as the code generator's single-node program (one load of x, over x's
 * shape) it passes. */
Test(program_check, old_softmax_kind_and_softmax_node) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = in(g, "x", BRAID_F32, 2, 4, 8);
    braid_output(g, "out", braid_neg(g, braid_abs(g, x)));
    fixture f;
    fixture_init(&f, g, BP_PROGRAM_ELEMENTWISE);
    f.pr->kind = (bp_program_kind)3;
    refused(&f, "kind 3 unknown");
    fixture_free(&f);

    g = braid_graph_new(NULL);
    x = in(g, "x", BRAID_F32, 2, 4, 8);
    braid_tensor y = braid_softmax(g, x, -1);
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
    bp_instr load = {
        .op = BP_INSTR_LOAD, .dtype = BRAID_F32, .input = 0, .source = BG_NONE};
    bp_program one = {.kind = BP_PROGRAM_ELEMENTWISE,
                      .ninstr = 1,
                      .instr = &load,
                      .rank = 2,
                      .dims = {4, 8}};
    char why[256];
    cr_assert(bp_program_check(&one, g, y.id, why, sizeof why), "%s", why);
    braid_graph_free(g);
}

/* ---- every fused program the pass makes ------------------------------- */

static uint32_t check_all(const braid_plan *p, uint64_t seed) {
    uint32_t n = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        if (p->res.graph->nodes[id].op != BRAID_OP_FUSED) continue;
        char why[256];
        const bp_program *pr = &p->res.programs[p->res.info[id].program];
        cr_assert(bp_program_check(pr, p->res.graph, id, why, sizeof why),
                  "seed %llu, fused node %u: %s", (unsigned long long)seed,
                  (unsigned)id, why);
        n++;
    }
    return n;
}

Test(program_check, random_graphs_accepted) {
    uint32_t nfused = 0;
    for (uint64_t seed = 0; seed < 200; seed++) {
        ts_graph_options o;
        ts_graph_options_default(&o);
        o.mixed_dtypes = seed % 2;
        o.device_hints = seed % 3 == 0;
        braid_graph *g = ts_random_graph(seed + 7000, &o);
        braid_compile_options co;
        braid_compile_options_init(&co);
        co.devices = seed % 3 == 0 ? "cpu,cuda:0" : "cpu";
        co.archs = "none";
        co.chunks = seed % 4 == 1 ? 3 : 0;
        braid_plan *p = NULL;
        cr_assert_eq(braid_compile(g, &co, &p), BRAID_OK, "seed %llu: %s",
                     (unsigned long long)seed, braid_last_error());
        nfused += check_all(p, seed);
        braid_plan_free(p);
        braid_graph_free(g);
    }
    cr_assert_gt(nfused, 100u, "only %u fused nodes", (unsigned)nfused);
}

/* ---- its users refuse what it refuses --------------------------------- */

/* The verifier, the code generator, the CPU executor and a plan file all
 * refuse a program with an operand computed later, naming the node. */
Test(program_check, users_refuse) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = in(g, "x", BRAID_F32, 2, 4, 8);
    braid_output(g, "out", braid_exp(g, braid_neg(g, x)));
    braid_plan *p = pf_compile(g, "cpu");
    uint32_t id = p->res.outputs[0].node;
    cr_assert_eq(p->res.graph->nodes[id].op, BRAID_OP_FUSED);
    uint32_t k = p->res.info[id].program;
    bp_program *pr = &p->res.programs[k];
    size_t size;
    unsigned char *data = pf_save(p, &size); /* a good file first */
    braid_plan *q = pf_load(data, size);
    braid_plan_free(q);
    free(data);

    pr->instr[1].dtype = BRAID_I32; /* neg into i32 of an f32 */
    cr_assert_neq(bp_verify_plan(p), BRAID_OK);
    cr_assert(strstr(braid_last_error(), "verify_plan: program: fused node"),
              "%s", braid_last_error());
    cr_assert(strstr(braid_last_error(), "instruction 1: neg into i32"), "%s",
              braid_last_error());
    braid_exec *e = NULL;
    cr_assert_neq(braid_exec_new(p, &e), BRAID_OK);
    cr_assert(strstr(braid_last_error(), "instruction 1: neg into i32"), "%s",
              braid_last_error());

    p->res.info[id].device = (bp_device){BP_DEVICE_CUDA, 0};
    bc_source src;
    cr_assert_eq(bc_kernel_source(p, id, &src), BRAID_ERR_INTERNAL);
    cr_assert(strstr(braid_last_error(), "instruction 1: neg into i32"), "%s",
              braid_last_error());
    p->res.info[id].device = (bp_device){BP_DEVICE_CPU, 0};

    data = pf_save(p, &size);
    q = NULL;
    braid_status s = br_planfile_load(data, size, NULL, "plan file", &q);
    cr_assert_neq(s, BRAID_OK);
    cr_assert_null(q);
    char want[96];
    snprintf(want, sizeof want, "info[%u].program: program %u of fused node %u",
             (unsigned)id, (unsigned)k, (unsigned)id);
    cr_assert(strstr(braid_last_error(), want), "%s", braid_last_error());
    cr_assert(strstr(braid_last_error(), "instruction 1: neg into i32"), "%s",
              braid_last_error());
    free(data);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- side stores (BP_INSTR_STORE) ------------------------------------------
 */

/* SGD with momentum on w f32[4,8]: the fuse pass makes one program that
 * stores the new velocity into "w.momentum" and computes w in place. */
typedef struct sgd {
    fixture f;
    uint32_t grad, vel, w; /* the fused node's inputs: gradient, velocity,
                              parameter */
    uint32_t store;        /* the STORE instruction */
} sgd;

static void sgd_init(sgd *s) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t d[2] = {4, 8};
    braid_tensor w =
        braid_variable(g, "w", BRAID_F32, 2, d, braid_init_uniform(3, -1, 1));
    braid_tensor x = braid_input(g, "g", BRAID_F32, 2, d);
    braid_sgd_options o = {.lr = 0.1, .momentum = 0.9};
    cr_assert_eq(braid_sgd(g, 1, &w, &x, &o), BRAID_OK, "%s",
                 braid_graph_error(g));
    fixture_init(&s->f, g, BP_PROGRAM_ELEMENTWISE);
    const bp_program *pr = s->f.pr;
    s->store = BG_NONE;
    for (uint32_t i = 0; i < pr->ninstr; i++)
        if (pr->instr[i].op == BP_INSTR_STORE) s->store = i;
    cr_assert_neq(s->store, BG_NONE, "no STORE in the momentum update");
    const braid_graph *pg = s->f.p->res.graph;
    const bg_node *n = &pg->nodes[s->f.id];
    s->grad = s->vel = s->w = BG_NONE;
    for (uint32_t k = 0; k < n->ninputs; k++) {
        const bg_node *x = &pg->nodes[n->inputs[k]];
        if (x->op == BRAID_OP_INPUT)
            s->grad = k;
        else if (x->op == BRAID_OP_VARIABLE && strcmp(x->name, "w") == 0)
            s->w = k;
        else if (x->op == BRAID_OP_VARIABLE)
            s->vel = k;
    }
    cr_assert(s->grad != BG_NONE && s->vel != BG_NONE && s->w != BG_NONE);
    cr_assert_eq(pr->instr[s->store].input, s->vel);
}

Test(program_check, store_rules) {
    sgd s;
    sgd_init(&s);
    fixture *f = &s.f;
    bp_instr *in = f->pr->instr;
    uint32_t st = s.store, last = f->pr->ninstr - 1;
    char why[256];
    cr_assert(bp_program_check(f->pr, f->p->res.graph, f->id, why, sizeof why),
              "%s", why);
    cr_assert(
        bp_program_stores_into(f->pr, f->p->res.graph, f->id,
                               f->p->res.graph->nodes[f->id].inputs[s.vel]));

    in[st].input = s.grad; /* an input, not a variable */
    refused(f, "expected a variable of the iteration space");
    in[st].input = 9;
    refused(f, "store into input 9; the node has 3");
    in[st].dtype = BRAID_F64;
    refused(f, "store of a f32 value into input");
    for (uint32_t i = 0; i < f->pr->ninstr; i++) /* the stored value: a load */
        if (in[i].op == BP_INSTR_LOAD && i < st) in[st].arg[0] = i;
    refused(f, "is a load, a constant or a store");
    in[st].arg[0] = st;
    refused(f, "is not an earlier instruction");
    in[last].arg[0] = st; /* the result reads the store */
    refused(f, "is a store, which has no value");
    f->pr->ninstr = st + 1; /* the store as the result */
    refused(f, "a store outside an elementwise program or as its result");
    for (uint32_t i = st + 1; i < f->pr->ninstr; i++)
        if (in[i].op == BP_INSTR_LOAD) { /* a second store, same variable */
            in[i] = in[st];
            break;
        }
    refused(f, "is stored into, and instruction");
    fixture_free(f);
}

/* The plan verifier: every STORE backed by its variable's skipped assign,
 * and every skipped assign by a write; a plan file round-trips the
 * program. */
Test(program_check, stored_assigns_verified) {
    sgd s;
    sgd_init(&s);
    bp_plan *p = s.f.p;
    braid_graph *pg = p->res.graph;
    uint32_t var = pg->nodes[s.f.id].inputs[s.vel], a = BG_NONE;
    for (uint32_t id = 0; id < pg->nnodes; id++)
        if (pg->nodes[id].op == BRAID_OP_ASSIGN &&
            pg->nodes[id].inputs[0] == var)
            a = id;
    cr_assert_neq(a, BG_NONE);
    cr_assert(bp_assign_stored(p, a));
    cr_assert(p->res.info[a].noop, "the stored assign copies");
    cr_assert_eq(bp_verify_plan(p), BRAID_OK, "%s", braid_last_error());

    size_t size;
    unsigned char *data = pf_save(p, &size);
    braid_plan *q = pf_load(data, size);
    free(data);
    const bp_program *qp = &q->res.programs[q->res.info[s.f.id].program];
    cr_assert_eq(qp->instr[s.store].op, BP_INSTR_STORE);
    cr_assert_eq(qp->instr[s.store].input, s.vel);
    braid_plan_free(q);

    p->res.info[a].noop = false; /* copies the parameter over the velocity */
    cr_assert_neq(bp_verify_plan(p), BRAID_OK);
    cr_assert(strstr(braid_last_error(), "which that node's program stores "
                                         "into already"),
              "%s", braid_last_error());
    p->res.info[a].noop = true;

    uint32_t old = pg->nodes[a].inputs[1];
    pg->nodes[a].inputs[1] = pg->nodes[s.f.id].inputs[s.grad];
    cr_assert_neq(bp_verify_plan(p), BRAID_OK); /* the store is unbacked */
    cr_assert(strstr(braid_last_error(), "the variable's assign does not take "
                                         "it as its value"),
              "%s", braid_last_error());
    pg->nodes[a].inputs[1] = old;

    s.f.pr->instr[s.store].op = BRAID_OP_NEG; /* no store: assign skipped */
    s.f.pr->instr[s.store].input = BG_NONE;
    uint32_t saved = s.f.pr->ninstr;
    cr_assert_neq(bp_verify_plan(p), BRAID_OK);
    cr_assert(strstr(braid_last_error(), "is skipped, but nothing writes the "
                                         "variable"),
              "%s", braid_last_error());
    s.f.pr->ninstr = saved;
    restore(&s.f);
    cr_assert_eq(bp_verify_plan(p), BRAID_OK, "%s", braid_last_error());
    fixture_free(&s.f);
}
