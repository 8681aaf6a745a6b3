/* bench/compile_time.c — workload 8 of ANCHORS.md: compiling the MLP
 * graph (bench/graphs.h, x an input, weights and biases random_normal
 * generators on cuda:0) with an empty kernel cache and with a warm one.
 *
 * cold: BRAID_CACHE_DIR is set to a fresh empty folder; the time of
 *   braid_compile (passes + code generation + NVRTC for the GPU present,
 *   or sm_90 without one) plus, with a GPU, braid_exec_new (kernels
 *   loaded, arenas allocated; the CUDA context is created beforehand and
 *   timed apart as ctx_ms).
 * warm: the in-memory kernel cache emptied (bc_cache_clear), the same
 *   again: the kernels come from the disk cache, as in a new process.
 * Targets: cold ≤ 500 ms, warm ≤ 20 ms. Runs without a GPU too (compile
 * only, gpu=0).
 *
 * Prints "RESULT compile_cold braid_ms=…" and "RESULT compile_warm …". */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "bench/graphs.h"

#ifndef BRAID_HAVE_CUDA
#define bc_cache_clear() ((void)0)
#endif

/* compile (+ exec_new when gpu) in ms; kernel counters into *nvrtc. */
static void once(const braid_graph *g, bool gpu, double *compile_ms,
                 double *exec_ms) {
    braid_compile_options o = bn_options("cpu,cuda:0");
    braid_plan *p = NULL;
    double t0 = bn_now();
    BN_OK(braid_compile(g, &o, &p));
    double t1 = bn_now();
    *exec_ms = 0;
    if (gpu) {
        braid_exec *e = NULL;
        BN_OK(braid_exec_new(p, &e));
        *exec_ms = (bn_now() - t1) * 1e3;
        braid_exec_free(e);
    }
    *compile_ms = (t1 - t0) * 1e3;
    braid_plan_free(p);
}

int main(void) {
    bn_prog = "compile_time";
    char dir[] = "/tmp/braid-bench-cache-XXXXXX";
    if (!mkdtemp(dir)) bn_die("mkdtemp failed");
    setenv("BRAID_CACHE_DIR", dir, 1);
    bool gpu = braid_cuda_device_count() > 0;
    double ctx_ms = 0;
#ifdef BRAID_HAVE_CUDA
    if (gpu) {
        double t0 = bn_now();
        BN_CUDA(cudaFree(0));
        ctx_ms = (bn_now() - t0) * 1e3;
    }
#endif
    braid_graph *g = bg_bench_mlp(false, NULL, NULL, NULL);
    bn_graph_ok(g, "mlp");
    bc_cache_clear();
    double cc, ce, wc, we;
    once(g, gpu, &cc, &ce);
    bc_cache_clear();
    once(g, gpu, &wc, &we);
#ifdef BRAID_HAVE_CUDA
    bc_stats st;
    bc_stats_get(&st);
    printf("kernel cache: %llu NVRTC compiles (%.1f ms in NVRTC), %llu disk "
           "hits, %llu memory hits, in %s\n",
           (unsigned long long)st.compiles, st.nvrtc_seconds * 1e3,
           (unsigned long long)st.disk_hits,
           (unsigned long long)st.memory_hits, dir);
#endif
    printf("MLP graph: cold compile %.1f ms + exec_new %.1f ms; warm %.1f + "
           "%.1f ms; CUDA context %.1f ms (not counted); gpu=%d\n",
           cc, ce, wc, we, ctx_ms, gpu);
    printf("RESULT compile_cold braid_ms=%.2f compile_ms=%.2f exec_new_ms=%.2f "
           "ctx_ms=%.2f gpu=%d\n",
           cc + ce, cc, ce, ctx_ms, gpu);
    printf("RESULT compile_warm braid_ms=%.2f compile_ms=%.2f exec_new_ms=%.2f "
           "gpu=%d\n",
           wc + we, wc, we, gpu);
    braid_graph_free(g);
    return 0;
}
