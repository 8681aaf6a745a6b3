/* tests/test_cuda_pool.c — the process's pool of CUDA resources
 * (runtime/cuda/cuda_pool.c): an executor gives its streams, events,
 * cuBLAS / cuBLASLt handles and pinned staging back when freed, the next
 * executor takes them instead of creating new ones, executors alive at
 * once share the loaded module, and results stay right with reused
 * resources. Needs a GPU (or tests/cuda_mock); skips
 * otherwise. */
#define _POSIX_C_SOURCE 200809L

#include "tests/test_cuda_common.h"

/* y = relu(x @ w + b) on cuda:0, x from (pageable) host memory: a compute
 * stream with a cuBLAS handle, copy streams with staging, events. */
static braid_graph *mlp_layer(void) {
    braid_graph *g = braid_graph_new(NULL);
    cr_assert(g);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, TC_DIMS(64, 96));
    braid_tensor w = braid_input(g, "w", BRAID_F32, 2, TC_DIMS(96, 80));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 1, TC_DIMS(80));
    braid_tensor y = braid_relu(g, braid_add(g, braid_matmul(g, x, w, 0), b));
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    tc_hint_all(g, "cuda:0");
    return g;
}

static void run_and_check(braid_exec *e, const braid_graph *g, uint64_t seed) {
    ts_io *io = ts_io_new(g, seed);
    cr_assert(io);
    cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s", braid_last_error());
    char msg[256];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    ts_io_free(io);
}

static uint64_t total(const uint64_t *per_kind) {
    uint64_t n = 0;
    for (int k = 0; k < BR_RES_KINDS; k++)
        n += per_kind[k];
    return n;
}

Test(cuda_pool, freed_executor_resources_are_reused) {
    TC_REQUIRE_GPU();
    braid_cuda_release_cached(); /* start from an empty pool */
    braid_graph *g = mlp_layer();
    braid_compile_options o = tc_options();
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());

    br_res_stats s0, s1, s2, s3, s4;
    br_cuda_res_stats(&s0);
    cr_assert_eq(s0.pooled, 0);
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    br_cuda_res_stats(&s1);
    uint64_t made = total(s1.created) - total(s0.created);
    cr_assert_gt(s1.created[BR_RES_STREAM], s0.created[BR_RES_STREAM]);
    cr_assert_gt(s1.created[BR_RES_BLAS], s0.created[BR_RES_BLAS]);
    cr_assert_gt(s1.created[BR_RES_EVENT], s0.created[BR_RES_EVENT]);
    cr_assert_gt(s1.created[BR_RES_PINNED], s0.created[BR_RES_PINNED],
                 "pageable inputs: the copy streams stage");
    run_and_check(e, g, 1);
    braid_exec_free(e);

    br_cuda_res_stats(&s2); /* everything it made came back */
    cr_assert_eq(total(s2.returned) - total(s1.returned), made);
    cr_assert_eq(s2.pooled, made);

    e = NULL; /* the second executor creates nothing */
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    br_cuda_res_stats(&s3);
    cr_assert_eq(total(s3.created), total(s2.created));
    cr_assert_eq(total(s3.reused) - total(s2.reused), made);
    cr_assert_eq(s3.pooled, 0);
    run_and_check(e, g, 2);
    run_and_check(e, g, 3);

    /* alive at once: the pool is empty, but the loaded module is shared */
    uint64_t modules = s1.created[BR_RES_MODULE] - s0.created[BR_RES_MODULE];
    cr_assert_eq(modules, 1, "the epilogue's module");
    braid_exec *e2 = NULL;
    cr_assert_eq(braid_exec_new(p, &e2), BRAID_OK, "%s", braid_last_error());
    br_cuda_res_stats(&s4);
    cr_assert_eq(total(s4.created) - total(s3.created), made - modules);
    cr_assert_eq(s4.created[BR_RES_MODULE], s3.created[BR_RES_MODULE]);
    cr_assert_eq(s4.reused[BR_RES_MODULE] - s3.reused[BR_RES_MODULE], modules);
    run_and_check(e2, g, 4);
    braid_exec_free(e2);
    braid_exec_free(e);

    br_res_stats s5;
    br_cuda_res_stats(&s5);
    /* e's second run captured its GPU part into a CUDA graph, so its
       events were destroyed rather than pooled (see the next test) */
    uint64_t events = s1.created[BR_RES_EVENT] - s0.created[BR_RES_EVENT];
    cr_assert_eq(s5.pooled, 2 * made - modules - events);
    braid_cuda_release_cached();
    br_cuda_res_stats(&s5);
    cr_assert_eq(s5.pooled, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* An executor that captured its GPU part into a CUDA graph recorded its
 * events inside the capture; synchronising on such an event fails ("invalid
 * argument"), so those events are destroyed, not pooled, and the next
 * executor makes fresh ones. Caught on an H100: every executor after one
 * that had replayed a graph failed its first staged copy. */
Test(cuda_pool, events_of_a_graph_replaying_executor_are_reusable) {
    TC_REQUIRE_GPU();
    braid_cuda_release_cached();
    braid_graph *g = mlp_layer();
    braid_compile_options o = tc_options();
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    for (uint64_t run = 0; run < 4; run++) /* captured on the second run */
        run_and_check(e, g, 10 + run);
    braid_exec_free(e);
    br_res_stats s;
    br_cuda_res_stats(&s);
    uint64_t made = s.created[BR_RES_EVENT], streams = s.reused[BR_RES_STREAM];
    e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    br_cuda_res_stats(&s);
    cr_assert_gt(s.created[BR_RES_EVENT], made, "captured events not reused");
    cr_assert_gt(s.reused[BR_RES_STREAM], streams, "streams still are");
    run_and_check(e, g, 20);
    run_and_check(e, g, 21);
    braid_exec_free(e);
    braid_cuda_release_cached();
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_pool, release_with_nothing_pooled_is_harmless) {
    braid_cuda_release_cached();
    braid_cuda_release_cached();
    br_res_stats s;
    br_cuda_res_stats(&s);
    cr_assert_eq(s.pooled, 0);
}
