/* tests/test_cuda_dtypes.c — the integer storage dtypes on a GPU
 * (docs/ops.md, "Integer dtypes"): i64 data movement, eq/ne and where on
 * values beyond 2^53 (bit-exact, expected values computed here since the
 * reference's doubles cannot hold them), widening casts on the GPU, and a
 * narrowing cast from i64 that placement keeps on the cpu, where a value
 * out of range fails the run with its element. Skipped without a CUDA
 * device. Random-shape i64 cases against the reference are in
 * test_cuda_ops.c (eq/ne, where, casts) and test_cuda_structural.c (shape
 * ops, fill), through TS_ALL. */
#include <math.h>

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

/* i64 ids narrowed to i32 (on the cpu), then used on the GPU; a value out
 * of range fails the run naming the element. */
Test(cuda_dtypes, checked_cast_on_cpu_feeds_gpu) {
    TC_REQUIRE_GPU();
    int64_t n = 1000;
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_I64, 1, (int64_t[]){n});
    braid_tensor i = braid_cast(g, x, BRAID_I32);
    braid_tensor y = braid_add(g, braid_mul(g, i, i), i);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    int64_t *xv = malloc((size_t)n * sizeof *xv);
    int32_t *out = malloc((size_t)n * sizeof *out);
    cr_assert(xv && out);
    for (int64_t k = 0; k < n; k++)
        xv[k] = k * 1234567 - 600000000;
    uint32_t gpu;
    cr_assert_eq(run_gpu(g, xv, (size_t)n * 8, out, (size_t)n * 4, &gpu),
                 BRAID_OK, "%s", braid_last_error());
    cr_expect_gt(gpu, 0);
    for (int64_t k = 0; k < n; k++) {
        uint32_t v = (uint32_t)(int32_t)xv[k];
        cr_expect_eq(out[k], (int32_t)(v * v + v), "element %lld",
                     (long long)k);
    }
    xv[777] = (int64_t)INT32_MAX + 1;
    cr_assert_eq(run_gpu(g, xv, (size_t)n * 8, out, (size_t)n * 4, &gpu),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(braid_last_error(), "element 777"), "%s",
              braid_last_error());
    free(xv);
    free(out);
    braid_graph_free(g);
}
