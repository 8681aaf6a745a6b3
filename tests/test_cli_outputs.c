/* tests/test_cli_outputs.c — where the `braid` tool writes (graph/outfile.h
 * behind -o, --trace, --output-dir): an output named like a folder is
 * refused with a message that says so, a link is written through and a
 * private plan stays private, and `braid dot` never hands an output name
 * to Graphviz, so a name that looks like one of its options is harmless;
 * the statistics `braid run` prints survive cancellation. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/npy/npy.h"
#include "support/cli.h"
#include "support/golden.h"
#include "tmpfiles.h"

#define EX(name) BRAID_SOURCE_DIR "/examples/graphs/" name
#define CLI(...)                                                               \
    ts_run_cli(BRAID_CLI_PATH, ts_tmpdir, NULL,                                \
               (const char *const[]){__VA_ARGS__, NULL})

TestSuite(cli_outputs, .init = ts_tmpdir_setup, .fini = ts_tmpdir_teardown);

Test(cli_outputs, folder_as_output_says_so) {
    char *sub = tf_path(ts_tmpdir, "plans");
    cr_assert_eq(mkdir(sub, 0755), 0);
    char slash[600];
    snprintf(slash, sizeof slash, "%s/", sub);
    const char *outs[] = {sub, slash};
    for (int i = 0; i < 2; i++) {
        ts_cli_result r = CLI("compile", EX("mlp.graph"), "-o", outs[i]);
        TS_EXPECT_STATUS(r, 1);
        cr_assert(strstr(r.err, "is a directory") && strstr(r.err, outs[i]) &&
                      !strstr(r.err, "Not a directory"),
                  "%s", r.err);
        ts_cli_result_free(&r);
    }
    cr_assert_eq(tf_count_entries(sub), 0, "something was left in %s", sub);
    free(sub);
}

Test(cli_outputs, compile_through_a_link_keeps_link_and_mode) {
    char *real = tf_path(ts_tmpdir, "real.plan");
    char *link = tf_path(ts_tmpdir, "link.plan");
    cr_assert(tf_write_str(real, "old"));
    cr_assert_eq(chmod(real, 0600), 0);
    cr_assert_eq(symlink("real.plan", link), 0);
    ts_cli_result r = CLI("compile", EX("mlp.graph"), "-o", link);
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_assert(S_ISLNK(st.st_mode), "the link was replaced by a file");
    cr_assert_eq(stat(real, &st), 0);
    cr_assert_eq(st.st_mode & 07777, 0600, "mode %o", st.st_mode & 07777);
    r = CLI("info", link);
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    free(link);
    free(real);
}

Test(cli_outputs, dot_output_named_like_an_option) {
    if (system("command -v dot > /dev/null 2>&1") != 0) {
        cr_log_info("Graphviz dot not installed: skipped");
        return;
    }
    /* A relative name that starts with '-': before, the temporary
     * "-Kfoo.svg.XXXXXX" reached dot's command line as a layout option. */
    cr_assert_eq(chdir(ts_tmpdir), 0);
    ts_cli_result r = CLI("dot", EX("mlp.graph"), "-o", "-Kfoo.svg");
    TS_EXPECT_STATUS(r, 0);
    char *svg = ts_read_file("-Kfoo.svg");
    cr_assert(svg && strstr(svg, "<svg"), "no SVG written");
    free(svg);
    ts_cli_result_free(&r);
}

/* The mean of [1, 2, 1e38, -1e38] is 0.75; a plain sum rounds 1e38 + 3
 * back to 1e38 and prints 0. */
Test(cli_outputs, run_statistics_mean_survives_cancellation) {
    char *graph = tf_path(ts_tmpdir, "neg.graph");
    cr_assert(tf_write_str(graph, "braid-graph 1\n"
                                  "%x = input f32[4] name=\"x\"\n"
                                  "%y = neg %x : f32[4]\n"
                                  "output \"y\" = %y\n"));
    char *npy = tf_path(ts_tmpdir, "x.npy");
    const float x[4] = {1, 2, 1e38f, -1e38f};
    const int64_t dims[1] = {4};
    cr_assert_eq(br_npy_write(npy, BRAID_F32, 1, dims, x), BRAID_OK);
    char arg[600];
    snprintf(arg, sizeof arg, "x=%s", npy);
    ts_cli_result r = CLI("run", graph, "--input", arg);
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "mean -0.75"), "%s", r.out);
    ts_cli_result_free(&r);
    free(npy);
    free(graph);
}
