/* tests/test_cuda_fuse_gather_pool.c — on a GPU: a gather inside a fused
 * elementwise kernel and a pool kernel evaluating its prologue at every
 * tap (docs/fusion.md, rules 12 and 13; codegen/expr.c, codegen/pool.c),
 * against the reference evaluator:
 *
 *   - random gather → add → activation cases (tests/fuse_cases.h: every
 *     float dtype and i32, data of rank 1-3, every axis, indices of rank
 *     0-2, negative indices), each plan checked to hold a fused GATHER on
 *     cuda:0 and no gather node;
 *   - an out-of-range index fails braid_run naming the fused node, its
 *     gather and the index (the device record, never an access outside
 *     the data), then good indices run on the same executor;
 *   - GPT-2 small's embedding (wte 50257 x 768, 8192 ids) + wpe;
 *   - random relu → pool cases (1-D to 3-D, pads, dilations, ceil_mode,
 *     count_include_pad, windows entirely in the padding, ties, -0.0 and
 *     NaN), each a POOL program on cuda:0, and ResNet-18's stem
 *     (relu → 3 x 3 / 2 max pool of [8, 64, 112, 112]).
 * Skipped without a CUDA device. Tolerances: ts_tolerance per dtype (pools
 * and gathers are exact; tanh/sigmoid differ by the GPU's libm). */
#include "tests/fuse_cases.h"
#include "tests/test_cuda_common.h"

#define DIMS(...) ((const int64_t[]){__VA_ARGS__})

/* Runs c hinted to cuda:0 on io (twice on one executor); the plan must
 * hold `gathers` fused GATHER programs and `pools` POOL programs on the
 * GPU and no gather or pool node. Returns the last run's status; compares
 * with the reference on success. */
static braid_status gpu_case(fc_case *c, ts_io *io, int gathers, int pools) {
    tc_hint_all(c->g, "cuda:0");
    braid_compile_options o = tc_options();
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(c->g, &o, &p), BRAID_OK, "%s: %s", c->what,
                 braid_last_error());
    fc_count k = fc_count_plan(p);
    cr_assert_eq(k.gather_programs, gathers, "%s", c->what);
    cr_assert_eq(k.pool_programs, pools, "%s", c->what);
    cr_assert_eq(k.gathers + k.pools, 0, "%s", c->what);
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++)
        if (p->res.graph->nodes[id].op == BRAID_OP_FUSED)
            cr_assert_eq(p->res.info[id].device.kind, BP_DEVICE_CUDA, "%s",
                         c->what);
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s: %s", c->what,
                 braid_last_error());
    braid_status s = BRAID_OK;
    for (int r = 0; r < 2; r++)
        s = braid_run(e, io->in, io->ninputs, io->out, io->noutputs);
    braid_exec_free(e);
    braid_plan_free(p);
    if (s != BRAID_OK) return s;
    cr_assert_eq(
        braid_reference_run(c->g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s: %s", c->what, braid_last_error());
    char msg[600];
    bool same = ts_io_compare(io, msg, sizeof msg);
    if (!same) tc_log_graph(c->g);
    cr_assert(same, "%s: %s", c->what, msg);
    return s;
}

Test(cuda_fuse_gather, random_cases) {
    TC_REQUIRE_GPU();
    for (uint64_t seed = 1; seed <= 60; seed++) {
        fc_case c = fc_gather(seed);
        cr_assert_eq(braid_output(c.g, "y", c.y), BRAID_OK);
        ts_io *io = ts_io_new(c.g, seed);
        fc_fill_indices(&c, io, seed, -1);
        cr_assert_eq(gpu_case(&c, io, 1, 0), BRAID_OK, "%s: %s", c.what,
                     braid_last_error());
        ts_io_free(io);
        braid_graph_free(c.g);
    }
}

Test(cuda_fuse_gather, bad_index_is_a_run_error) {
    TC_REQUIRE_GPU();
    for (uint64_t seed = 1; seed <= 16; seed++) {
        fc_case c = fc_gather(seed);
        cr_assert_eq(braid_output(c.g, "y", c.y), BRAID_OK);
        ts_io *io = ts_io_new(c.g, seed);
        int64_t at = (int64_t)(seed * 5);
        int32_t v = fc_fill_indices(&c, io, seed, at);
        braid_status s = gpu_case(&c, io, 1, 0);
        cr_assert_eq(s, BRAID_ERR_INVALID_ARGUMENT, "%s: %s", c.what,
                     braid_status_name(s));
        const char *m = braid_last_error();
        char want[96];
        snprintf(want, sizeof want, "index %d at position %lld of the indices",
                 (int)v, (long long)(at % c.nidx));
        cr_assert(strstr(m, "(fused") && strstr(m, "its gather (node ") &&
                      strstr(m, want),
                  "%s: %s (expected \"%s\")", c.what, m, want);
        fc_fill_indices(&c, io, seed, -1);
        cr_assert_eq(gpu_case(&c, io, 1, 0), BRAID_OK, "%s: %s", c.what,
                     braid_last_error());
        ts_io_free(io);
        braid_graph_free(c.g);
    }
}

/* GPT-2 small: wte[ids] + wpe, [8, 1024, 768], one kernel. */
Test(cuda_fuse_gather, gpt2_embedding, .timeout = 300) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor wte = braid_input(g, "wte", BRAID_F32, 2, DIMS(50257, 768));
    braid_tensor ids = braid_input(g, "i", BRAID_I32, 2, DIMS(8, 1024));
    braid_tensor wpe = braid_input(g, "wpe", BRAID_F32, 2, DIMS(1024, 768));
    cr_assert_eq(braid_output(g, "y", braid_add(g, braid_gather(g, wte, ids, 0),
                                                wpe)),
                 BRAID_OK);
    fc_case c = {.g = g, .bound = 50257, .nidx = 8192, .dt = BRAID_F32};
    snprintf(c.what, sizeof c.what, "gpt2 embedding");
    ts_io *io = ts_io_new(g, 2);
    fc_fill_indices(&c, io, 2, -1);
    cr_assert_eq(gpu_case(&c, io, 1, 0), BRAID_OK, "%s", braid_last_error());
    ts_io_free(io);
    braid_graph_free(g);
}

Test(cuda_fuse_pool, random_cases) {
    TC_REQUIRE_GPU();
    for (uint64_t seed = 1; seed <= 90; seed++) {
        fc_case c = fc_pool(seed, seed % 3 == 0);
        cr_assert(braid_tensor_valid(c.y), "%s: %s", c.what,
                  braid_graph_error(c.g));
        cr_assert_eq(braid_output(c.g, "y", c.y), BRAID_OK);
        ts_io *io = ts_io_new(c.g, seed);
        if (seed % 2) fc_pool_ties(&c, io, seed);
        cr_assert_eq(gpu_case(&c, io, 0, 1), BRAID_OK, "%s: %s", c.what,
                     braid_last_error());
        ts_io_free(io);
        braid_graph_free(c.g);
    }
}

Test(cuda_fuse_pool, resnet_stem, .timeout = 300) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 4, DIMS(8, 64, 112, 112));
    braid_pool_params pp = {.kernel = {3, 3},
                            .strides = {2, 2},
                            .pads_lo = {1, 1},
                            .pads_hi = {1, 1}};
    cr_assert_eq(braid_output(g, "y", braid_max_pool(g, braid_relu(g, x), &pp)),
                 BRAID_OK);
    fc_case c = {.g = g, .dt = BRAID_F32};
    snprintf(c.what, sizeof c.what, "resnet stem");
    ts_io *io = ts_io_new(g, 4);
    cr_assert_eq(gpu_case(&c, io, 0, 1), BRAID_OK, "%s", braid_last_error());
    ts_io_free(io);
    braid_graph_free(g);
}
