/* tests/test_pass_fuse.c — the fuse pass: which nodes become one fused
 * node, and the programs they get (docs/fusion.md states the rules).
 *
 * Golden cases: tests/golden/fuse/<case>.graph is the input ("# devices:"
 * on a comment line picks the device list, default cpu); <case>.expected
 * is the compiled plan's graph (simplify and chunk off, fuse on): one line
 * per node, "%id op device <- inputs", each fused node followed by its
 * program listing, then the outputs. Regenerate with BRAID_UPDATE_GOLDEN=1
 * and check the diff by eye. Each case also asserts what the rules demand,
 * and random DAGs check the pass's invariants. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "passes/passes.h"
#include "runtime/runtime.h"
#include "support/golden.h"
#include "support/support.h"

#define GOLDEN BRAID_SOURCE_DIR "/tests/golden/fuse/"

/* ---- harness ------------------------------------------------------------- */

static braid_plan *compile_with(const braid_graph *g, const char *devices,
                                unsigned disable) {
    braid_compile_options o = ts_compile_options(devices, disable);
    return ts_compile_ok(g, &o);
}

static const char *instr_name(braid_op op) {
    if (op == BP_INSTR_LOAD) return "load";
    if (op == BP_INSTR_CONST) return "const";
    return bg_op(op)->name;
}

static void put_program(FILE *f, const bg_node *n, const bp_program *pr) {
    char shape[128];
    fprintf(f, "    %s over %s", bp_program_kind_name(pr->kind),
            bg_shape_str(pr->rank, pr->dims, shape, sizeof shape));
    if (pr->kind == BP_PROGRAM_REDUCE)
        fprintf(f, " axes=0x%x%s", (unsigned)pr->axes,
                pr->flags & BG_KEEPDIMS ? " keepdims" : "");
    if (pr->kind == BP_PROGRAM_MATMUL && pr->flags)
        fprintf(f, " flags=%u", (unsigned)pr->flags);
    fputc('\n', f);
    for (uint32_t i = 0; i < pr->ninstr; i++) {
        const bp_instr *in = &pr->instr[i];
        fprintf(f, "    t%u = %s", (unsigned)i, instr_name(in->op));
        if (in->op == BP_INSTR_LOAD)
            fprintf(f, " in%u (%%%u)", (unsigned)in->input,
                    (unsigned)n->inputs[in->input]);
        else if (in->op == BP_INSTR_CONST)
            fprintf(f, " %.9g", in->value);
        else
            for (int k = 0; k < bp_instr_arity(in); k++)
                fprintf(f, "%s t%u", k ? "," : "", (unsigned)in->arg[k]);
        fprintf(f, " : %s\n", braid_dtype_name(in->dtype));
    }
}

/* The plan's graph, one line per node (fused nodes with their program),
 * then the outputs. */
static char *summary(const braid_plan *p) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert(f);
    const braid_graph *g = p->res.graph;
    char dev[32], type[128];
    for (uint32_t id = 0; id < g->nnodes; id++) {
        const bg_node *n = bg_node_at(g, id);
        fprintf(f, "%%%u %s %s %s", (unsigned)id, bg_op(n->op)->name,
                bg_type_str(n, type, sizeof type),
                bp_device_str(p->res.info[id].device, dev, sizeof dev));
        for (uint32_t k = 0; k < n->ninputs; k++)
            fprintf(f, "%s%%%u", k ? " " : " <- ", (unsigned)n->inputs[k]);
        if (n->name) fprintf(f, " \"%s\"", n->name);
        fputc('\n', f);
        if (n->op == BRAID_OP_FUSED)
            put_program(f, n, &p->res.programs[p->res.info[id].program]);
    }
    for (uint32_t i = 0; i < p->res.noutputs; i++)
        fprintf(f, "output \"%s\" = %%%u\n", p->res.outputs[i].name,
                (unsigned)p->res.outputs[i].node);
    fclose(f);
    return buf;
}

static braid_graph *load_case(const char *name, char *devices, size_t size) {
    char *text;
    braid_graph *g = ts_golden_graph(GOLDEN, name, &text);
    if (!ts_directive(text, "# devices:", devices, size))
        snprintf(devices, size, "cpu");
    free(text);
    return g;
}

/* Compiles case `name` (simplify and chunk off), compares it with its
 * golden summary, checks its outputs against the reference when it runs on
 * the cpu, and returns the plan. */
static braid_plan *golden(const char *name) {
    char devices[128];
    braid_graph *g = load_case(name, devices, sizeof devices);
    braid_plan *p =
        compile_with(g, devices, BRAID_PASS_SIMPLIFY | BRAID_PASS_CHUNK);
    char *got = summary(p);
    ts_check_golden(GOLDEN, name, got);
    free(got);
    if (!strcmp(devices, "cpu")) {
        ts_io *io = ts_io_new(g, 7);
        braid_exec *e = NULL;
        cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "%s", braid_last_error());
        cr_assert_eq(
            braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
            BRAID_OK);
        char msg[512];
        cr_assert(ts_io_compare(io, msg, sizeof msg), "%s: %s", name, msg);
        braid_exec_free(e);
        ts_io_free(io);
    }
    braid_graph_free(g);
    return p;
}

/* ---- plan queries ----------------------------------------------------------
 */

static uint32_t count_op(const braid_plan *p, braid_op op) {
    uint32_t n = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        n += p->res.graph->nodes[id].op == op;
    return n;
}

/* The k-th fused node (in id order). */
static uint32_t fused(const braid_plan *p, uint32_t k) {
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        if (p->res.graph->nodes[id].op == BRAID_OP_FUSED && k-- == 0) return id;
    cr_assert_fail("no fused node %u", (unsigned)k);
    return BG_NONE;
}

static const bp_program *program(const braid_plan *p, uint32_t id) {
    cr_assert_lt(p->res.info[id].program, p->res.nprograms);
    return &p->res.programs[p->res.info[id].program];
}

/* Instructions of op in a program. */
static uint32_t count_instr(const bp_program *pr, braid_op op) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < pr->ninstr; i++)
        n += pr->instr[i].op == op;
    return n;
}

/* The output node named name. */
static uint32_t output(const braid_plan *p, const char *name) {
    for (uint32_t i = 0; i < p->res.noutputs; i++)
        if (!strcmp(p->res.outputs[i].name, name))
            return p->res.outputs[i].node;
    cr_assert_fail("no output %s", name);
    return BG_NONE;
}

/* ---- golden cases ----------------------------------------------------------
 */

Test(fuse, chain_becomes_one_node) {
    braid_plan *p = golden("chain");
    cr_assert_eq(count_op(p, BRAID_OP_FUSED), 1);
    uint32_t f = fused(p, 0);
    const bp_program *pr = program(p, f);
    cr_assert_eq(pr->kind, BP_PROGRAM_ELEMENTWISE);
    cr_assert_eq(p->res.graph->nodes[f].ninputs, 3, "x, y, z read once each");
    cr_assert_eq(count_instr(pr, BP_INSTR_LOAD), 3);
    cr_assert_eq(count_instr(pr, BP_INSTR_CONST), 1, "the 0.5 fill");
    cr_assert_eq(pr->ninstr, 14, "3 loads, 1 const, 10 ops");
    cr_assert_eq(output(p, "out"), f);
    cr_assert_str_eq(p->res.graph->nodes[f].name, "out", "keeps the name");
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        cr_assert_neq(bg_op(p->res.graph->nodes[id].op)->kind,
                      BRAID_KIND_ELEMENTWISE, "node %u left unfused",
                      (unsigned)id);
    braid_plan_free(p);
}

Test(fuse, diamond_becomes_one_node) {
    braid_plan *p = golden("diamond");
    cr_assert_eq(count_op(p, BRAID_OP_FUSED), 1);
    const bp_program *pr = program(p, fused(p, 0));
    cr_assert_eq(pr->ninstr, 5, "load x, exp, sin, cos, mul");
    cr_assert_eq(count_instr(pr, BRAID_OP_EXP), 1, "exp computed once");
    braid_plan_free(p);
}

Test(fuse, intermediate_used_outside_stays) {
    braid_plan *p = golden("shared_intermediate");
    uint32_t t = output(p, "t");
    /* t stays its own value: the root of the first group, read by the
     * reduction and by the second group */
    cr_assert_eq(count_op(p, BRAID_OP_FUSED), 2);
    cr_assert_eq(p->res.graph->nodes[t].op, BRAID_OP_FUSED);
    cr_assert_eq(count_op(p, BRAID_OP_REDUCE_MAX), 1);
    const bp_program *second = program(p, output(p, "v"));
    cr_assert_eq(count_instr(second, BRAID_OP_TANH), 0, "t not recomputed");
    braid_plan_free(p);
}

Test(fuse, single_op_left_alone) {
    braid_plan *p = golden("single_op");
    cr_assert_eq(count_op(p, BRAID_OP_FUSED), 0);
    cr_assert_eq(count_op(p, BRAID_OP_MUL), 1);
    braid_plan_free(p);
}

Test(fuse, never_across_devices) {
    braid_plan *p = golden("devices");
    cr_assert_eq(count_op(p, BRAID_OP_FUSED), 2);
    for (uint32_t k = 0; k < 2; k++) {
        uint32_t f = fused(p, k);
        const bg_node *n = &p->res.graph->nodes[f];
        for (uint32_t j = 0; j < n->ninputs; j++)
            cr_assert(bp_device_equal(p->res.info[n->inputs[j]].device,
                                      p->res.info[f].device),
                      "fused node %u reads another device", (unsigned)f);
        cr_assert_eq(program(p, f)->ninstr -
                         count_instr(program(p, f), BP_INSTR_LOAD),
                     3, "three ops per device");
    }
    cr_assert(!bp_device_equal(p->res.info[fused(p, 0)].device,
                               p->res.info[fused(p, 1)].device));
    cr_assert_geq(count_op(p, BRAID_OP_COPY), 1, "copies are never fused");
    braid_plan_free(p);
}

Test(fuse, reduce_absorbs_its_prologue) {
    braid_plan *p = golden("reduce_prologue");
    cr_assert_eq(count_op(p, BRAID_OP_FUSED), 3);
    const char *names[] = {"ms", "cs", "all"};
    const braid_op ops[] = {BRAID_OP_MEAN, BRAID_OP_SUM, BRAID_OP_SUM};
    for (int i = 0; i < 3; i++) {
        const bp_program *pr = program(p, output(p, names[i]));
        cr_assert_eq(pr->kind, BP_PROGRAM_REDUCE, "%s", names[i]);
        cr_assert_eq(pr->instr[pr->ninstr - 1].op, ops[i], "%s", names[i]);
        cr_assert_eq(pr->rank, 2, "iterates over the reduction's input");
    }
    cr_assert_eq(count_op(p, BRAID_OP_SUM) + count_op(p, BRAID_OP_MEAN), 0);
    braid_plan_free(p);
}

Test(fuse, matmul_bias_activation_epilogue) {
    braid_plan *p = golden("matmul_epilogue");
    cr_assert_eq(count_op(p, BRAID_OP_MATMUL), 0);
    uint32_t h = fused(p, 0), o = output(p, "o");
    const bp_program *a = program(p, h), *b = program(p, o);
    cr_assert_eq(a->kind, BP_PROGRAM_MATMUL);
    cr_assert_eq(a->instr[2].op, BRAID_OP_MATMUL);
    cr_assert_eq(a->instr[a->ninstr - 1].op, BRAID_OP_GELU);
    cr_assert_str_eq(p->res.graph->nodes[h].name, "h");
    cr_assert_eq(b->kind, BP_PROGRAM_MATMUL);
    cr_assert_eq(b->flags, BRAID_TRANSPOSE_B);
    cr_assert_eq(b->instr[b->ninstr - 1].op, BRAID_OP_ADD);
    cr_assert_eq(p->res.graph->nodes[o].inputs[0], h,
                 "the second reads the first");
    braid_plan_free(p);
}

Test(fuse, matmul_with_another_user_not_fused) {
    braid_plan *p = golden("matmul_shared");
    cr_assert_eq(count_op(p, BRAID_OP_MATMUL), 1);
    const bp_program *pr = program(p, output(p, "r"));
    cr_assert_eq(pr->kind, BP_PROGRAM_ELEMENTWISE);
    cr_assert_eq(count_instr(pr, BRAID_OP_MATMUL), 0);
    braid_plan_free(p);
}

/* Rule 15: the GPU conv whose only user is its relu lost its bias to the
 * relu's fused node (add + relu over the conv's shape, the bias a load);
 * the conv that is an output kept its bias, and the cpu conv took its
 * relu instead (rule 16: one CONV program, conv with bias, then relu). */
Test(fuse, gpu_conv_bias_joins_its_user) {
    braid_plan *p = golden("conv_bias");
    const braid_graph *g = p->res.graph;
    uint32_t two = 0, three = 0;
    for (uint32_t id = 0; id < g->nnodes; id++) {
        const bg_node *n = &g->nodes[id];
        if (n->op != BRAID_OP_CONV) continue;
        bool gpu = p->res.info[id].device.kind == BP_DEVICE_CUDA;
        if (n->ninputs == 2) cr_assert(gpu, "only a GPU conv loses its bias");
        two += n->ninputs == 2;
        three += n->ninputs == 3;
    }
    cr_assert_eq(two, 1);
    cr_assert_eq(three, 1);
    const bp_program *cpu = program(p, output(p, "r2"));
    cr_assert_eq(cpu->kind, BP_PROGRAM_CONV);
    cr_assert_eq(bp_program_conv_at(cpu), 3, "the conv keeps its bias");
    cr_assert_eq(cpu->instr[cpu->ninstr - 1].op, BRAID_OP_RELU);
    /* the outputs are copies back to the cpu */
    uint32_t r = g->nodes[output(p, "r")].inputs[0];
    const bp_program *pr = program(p, r);
    cr_assert_eq(pr->kind, BP_PROGRAM_ELEMENTWISE);
    cr_assert_eq(count_instr(pr, BRAID_OP_ADD), 1);
    cr_assert_eq(count_instr(pr, BRAID_OP_RELU), 1);
    cr_assert_eq(g->nodes[g->nodes[output(p, "r3")].inputs[0]].op,
                 BRAID_OP_RELU);
    braid_plan_free(p);
}

Test(fuse, broadcasts_and_constants) {
    braid_plan *p = golden("broadcast");
    cr_assert_eq(count_op(p, BRAID_OP_FUSED), 1);
    cr_assert_eq(count_op(p, BRAID_OP_EXP), 1, "exp of b not recomputed");
    cr_assert_eq(count_op(p, BRAID_OP_BROADCAST_TO), 0, "absorbed");
    const bp_program *pr = program(p, output(p, "v"));
    cr_assert_eq(count_instr(pr, BP_INSTR_CONST), 2, "k = 3 and f = -1.5");
    cr_assert_eq(count_instr(pr, BP_INSTR_LOAD), 3, "exp(b), x and c");
    braid_plan_free(p);
}

Test(fuse, mixed_dtypes) {
    braid_plan *p = golden("mixed_dtypes");
    const bp_program *pr = program(p, output(p, "w"));
    cr_assert_eq(count_instr(pr, BRAID_OP_WHERE), 1);
    cr_assert_eq(count_instr(pr, BRAID_OP_GT), 1);
    cr_assert_eq(pr->instr[pr->ninstr - 1].dtype, BRAID_F16);
    braid_plan_free(p);
}

/* The IR dump (BRAID_DUMP=after:<pass>) lists each fused node's ops. */
Test(fuse, dump_lists_member_ops) {
    char devices[128];
    braid_graph *g = load_case("chain", devices, sizeof devices);
    braid_plan *p = compile_with(g, devices, 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    bp_plan_dump(p, "fuse", f);
    fclose(f);
    cr_assert(strstr(buf, "fused %0, %1, %2"), "%s", buf);
    cr_assert(strstr(buf, "elementwise{mul,add,tanh,sigmoid,mul,mul,add,neg,"
                          "exp,sub}"),
              "%s", buf);
    free(buf);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Fusion off: the same graph keeps every node. */
Test(fuse, disabled_pass_fuses_nothing) {
    char devices[128];
    braid_graph *g = load_case("chain", devices, sizeof devices);
    braid_plan *p = compile_with(g, devices, BRAID_PASS_FUSE);
    cr_assert_eq(count_op(p, BRAID_OP_FUSED), 0);
    cr_assert_eq(p->res.nprograms, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- invariants on random DAGs ------------------------------------------- */

/* The device of every user-graph node, as the unfused plan placed it
 * (placement runs before fusion, so the fused plan agrees). */
static void origin_devices(const braid_plan *p, bp_device *dev, uint32_t n) {
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        if (p->res.info[id].origin < n)
            dev[p->res.info[id].origin] = p->res.info[id].device;
}

/* Every fused node: a program the CPU interpreter accepts, every member
 * op from its own device, and no member op left in the graph. */
static uint32_t check_plan(const braid_plan *fp, const bp_device *dev,
                           uint32_t n, uint64_t seed) {
    uint32_t nfused = 0;
    for (uint32_t id = 0; id < fp->res.graph->nnodes; id++) {
        if (fp->res.graph->nodes[id].op != BRAID_OP_FUSED) continue;
        nfused++;
        const bp_program *pr = program(fp, id);
        cr_assert_eq(br_fused_check(fp->res.graph, id, pr), BRAID_OK,
                     "seed %llu: %s", (unsigned long long)seed,
                     braid_last_error());
        uint32_t ops = 0;
        for (uint32_t i = 0; i < pr->ninstr; i++) {
            const bp_instr *in = &pr->instr[i];
            if (in->op == BP_INSTR_LOAD || in->op == BP_INSTR_CONST) continue;
            ops++;
            cr_assert_lt(in->source, n);
            cr_assert(bp_device_equal(dev[in->source], fp->res.info[id].device),
                      "seed %llu: fused node %u holds node %u of another "
                      "device",
                      (unsigned long long)seed, (unsigned)id,
                      (unsigned)in->source);
            for (uint32_t j = 0; j < fp->res.graph->nnodes; j++)
                cr_assert(fp->res.graph->nodes[j].op == BRAID_OP_FUSED ||
                              fp->res.info[j].origin != in->source,
                          "seed %llu: node %u both fused and kept",
                          (unsigned long long)seed, (unsigned)in->source);
        }
        cr_assert(ops >= 1, "seed %llu: a fused node without work",
                  (unsigned long long)seed);
    }
    return nfused;
}

static void random_dags(const char *devices, bool hints, int count) {
    uint32_t nfused = 0;
    for (uint64_t seed = 0; seed < (uint64_t)count; seed++) {
        ts_graph_options o;
        ts_graph_options_default(&o);
        o.device_hints = hints;
        o.mixed_dtypes = seed % 2;
        braid_graph *g = ts_random_graph(seed, &o);
        uint32_t n = braid_graph_node_count(g);
        braid_plan *up =
            compile_with(g, devices, BRAID_PASS_FUSE | BRAID_PASS_CHUNK);
        braid_plan *fp = compile_with(g, devices, BRAID_PASS_CHUNK);
        bp_device *dev = calloc(n, sizeof *dev);
        origin_devices(up, dev, n);
        nfused += check_plan(fp, dev, n, seed);
        free(dev);
        braid_plan_free(up);
        braid_plan_free(fp);
        braid_graph_free(g);
    }
    cr_assert_gt(nfused, (uint32_t)count / 2, "only %u fused nodes",
                 (unsigned)nfused);
    cr_log_info("%s: %u fused nodes in %d graphs", devices, (unsigned)nfused,
                count);
}

Test(fuse, random_dags_cpu) {
    random_dags("cpu", false, 300);
}

Test(fuse, random_dags_cpu_and_gpu_with_hints) {
    random_dags("cpu,cuda:0", true, 300);
}
