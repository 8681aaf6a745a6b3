/* tests/test_seed_examples.c — the seed example programs (examples/seed00*.c)
 * run in their quick mode, exit 0 and print their explanations. On a
 * machine without a GPU each must say so and run its CPU part. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "braid/braid.h"
#include "support/cli.h"

TestSuite(seed_examples, .init = ts_tmpdir_setup, .fini = ts_tmpdir_teardown,
          .timeout = 300);

/* Runs examples/<name> --quick and checks every needle is in its stdout;
 * without a GPU also the "no GPU" line, with one the "devices:" line. */
static void expect_lines(const char *name, const char *const *needles) {
    char prog[1024];
    snprintf(prog, sizeof prog, "%s/%s", BRAID_EXAMPLES_DIR, name);
    cr_assert_eq(access(prog, X_OK), 0, "%s not built", prog);
    const char *const args[] = {"--quick", NULL};
    ts_cli_result r = ts_run_cli(prog, ts_tmpdir, NULL, args);
    cr_log_info("%s --quick:\n%s", name, r.out);
    TS_EXPECT_STATUS(r, 0);
    for (size_t k = 0; needles[k]; k++)
        cr_assert(strstr(r.out, needles[k]), "%s: '%s' missing:\n%s", name,
                  needles[k], r.out);
    const char *device_line = braid_cuda_device_count() > 0
                                  ? "devices: "
                                  : "no GPU: braid_cuda_status() says";
    cr_assert(strstr(r.out, device_line), "%s: '%s' missing:\n%s", name,
              device_line, r.out);
    ts_cli_result_free(&r);
}

static bool gpu(void) { return braid_cuda_device_count() > 0; }

Test(seed_examples, seed000_matmul_copy) {
    const char *const common[] = {
        "seed 000:", "A: a and b made by braid_random_uniform",
        "B: a and b made on the host", "first call ", "steady state ",
        "agree (same random numbers on any device)", "what this shows:",
        NULL};
    expect_lines("seed000_matmul_copy", common);
}

Test(seed_examples, seed001_cpu_gpu_overlap) {
    const char *const with_gpu[] = {
        "seed 001:", "CPU alone", "GPU alone", "one after the other",
        "together (one plan", "what this shows:",
        "the same as the separate plans", NULL};
    const char *const without[] = {
        "seed 001:", "CPU chain alone", "both chains, compiled for \"cpu\"",
        "what this shows:", "the same as the CPU-only plan", NULL};
    expect_lines("seed001_cpu_gpu_overlap", gpu() ? with_gpu : without);
}

Test(seed_examples, seed002_stream_pipeline) {
    const char *const with_gpu[] = {
        "seed 002:", "sequential plan:", "chunked    plan:",
        "pageable  sequential", "pageable  chunked", "what this shows:",
        "PASS", NULL};
    /* the plans are printed without a GPU too: the chunked one has chunk
       nodes, the sequential one none */
    const char *const without[] = {
        "seed 002:", "sequential plan:   4 nodes, 0 chunk nodes",
        "chunked    plan:", "cpu        plan:", "what this shows:", "PASS",
        NULL};
    expect_lines("seed002_stream_pipeline", gpu() ? with_gpu : without);
}

Test(seed_examples, seed003_async_timing) {
    const char *const common[] = {
        "seed 003:", "the wrong way:", "braid_run_async (\"the matmuls\"):",
        "braid_wait (\"the copy back\"):", "right way 1:", "braid_run: ",
        "right way 2: braid's profiler", "per node (sorted by total time):",
        "matmul", "per run: matmuls ", "what this shows:", NULL};
    expect_lines("seed003_async_timing", common);
}

Test(seed_examples, seed004_placement) {
    const char *needles[12] = {
        "seed 004:", "part 1:", "copies inserted by braid: 2",
        "part 2: k = h*w2 hinted \"cuda:1\"", "PASS", NULL};
    if (braid_cuda_device_count() < 2) {
        /* fewer than two GPUs: both clear errors, then the run without the
           hint */
        needles[5] =
            "has device hint \"cuda:1\", which is not among the plan's "
            "devices";
        needles[6] = "braid_exec_new returns \"device error\"";
        needles[7] = "without the hint, compiled for the devices present:";
    }
    expect_lines("seed004_placement", needles);
}
