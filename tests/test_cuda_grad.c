/* tests/test_cuda_grad.c — gradient graphs (braid_grad) compiled for a GPU:
 *   - every gradient case (tests/support/grad_cases.c: one per
 *     differentiable op and layer_norm, random shapes) hinted to cuda:0,
 *     on the emulated executor (GPU plan, host queues: runs without a GPU)
 *     and, with a GPU, on it; f32 and f64; against the reference;
 *   - an MLP's forward and backward (matmul, bias, gelu, softmax cross
 *     entropy; batch 256, width 512) on the GPU against the reference.
 * The GPU tests skip without a CUDA device.
 *
 * Tolerances: |x - r| ≤ tol·(1 + max|r|) per output; f64 1e-9, f32 2e-4
 * (cases) and 1e-3 (the MLP: sums of 512 products on TF32-free cuBLAS). */
#include "runtime/runtime.h"
#include "tests/support/grad_cases.h"
#include "tests/test_cuda_common.h"

/* Every node to cuda:0 but the members of collective groups, which need
 * one device each: placement puts them (on the cpu, with one GPU). */
static void hint_gpu(braid_graph *g) {
    tc_hint_all(g, "cuda:0");
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++)
        if (bg_op(g->nodes[id].op)->kind == BRAID_KIND_COLLECTIVE)
            braid_set_device(g, (braid_tensor){id}, NULL);
}

/* Runs case (kind, dt, seed) hinted to cuda:0 on the GPU, or emulated. */
static void gpu_case(int kind, braid_dtype dt, uint64_t seed, bool emulate) {
    ts_grad_case c;
    bool built = ts_grad_case_build(kind, dt, seed, &c);
    cr_assert(built, "%s", c.what);
    hint_gpu(c.g);
    ts_io *io = ts_grad_io(&c, seed);
    cr_assert_not_null(io);
    braid_compile_options o = tc_options();
    if (emulate) o.archs = "none";
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    braid_status s = braid_compile(c.g, &o, &p);
    if (s == BRAID_OK)
        s = emulate ? br_exec_new_emulated(p, seed, &e) : braid_exec_new(p, &e);
    if (s == BRAID_OK)
        s = braid_run(e, io->in, io->ninputs, io->out, io->noutputs);
    if (s == BRAID_OK)
        s = braid_reference_run(c.g, io->in, io->ninputs, io->ref,
                                io->noutputs);
    cr_assert_eq(s, BRAID_OK, "%s: %s", c.what, braid_last_error());
    char msg[600];
    bool ok =
        ts_grad_compare(io, dt == BRAID_F64 ? 1e-9 : 2e-4, msg, sizeof msg);
    if (!ok) tc_log_graph(c.g);
    cr_expect(ok, "%s%s: %s", c.what, emulate ? " (emulated)" : "", msg);
    braid_exec_free(e);
    braid_plan_free(p);
    ts_io_free(io);
    ts_grad_case_free(&c);
}

Test(cuda_grad, every_case_emulated, .timeout = 600) {
    for (int k = 0; k < ts_grad_case_kinds(); k++)
        for (uint64_t seed = 1; seed <= 2; seed++) {
            gpu_case(k, BRAID_F32, seed, true);
            gpu_case(k, BRAID_F64, seed + 50, true);
        }
}

/* One plan (one NVRTC module) per case: a seed per dtype keeps the suite
 * within tools/gpu-check.sh's 300 s; under compute-sanitizer, every
 * fourth kind. */
Test(cuda_grad, every_case_on_the_gpu, .timeout = 900) {
    TC_REQUIRE_GPU();
    int step = tc_under_sanitizer() ? 4 : 1;
    for (int k = 0; k < ts_grad_case_kinds(); k += step) {
        gpu_case(k, BRAID_F32, 1, false);
        gpu_case(k, BRAID_F64, 51, false);
    }
}

/* loss = mean over the batch of softmax cross entropy of
 * gelu(x·w1 + b1)·w2 + b2 against one-hot labels t. */
static braid_tensor mlp_loss(braid_graph *g, int64_t batch, int64_t in,
                             int64_t width, int64_t classes,
                             braid_tensor *params) {
    braid_dtype f = BRAID_F32;
    braid_tensor x = braid_input(g, "x", f, 2, TC_DIMS(batch, in));
    braid_tensor t = braid_input(g, "t", f, 2, TC_DIMS(batch, classes));
    params[0] = braid_input(g, "w1", f, 2, TC_DIMS(in, width));
    params[1] = braid_input(g, "b1", f, 1, TC_DIMS(width));
    params[2] = braid_input(g, "w2", f, 2, TC_DIMS(width, classes));
    params[3] = braid_input(g, "b2", f, 1, TC_DIMS(classes));
    braid_tensor h = braid_gelu(
        g, braid_add(g, braid_matmul(g, x, params[0], 0), params[1]));
    braid_tensor z = braid_add(g, braid_matmul(g, h, params[2], 0), params[3]);
    braid_tensor p = braid_softmax(g, z, -1);
    braid_tensor nll = braid_neg(g, braid_mul(g, t, braid_log(g, p)));
    int axis = 1;
    braid_tensor per = braid_sum(g, nll, 1, &axis, false);
    return braid_mean(g, per, 0, NULL, false);
}

Test(cuda_grad, mlp_backward_on_the_gpu, .timeout = 600) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor params[4], grads[4];
    braid_tensor loss = mlp_loss(g, 256, 64, 512, 10, params);
    cr_assert_eq(braid_grad(g, loss, 4, params, grads), BRAID_OK, "%s",
                 braid_graph_error(g));
    braid_output(g, "loss", loss);
    static const char *names[4] = {"gw1", "gb1", "gw2", "gb2"};
    for (int i = 0; i < 4; i++)
        braid_output(g, names[i], grads[i]);
    tc_hint_all(g, "cuda:0");
    ts_io *io = ts_io_new(g, 7);
    cr_assert_not_null(io);
    for (uint32_t i = 0; i < io->ninputs; i++) /* t: positive weights */
        ts_fill_input(io, i, BRAID_F32,
                      strcmp(io->in[i].name, "t") ? TS_RANGE(-0.5, 0.5)
                                                  : TS_RANGE(0, 1),
                      7);
    braid_compile_options o = tc_options();
    uint32_t gpu = 0;
    braid_status s = tc_run(g, &o, io, 2, &gpu);
    cr_assert_eq(s, BRAID_OK, "%s", braid_last_error());
    cr_expect_gt(gpu, 0);
    char msg[600];
    cr_expect(ts_grad_compare(io, 1e-3, msg, sizeof msg), "%s", msg);
    ts_io_free(io);
    braid_graph_free(g);
}
