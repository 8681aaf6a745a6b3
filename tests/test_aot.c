/* tests/test_aot.c — ahead-of-time kernels (codegen/aot.c), without a GPU:
 * parsing the archs option; braid_compile storing the kernel module's
 * source and, per architecture asked for, its CUBIN and PTX; "none"
 * storing the source only; CPU plans storing nothing; the compile report's
 * kernel figures; a second compile of the same graph served by the kernel
 * cache; no progress line when stderr is not a terminal. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>

#include "codegen/codegen.h"
#include "tests/support/support.h"
#include "tests/tmpfiles.h"

/* ---- bc_parse_archs
 * ---------------------------------------------------------- */

static void parse_ok(const char *text, const int *want, uint32_t nwant) {
    int sm[8] = {0};
    uint32_t n = 99;
    cr_assert_eq(bc_parse_archs(text, sm, 8, &n), BRAID_OK, "\"%s\": %s", text,
                 braid_last_error());
    cr_assert_eq(n, nwant, "\"%s\": %u architectures, want %u", text, n, nwant);
    for (uint32_t i = 0; i < n; i++)
        cr_assert_eq(sm[i], want[i], "\"%s\"[%u]: %d, want %d", text, i, sm[i],
                     want[i]);
}

Test(aot_archs, accepted_forms) {
    parse_ok("sm_90", (const int[]){90}, 1);
    parse_ok("sm_90,sm_80", (const int[]){80, 90}, 2);
    parse_ok("90", (const int[]){90}, 1);
    parse_ok("sm90,86", (const int[]){86, 90}, 2);
    parse_ok(" sm_86 , sm_80 ,sm_120", (const int[]){80, 86, 120}, 3);
    parse_ok("sm_90,sm_90,sm_80,sm_90", (const int[]){80, 90}, 2);
    parse_ok("SM_75", (const int[]){75}, 1);
    parse_ok("none", NULL, 0);
    parse_ok("  none ", NULL, 0);
}

Test(aot_archs, bad_strings) {
    static const char *const bad[] = {
        "",           " ",      "sm_9x",      "sm_",       "9",
        "sm_9",       "sm_90,", ",sm_90",     "sm_90,,80", "sm_1000",
        "compute_90", "sm-90",  "none,sm_90", "nonesuch",  "sm_90 sm_80",
        "05",         "+90"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int sm[8];
        uint32_t n = 0;
        cr_assert_eq(bc_parse_archs(bad[i], sm, 8, &n),
                     BRAID_ERR_INVALID_ARGUMENT, "\"%s\" accepted", bad[i]);
        char want[128];
        snprintf(want, sizeof want, "archs \"%s\"", bad[i]);
        cr_assert(strstr(braid_last_error(), want), "\"%s\": %s", bad[i],
                  braid_last_error());
        cr_assert(strstr(braid_last_error(), "sm_90,sm_80, or none"), "%s",
                  braid_last_error());
    }
    int sm[2];
    uint32_t n = 0;
    cr_assert_eq(bc_parse_archs("sm_70,sm_80,sm_90", sm, 2, &n),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), "more than 2"), "%s",
              braid_last_error());
    cr_assert_eq(bc_parse_archs(NULL, sm, 2, &n), BRAID_ERR_INVALID_ARGUMENT);
}

/* ---- braid_compile
 * ------------------------------------------------------------- */

/* A small graph whose work is hinted to cuda:0: two generated kernels
 * (a fused elementwise chain and a reduction). */
static braid_graph *gpu_graph(double scale) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 2, (int64_t[]){64, 32});
    braid_tensor c = braid_fill(g, BRAID_F32, 2, (int64_t[]){64, 32}, scale);
    braid_tensor e = braid_exp(g, braid_mul(g, x, c));
    braid_tensor s = braid_sum(g, e, 1, (const int[]){1}, false);
    braid_output(g, "s", s);
    braid_output(g, "e", e);
    for (uint32_t id = 0; id < braid_graph_node_count(g); id++)
        if (id != x.id) braid_set_device(g, (braid_tensor){id}, "cuda:0");
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

static braid_plan *compile_archs(const braid_graph *g, const char *devices,
                                 const char *archs) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.archs = archs;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s: %s", archs,
                 braid_last_error());
    return p;
}

/* The plan's stored source is the module codegen generates for it. */
static void check_source(const braid_plan *p) {
    bc_source src;
    cr_assert_eq(bc_plan_source(p, &src), BRAID_OK, "%s", braid_last_error());
    cr_assert_not_null(p->kernels.source);
    cr_assert_eq(p->kernels.source_len, strlen(p->kernels.source));
    cr_assert_eq(p->kernels.source_len, src.len);
    cr_assert_str_eq(p->kernels.source, src.text);
    cr_assert_eq(p->kernels.nkernels, src.nkernels);
    cr_assert_geq(src.nkernels, 2);
    cr_assert_eq(p->report.kernels, src.nkernels);
    bc_source_free(&src);
}

/* An empty disk cache and memory cache, so that what NVRTC does shows. */
static char *cache_dir;

static void fresh_cache(void) {
    cache_dir = tf_mkdtemp();
    cr_assert_not_null(cache_dir);
    setenv("BRAID_CACHE_DIR", cache_dir, 1);
    bc_cache_clear();
    bc_stats_reset();
}

static void drop_cache(void) {
    if (cache_dir) tf_rmtree(cache_dir);
    free(cache_dir);
    cache_dir = NULL;
    unsetenv("BRAID_CACHE_DIR");
}

TestSuite(aot, .init = fresh_cache, .fini = drop_cache);

/* Each of two architectures gets a CUBIN and its PTX; a second compile
 * of the same graph takes both from the cache, bit for bit. */
Test(aot, two_archs_stored_then_cached) {
    braid_graph *g = gpu_graph(0.5);
    braid_plan *p = compile_archs(g, "cpu,cuda:0", "sm_90,sm_80");
    check_source(p);
    const bp_kernels *k = &p->kernels;
#ifdef BRAID_HAVE_CUDA
    cr_assert_eq(k->nbin, 2);
    cr_assert_eq(k->bin[0].sm, 80);
    cr_assert_eq(k->bin[1].sm, 90);
    for (uint32_t i = 0; i < 2; i++) {
        cr_assert(k->bin[i].cubin && k->bin[i].cubin_size > 0, "sm_%d cubin",
                  k->bin[i].sm);
        cr_assert(k->bin[i].ptx &&
                      k->bin[i].ptx_size == strlen(k->bin[i].ptx) + 1,
                  "sm_%d ptx", k->bin[i].sm);
        cr_assert(strstr(k->bin[i].ptx, ".entry"), "sm_%d: not PTX",
                  k->bin[i].sm);
    }
    cr_assert_eq(p->report.archs, 2);
    cr_assert_eq(p->report.modules_compiled, 2);
    cr_assert_eq(p->report.modules_cached, 0);
    cr_assert_gt(p->report.nvrtc_ms, 0.0);
    cr_assert_geq(p->report.kernels_ms, p->report.nvrtc_ms);
    cr_assert_eq(p->prov.nvrtc_version, bc_nvrtc_version());
    cr_assert_gt(p->prov.nvrtc_version, 0);
    bc_stats st;
    bc_stats_get(&st);
    cr_assert_eq(st.compiles, 2);

    braid_plan *q = compile_archs(g, "cpu,cuda:0", "sm_80,sm_90");
    cr_assert_eq(q->report.modules_compiled, 0);
    cr_assert_eq(q->report.modules_cached, 2);
    cr_assert_eq(q->report.nvrtc_ms, 0.0);
    cr_assert_eq(q->kernels.nbin, 2);
    for (uint32_t i = 0; i < 2; i++) {
        cr_assert_eq(q->kernels.bin[i].cubin_size, k->bin[i].cubin_size);
        cr_assert_eq(memcmp(q->kernels.bin[i].cubin, k->bin[i].cubin,
                            k->bin[i].cubin_size),
                     0);
        cr_assert_str_eq(q->kernels.bin[i].ptx, k->bin[i].ptx);
    }
    bc_stats_get(&st);
    cr_assert_eq(st.compiles, 2, "the second compile ran NVRTC");
    cr_assert_eq(st.memory_hits, 2);
    braid_plan_free(q);
#else /* no NVRTC: the source is all a plan can carry */
    cr_assert_eq(k->nbin, 0);
    cr_assert_eq(p->report.archs, 0);
    cr_assert_eq(p->meta.nvrtc_version, 0);
#endif
    braid_plan_free(p);
    braid_graph_free(g);
}

/* The disk cache alone (memory cache emptied) also serves a recompile. */
Test(aot, disk_cache_serves_a_new_process) {
#ifndef BRAID_HAVE_CUDA
    cr_skip_test("built without CUDA");
#endif
    braid_graph *g = gpu_graph(0.25);
    braid_plan *p = compile_archs(g, "cpu,cuda:0", "sm_90");
    cr_assert_eq(p->report.modules_compiled, 1);
    bc_cache_clear();
    braid_plan *q = compile_archs(g, "cpu,cuda:0", "sm_90");
    cr_assert_eq(q->report.modules_compiled, 0);
    cr_assert_eq(q->report.modules_cached, 1);
    bc_stats st;
    bc_stats_get(&st);
    cr_assert_eq(st.disk_hits, 1);
    braid_plan_free(q);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(aot, none_stores_only_the_source) {
    braid_graph *g = gpu_graph(0.5);
    braid_plan *p = compile_archs(g, "cpu,cuda:0", " none");
    check_source(p);
    cr_assert_eq(p->kernels.nbin, 0);
    cr_assert_null(p->kernels.bin);
    cr_assert_eq(p->report.archs, 0);
    cr_assert_eq(p->report.modules_compiled + p->report.modules_cached, 0);
    bc_stats st;
    bc_stats_get(&st);
    cr_assert_eq(st.compiles + st.memory_hits + st.disk_hits, 0);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(aot, cpu_plan_stores_nothing) {
    braid_graph *g = gpu_graph(0.5);
    static const char *const archs[] = {NULL, "sm_90", "none"};
    for (size_t i = 0; i < 3; i++) {
        braid_plan *p = compile_archs(g, "cpu", archs[i]);
        cr_assert_null(p->kernels.source);
        cr_assert_eq(p->kernels.nkernels, 0);
        cr_assert_eq(p->kernels.nbin, 0);
        cr_assert_eq(p->report.kernels, 0);
        cr_assert_eq(p->report.archs, 0);
        braid_plan_free(p);
    }
    bc_stats st;
    bc_stats_get(&st);
    cr_assert_eq(st.compiles, 0);
    braid_graph_free(g);
}

/* archs NULL: the GPUs present, else sm_90 (this machine may have none). */
Test(aot, default_archs) {
#ifndef BRAID_HAVE_CUDA
    cr_skip_test("built without CUDA");
#endif
    if (braid_cuda_device_count() > 0)
        cr_skip_test("a GPU is present: the default is its architecture");
    braid_graph *g = gpu_graph(0.5);
    braid_plan *p = compile_archs(g, "cpu,cuda:0", NULL);
    cr_assert_eq(p->kernels.nbin, 1);
    cr_assert_eq(p->kernels.bin[0].sm, 90);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(aot, bad_archs_fail_compile) {
    braid_graph *g = gpu_graph(0.5);
    static const char *const devices[] = {"cpu,cuda:0", "cpu"};
    for (size_t i = 0; i < 2; i++) {
        braid_compile_options o;
        braid_compile_options_init(&o);
        o.devices = devices[i];
        o.archs = "sm_9x";
        braid_plan *p = NULL;
        cr_assert_eq(braid_compile(g, &o, &p), BRAID_ERR_INVALID_ARGUMENT);
        cr_assert_null(p);
        cr_assert_str_eq(braid_last_error(),
                         "braid_compile: archs \"sm_9x\": expected a list "
                         "like sm_90,sm_80, or none");
    }
    braid_graph_free(g);
}

/* An architecture NVRTC cannot build for, asked for explicitly, fails the
 * compile with NVRTC's reason. */
Test(aot, unsupported_arch_named) {
#ifndef BRAID_HAVE_CUDA
    cr_skip_test("built without CUDA");
#endif
    braid_graph *g = gpu_graph(0.5);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0";
    o.archs = "sm_10";
    braid_plan *p = NULL;
    braid_status s = braid_compile(g, &o, &p);
    cr_assert_neq(s, BRAID_OK);
    cr_assert_null(p);
    cr_assert(strstr(braid_last_error(), "sm_10"), "%s", braid_last_error());
    braid_graph_free(g);
}

/* With stderr redirected to a file, compiling prints no progress line. */
Test(aot, quiet_when_stderr_is_not_a_terminal) {
    braid_graph *g = gpu_graph(0.75);
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = tmpfile();
    cr_assert(saved >= 0 && tmp);
    dup2(fileno(tmp), 2);
    braid_plan *p = compile_archs(g, "cpu,cuda:0", "sm_90");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    cr_assert_eq(ftell(tmp), 0, "compiling wrote to a redirected stderr");
    fclose(tmp);
    braid_plan_free(p);
    braid_graph_free(g);
}
