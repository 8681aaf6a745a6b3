/* tests/test_cuda_errors.c — what the CUDA backend says when it cannot
 * run, and the parts that need no GPU: a GPU plan on a machine without one
 * (or a build without CUDA) is a clear BRAID_ERR_DEVICE naming the node;
 * a plan naming a GPU the machine lacks says how many there are; a device
 * arena too big for the GPU is BRAID_ERR_OUT_OF_MEMORY naming the arena
 * and its size; plans placed on the cpu and emulated executors need no
 * GPU; the inspection calls are NULL-safe; the executor log records the
 * backend's decisions. The tests that need a GPU skip without one, the
 * others run everywhere (CI). */
#include "tests/test_cuda_common.h"

#include "runtime/runtime.h"

/* y = exp(x) + 1 with every op hinted to device. */
static braid_graph *small_graph(const char *device) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, TC_DIMS(3, 5));
    braid_tensor y =
        braid_add(g, braid_exp(g, x), braid_fill(g, BRAID_F32, 0, NULL, 1.0));
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    tc_hint_all(g, device);
    return g;
}

static braid_plan *compile_for(const braid_graph *g, const char *devices) {
    braid_compile_options o = tc_options();
    o.devices = devices;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    return p;
}

Test(cuda_errors, gpu_plan_without_a_gpu_is_a_clear_error) {
    if (braid_cuda_device_count() > 0)
        cr_skip_test("a CUDA device is present (%s)", braid_cuda_status());
    braid_graph *g = small_graph("cuda:0");
    braid_plan *p = compile_for(g, "cpu,cuda:0");
    braid_exec *e = (braid_exec *)1;
    braid_status s = braid_exec_new(p, &e);
    const char *msg = braid_last_error();
    cr_assert_eq(s, BRAID_ERR_DEVICE, "%s: %s", braid_status_name(s), msg);
    cr_assert_null(e);
    cr_assert(strstr(msg, "cuda:0"), "no device named: %s", msg);
    cr_assert(strstr(msg, braid_cuda_status()), "no reason given: %s", msg);
    cr_assert(strstr(msg, "compile for \"cpu\""), "no way out given: %s", msg);
    cr_log_info("%s", msg);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_errors, plan_naming_a_missing_gpu) {
    TC_REQUIRE_GPU();
    int n = braid_cuda_device_count();
    if (n > 7) cr_skip_test("this machine has %d GPUs", n);
    braid_graph *g = small_graph("cuda:7");
    braid_plan *p = compile_for(g, "cpu,cuda:7");
    braid_exec *e = NULL;
    braid_status s = braid_exec_new(p, &e);
    const char *msg = braid_last_error();
    char want[96];
    snprintf(want, sizeof want, "on cuda:7 (the first: %%");
    cr_assert_null(strstr(msg, "copy"), "no compiler-made node: %s", msg);
    cr_assert_eq(s, BRAID_ERR_DEVICE, "%s: %s", braid_status_name(s), msg);
    cr_assert(strstr(msg, want), "expected \"%s\" in: %s", want, msg);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_errors, device_arena_out_of_memory) {
    TC_REQUIRE_GPU();
    /* a 4 TiB tensor made and reduced on the GPU */
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor big = braid_random_uniform(g, BRAID_F32, 2,
                                            TC_DIMS(1 << 20, 1 << 20), 1, 0, 1);
    braid_tensor y = braid_sum(g, big, 0, NULL, false);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    tc_hint_all(g, "cuda:0");
    braid_plan *p = compile_for(g, "cpu,cuda:0");
    braid_exec *e = NULL;
    braid_status s = braid_exec_new(p, &e);
    const char *msg = braid_last_error();
    cr_assert_eq(s, BRAID_ERR_OUT_OF_MEMORY, "%s: %s", braid_status_name(s),
                 msg);
    cr_assert(strstr(msg, "arena"), "no arena named: %s", msg);
    cr_assert(strstr(msg, "cuda:0"), "no device named: %s", msg);
    cr_log_info("%s", msg);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_errors, cpu_placed_plan_needs_no_gpu) {
    braid_graph *g = small_graph("cpu");
    braid_plan *p = compile_for(g, "cpu,cuda:0");
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    cr_assert_null(br_exec_cuda(e), "a CPU plan got a CUDA backend");
    ts_io *io = ts_io_new(g, 1);
    cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK);
    char msg[256];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_errors, emulated_gpu_plan_needs_no_gpu) {
    braid_graph *g = small_graph("cuda:0");
    braid_plan *p = compile_for(g, "cpu,cuda:0");
    cr_assert(br_plan_uses_cuda(p));
    braid_exec *e = NULL;
    cr_assert_eq(br_exec_new_emulated(p, 3, &e), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_null(br_exec_cuda(e));
    ts_io *io = ts_io_new(g, 2);
    cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK);
    char msg[256];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    ts_io_free(io);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_errors, inspection_calls_are_null_safe) {
    cr_assert_str_eq(br_cuda_log(NULL), "");
    cr_assert_null(br_exec_cuda(NULL));
    cr_assert(!br_cuda_last_run_used_graph(NULL));
    br_cuda_set_graphs(NULL, false);
    br_cuda_free(NULL);
    cr_assert_null(br_cuda_arena(NULL, 0));
    cr_assert_null(br_cuda_home(NULL, 0));
    br_cuda_pinned_free(NULL);
    br_cuda_device_free(NULL);
    if (braid_cuda_device_count() == 0) {
        cr_assert_null(br_cuda_pinned_alloc(64));
        cr_assert_null(br_cuda_device_alloc(0, 64));
        cr_assert_neq(br_cuda_memcpy(NULL, NULL, 0), BRAID_OK);
    }
}

Test(cuda_errors, log_records_decisions) {
    TC_REQUIRE_GPU();
    braid_graph *g = small_graph("cuda:0");
    braid_plan *p = compile_for(g, "cpu,cuda:0");
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    const char *log = br_cuda_log(br_exec_cuda(e));
    cr_log_info("log:\n%s", log);
    cr_assert(strstr(log, "graph:"), "no graph decision in the log:\n%s", log);
    cr_assert(strstr(log, "kernels:"), "no kernel line in the log:\n%s", log);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}
