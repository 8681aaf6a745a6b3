/* bench/gpu_seed001.c — workload 4 of ANCHORS.md (seed 001): 10 chained
 * 2000² f32 matmuls on the CPU and 10 chained 6000² f32 matmuls on the
 * GPU, in one plan, against each part alone (separate plans). Operands are
 * constants (the GPU's uploaded once per executor, like torch's tensor
 * already on the device), scaled so the chain neither grows nor shrinks;
 * each chain ends in a sum (a scalar out). Chained, not ten products of
 * the same operands: braid's CSE would merge identical products; the
 * FLOPs are those of torch_anchors.py's `[x @ x for _ in range(10)]`.
 * Host clock around braid_run, median of 3 after 1 (the first run of the
 * combined plan is reported apart). Target: both ≤ 1.10 × max(alone).
 *
 * Prints "RESULT seed001 braid_ms=<both> bound_ms=<max alone> cpu_ms=…
 * gpu_ms=…". */
#define _POSIX_C_SOURCE 200809L
#include "bench/graphs.h"

#define NC 2000
#define NG 6000
#define K 10

static float *scaled(int64_t n, uint64_t seed) {
    float *m = bn_malloc((size_t)(n * n) * sizeof(float));
    float s = (float)sqrt(3.0 / (double)n); /* variance 1/n per entry */
    bn_fill(m, (size_t)(n * n), seed, -s, s);
    return m;
}

/* ms of one run (median of 3 after 1) of the parts asked for. */
static double run(bool cpu, bool gpu, float *const m[4], double *first) {
    braid_graph *g = braid_graph_new(NULL);
    bn_graph_ok(g, "seed001");
    if (cpu)
        braid_output(g, "c", bg_bench_mm_chain(g, NC, K, m[0], m[1], "cpu"));
    if (gpu)
        braid_output(g, "g", bg_bench_mm_chain(g, NG, K, m[2], m[3], "cuda:0"));
    bn_graph_ok(g, "seed001");
    braid_compile_options o = bn_options(gpu ? "cpu,cuda:0" : "cpu");
    braid_plan *p = bn_compile(g, &o);
    braid_exec *e = NULL;
    BN_OK(braid_exec_new(p, &e));
    float c = 0, gs = 0;
    braid_output_binding ob[2] = {{"c", &c, sizeof c}, {"g", &gs, sizeof gs}};
    double t = bn_time_runs(e, NULL, 0, cpu ? ob : ob + 1,
                            (size_t)cpu + (size_t)gpu, 1, 3, first);
    if (!isfinite(c) || !isfinite(gs)) bn_die("sums not finite: %g %g", c, gs);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    return t * 1e3;
}

int main(void) {
    bn_prog = "gpu_seed001";
    bn_require_gpu("seed001");
    float *m[4] = {scaled(NC, 1), scaled(NC, 2), scaled(NG, 3), scaled(NG, 4)};
    double f = 0;
    double cpu = run(true, false, m, NULL);
    double gpu = run(false, true, m, NULL);
    double both = run(true, true, m, &f);
    double bound = cpu > gpu ? cpu : gpu;
    printf("seed001: cpu alone %.1f ms, gpu alone %.1f ms, both in one plan "
           "%.1f ms (first run %.1f ms): %.3f x max\n",
           cpu, gpu, both, f * 1e3, both / bound);
    printf("RESULT seed001 braid_ms=%.2f bound_ms=%.2f cpu_ms=%.2f "
           "gpu_ms=%.2f first_ms=%.2f\n",
           both, bound, cpu, gpu, f * 1e3);
    for (int i = 0; i < 4; i++)
        free(m[i]);
    return 0;
}
