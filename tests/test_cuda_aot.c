/* tests/test_cuda_aot.c — ahead-of-time kernels on a GPU (skipped without
 * one): a plan compiled for "cpu,cuda:0" with its kernels built for the
 * present GPU, saved, then loaded in a "fresh process" (both kernel caches
 * emptied: memory cleared, BRAID_CACHE_DIR an empty folder) runs correctly
 * without NVRTC — no compilation, no cache hit; a plan holding only the
 * PTX of an older architecture is JIT-compiled by the driver, again
 * without NVRTC; a plan whose stored source is not what codegen generates
 * now is compiled again from the new source (and still runs correctly). */
#define _POSIX_C_SOURCE 200809L
#include "tests/test_cuda_common.h"

#include "codegen/codegen.h"
#include "tests/tmpfiles.h"

#ifdef BRAID_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* A graph with generated kernels of several kinds on cuda:0: a fused
 * elementwise chain, a reduction, a matmul with a bias + gelu epilogue,
 * a random generator. */
static braid_graph *aot_graph(void) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, TC_DIMS(96, 64));
    braid_tensor w = braid_input(g, "w", BRAID_F32, 2, TC_DIMS(64, 48));
    braid_tensor b = braid_input(g, "b", BRAID_F32, 1, TC_DIMS(48));
    braid_tensor r =
        braid_random_uniform(g, BRAID_F32, 2, TC_DIMS(96, 64), 7, -0.5, 0.5);
    braid_tensor h = braid_tanh(g, braid_add(g, x, r));
    braid_tensor m = braid_gelu(g, braid_add(g, braid_matmul(g, h, w, 0), b));
    braid_tensor s =
        braid_sum(g, braid_square(g, m), 1, (const int[]){1}, false);
    braid_output(g, "m", m);
    braid_output(g, "s", s);
    tc_hint_all(g, "cuda:0");
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

/* Compute capability of GPU 0 (90 for sm_90). */
static int gpu_sm(void) {
    int major = 0, minor = 0;
#ifdef BRAID_HAVE_CUDA
    cr_assert_eq(
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0),
        cudaSuccess);
    cr_assert_eq(
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0),
        cudaSuccess);
#endif
    return major * 10 + minor;
}

/* Compiles g for cpu,cuda:0 with archs and returns the plan file bytes. */
static void *saved_plan(const braid_graph *g, const char *archs, size_t *size) {
    braid_compile_options o = tc_options();
    o.archs = archs;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    cr_assert_not_null(p->kernels.source);
    cr_assert_geq(p->kernels.nbin, 1, "archs %s: nothing built", archs);
    void *data = NULL;
    cr_assert_eq(braid_plan_save_memory(p, &data, size), BRAID_OK, "%s",
                 braid_last_error());
    braid_plan_free(p);
    return data;
}

/* "A new process": no kernel in memory, an empty disk cache, counters 0. */
static char *cache_dir;

static void fresh_caches(void) {
    if (cache_dir) tf_rmtree(cache_dir);
    free(cache_dir);
    cache_dir = tf_mkdtemp();
    cr_assert_not_null(cache_dir);
    setenv("BRAID_CACHE_DIR", cache_dir, 1);
    bc_cache_clear();
    bc_stats_reset();
}

static void drop_caches(void) {
    if (cache_dir) tf_rmtree(cache_dir);
    free(cache_dir);
    cache_dir = NULL;
    unsetenv("BRAID_CACHE_DIR");
}

TestSuite(cuda_aot, .fini = drop_caches);

static braid_plan *load(const void *data, size_t size) {
    braid_plan *p = NULL;
    cr_assert_eq(braid_plan_load_memory(data, size, NULL, &p), BRAID_OK, "%s",
                 braid_last_error());
    return p;
}

/* Runs p on random inputs, compares with the reference evaluator of the
 * plan's own graph, and returns the executor log (malloc'd). */
static char *run_and_check(const braid_plan *p, uint64_t seed) {
    const braid_graph *g = braid_plan_graph(p);
    ts_io *io = ts_io_new(g, seed);
    cr_assert_not_null(io);
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_run(e, io->in, io->ninputs, io->out, io->noutputs),
                 BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(
        braid_reference_run(g, io->in, io->ninputs, io->ref, io->noutputs),
        BRAID_OK, "%s", braid_last_error());
    char msg[900];
    cr_assert(ts_io_compare(io, msg, sizeof msg), "%s", msg);
    char *log = strdup(br_cuda_log(br_exec_cuda(e)));
    cr_log_info("executor log:\n%s", log);
    braid_exec_free(e);
    ts_io_free(io);
    return log;
}

static void expect_no_nvrtc(const char *what) {
    bc_stats st;
    bc_stats_get(&st);
    cr_assert_eq(st.compiles, 0, "%s: NVRTC compiled %llu modules", what,
                 (unsigned long long)st.compiles);
    cr_assert_eq(st.memory_hits + st.disk_hits, 0,
                 "%s: the kernel caches answered %llu times", what,
                 (unsigned long long)(st.memory_hits + st.disk_hits));
}

Test(cuda_aot, stored_cubin_runs_without_nvrtc) {
    TC_REQUIRE_GPU();
    braid_graph *g = aot_graph();
    char archs[16];
    snprintf(archs, sizeof archs, "sm_%d", gpu_sm());
    size_t size = 0;
    void *data = saved_plan(g, archs, &size);
    fresh_caches();
    braid_plan *p = load(data, size);
    char *log = run_and_check(p, 11);
    char want[64];
    snprintf(want, sizeof want, "for %s (stored cubin", archs);
    cr_assert(strstr(log, want), "no '%s' in the log:\n%s", want, log);
    expect_no_nvrtc("stored cubin");
    /* A second executor of the loaded plan: still nothing compiled. */
    free(log);
    log = run_and_check(p, 12);
    expect_no_nvrtc("second executor");
    cr_assert_eq(tf_count_entries(cache_dir), 0, "the disk cache was used");
    free(log);
    braid_plan_free(p);
    free(data);
    braid_graph_free(g);
}

/* The default archs (NULL) are the present GPU's: the same. */
Test(cuda_aot, default_archs_are_the_gpus) {
    TC_REQUIRE_GPU();
    braid_graph *g = aot_graph();
    size_t size = 0;
    void *data = saved_plan(g, NULL, &size);
    fresh_caches();
    braid_plan *p = load(data, size);
    cr_assert_eq(p->kernels.bin[0].sm, gpu_sm());
    char *log = run_and_check(p, 13);
    cr_assert(strstr(log, "(stored cubin"), "%s", log);
    expect_no_nvrtc("default archs");
    free(log);
    braid_plan_free(p);
    free(data);
    braid_graph_free(g);
}

/* Only the PTX of an older architecture: the driver JITs it. */
Test(cuda_aot, older_ptx_is_jitted) {
    TC_REQUIRE_GPU();
    int sm = gpu_sm();
    int older = sm > 80 ? 80 : sm > 75 ? 75 : 70;
    char archs[16];
    snprintf(archs, sizeof archs, "sm_%d", older);
    braid_graph *g = aot_graph();
    braid_compile_options o = tc_options();
    o.archs = archs;
    braid_plan *c = NULL;
    cr_assert_eq(braid_compile(g, &o, &c), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(c->kernels.nbin, 1);
    free(c->kernels.bin[0].cubin); /* keep the PTX only */
    c->kernels.bin[0].cubin = NULL;
    c->kernels.bin[0].cubin_size = 0;
    void *data = NULL;
    size_t size = 0;
    cr_assert_eq(braid_plan_save_memory(c, &data, &size), BRAID_OK, "%s",
                 braid_last_error());
    braid_plan_free(c);
    fresh_caches();
    braid_plan *p = load(data, size);
    cr_assert_null(p->kernels.bin[0].cubin);
    char *log = run_and_check(p, 14);
    char want[64];
    snprintf(want, sizeof want, "(stored ptx of %s, JIT", archs);
    cr_assert(strstr(log, want), "no '%s' in the log:\n%s", want, log);
    expect_no_nvrtc("older PTX");
    free(log);
    braid_plan_free(p);
    free(data);
    braid_graph_free(g);
}

/* Stored binaries of other source (codegen changed since the plan was
 * saved) are not used: the new source is compiled, and it runs right. */
Test(cuda_aot, stale_source_recompiles) {
    TC_REQUIRE_GPU();
    braid_graph *g = aot_graph();
    char archs[16];
    snprintf(archs, sizeof archs, "sm_%d", gpu_sm());
    size_t size = 0;
    void *data = saved_plan(g, archs, &size);
    fresh_caches();
    braid_plan *p = load(data, size);
    bp_kernels *k = &p->kernels;
    static const char extra[] = "// an older codegen\n";
    char *src = malloc(k->source_len + sizeof extra);
    cr_assert_not_null(src);
    memcpy(src, extra, sizeof extra - 1);
    memcpy(src + sizeof extra - 1, k->source, k->source_len + 1);
    free(k->source);
    k->source = src;
    k->source_len += sizeof extra - 1;
    char *log = run_and_check(p, 15);
    cr_assert(strstr(log, "other source"), "%s", log);
    cr_assert(strstr(log, "compiled"), "%s", log);
    bc_stats st;
    bc_stats_get(&st);
    cr_assert_eq(st.compiles, 1);
    free(log);
    braid_plan_free(p);
    free(data);
    braid_graph_free(g);
}
