/* bench/gpu_train_gpt2.c — one training step of one GPT-2 small block
 * (batch 8, 512 tokens, width 768, 12 heads of 64, MLP 3072; fp32):
 * forward, backward (braid_grad w.r.t. the block's 12 parameter tensors)
 * and AdamW, against torch.compile of the same step
 * (bench/train_step_torch.py --only gpt2, same run; issue 15).
 *
 * The block is bench/gpt2_block.h's (tests/test_gpt2_block.c checks its
 * gradient by finite differences and the compiled step against the
 * reference evaluator). x is a constant (uniform in [-1.7, 1.7), on the
 * GPU once per executor, as torch's tensor sits on the device); the
 * parameters (GPT-2's init) and AdamW's moments and step counter are
 * variables updated in place every run; the loss mean(out²) is the one
 * output. TF32 off. Host clock around braid_run, median of 10 after 3 (the
 * very first run, which loads kernels, reported apart); the plan's kernel
 * count and copying assigns as in gpu_train_step, and the kernels by op.
 * `--small` runs batch 2, 16 tokens, width 64, 4 heads on whatever devices
 * exist (a smoke test without a GPU). With BENCH_PROFILE=1 in the
 * environment, five more runs are profiled (braid_exec_set_profiling) and
 * the per-node and per-op table printed last; BENCH_STREAMS=N compiles
 * for N compute streams per GPU (max_streams) instead of the default.
 *
 * Prints "RESULT train_gpt2 braid_ms=… first_ms=… kernels=… copies=…". */
#define _POSIX_C_SOURCE 200809L
#include "bench/gpt2_block.h"

#include <string.h>

#include "bench/bench.h"

int main(int argc, char **argv) {
    bn_prog = "gpu_train_gpt2";
    bool small = argc > 1 && strcmp(argv[1], "--small") == 0;
    if (!small) bn_require_gpu("train_gpt2");
    gpt2_dims d =
        small ? (gpt2_dims){2, 16, 64, 4} : (gpt2_dims){8, 512, 768, 12};
    int64_t xd[3] = {d.batch, d.seq, d.width}, n = d.batch * d.seq * d.width;
    float *x = bn_malloc((size_t)n * sizeof(float));
    bn_fill(x, (size_t)n, 31, -1.7f, 1.7f);
    braid_graph *g = braid_graph_new(NULL);
    bn_graph_ok(g, "train_gpt2");
    braid_tensor xt = braid_constant(g, BRAID_F32, 3, xd, x);
    gpt2_train_step(g, &d, xt, 1, NULL, NULL);
    bn_graph_ok(g, "train_gpt2");
    bool gpu = braid_cuda_device_count() > 0;
    if (gpu) bn_hint_from(g, 0, "cuda:0");
    braid_compile_options o = bn_options(gpu ? "cpu,cuda:0" : "cpu");
    const char *streams = getenv("BENCH_STREAMS"); /* compute streams */
    if (streams != NULL) o.max_streams = atoi(streams);
    double t0 = bn_now();
    braid_plan *p = bn_compile(g, &o);
    double compile_s = bn_now() - t0;
    int kernels, copies;
    bn_plan_counts(p, &kernels, &copies);
    char ops[512];
    bn_plan_ops(p, ops, sizeof ops);
    braid_exec *e = NULL;
    BN_OK(braid_exec_new(p, &e));
    float loss = 0, loss0 = 0;
    braid_output_binding ob = {"loss", &loss0, sizeof loss0};
    t0 = bn_now();
    BN_OK(braid_run(e, NULL, 0, &ob, 1)); /* the first run, timed apart */
    double first = bn_now() - t0;
    ob.data = &loss;
    double t = bn_time_runs(e, NULL, 0, &ob, 1, 2, 10, NULL);
    bool ok = isfinite(loss) && loss < loss0;
    const char *prof = getenv("BENCH_PROFILE");
    if (prof != NULL && strcmp(prof, "1") == 0) {
        float lp; /* the loss of these runs (the step count's stays) */
        braid_output_binding pb = {"loss", &lp, sizeof lp};
        BN_OK(braid_exec_set_profiling(e, true));
        for (int i = 0; i < 5; i++)
            BN_OK(braid_run(e, NULL, 0, &pb, 1));
        braid_profile *pr = NULL;
        BN_OK(braid_exec_profile(e, &pr));
        BN_OK(braid_profile_print(pr, stdout));
        braid_profile_free(pr);
    }
    printf("train step fp32 GPT-2 block, batch %lld x %lld tokens, width "
           "%lld, %lld heads (forward, backward, AdamW) on %s: braid %.3f ms "
           "per step (first timed run %.1f ms; compile %.2f s); %d kernels, "
           "%d copying assigns; loss %g after 13 steps, %g after 1\n",
           (long long)d.batch, (long long)d.seq, (long long)d.width,
           (long long)d.heads, gpu ? "cuda:0" : "cpu", t * 1e3, first * 1e3,
           compile_s, kernels, copies, loss, loss0);
    printf("kernels by op: %s\n", ops);
    printf("RESULT train_gpt2 braid_ms=%.4f first_ms=%.2f kernels=%d "
           "copies=%d check=%s\n",
           t * 1e3, first * 1e3, kernels, copies, ok ? "ok" : "FAIL");
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    free(x);
    return ok ? 0 : 1;
}
