/* tests/test_fold_generators.c — weights made once (issue 16 item 5):
 * fold_generators turns random/iota nodes up to a size into constants at
 * compile time, with the very bits the executors would generate, and the
 * compile report says how many bytes the plan grew by; the CLI's
 * --fold-generators; the mlp demo's runs no longer generate anything. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include "braid/braid.h"
#include "support/cli.h"
#include "support/golden.h"
#include "support/support.h"
#include "tmpfiles.h"

#define MLP BRAID_SOURCE_DIR "/examples/graphs/mlp.graph"
#define W_BYTES (512 * 512 * 4) /* one weight */
#define B_BYTES (512 * 4)       /* one bias */

/* Compiles mlp.graph for the cpu with fold (bytes), runs it on x into y;
 * returns the report's folded bytes and the plan's text. */
static uint64_t run_mlp(size_t fold, const float *x, float *y, char **text) {
    braid_graph *g = braid_graph_load(MLP, NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    o.fold_generators = fold;
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    braid_input_binding in = {"x", x, 256 * 512 * 4};
    braid_output_binding out = {"y", y, 256 * 512 * 4};
    cr_assert_eq(braid_run(e, &in, 1, &out, 1), BRAID_OK, "%s",
                 braid_last_error());
    braid_compile_report r;
    cr_assert_eq(braid_plan_compile_report(p, &r), BRAID_OK);
    size_t len = 0;
    FILE *f = open_memstream(text, &len);
    braid_plan_print(p, f);
    fclose(f);
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
    return r.folded_bytes;
}

Test(fold_generators, same_bits_and_reported_size) {
    static float x[256 * 512], plain[256 * 512], folded[256 * 512],
        some[256 * 512];
    ts_fill_random(BRAID_F32, x, 256 * 512, 5, -1, 1);
    char *t0 = NULL, *t1 = NULL, *t2 = NULL;
    cr_assert_eq(run_mlp(0, x, plain, &t0), 0);
    cr_assert(strstr(t0, "random_normal"), "%s", t0);
    /* every weight and bias */
    cr_assert_eq(run_mlp(W_BYTES, x, folded, &t1), 4 * (W_BYTES + B_BYTES));
    cr_assert_null(strstr(t1, "random_normal"), "%s", t1);
    cr_assert(memcmp(plain, folded, sizeof plain) == 0,
              "folding changed the result");
    /* a budget below a weight: the biases only */
    cr_assert_eq(run_mlp(4096, x, some, &t2), 4 * B_BYTES);
    cr_assert(strstr(t2, "random_normal"), "%s", t2);
    cr_assert(memcmp(plain, some, sizeof plain) == 0);
    free(t0);
    free(t1);
    free(t2);
}

TestSuite(fold_cli, .init = ts_tmpdir_setup, .fini = ts_tmpdir_teardown);

#define CLI(...)                                                               \
    ts_run_cli(BRAID_CLI_PATH, ts_tmpdir, NULL,                                \
               (const char *const[]){__VA_ARGS__, NULL})

Test(fold_cli, compile_report_and_profile) {
    char *plan = tf_path(ts_tmpdir, "m.plan");
    ts_cli_result r = CLI("compile", MLP, "-o", plan, "--devices", "cpu",
                          "--fold-generators", "1M", "--report");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "generators folded into constants: 4202496 bytes"),
              "%s", r.out);
    ts_cli_result_free(&r);
    size_t len = 0;
    free(ts_read_file_len(plan, &len));
    cr_assert_gt(len, 4202496, "the plan file holds the weights");
    /* the loaded plan runs no generator: nothing random in the profile */
    r = CLI("run", plan, "--profile", "--check");
    TS_EXPECT_STATUS(r, 0);
    cr_assert_null(strstr(r.out, "random_normal"), "%s", r.out);
    cr_assert(strstr(r.out, "matmul"), "%s", r.out);
    ts_cli_result_free(&r);
    r = CLI("run", MLP, "--devices", "cpu", "--fold-generators", "0");
    TS_EXPECT_STATUS(r, 2);
    ts_cli_result_free(&r);
    free(plan);
}

Test(fold_cli, demo_generates_nothing_per_run) {
    ts_cli_result r = ts_run_cli(BRAID_EXAMPLES_DIR "/mlp", ts_tmpdir, NULL,
                                 (const char *const[]){"mlp", NULL});
    TS_EXPECT_STATUS(r, 0);
    cr_assert_null(strstr(r.out, "random_normal"), "plan: %s", r.out);
    cr_assert(strstr(r.out, "PASS"), "%s", r.out);
    ts_cli_result_free(&r);
}
