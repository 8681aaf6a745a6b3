/* bench/gpu_tiny.c — workload 7 of ANCHORS.md: a chain of 100 small
 * nodes on 1024 f32 (t = t + x or sin(t), alternately; fusion disabled so
 * each is its own kernel), x a constant on the GPU, the result (4 KiB)
 * back to the host. Host clock around braid_run, median of 50 after 3
 * (the warm-up captures the CUDA graph the executor replays), divided by
 * 100 nodes (the output copy counted against braid). Target ≤ 2.3 µs per
 * node. torch_anchors.py's CUDA-graph figure counts one `r * a + b` (two
 * kernels) per op.
 *
 * Prints "RESULT tiny100 braid_us=<per node> replayed=<0|1> …". */
#define _POSIX_C_SOURCE 200809L
#include "bench/graphs.h"

#ifdef BRAID_HAVE_CUDA
#include "runtime/cuda/cuda.h"
#endif

int main(void) {
    bn_prog = "gpu_tiny";
    bn_require_gpu("tiny100");
    float x[1024], y[1024];
    bn_fill(x, 1024, 5, -1, 1);
    braid_graph *g = bg_bench_tiny(x);
    bn_graph_ok(g, "tiny100");
    braid_compile_options o = bn_options("cpu,cuda:0");
    o.disable_passes = BRAID_PASS_FUSE;
    braid_plan *p = bn_compile(g, &o);
    braid_exec *e = NULL;
    BN_OK(braid_exec_new(p, &e));
    braid_output_binding ob = {"y", y, sizeof y};
    double first = 0;
    double t = bn_time_runs(e, NULL, 0, &ob, 1, 3, 50, &first);
    int replayed = -1;
#ifdef BRAID_HAVE_CUDA
    replayed = br_cuda_last_run_used_graph(br_exec_cuda(e));
#endif
    bool ok = true;
    for (int i = 0; i < 1024; i++)
        ok &= isfinite(y[i]) && fabsf(y[i]) <= 3.0f; /* |sin| ≤ 1, + x */
    printf("100-node chain: %.2f us per node (run %.1f us, first run %.1f "
           "ms), CUDA graph replayed: %d%s\n",
           t * 1e6 / 100, t * 1e6, first * 1e3, replayed,
           ok ? "" : " — BAD VALUES");
    printf("RESULT tiny100 braid_us=%.3f run_us=%.2f replayed=%d check=%s\n",
           t * 1e6 / 100, t * 1e6, replayed, ok ? "ok" : "FAIL");
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    return ok ? 0 : 1;
}
