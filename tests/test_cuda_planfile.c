/* tests/test_cuda_planfile.c — plan files on a real GPU: a plan compiled
 * for "cpu,cuda:0" (kernels built ahead of time for the GPU present),
 * saved and loaded, runs on the GPU to the same bits as the compiled plan,
 * and loading it takes no NVRTC compile. Skips without a GPU. */
#define _POSIX_C_SOURCE 200809L

#include "test_cuda_common.h"

#include "runtime/planfile/planfile.h"

#define GRAPHS BRAID_SOURCE_DIR "/examples/graphs"

static void run_plan(const braid_plan *p, ts_io *io) {
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    braid_exec_free(e);
}

static void gpu_round_trip(const char *file) {
    braid_graph *g = braid_graph_load(file, NULL);
    cr_assert(g && braid_graph_status(g) == BRAID_OK, "%s", file);
    tc_hint_all(g, "cuda:0");
    braid_compile_options o = tc_options();
    o.archs = NULL; /* those of the GPU present */
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    void *data = NULL;
    size_t n = 0;
    cr_assert_eq(braid_plan_save_memory(p, &data, &n), BRAID_OK);
    braid_plan *q = NULL;
    cr_assert_eq(braid_plan_load_memory(data, n, NULL, &q), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert(!br_planfile_was_replaced(q));
    ts_io *a = ts_io_new(g, 21), *b = ts_io_new(g, 21);
    run_plan(p, a);
    run_plan(q, b);
    for (uint32_t i = 0; i < a->noutputs; i++)
        cr_assert(memcmp(a->out[i].data, b->out[i].data, a->out[i].bytes) ==
                      0,
                  "%s: output %s differs after loading", file, a->out[i].name);
    cr_assert_eq(braid_reference_run(g, a->in, a->ninputs, a->ref,
                                     a->noutputs),
                 BRAID_OK);
    char msg[256];
    cr_assert(ts_io_compare(a, msg, sizeof msg), "%s: %s", file, msg);
    braid_compile_report r;
    cr_assert_eq(braid_plan_compile_report(q, &r), BRAID_OK);
    cr_log_info("%s: %zu bytes, loaded in %.3f ms, %u kernels for %u archs",
                file, n, r.total_ms, r.kernels, r.archs);
    ts_io_free(a);
    ts_io_free(b);
    free(data);
    braid_plan_free(p);
    braid_plan_free(q);
    braid_graph_free(g);
}

Test(cuda_planfile, example_graphs_round_trip_on_the_gpu, .timeout = 600) {
    TC_REQUIRE_GPU();
    gpu_round_trip(GRAPHS "/mlp.graph");
    gpu_round_trip(GRAPHS "/elementwise_chain.graph");
    gpu_round_trip(GRAPHS "/softmax_layernorm.graph");
    gpu_round_trip(GRAPHS "/attention_block.graph");
}
