/* tests/test_cuda_plan.c — the CUDA backend's decisions on real plans,
 * without a GPU (runs in CI): for the example graphs, the golden graphs of
 * the passes and hundreds of random DAGs hinted to "cpu"/"cuda:0", every
 * GPU node must be something the backend can issue (a kernel codegen made
 * with the parameters the calling convention gives, a cuBLAS matmul, a
 * copy, a no-op) — br_cuda_check_plan, which also decides arenas and
 * CUDA-graph eligibility; the example graphs' kernels are also compiled by
 * NVRTC for sm_90; which fused matmuls qualify for cuBLASLt's bias
 * epilogue. Skipped in a build without the CUDA toolkit. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>

#include "tests/test_cuda_common.h"

#define DEVICES "cpu,cuda:0,cuda:1"

static void skip_without_toolkit(void) {
    char report[64];
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, TC_DIMS(4));
    braid_output(g, "y", braid_exp(g, x));
    braid_compile_options o = tc_options();
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK);
    braid_status s = br_cuda_check_plan(p, 0, report, sizeof report);
    braid_plan_free(p);
    braid_graph_free(g);
    if (s == BRAID_ERR_UNSUPPORTED &&
        strstr(braid_last_error(), "without CUDA"))
        cr_skip_test("built without CUDA");
}

/* Compiles g for devices and checks the plan; sm 0: no NVRTC. */
static void check(const braid_graph *g, const char *devices, int sm,
                  const char *what) {
    braid_compile_options o = tc_options();
    o.devices = devices;
    braid_plan *p = NULL;
    braid_status s = braid_compile(g, &o, &p);
    cr_assert_eq(s, BRAID_OK, "%s: compile: %s", what, braid_last_error());
    char report[2048];
    s = br_cuda_check_plan(p, sm, report, sizeof report);
    if (s != BRAID_OK) tc_log_graph(g);
    cr_assert_eq(s, BRAID_OK, "%s: %s: %s", what, braid_status_name(s),
                 braid_last_error());
    braid_plan_free(p);
}

/* Every .graph file under dir, as written and with every node on cuda:0. */
static int check_dir(const char *dir, int sm) {
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot open %s", dir);
    int n = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t len = strlen(ent->d_name);
        if (len < 7 || strcmp(ent->d_name + len - 6, ".graph") != 0) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
        braid_graph *g = braid_graph_load(path, NULL);
        cr_assert_not_null(g);
        if (braid_graph_status(g) != BRAID_OK) { /* error-case goldens */
            braid_graph_free(g);
            continue;
        }
        check(g, DEVICES, sm, path);
        tc_hint_all(g, "cuda:0");
        check(g, DEVICES, sm, path);
        braid_graph_free(g);
        n++;
    }
    closedir(d);
    return n;
}

Test(cuda_plan, example_graphs_compile_for_sm90) {
    skip_without_toolkit();
    int n = check_dir(BRAID_SOURCE_DIR "/examples/graphs", 90);
    cr_assert_gt(n, 0);
}

Test(cuda_plan, golden_graphs) {
    skip_without_toolkit();
    static const char *const dirs[] = {"chunk",    "copies", "fuse",
                                       "memory",   "place",  "schedule",
                                       "simplify", "streams"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/golden/%s", BRAID_SOURCE_DIR,
                 dirs[i]);
        DIR *d = opendir(path);
        if (!d) continue; /* a pass without goldens yet */
        closedir(d);
        check_dir(path, 0);
    }
}

static void random_plans(uint64_t base, int count, bool mixed, double p_gpu,
                         int sm_every) {
    skip_without_toolkit();
    ts_graph_options go;
    ts_graph_options_default(&go);
    go.max_nodes = 16;
    go.mixed_dtypes = mixed;
    for (uint64_t i = 0; i < (uint64_t)count; i++) {
        uint64_t seed = base + i;
        braid_graph *g = ts_random_graph(seed, &go);
        tc_hint_random(g, seed, p_gpu);
        char what[64];
        snprintf(what, sizeof what, "random graph seed %llu",
                 (unsigned long long)seed);
        check(g, "cpu,cuda:0", sm_every && i % (uint64_t)sm_every == 0 ? 90 : 0,
              what);
        braid_graph_free(g);
    }
}

Test(cuda_plan, random_mixed) {
    random_plans(100000, 250, true, 0.6, 50);
}
Test(cuda_plan, random_all_gpu) {
    random_plans(160000, 150, true, 1.0, 50);
}
Test(cuda_plan, random_f32) {
    random_plans(140000, 150, false, 0.8, 0);
}

Test(cuda_plan, graph_decisions) {
    skip_without_toolkit();
    /* a GPU chain: captured; a GPU → CPU → GPU round trip: not */
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, TC_DIMS(100));
    braid_tensor a = braid_sin(g, x);
    braid_set_device(g, a, "cuda:0");
    cr_assert_eq(braid_output(g, "a", a), BRAID_OK);
    braid_compile_options o = tc_options();
    braid_plan *p = NULL;
    char report[2048];
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK);
    cr_assert_eq(br_cuda_check_plan(p, 0, report, sizeof report), BRAID_OK,
                 "%s", braid_last_error());
    cr_assert(strstr(report, "graph: static"), "%s", report);
    braid_plan_free(p);
    braid_tensor b = braid_exp(g, a);
    braid_set_device(g, b, "cpu");
    braid_tensor c = braid_cos(g, b);
    braid_set_device(g, c, "cuda:0");
    cr_assert_eq(braid_output(g, "c", c), BRAID_OK);
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK);
    cr_assert_eq(br_cuda_check_plan(p, 0, report, sizeof report), BRAID_OK);
    cr_assert(strstr(report, "round trip"), "%s", report);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Checks the plan of act(x·w + b) in dtype dt (act: 0 none, 1 relu, 2
 * gelu, 3 sigmoid; bias_first: b + x·w) and expects want in its report. */
static void lt_decision(braid_dtype dt, int act, bool bias_first,
                        const char *want) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", dt, 2, TC_DIMS(16, 32));
    braid_tensor w = braid_input(g, "w", dt, 2, TC_DIMS(32, 8));
    braid_tensor b = braid_input(g, "b", dt, 1, TC_DIMS(8));
    braid_tensor mm = braid_matmul(g, x, w, 0);
    braid_tensor y = bias_first ? braid_add(g, b, mm) : braid_add(g, mm, b);
    y = act == 1   ? braid_relu(g, y)
        : act == 2 ? braid_gelu(g, y)
        : act == 3 ? braid_sigmoid(g, y)
                   : y;
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    tc_hint_all(g, "cuda:0");
    braid_compile_options o = tc_options();
    braid_plan *p = NULL;
    char report[2048];
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(br_cuda_check_plan(p, 0, report, sizeof report), BRAID_OK,
                 "%s", braid_last_error());
    cr_assert(strstr(report, "1 matmul epilogues"), "not fused:\n%s", report);
    cr_assert(strstr(report, want), "%s act %d: expected \"%s\" in:\n%s",
              braid_dtype_name(dt), act, want, report);
    braid_plan_free(p);
    braid_graph_free(g);
}

Test(cuda_plan, cublaslt_decisions) {
    skip_without_toolkit();
    lt_decision(BRAID_F32, 0, false, "matmul + bias qualifies for cuBLASLt");
    lt_decision(BRAID_F16, 0, true, "matmul + bias qualifies for cuBLASLt");
    lt_decision(BRAID_BF16, 1, false,
                "matmul + bias + relu qualifies for cuBLASLt");
    lt_decision(BRAID_F16, 2, false, "cuBLAS + epilogue kernel: gelu");
    lt_decision(BRAID_F32, 3, false,
                "cuBLAS + epilogue kernel: sigmoid has no cuBLASLt epilogue");
    lt_decision(BRAID_F64, 1, false, "cuBLAS + epilogue kernel: f64");
}
