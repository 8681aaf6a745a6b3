/* tests/test_host_memory.c — braid_host_alloc / braid_host_free: the
 * memory is usable (aligned, writable, bindable as a plan's input and
 * output with results matching the reference evaluator on random inputs),
 * absurd sizes fail with a message instead of crashing, NULL frees are
 * fine. On a GPU machine the same calls return pinned memory; the GPU
 * copy paths that read it are covered by tests/test_cuda_copies.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "braid/braid.h"
#include "tests/support/golden.h"
#include "tests/support/support.h"

#define N 4096

Test(host_memory, aligned_and_writable) {
    for (size_t bytes = 0; bytes < 70000; bytes = bytes * 3 + 1) {
        unsigned char *p = braid_host_alloc(bytes);
        cr_assert_not_null(p, "braid_host_alloc(%zu): %s", bytes,
                           braid_last_error());
        cr_assert_eq((uintptr_t)p % 64, 0, "not 64-byte aligned");
        memset(p, 0xa5, bytes);
        for (size_t i = 0; i < bytes; i += 997) cr_assert_eq(p[i], 0xa5);
        braid_host_free(p);
    }
    braid_host_free(NULL);
}

Test(host_memory, absurd_size_fails_cleanly) {
    void *p = braid_host_alloc(SIZE_MAX - 8);
    cr_assert_null(p);
    cr_assert(strstr(braid_last_error(), "braid_host_alloc") != NULL,
              "message: %s", braid_last_error());
}

/* y = exp(x) * 0.5 + x through a CPU plan, with x and y in host memory
 * from braid_host_alloc, against the reference evaluator. */
Test(host_memory, bound_as_input_and_output) {
    braid_graph *g = braid_graph_new(NULL);
    int64_t dims[1] = {N};
    braid_tensor x = braid_input(g, "x", BRAID_F32, 1, dims);
    braid_tensor y = braid_add(
        g, braid_mul(g, braid_exp(g, x), braid_fill(g, BRAID_F32, 0, NULL, 0.5)), x);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_last_error());
    float *in = braid_host_alloc(N * sizeof(float));
    float *out = braid_host_alloc(N * sizeof(float));
    float ref[N];
    cr_assert(in && out);
    ts_fill_random(BRAID_F32, in, N, 42, -2, 2);
    braid_input_binding b = {"x", in, N * sizeof(float)};
    braid_output_binding o = {"y", out, N * sizeof(float)};
    braid_output_binding r = {"y", ref, sizeof ref};
    braid_compile_options opts = ts_compile_options("cpu", 0);
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    cr_assert_eq(braid_compile(g, &opts, &p), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_run(e, &b, 1, &o, 1), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert_eq(braid_reference_run(g, &b, 1, &r, 1), BRAID_OK);
    double atol, rtol;
    ts_tolerance(BRAID_F32, &atol, &rtol);
    for (int i = 0; i < N; i++)
        cr_assert(fabs((double)out[i] - ref[i]) <= atol + rtol * fabs(ref[i]),
                  "y[%d] = %g, reference %g", i, (double)out[i],
                  (double)ref[i]);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    braid_host_free(in);
    braid_host_free(out);
}
