/* bench/arena.c — workload 9 of ANCHORS.md: the memory planner's arena
 * sizes against their lower bound (the largest sum of simultaneously live
 * bytes) on every benchmark graph of bench/graphs.h, compiled as the
 * benchmark programs compile them (for "cpu,cuda:0": no GPU needed).
 * Target: arena_bytes ≤ 1.05 × lower_bound_bytes on each.
 *
 * Prints one "ARENA <graph> …" line per graph and "RESULT arena
 * worst_ratio=… graphs=N". */
#define _POSIX_C_SOURCE 200809L
#include "bench/graphs.h"

static double worst = 0;
static int count = 0;

static void check(const char *name, braid_graph *g, unsigned disable) {
    bn_graph_ok(g, name);
    braid_compile_options o = bn_options("cpu,cuda:0");
    o.disable_passes = disable;
    braid_plan *p = bn_compile(g, &o);
    braid_plan_summary s;
    BN_OK(braid_plan_summary_get(p, &s));
    bn_arena(name, p);
    double r = s.lower_bound_bytes
                   ? (double)s.arena_bytes / (double)s.lower_bound_bytes
                   : 1.0;
    worst = r > worst ? r : worst;
    count++;
    braid_plan_free(p);
    braid_graph_free(g);
}

static braid_graph *mm(int64_t n, int k, const char *dev) {
    braid_graph *g = braid_graph_new(NULL);
    bn_graph_ok(g, "matmul");
    braid_output(g, "s", bg_bench_mm_chain(g, n, k, NULL, NULL, dev));
    return g;
}

int main(void) {
    bn_prog = "arena";
    check("ew_chain", bg_bench_chain((int64_t)1 << 26, true), BRAID_PASS_CHUNK);
    check("ew_chain_cpu", bg_bench_chain((int64_t)1 << 24, false), 0);
    check("softmax", bg_bench_softmax(8192, 8192), BRAID_PASS_CHUNK);
    check("pipeline", bg_bench_pipeline(BG_PIPE_N), 0);
    check("pageable_h2d", bg_bench_h2d(BG_PIPE_N), 0);
    braid_graph *g = braid_graph_new(NULL);
    bn_graph_ok(g, "seed001");
    braid_output(g, "c", bg_bench_mm_chain(g, 2000, 10, NULL, NULL, "cpu"));
    braid_output(g, "g", bg_bench_mm_chain(g, 6000, 10, NULL, NULL, "cuda:0"));
    check("seed001", g, 0);
    check("matmul_4096x11", mm(4096, 11, "cuda:0"), 0);
    check("matmul_10000x11", mm(10000, 11, "cuda:0"), 0);
    check("mlp", bg_bench_mlp(true, NULL, NULL, NULL), 0);
    check("mlp_generated", bg_bench_mlp(false, NULL, NULL, NULL), 0);
    check("tiny100", bg_bench_tiny(NULL), BRAID_PASS_FUSE);
    printf("RESULT arena worst_ratio=%.4f graphs=%d\n", worst, count);
    return 0;
}
