/* tests/test_cuda_dtypes.c — the integer storage dtypes on a GPU
 * (docs/ops.md, "Integer dtypes") and the edge-value tables of the elemwise
 * helper's ops (tests/support/edge_tables.h, every node hinted to cuda:0,
 * checked against the table as the CPU suite test_ops_edges.c does): i64 data movement, eq/ne and where on
 * values beyond 2^53 (bit-exact, expected values computed here since the
 * reference's doubles cannot hold them), widening casts on the GPU, and the
 * range-checked narrowing cast from i64 on the GPU (codegen/cast.c): random
 * in-range values against the reference, and a value out of range failing
 * braid_run through the GPU's run check record with the CPU kernel's
 * words (node, element, value), the executor then running good data, with
 * the input bound as host or as device memory. Skipped without a CUDA
 * device. Random-shape i64 cases against the reference are in
 * test_cuda_ops.c (eq/ne, where, casts) and test_cuda_structural.c (shape
 * ops, fill), through TS_ALL. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "tests/support/edge_tables.h"
#include "tests/test_cuda_common.h"

#define BIG ((int64_t)1 << 60)

/* Compiles g for cpu,cuda:0 with every node hinted to cuda:0, runs it once
 * on input "x" into output "y"; *gpu receives the GPU node count. */
static braid_status run_gpu(braid_graph *g, const void *x, size_t xb, void *y,
                            size_t yb, uint32_t *gpu) {
    tc_hint_all(g, "cuda:0");
    braid_compile_options o = tc_options();
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    braid_status s = braid_compile(g, &o, &p);
    *gpu = 0;
    for (uint32_t i = 0; s == BRAID_OK && i < p->res.nschedule; i++)
        *gpu += br_node_on_device_queue(p, p->res.schedule[i]);
    if (s == BRAID_OK) s = braid_exec_new(p, &e);
    braid_input_binding in = {"x", x, xb};
    braid_output_binding out = {"y", y, yb};
    if (s == BRAID_OK) s = braid_run(e, &in, 1, &out, 1);
    braid_exec_free(e);
    braid_plan_free(p);
    return s;
}

Test(cuda_dtypes, i64_movement_compare_where_exact) {
    TC_REQUIRE_GPU();
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_I64, 2, (int64_t[]){2, 3});
    int64_t kv[3] = {INT64_MIN, INT64_MAX, BIG + 1};
    braid_tensor k = braid_constant(g, BRAID_I64, 2, (int64_t[]){1, 3}, kv);
    braid_tensor c = braid_concat(g, 2, (braid_tensor[]){x, k}, 0);
    braid_tensor t = braid_permute(g, c, (int[]){1, 0});
    braid_tensor s = braid_slice(g, t, (int64_t[]){0, 1}, (int64_t[]){3, 3},
                                 NULL);
    braid_tensor r = braid_reshape(g, s, 1, (int64_t[]){6});
    braid_tensor b = braid_broadcast_to(g, r, 2, (int64_t[]){2, 6});
    int64_t pv[6] = {BIG + 9, 0, 0, 0, 0, INT64_MAX};
    braid_tensor pk = braid_constant(g, BRAID_I64, 1, (int64_t[]){6}, pv);
    braid_tensor fill = braid_fill(g, BRAID_I64, 1, (int64_t[]){6}, -5.0);
    /* where b == pk (beyond 2^53: only element 0 and 5 equal) take the
     * fill, else b */
    braid_tensor y = braid_where(g, braid_eq(g, b, pk), fill, b);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    int64_t xv[6] = {BIG + 3, -BIG - 5, 7, BIG + 9, BIG + 8, -1};
    int64_t out[12];
    uint32_t gpu;
    cr_assert_eq(run_gpu(g, xv, sizeof xv, out, sizeof out, &gpu), BRAID_OK,
                 "%s", braid_last_error());
    cr_expect_gt(gpu, 0);
    int64_t want[6] = {xv[3], kv[0], xv[4], kv[1], xv[5], kv[2]};
    for (int i = 0; i < 6; i++)
        if (want[i] == pv[i]) want[i] = -5;
    for (int i = 0; i < 12; i++)
        cr_expect_eq(out[i], want[i % 6], "element %d: %lld, want %lld", i,
                     (long long)out[i], (long long)want[i % 6]);
    braid_graph_free(g);
}

/* ---- the range-checked cast on the GPU ----------------------------------- */

/* ids (i64[n]) -> cast "ids32" (i32) -> outputs "y" = the cast and "z" =
 * i * i + i (fused after it). */
static braid_graph *ids_graph(int64_t n) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "ids", BRAID_I64, 1, (int64_t[]){n});
    braid_tensor i = braid_cast(g, x, BRAID_I32);
    cr_assert_eq(braid_set_name(g, i, "ids32"), BRAID_OK);
    cr_assert_eq(braid_output(g, "y", i), BRAID_OK, "%s", braid_graph_error(g));
    cr_assert_eq(braid_output(g, "z", braid_add(g, braid_mul(g, i, i), i)),
                 BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

/* g compiled for `devices` (every node hinted to cuda:0 when hint), its
 * cast checked to run on cuda:0 (gpu) or the cpu, as one node (never
 * chunked, passes/chunk.c: its error names an element of the whole). */
static braid_plan *ids_plan(braid_graph *g, const char *devices, bool hint,
                            bool gpu) {
    if (hint) tc_hint_all(g, "cuda:0");
    braid_compile_options o = tc_options();
    o.devices = devices;
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    uint32_t casts = 0;
    for (uint32_t id = 0; id < p->res.graph->nnodes; id++) {
        if (p->res.graph->nodes[id].op != BRAID_OP_CAST) continue;
        casts++;
        cr_assert_eq(p->res.info[id].device.kind,
                     gpu ? BP_DEVICE_CUDA : BP_DEVICE_CPU, "cast's device");
    }
    cr_assert_eq(casts, 1, "one cast, never chunked");
    return p;
}

/* Random i64 values within i32 (both ends included). */
static void fill_ids(int64_t *x, int64_t n, uint64_t seed) {
    uint64_t st = seed * 0x9E3779B97F4A7C15u + 1;
    for (int64_t k = 0; k < n; k++) {
        uint64_t r = ts_rand_u64(&st);
        x[k] = (int64_t)(int32_t)(uint32_t)r;
    }
    if (n > 1) x[0] = INT32_MIN, x[n - 1] = INT32_MAX;
}

/* Runs e on ids (bound as given) into y and z. */
static braid_status run_ids(braid_exec *e, const int64_t *ids, int64_t n,
                            int32_t *y, int32_t *z) {
    braid_input_binding in = {"ids", ids, (size_t)n * 8};
    braid_output_binding out[2] = {{"y", y, (size_t)n * 4},
                                   {"z", z, (size_t)n * 4}};
    return braid_run(e, &in, 1, out, 2);
}

/* y and z against the reference evaluator on host ids hx. */
static void check_ids(const braid_graph *g, const int64_t *hx, int64_t n,
                      const int32_t *y, const int32_t *z, const char *what) {
    int32_t *ry = malloc((size_t)n * 4), *rz = malloc((size_t)n * 4);
    cr_assert(ry && rz);
    braid_input_binding in = {"ids", hx, (size_t)n * 8};
    braid_output_binding out[2] = {{"y", ry, (size_t)n * 4},
                                   {"z", rz, (size_t)n * 4}};
    cr_assert_eq(braid_reference_run(g, &in, 1, out, 2), BRAID_OK, "%s",
                 braid_last_error());
    for (int64_t k = 0; k < n; k++) {
        cr_assert_eq(y[k], (int32_t)hx[k], "%s: y[%lld]", what, (long long)k);
        cr_assert_eq(y[k], ry[k], "%s: y[%lld]", what, (long long)k);
        cr_assert_eq(z[k], rz[k], "%s: z[%lld]", what, (long long)k);
    }
    free(ry);
    free(rz);
}

/* Random in-range ids of several sizes (one element, a partial block, a
 * few million), cast on the GPU: exact, equal to the reference; three runs
 * per executor (the CUDA graph's capture and replays), the record clear. */
Test(cuda_dtypes, checked_cast_on_gpu_matches_reference, .timeout = 300) {
    TC_REQUIRE_GPU();
    const int64_t sizes[] = {1, 1000, 4099, tc_under_sanitizer() ? 70001
                                                                  : 3000017};
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int64_t n = sizes[t];
        braid_graph *g = ids_graph(n);
        braid_plan *p = ids_plan(g, "cpu,cuda:0", true, true);
        braid_exec *e = NULL;
        cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
        int64_t *x = malloc((size_t)n * 8);
        int32_t *y = malloc((size_t)n * 4), *z = malloc((size_t)n * 4);
        cr_assert(x && y && z);
        for (int r = 0; r < 3; r++) {
            fill_ids(x, n, 100 * t + r);
            cr_assert_eq(run_ids(e, x, n, y, z), BRAID_OK, "n %lld: %s",
                         (long long)n, braid_last_error());
            check_ids(g, x, n, y, z, "gpu cast");
        }
        braid_exec_free(e);
        braid_plan_free(p);
        braid_graph_free(g);
        free(x);
        free(y);
        free(z);
    }
}

/* The words of a checked cast's run error from "(cast" on (the node ids of
 * two plans may differ); NULL when absent. */
static const char *cast_words(const char *m) {
    return strstr(m, "(cast i64 -> i32): element ");
}

/* The message of the CPU executor for ids (devices "cpu"). */
static char *cpu_message(braid_graph *g, const int64_t *x, int64_t n) {
    braid_plan *p = ids_plan(g, "cpu", false, false);
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    int32_t *y = malloc((size_t)n * 4), *z = malloc((size_t)n * 4);
    cr_assert(y && z);
    cr_assert_eq(run_ids(e, x, n, y, z), BRAID_ERR_INVALID_ARGUMENT);
    char *m = strdup(braid_last_error());
    braid_exec_free(e);
    braid_plan_free(p);
    free(y);
    free(z);
    return m;
}

/* One executor: good ids, then 2^40 at a random position (and -2^40 and
 * 2^31 later: the first in C order is named), which fails braid_run with
 * BRAID_ERR_INVALID_ARGUMENT naming the node ("ids32"), the element and
 * the value in the CPU kernel's words; then good ids run right again.
 * `device`: the ids bound as device memory (braid_device_alloc), the plan
 * compiled for "cuda:0" alone (the cast placed there without a hint). */
static void out_of_range_case(uint64_t seed, bool device) {
    int64_t n = 100000 + (int64_t)(seed * 7919 % 50000);
    braid_graph *g = ids_graph(n);
    /* device: placement, not a hint, puts the cast on the GPU */
    braid_plan *p = device ? ids_plan(g, "cuda:0", false, true)
                           : ids_plan(g, "cpu,cuda:0", true, true);
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    int64_t *x = malloc((size_t)n * 8);
    int32_t *y = malloc((size_t)n * 4), *z = malloc((size_t)n * 4);
    cr_assert(x && y && z);
    int64_t *dx = device ? braid_device_alloc(0, (size_t)n * 8) : NULL;
    if (device) cr_assert_not_null(dx, "%s", braid_last_error());
    const int64_t *bound = device ? dx : x;
    uint64_t st = seed;
    int64_t bad = (int64_t)(ts_rand_u64(&st) % (uint64_t)(n / 2));
    for (int r = 0; r < 5; r++) {
        bool fail = r == 2 || r == 3;
        fill_ids(x, n, seed * 10 + (uint64_t)r);
        if (fail) {
            x[bad] = (int64_t)1 << 40;
            x[bad + 1 + (int64_t)(ts_rand_u64(&st) % 1000)] = -((int64_t)1 << 40);
            x[n - 1] = (int64_t)INT32_MAX + 1;
        }
        if (device)
            cr_assert_eq(braid_memcpy(dx, x, (size_t)n * 8), BRAID_OK);
        braid_status s = run_ids(e, bound, n, y, z);
        if (!fail) {
            cr_assert_eq(s, BRAID_OK, "run %d: %s", r, braid_last_error());
            check_ids(g, x, n, y, z, device ? "device ids" : "host ids");
            continue;
        }
        cr_assert_eq(s, BRAID_ERR_INVALID_ARGUMENT, "run %d: %s", r,
                     braid_status_name(s));
        char *m = strdup(braid_last_error()), want[96];
        snprintf(want, sizeof want, "element %lld is 1099511627776,",
                 (long long)bad);
        cr_assert(strstr(m, "\"ids32\"") && strstr(m, want) &&
                      strstr(m, "does not fit i32"),
                  "%s (expected \"ids32\" and \"%s\")", m, want);
        char *cpu = cpu_message(g, x, n);
        cr_assert(cast_words(m) && cast_words(cpu) &&
                      !strcmp(cast_words(m), cast_words(cpu)),
                  "GPU: %s\nCPU: %s", m, cpu);
        free(cpu);
        free(m);
    }
    braid_device_free(dx);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    free(x);
    free(y);
    free(z);
}

Test(cuda_dtypes, checked_cast_out_of_range_on_gpu, .timeout = 300) {
    TC_REQUIRE_GPU();
    for (uint64_t seed = 1; seed <= 4; seed++)
        out_of_range_case(seed, false);
}

Test(cuda_dtypes, checked_cast_out_of_range_device_ids, .timeout = 300) {
    TC_REQUIRE_GPU();
    for (uint64_t seed = 1; seed <= 4; seed++)
        out_of_range_case(seed, true);
}

/* A plan with the checked cast on the GPU survives a plan file: loaded,
 * it runs good ids right and reports a bad one the same way. */
Test(cuda_dtypes, checked_cast_plan_file, .timeout = 300) {
    TC_REQUIRE_GPU();
    int64_t n = 5000;
    braid_graph *g = ids_graph(n);
    braid_plan *p = ids_plan(g, "cuda:0", false, true), *q = NULL;
    void *file = NULL;
    size_t size = 0;
    cr_assert_eq(braid_plan_save_memory(p, &file, &size), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(braid_plan_load_memory(file, size, NULL, &q), BRAID_OK, "%s",
                 braid_last_error());
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(q, &e), BRAID_OK, "%s", braid_last_error());
    int64_t *x = malloc((size_t)n * 8);
    int32_t *y = malloc((size_t)n * 4), *z = malloc((size_t)n * 4);
    cr_assert(x && y && z);
    fill_ids(x, n, 7);
    x[4321] = -((int64_t)1 << 40);
    cr_assert_eq(run_ids(e, x, n, y, z), BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), "element 4321 is -1099511627776,"),
              "%s", braid_last_error());
    fill_ids(x, n, 8);
    cr_assert_eq(run_ids(e, x, n, y, z), BRAID_OK, "%s", braid_last_error());
    check_ids(g, x, n, y, z, "loaded plan");
    braid_exec_free(e);
    braid_plan_free(q);
    braid_plan_free(p);
    braid_graph_free(g);
    free(file);
    free(x);
    free(y);
    free(z);
}

/* The edge tables on the GPU: each op hinted to cuda:0, the result against
 * the table (value and sign of zero; NaN by class). */
Test(cuda_dtypes, edge_tables) {
    TC_REQUIRE_GPU();
    for (int k = 0; k < TS_EDGE_COUNT; k++) {
        const ts_edge_table *e = &ts_edge_tables[k];
        for (braid_dtype t = 0; t < BRAID_DTYPE_COUNT_; t++) {
            if (!(e->dtypes & (1u << t))) continue;
            int64_t n = e->n;
            braid_graph *g = braid_graph_new(NULL);
            braid_tensor a = braid_input(g, "a", t, 1, &n);
            braid_tensor y =
                e->binary
                    ? braid_binary(g, e->op, a, braid_input(g, "b", t, 1, &n))
                    : braid_unary(g, e->op, a);
            cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
            tc_hint_all(g, "cuda:0");
            ts_io *io = ts_io_new(g, 1);
            for (int64_t i = 0; i < n; i++) {
                bg_store(t, (void *)io->in[0].data, i, e->x[i]);
                if (e->binary) bg_store(t, (void *)io->in[1].data, i, e->z[i]);
            }
            braid_compile_options o = tc_options();
            uint32_t gpu = 0;
            cr_assert_eq(tc_run(g, &o, io, 1, &gpu), BRAID_OK, "%s",
                         braid_last_error());
            cr_expect_gt(gpu, 0);
            for (int64_t i = 0; i < n; i++) {
                double v = bg_load(t, io->out[0].data, i);
                cr_expect(ts_edge_same(v, e->want[i]),
                          "%s %s(%.17g, %.17g): gpu %.17g, want %.17g",
                          bg_op(e->op)->name, braid_dtype_name(t), e->x[i],
                          e->z[i], v, e->want[i]);
            }
            ts_io_free(io);
            braid_graph_free(g);
        }
    }
}
