/* bench/gpu_train_step.c — one training step of the fp32 MLP of gpu_mlp.c
 * (batch 8192, 4 × (4096 × 4096 matmul + bias + GELU)), forward, backward
 * (braid_grad) and AdamW, against torch.compile of the same step
 * (bench/train_step_torch.py, same run; issue 15).
 *
 * braid: x is a constant (on the GPU once per executor, as torch's tensor
 * sits on the device); the weights (normal, stddev 0.02), biases (zero)
 * and AdamW's moments and step counter are variables, updated in place on
 * the GPU every run; the loss mean(h²) is the one output (4 bytes back).
 * TF32 off. Host clock around braid_run, median of 10 after 3 (the first
 * reported apart). Also prints the plan's kernel count and whether any
 * assign copies. `--small` runs batch 64, width 256 on whatever devices
 * exist (a smoke test without a GPU).
 *
 * Prints "RESULT train_step braid_ms=… first_ms=… kernels=… copies=…". */
#define _POSIX_C_SOURCE 200809L
#include "bench/graphs.h"

#include <string.h>

static braid_graph *train_step(int64_t batch, int64_t width, const float *x) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t xd[2] = {batch, width}, wd[2] = {width, width}, bd[1] = {width};
    braid_tensor h = bg_bench_const(g, 2, xd, x), p[2 * BG_MLP_LAYERS],
                 grads[2 * BG_MLP_LAYERS];
    for (int l = 0; l < BG_MLP_LAYERS; l++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", l);
        p[2 * l] = braid_variable(g, name, BRAID_F32, 2, wd,
                                  braid_init_normal(1 + l, 0, 0.02));
        snprintf(name, sizeof name, "b%d", l);
        p[2 * l + 1] =
            braid_variable(g, name, BRAID_F32, 1, bd, braid_init_fill(0));
        h = braid_gelu(
            g, braid_add(g, braid_matmul(g, h, p[2 * l], 0), p[2 * l + 1]));
    }
    braid_tensor loss = braid_mean(g, braid_square(g, h), 0, NULL, false);
    braid_output(g, "loss", loss);
    braid_grad(g, loss, 2 * BG_MLP_LAYERS, p, grads);
    braid_adamw_options o;
    braid_adamw_options_init(&o);
    braid_adamw(g, 2 * BG_MLP_LAYERS, p, grads, &o);
    return g;
}

int main(int argc, char **argv) {
    bn_prog = "gpu_train_step";
    bool small = argc > 1 && strcmp(argv[1], "--small") == 0;
    if (!small) bn_require_gpu("train_step");
    int64_t batch = small ? 64 : BG_MLP_BATCH,
            width = small ? 256 : BG_MLP_WIDTH;
    float *x = bn_malloc((size_t)(batch * width) * sizeof(float));
    bn_fill(x, (size_t)(batch * width), 31, -1.7f, 1.7f);
    braid_graph *g = train_step(batch, width, x);
    bn_graph_ok(g, "train_step");
    if (!small || braid_cuda_device_count() > 0) bn_hint_from(g, 0, "cuda:0");
    braid_compile_options o = bn_options(
        small && braid_cuda_device_count() == 0 ? "cpu" : "cpu,cuda:0");
    braid_plan *p = bn_compile(g, &o);
    int kernels, copies;
    bn_plan_counts(p, &kernels, &copies);
    braid_exec *e = NULL;
    BN_OK(braid_exec_new(p, &e));
    float loss = 0, loss0 = 0;
    braid_output_binding ob = {"loss", &loss0, sizeof loss0};
    BN_OK(braid_run(e, NULL, 0, &ob, 1));
    ob.data = &loss;
    double first = 0;
    double t = bn_time_runs(e, NULL, 0, &ob, 1, 2, 10, &first);
    bool ok = isfinite(loss) && loss < loss0;
    printf("train step fp32 %lld x 4 x %lld (forward, backward, AdamW): braid "
           "%.3f ms per step (first timed run %.1f ms); %d kernels, %d "
           "copying assigns; loss %g after 13 steps, %g after 1\n",
           (long long)batch, (long long)width, t * 1e3, first * 1e3, kernels,
           copies, loss, loss0);
    printf("RESULT train_step braid_ms=%.4f first_ms=%.2f kernels=%d "
           "copies=%d check=%s\n",
           t * 1e3, first * 1e3, kernels, copies, ok ? "ok" : "FAIL");
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    free(x);
    return ok ? 0 : 1;
}
