/* tests/test_cuda_gather.c — gather and scatter kernels (codegen/index.c) on
 * a GPU against the reference evaluator, and the GPU run check:
 *
 *   - random cases (tests/index_cases.h: every form and reduction, every
 *     dtype, random shapes, axes and indices, negatives and duplicates
 *     included), alone and followed by elementwise work, each run twice on
 *     one executor (the scatter copy and apply launches, the record
 *     staying clear);
 *   - embedding-sized gathers (the 16-byte row path and, through a slice
 *     4 bytes off alignment, the element path);
 *   - an out-of-range index fails braid_run with BRAID_ERR_INVALID_ARGUMENT
 *     naming the node and the index (the device record read after the
 *     run), and the same executor then runs good indices correctly;
 *   - a GPU plan saved to a plan file, loaded and run gives the same bits.
 * Every plan is checked to run its gather/scatter node on cuda:0. Skipped
 * without a CUDA device. Tolerances: ts_tolerance per dtype; the kernels
 * round like the reference, so differences would be bugs. */
#include "tests/index_cases.h"
#include "tests/test_cuda_common.h"

#include "passes/passes.h"

/* Runs case c hinted to cuda:0 (indices from ix_fill_indices with bad)
 * `runs` times on one executor; on success compares with the reference.
 * Returns the status of the last run. */
static braid_status gpu_case(ix_case *c, uint64_t seed, int64_t bad, int runs,
                             bool *same) {
    cr_assert(braid_tensor_valid(c->y), "%s: %s", c->what,
              braid_graph_error(c->g));
    if (braid_graph_output_count(c->g) == 0)
        cr_assert_eq(braid_output(c->g, "y", c->y), BRAID_OK);
    tc_hint_all(c->g, "cuda:0");
    ts_io *io = ts_io_new(c->g, seed);
    cr_assert(io);
    ix_fill_indices(c, ix_binding(io, "i"), seed, bad);
    braid_compile_options o = tc_options();
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(c->g, &o, &p), BRAID_OK, "%s: %s", c->what,
                 braid_last_error());
    uint32_t on_gpu = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        braid_op op = p->res.graph->nodes[id].op;
        /* a gather feeding elementwise work runs inside their fused
         * kernel (docs/fusion.md, rule 12) */
        bool fused_gather =
            op == BRAID_OP_FUSED &&
            bp_program_has_gather(&p->res.programs[p->res.info[id].program]);
        if ((op == BRAID_OP_GATHER || op == BRAID_OP_SCATTER || fused_gather) &&
            p->res.info[id].device.kind == BP_DEVICE_CUDA)
            on_gpu++;
    }
    cr_assert_geq(on_gpu, 1, "%s: no gather/scatter on the GPU", c->what);
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s: %s", c->what,
                 braid_last_error());
    braid_status s = BRAID_OK;
    for (int r = 0; r < runs; r++)
        s = braid_run(e, io->in, io->ninputs, io->out, io->noutputs);
    if (s == BRAID_OK) {
        cr_assert_eq(braid_reference_run(c->g, io->in, io->ninputs, io->ref,
                                         io->noutputs),
                     BRAID_OK, "%s: %s", c->what, braid_last_error());
        char msg[600];
        *same = ts_io_compare(io, msg, sizeof msg);
        if (!*same) {
            tc_log_graph(c->g);
            cr_log_error("%s: %s", c->what, msg);
        }
    }
    braid_exec_free(e);
    braid_plan_free(p);
    ts_io_free(io);
    return s;
}

Test(cuda_gather, random_cases, .timeout = 600) {
    TC_REQUIRE_GPU();
    int n = tc_under_sanitizer() ? 40 : 400;
    for (uint64_t seed = 1; seed <= (uint64_t)n; seed++) {
        ix_case c = ix_random(seed, seed % 2 == 0);
        bool same = false;
        braid_status s = gpu_case(&c, seed, -1, 2, &same);
        cr_assert_eq(s, BRAID_OK, "%s: %s", c.what, braid_last_error());
        cr_assert(same, "%s: GPU differs from the reference", c.what);
        braid_graph_free(c.g);
    }
}

/* A 50257 x 768-like table (smaller under the sanitizer), by many ids: the
 * 16-byte row path; and the same through a slice starting one element in
 * (rows 4 bytes off 16-byte alignment): the element path. */
Test(cuda_gather, embedding_rows, .timeout = 300) {
    TC_REQUIRE_GPU();
    int64_t V = tc_under_sanitizer() ? 1000 : 50257, D = 768;
    int64_t N = tc_under_sanitizer() ? 64 : 8192;
    for (int off = 0; off < 2; off++) {
        braid_graph *g = braid_graph_new(NULL);
        braid_tensor w = braid_input(g, "x", BRAID_F32, 2, TC_DIMS(V, D + off));
        if (off)
            w = braid_slice(g, w, (const int64_t[]){0, 1},
                            (const int64_t[]){V, D + 1}, NULL);
        braid_tensor i = braid_input(g, "i", BRAID_I32, 1, &N);
        ix_case c = {g, braid_gather(g, w, i, 0), 0, ""};
        c.node = c.y.id;
        snprintf(c.what, sizeof c.what, "embedding %lldx%lld by %lld%s",
                 (long long)V, (long long)D, (long long)N,
                 off ? " (misaligned)" : "");
        bool same = false;
        braid_status s = gpu_case(&c, 5 + (uint64_t)off, -1, 2, &same);
        cr_assert_eq(s, BRAID_OK, "%s: %s", c.what, braid_last_error());
        cr_assert(same, "%s differs", c.what);
        braid_graph_free(g);
    }
}

Test(cuda_gather, out_of_range_is_a_run_error, .timeout = 600) {
    TC_REQUIRE_GPU();
    int n = tc_under_sanitizer() ? 10 : 60;
    for (uint64_t seed = 1; seed <= (uint64_t)n; seed++) {
        ix_case c = ix_random(seed, seed % 3 == 0);
        bool same = false;
        braid_status s = gpu_case(&c, seed, (int64_t)seed * 5, 1, &same);
        cr_assert_eq(s, BRAID_ERR_INVALID_ARGUMENT, "%s: %s", c.what,
                     braid_status_name(s));
        const char *m = braid_last_error();
        cr_assert(strstr(m, "braid_run: node ") && strstr(m, "out of range"),
                  "%s: %s", c.what, m);
        braid_graph_free(c.g);
    }
}

/* After a failed run the device record is cleared: the same executor runs
 * good indices, and right. */
Test(cuda_gather, executor_recovers_after_a_run_error) {
    TC_REQUIRE_GPU();
    braid_graph *g = ix_small_gather();
    tc_hint_all(g, "cuda:0");
    braid_compile_options o = tc_options();
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    ix_check_recovery(p, (const int32_t[]){-5, 1}, "index -5 at position 0");
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_gather, plan_file_round_trip) {
    TC_REQUIRE_GPU();
    for (uint64_t seed = 1; seed <= 12; seed++) {
        ix_case c = ix_random(seed, seed % 2 == 1);
        cr_assert_eq(braid_output(c.g, "y", c.y), BRAID_OK);
        tc_hint_all(c.g, "cuda:0");
        braid_compile_options o = tc_options();
        braid_plan *p = NULL, *q = NULL;
        cr_assert_eq(braid_compile(c.g, &o, &p), BRAID_OK, "%s",
                     braid_last_error());
        void *file = NULL;
        size_t size = 0;
        cr_assert_eq(braid_plan_save_memory(p, &file, &size), BRAID_OK);
        cr_assert_eq(braid_plan_load_memory(file, size, NULL, &q), BRAID_OK,
                     "%s", braid_last_error());
        ts_io *a = ts_io_new(c.g, seed), *b = ts_io_new(c.g, seed);
        ix_fill_indices(&c, ix_binding(a, "i"), seed, -1);
        ix_fill_indices(&c, ix_binding(b, "i"), seed, -1);
        braid_plan *plans[2] = {p, q};
        ts_io *ios[2] = {a, b};
        for (int k = 0; k < 2; k++) {
            braid_exec *e = NULL;
            cr_assert_eq(braid_exec_new(plans[k], &e), BRAID_OK, "%s",
                         braid_last_error());
            cr_assert_eq(braid_run(e, ios[k]->in, ios[k]->ninputs, ios[k]->out,
                                   ios[k]->noutputs),
                         BRAID_OK, "%s: %s", c.what, braid_last_error());
            braid_exec_free(e);
        }
        for (uint32_t k = 0; k < a->noutputs; k++)
            cr_assert(memcmp(a->out[k].data, b->out[k].data, a->out[k].bytes) ==
                          0,
                      "%s: the loaded plan differs", c.what);
        ts_io_free(a);
        ts_io_free(b);
        free(file);
        braid_plan_free(q);
        braid_plan_free(p);
        braid_graph_free(c.g);
    }
}
