/* tests/test_labels.c — a .graph file's labels stay as node names (issue
 * 16 item 6): %wq names its node "wq" (unless name= says otherwise, and
 * not for numeric labels or inputs), and the name shows in --dump-after,
 * the profile table, the trace and DOT. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include "braid/braid.h"
#include "support/cli.h"
#include "support/golden.h"
#include "support/support.h"
#include "tmpfiles.h"

TestSuite(labels, .init = ts_tmpdir_setup, .fini = ts_tmpdir_teardown);

static const char text[] = "braid-graph 1\n"
                           "%x = input f32[64,64] name=\"x\"\n"
                           "%wq = random_normal f32[64,64] seed=3 mean=0 "
                           "stddev=0.1\n"
                           "%mm0 = matmul %x, %wq : f32[64,64]\n"
                           "%7 = exp %mm0\n"
                           "%act = tanh %7 name=\"hidden\"\n"
                           "output \"y\" = %act\n";

static char *write_graph(void) {
    char *path = tf_path(ts_tmpdir, "l.graph");
    cr_assert(tf_write_str(path, text));
    return path;
}

Test(labels, become_names) {
    char *path = write_graph();
    braid_graph *g = braid_graph_load(path, NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    char *printed = NULL;
    size_t len = 0;
    cr_assert_eq(braid_graph_print(g, &printed, &len), BRAID_OK);
    /* canonical ids, names kept */
    cr_assert(strstr(printed, "%1 = random_normal f32[64,64] seed=3 mean=0 "
                              "stddev=0.1 name=\"wq\""),
              "%s", printed);
    cr_assert(strstr(printed, "%2 = matmul %0, %1 name=\"mm0\""), "%s",
              printed);
    cr_assert(strstr(printed, "%3 = exp %2 : f32[64,64]\n"),
              "numeric label: no name\n%s", printed);
    cr_assert(strstr(printed, "name=\"hidden\""), "%s", printed);
    cr_assert_null(strstr(printed, "\"act\""), "name= wins\n%s", printed);
    free(printed);
    braid_graph_free(g);
    free(path);
}

Test(labels, shown_by_dump_profile_trace_and_dot) {
    char *path = write_graph();
    char *trace = tf_path(ts_tmpdir, "t.json");
    ts_cli_result r = ts_run_cli(
        BRAID_CLI_PATH, ts_tmpdir, NULL,
        (const char *const[]){"run", path, "--devices", "cpu", "--no-fuse",
                              "--dump-after", "schedule", "--profile",
                              "--trace", trace, NULL});
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.err, "name=\"mm0\""), "dump: %s", r.err);
    cr_assert(strstr(r.out, "mm0"), "profile: %s", r.out);
    cr_assert(strstr(r.out, "hidden"), "profile: %s", r.out);
    ts_cli_result_free(&r);
    char *json = ts_read_file_len(trace, &(size_t){0});
    cr_assert(json && strstr(json, "mm0"), "trace: %s", json);
    free(json);
    r = ts_run_cli(BRAID_CLI_PATH, ts_tmpdir, NULL,
                   (const char *const[]){"dot", path, NULL});
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "wq") && strstr(r.out, "mm0"), "%s", r.out);
    ts_cli_result_free(&r);
    free(trace);
    free(path);
}
