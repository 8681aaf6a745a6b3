/* tests/test_fuse_gather_pool.c — a gather inside an elementwise program
 * and a pool with an elementwise prologue (docs/fusion.md, rules 12 and
 * 13) on the CPU: the fuse pass's groups, the tile interpreter against the
 * unfused kernels (bit for bit: both compute the same values in the same
 * order) and the reference evaluator (ts_tolerance per dtype), run errors
 * for out-of-range indices, plan files, DOT and dumps, the checker's
 * refusals, and the generated CUDA C compiled by NVRTC for sm_90 (no GPU
 * needed). Random shapes, axes, negative indices, pads, ceil_mode,
 * count_include_pad, windows entirely in the padding, ties, -0.0 and NaN. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuse_cases.h"
#include "tests/planfile_support.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* ---- running a case -------------------------------------------------------- */

static braid_plan *compile_cpu(const braid_graph *g, bool fuse) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    o.num_threads = 3;
    o.disable_passes = fuse ? 0 : BRAID_PASS_FUSE;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    return p;
}

static braid_status run_plan(const braid_plan *p, ts_io *io,
                             braid_output_binding *out) {
    braid_exec *e = NULL;
    braid_status s = braid_exec_new(p, &e);
    if (s == BRAID_OK) s = braid_run(e, io->in, io->ninputs, out, io->noutputs);
    braid_exec_free(e);
    return s;
}

/* Case c on io's inputs: the fused plan (counted into *k) against the
 * unfused plan bit for bit and against the reference. */
static void check_case(fc_case *c, ts_io *io, fc_count *k) {
    braid_plan *p = compile_cpu(c->g, true), *q = compile_cpu(c->g, false);
    *k = fc_count_plan(p);
    size_t bytes = io->out[0].bytes;
    void *unfused = calloc(bytes + 1, 1);
    cr_assert(unfused);
    braid_output_binding ub = io->out[0];
    ub.data = unfused;
    cr_assert_eq(run_plan(p, io, io->out), BRAID_OK, "%s: %s", c->what,
                 braid_last_error());
    cr_assert_eq(run_plan(q, io, &ub), BRAID_OK, "%s: %s", c->what,
                 braid_last_error());
    cr_assert_eq(
        braid_reference_run(c->g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s: %s", c->what, braid_last_error());
    char msg[600] = "";
    bool ok = ts_io_compare(io, msg, sizeof msg);
    if (!ok) ts_log_graph(c->g);
    cr_assert(ok, "%s: %s", c->what, msg);
    cr_assert(memcmp(io->out[0].data, unfused, bytes) == 0,
              "%s: fused and unfused differ", c->what);
    free(unfused);
    braid_plan_free(p);
    braid_plan_free(q);
}

/* ---- gather → elementwise ------------------------------------------------ */

Test(fuse_gather, random_cases_fuse_and_match) {
    for (uint64_t seed = 1; seed <= 80; seed++) {
        fc_case c = fc_gather(seed);
        cr_assert(braid_tensor_valid(c.y), "%s: %s", c.what,
                  braid_graph_error(c.g));
        cr_assert_eq(braid_output(c.g, "y", c.y), BRAID_OK);
        ts_io *io = ts_io_new(c.g, seed);
        fc_fill_indices(&c, io, seed, -1);
        fc_count k;
        check_case(&c, io, &k);
        /* gather, add, act: one kernel (the indices' reshape is a view) */
        cr_assert_eq(k.gather_programs, 1, "%s", c.what);
        cr_assert_eq(k.gathers, 0, "%s", c.what);
        cr_assert_eq(k.kernels, 1, "%s", c.what);
        ts_io_free(io);
        braid_graph_free(c.g);
    }
}

/* An out-of-range index is a run error naming the fused node, the gather
 * it absorbed and the index; the reference refuses the same indices; the
 * executor then runs good indices (the record was cleared). */
Test(fuse_gather, bad_index_is_a_run_error) {
    for (uint64_t seed = 1; seed <= 24; seed++) {
        fc_case c = fc_gather(seed);
        cr_assert_eq(braid_output(c.g, "y", c.y), BRAID_OK);
        ts_io *io = ts_io_new(c.g, seed);
        int64_t at = (int64_t)(seed * 7);
        int32_t v = fc_fill_indices(&c, io, seed, at);
        braid_plan *p = compile_cpu(c.g, true);
        braid_exec *e = NULL;
        cr_assert_eq(braid_exec_new(p, &e), BRAID_OK);
        braid_status s =
            braid_run(e, io->in, io->ninputs, io->out, io->noutputs);
        cr_assert_eq(s, BRAID_ERR_INVALID_ARGUMENT, "%s: %s", c.what,
                     braid_status_name(s));
        const char *m = braid_last_error();
        char want[96];
        snprintf(want, sizeof want, "index %d at position %lld of the indices",
                 (int)v, (long long)(at % c.nidx));
        cr_assert(strstr(m, "braid_run: node ") && strstr(m, "(fused") &&
                      strstr(m, "its gather (node ") && strstr(m, want) &&
                      strstr(m, "out of range"),
                  "%s: %s (expected \"%s\")", c.what, m, want);
        cr_assert_neq(braid_reference_run(c.g, io->in, io->ninputs, io->ref,
                                          io->noutputs),
                      BRAID_OK, "%s", c.what);
        fc_fill_indices(&c, io, seed, -1);
        cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                     BRAID_OK, "%s: %s", c.what, braid_last_error());
        braid_exec_free(e);
        braid_plan_free(p);
        ts_io_free(io);
        braid_graph_free(c.g);
    }
}

/* GPT-2's embedding: wte[ids] + wpe (broadcast over the batch), one
 * kernel; the message names the gather by its name. */
Test(fuse_gather, embedding_names_the_gather) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor wte = braid_input(g, "wte", BRAID_F32, 2, DIMS(50, 16));
    braid_tensor ids = braid_input(g, "i", BRAID_I32, 2, DIMS(3, 8));
    braid_tensor wpe = braid_input(g, "wpe", BRAID_F32, 2, DIMS(8, 16));
    braid_tensor emb = braid_gather(g, wte, ids, 0);
    braid_set_name(g, emb, "tok_emb");
    braid_output(g, "y", braid_add(g, emb, wpe));
    fc_case c = {.g = g, .bound = 50, .nidx = 24, .dt = BRAID_F32};
    snprintf(c.what, sizeof c.what, "embedding");
    ts_io *io = ts_io_new(g, 3);
    fc_fill_indices(&c, io, 3, -1);
    fc_count k;
    check_case(&c, io, &k);
    cr_assert_eq(k.gather_programs, 1);
    cr_assert_eq(k.kernels, 1);
    fc_fill_indices(&c, io, 4, 5);
    braid_plan *p = compile_cpu(g, true);
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK);
    cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), "'tok_emb'"), "%s",
              braid_last_error());
    braid_exec_free(e);
    braid_plan_free(p);
    ts_io_free(io);
    braid_graph_free(g);
}

/* What stays out: data computed elementwise (read at gathered rows, never
 * a member, even when it has the group's size), i64 indices, a gather
 * smaller than the group (broadcast into it: it would be recomputed). */
Test(fuse_gather, what_stays_outside) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor a = braid_input(g, "a", BRAID_F32, 2, DIMS(6, 4));
    braid_tensor i = braid_input(g, "i", BRAID_I32, 1, DIMS(6));
    braid_tensor y = braid_exp(g, braid_tanh(g, a)); /* [6, 4] like y */
    braid_output(g, "y", braid_neg(g, braid_gather(g, y, i, 0)));
    fc_case c = {.g = g, .bound = 6, .nidx = 6, .dt = BRAID_F32};
    snprintf(c.what, sizeof c.what, "data of the group's size");
    ts_io *io = ts_io_new(g, 1);
    fc_fill_indices(&c, io, 1, -1);
    fc_count k;
    check_case(&c, io, &k);
    cr_assert_eq(k.gather_programs, 1);
    cr_assert_eq(k.kernels, 2); /* exp(tanh a), then gather + neg */
    ts_io_free(io);
    braid_graph_free(g);

    g = braid_graph_new(NULL);
    a = braid_input(g, "a", BRAID_F32, 2, DIMS(6, 4));
    i = braid_input(g, "i", BRAID_I64, 1, DIMS(3));
    braid_tensor z = braid_input(g, "z", BRAID_F32, 2, DIMS(3, 4));
    braid_output(g, "y", braid_add(g, braid_gather(g, a, i, 0), z));
    braid_output(g, "w", braid_neg(g, braid_gather(
                                          g, a, braid_cast(g, i, BRAID_I32),
                                          0)));
    braid_plan *p = compile_cpu(g, true);
    k = fc_count_plan(p);
    cr_assert_eq(k.gathers, 1, "the i64 gather stays a node");
    cr_assert_eq(k.gather_programs, 1, "the one with i32 indices fuses");
    braid_plan_free(p);
    braid_graph_free(g);

    g = braid_graph_new(NULL);
    a = braid_input(g, "a", BRAID_F32, 2, DIMS(6, 4));
    i = braid_input(g, "i", BRAID_I32, 1, DIMS(3));
    z = braid_input(g, "z", BRAID_F32, 3, DIMS(2, 3, 4));
    braid_output(g, "y", braid_tanh(g, braid_add(g, braid_gather(g, a, i, 0),
                                                 z)));
    p = compile_cpu(g, true);
    k = fc_count_plan(p);
    cr_assert_eq(k.gathers, 1, "a broadcast gather stays a node");
    cr_assert_eq(k.gather_programs, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- elementwise → pool --------------------------------------------------- */

Test(fuse_pool, random_cases_fuse_and_match) {
    for (uint64_t seed = 1; seed <= 120; seed++) {
        fc_case c = fc_pool(seed, seed % 3 == 0);
        cr_assert(braid_tensor_valid(c.y), "%s: %s", c.what,
                  braid_graph_error(c.g));
        cr_assert_eq(braid_output(c.g, "y", c.y), BRAID_OK);
        ts_io *io = ts_io_new(c.g, seed);
        if (seed % 2) fc_pool_ties(&c, io, seed);
        fc_count k;
        check_case(&c, io, &k);
        cr_assert_eq(k.pool_programs, 1, "%s", c.what);
        cr_assert_eq(k.pools, 0, "%s", c.what);
        cr_assert_eq(k.kernels, 1, "%s", c.what);
        ts_io_free(io);
        braid_graph_free(c.g);
    }
}

/* ResNet's stem at a batch of 2 (f32 [2, 64, 112, 112], 3 x 3, stride 2,
 * pad 1): several batches of planes through the scratch buffer. */
Test(fuse_pool, resnet_stem) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 4, DIMS(2, 64, 112, 112));
    braid_pool_params pp = {.kernel = {3, 3},
                            .strides = {2, 2},
                            .pads_lo = {1, 1},
                            .pads_hi = {1, 1}};
    braid_output(g, "y", braid_max_pool(g, braid_relu(g, x), &pp));
    fc_case c = {.g = g, .dt = BRAID_F32};
    snprintf(c.what, sizeof c.what, "resnet stem");
    ts_io *io = ts_io_new(g, 11);
    fc_count k;
    check_case(&c, io, &k);
    cr_assert_eq(k.pool_programs, 1);
    cr_assert_eq(k.kernels, 1);
    ts_io_free(io);
    braid_graph_free(g);
}

/* An activation with another user (here: an output) is not absorbed. */
Test(fuse_pool, shared_prologue_stays) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 4, DIMS(1, 2, 6, 6));
    braid_tensor r = braid_relu(g, x);
    braid_pool_params pp = {.kernel = {2, 2}, .strides = {2, 2}};
    braid_output(g, "y", braid_avg_pool(g, r, &pp));
    braid_output(g, "r", r);
    braid_plan *p = compile_cpu(g, true);
    fc_count k = fc_count_plan(p);
    cr_assert_eq(k.pools, 1);
    cr_assert_eq(k.pool_programs, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* ---- plan files, DOT, dumps, the checker ---------------------------------- */

static fc_case both_case(void) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor wte = braid_input(g, "wte", BRAID_F32, 2, DIMS(20, 12));
    braid_tensor i = braid_input(g, "i", BRAID_I32, 2, DIMS(2, 3));
    braid_tensor x = braid_input(g, "x", BRAID_F32, 4, DIMS(1, 3, 7, 7));
    braid_pool_params pp = {.kernel = {3, 3},
                            .strides = {2, 2},
                            .pads_lo = {1, 0},
                            .pads_hi = {1, 1},
                            .ceil_mode = true};
    braid_output(g, "e", braid_sigmoid(g, braid_gather(g, wte, i, 0)));
    braid_output(g, "y", braid_max_pool(g, braid_relu(g, x), &pp));
    fc_case c = {.g = g, .bound = 20, .nidx = 6, .dt = BRAID_F32};
    snprintf(c.what, sizeof c.what, "gather and pool");
    return c;
}

Test(fuse_gather_pool, plan_file_round_trip) {
    fc_case c = both_case();
    ts_io *a = ts_io_new(c.g, 5), *b = ts_io_new(c.g, 5);
    fc_fill_indices(&c, a, 5, -1);
    fc_fill_indices(&c, b, 5, -1);
    braid_plan *p = pf_compile(c.g, "cpu");
    fc_count k = fc_count_plan(p);
    cr_assert_eq(k.gather_programs, 1);
    cr_assert_eq(k.pool_programs, 1);
    size_t size = 0;
    unsigned char *data = pf_save(p, &size);
    braid_plan *q = pf_load(data, size);
    k = fc_count_plan(q);
    cr_assert_eq(k.gather_programs, 1);
    cr_assert_eq(k.pool_programs, 1);
    cr_assert_eq(pf_run(p, a, false, 0), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(pf_run(q, b, false, 0), BRAID_OK, "%s", braid_last_error());
    cr_assert(pf_same_outputs(a, b));
    free(data);
    braid_plan_free(p);
    braid_plan_free(q);
    ts_io_free(a);
    ts_io_free(b);
    braid_graph_free(c.g);
}

Test(fuse_gather_pool, dot_and_dump) {
    fc_case c = both_case();
    braid_plan *p = pf_compile(c.g, "cpu");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_eq(braid_plan_to_dot(p, f), BRAID_OK, "%s", braid_last_error());
    fclose(f);
    cr_assert(strstr(buf, "gather in") && strstr(buf, "axis=0"), "%s", buf);
    cr_assert(strstr(buf, "max_pool t") && strstr(buf, "kernel=[3,3]") &&
                  strstr(buf, "strides=[2,2]") && strstr(buf, "ceil_mode"),
              "%s", buf);
    free(buf);
    char *dump = pf_text(p, true);
    cr_assert(strstr(dump, "elementwise{gather,sigmoid}"), "%s", dump);
    cr_assert(strstr(dump, "pool{relu,max_pool}"), "%s", dump);
    free(dump);
    braid_plan_free(p);
    braid_graph_free(c.g);
}

/* The checker refuses a gather outside an elementwise program, a gather
 * whose data cannot give the space, and a pool whose window does not give
 * the node's shape. */
Test(fuse_gather_pool, checker_refuses) {
    fc_case c = both_case();
    braid_plan *p = pf_compile(c.g, "cpu");
    char why[256];
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        if (p->res.graph->nodes[id].op != BRAID_OP_FUSED) continue;
        bp_program *pr = &p->res.programs[p->res.info[id].program];
        cr_assert(bp_program_check(pr, p->res.graph, id, why, sizeof why),
                  "%s", why);
        if (pr->kind == BP_PROGRAM_POOL) {
            pr->window[1][0]++; /* stride 2 → 3: another output shape */
            cr_assert(!bp_program_check(pr, p->res.graph, id, why, sizeof why));
            cr_assert(strstr(why, "iteration space"), "%s", why);
            pr->window[1][0]--;
            pr->window[0][2] = 1; /* a third spatial axis in a 2-D pool */
            cr_assert(!bp_program_check(pr, p->res.graph, id, why, sizeof why));
            cr_assert(strstr(why, "window[0][2]"), "%s", why);
            pr->window[0][2] = 0;
            continue;
        }
        uint32_t gi = 0;
        while (pr->instr[gi].op != BP_INSTR_GATHER) gi++;
        pr->instr[gi].axis = 1;
        cr_assert(!bp_program_check(pr, p->res.graph, id, why, sizeof why));
        cr_assert(strstr(why, "along axis 1"), "%s", why);
        pr->instr[gi].axis = 0;
        pr->kind = BP_PROGRAM_MATMUL;
        cr_assert(!bp_program_check(pr, p->res.graph, id, why, sizeof why));
        pr->kind = BP_PROGRAM_ELEMENTWISE;
        cr_assert(bp_program_check(pr, p->res.graph, id, why, sizeof why),
                  "%s", why);
    }
    braid_plan_free(p);
    braid_graph_free(c.g);
}

/* ---- the GPU kernels compile (NVRTC, no GPU needed) ------------------------ */

#ifdef BRAID_HAVE_CUDA
#include "codegen/codegen.h"

static void compile_for_gpu(fc_case *c, int *gathers, int *pools) {
    for (uint32_t id = 0; id < braid_graph_node_count(c->g); id++)
        if (c->g->nodes[id].op != BRAID_OP_INPUT)
            braid_set_device(c->g, (braid_tensor){id}, "cuda:0");
    braid_plan *p = pf_compile(c->g, "cpu,cuda:0");
    bc_source src;
    cr_assert_eq(bc_plan_source(p, &src), BRAID_OK, "%s: %s", c->what,
                 braid_last_error());
    for (uint32_t k = 0; k < src.nkernels; k++) {
        const bc_kernel *bk = &src.kernels[k];
        const bg_node *n = &p->res.graph->nodes[bk->node];
        if (n->op != BRAID_OP_FUSED) continue;
        const bp_program *pr = &p->res.programs[p->res.info[bk->node].program];
        if (bp_program_has_gather(pr)) {
            (*gathers)++;
            cr_assert(bk->run_check, "%s", c->what);
            cr_assert_eq(bk->nparams, 2 + n->ninputs, "%s", c->what);
        }
        if (pr->kind == BP_PROGRAM_POOL) {
            (*pools)++;
            cr_assert(!bk->run_check, "%s", c->what);
        }
    }
    bc_binary bin;
    char err[16384];
    braid_status s = bc_compile(src.text, "kernel.cu", 90, &bin, err, sizeof err);
    cr_assert_eq(s, BRAID_OK, "%s: %s", c->what, err);
    bc_binary_free(&bin);
    bc_source_free(&src);
    braid_plan_free(p);
}

Test(fuse_gather_pool, kernels_compile_for_sm90, .timeout = 600) {
    setenv("BRAID_CACHE_DIR", "", 1);
    int gathers = 0, pools = 0;
    for (uint64_t seed = 1; seed <= 16; seed++) {
        fc_case c = fc_gather(seed);
        cr_assert_eq(braid_output(c.g, "y", c.y), BRAID_OK);
        compile_for_gpu(&c, &gathers, &pools);
        braid_graph_free(c.g);
        c = fc_pool(seed, seed % 3 == 0);
        cr_assert_eq(braid_output(c.g, "y", c.y), BRAID_OK);
        compile_for_gpu(&c, &gathers, &pools);
        braid_graph_free(c.g);
    }
    cr_assert_eq(gathers, 16);
    cr_assert_eq(pools, 16);
}
#endif
