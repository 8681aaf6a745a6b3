/* bench/gpu_seed001.c — workload 4 of ANCHORS.md (seed 001): 10 chained
 * 2000² f32 matmuls on the CPU and 10 chained 6000² f32 matmuls on the
 * GPU, in one plan, against each part alone (separate plans). Operands are
 * constants (the GPU's uploaded once per executor, like torch's tensor
 * already on the device), scaled so the chain neither grows nor shrinks;
 * each chain ends in a sum (a scalar out). Chained, not ten products of
 * the same operands: braid's CSE would merge identical products; the
 * FLOPs are those of torch_anchors.py's `[x @ x for _ in range(10)]`.
 * Host clock around braid_run; the three plans (CPU part, GPU part, both)
 * are created once and run interleaved, median of 7 each after one
 * warm-up (the first run of the combined plan is reported apart). Target: both ≤ 1.10 × max(alone).
 *
 * Prints "RESULT seed001 braid_ms=<both> bound_ms=<max alone> cpu_ms=…
 * gpu_ms=…". */
#define _POSIX_C_SOURCE 200809L
#include "bench/graphs.h"

#define NC 2000
#define NG 6000
#define K 10
#define REPS 7 /* timed runs of each plan */

static float *scaled(int64_t n, uint64_t seed) {
    float *m = bn_malloc((size_t)(n * n) * sizeof(float));
    float s = (float)sqrt(3.0 / (double)n); /* variance 1/n per entry */
    bn_fill(m, (size_t)(n * n), seed, -s, s);
    return m;
}

/* A plan of the parts asked for, with its executor. */
typedef struct part {
    braid_graph *g;
    braid_plan *p;
    braid_exec *e;
    bool cpu, gpu;
    double t[REPS]; /* ms of each timed run */
} part;

static void part_new(part *x, bool cpu, bool gpu, float *const m[4]) {
    x->cpu = cpu;
    x->gpu = gpu;
    x->g = braid_graph_new(NULL);
    bn_graph_ok(x->g, "seed001");
    if (cpu)
        braid_output(x->g, "c",
                     bg_bench_mm_chain(x->g, NC, K, m[0], m[1], "cpu"));
    if (gpu)
        braid_output(x->g, "g",
                     bg_bench_mm_chain(x->g, NG, K, m[2], m[3], "cuda:0"));
    bn_graph_ok(x->g, "seed001");
    braid_compile_options o = bn_options(gpu ? "cpu,cuda:0" : "cpu");
    x->p = bn_compile(x->g, &o);
    BN_OK(braid_exec_new(x->p, &x->e));
}

/* One run of x in ms. */
static double part_run(part *x) {
    float c = 0, gs = 0;
    braid_output_binding ob[2] = {{"c", &c, sizeof c}, {"g", &gs, sizeof gs}};
    double t0 = bn_now();
    BN_OK(braid_run(x->e, NULL, 0, x->cpu ? ob : ob + 1,
                    (size_t)x->cpu + (size_t)x->gpu));
    double ms = (bn_now() - t0) * 1e3;
    if (!isfinite(c) || !isfinite(gs)) bn_die("sums not finite: %g %g", c, gs);
    return ms;
}

static void part_free(part *x) {
    braid_exec_free(x->e);
    braid_plan_free(x->p);
    braid_graph_free(x->g);
}

int main(void) {
    bn_prog = "gpu_seed001";
    bn_require_gpu("seed001");
    float *m[4] = {scaled(NC, 1), scaled(NC, 2), scaled(NG, 3), scaled(NG, 4)};
    part cpu, gpu, both;
    part_new(&cpu, true, false, m);
    part_new(&gpu, false, true, m);
    part_new(&both, true, true, m);
    double f = part_run(&both); /* first run of the combined plan */
    part_run(&cpu);
    part_run(&gpu);
    /* interleaved, so the host's drifting speed hits all three alike */
    for (int r = 0; r < REPS; r++) {
        cpu.t[r] = part_run(&cpu);
        gpu.t[r] = part_run(&gpu);
        both.t[r] = part_run(&both);
    }
    double c = bn_median(cpu.t, REPS), g = bn_median(gpu.t, REPS),
           b = bn_median(both.t, REPS);
    double bound = c > g ? c : g;
    printf("seed001: cpu alone %.1f ms, gpu alone %.1f ms, both in one plan "
           "%.1f ms (first run %.1f ms): %.3f x max (medians of %d "
           "interleaved runs)\n",
           c, g, b, f, b / bound, REPS);
    printf("RESULT seed001 braid_ms=%.2f bound_ms=%.2f cpu_ms=%.2f "
           "gpu_ms=%.2f first_ms=%.2f\n",
           b, bound, c, g, f);
    part_free(&cpu);
    part_free(&gpu);
    part_free(&both);
    for (int i = 0; i < 4; i++)
        free(m[i]);
    return 0;
}
