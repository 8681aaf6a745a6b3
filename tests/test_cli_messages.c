/* tests/test_cli_messages.c — the messages a new user meets (issue 16 item
 * 7): a wrong --input name lists the inputs, unknown options suggest the
 * nearest, a machine without an NVIDIA driver is told so, a missing GPU is
 * described by the user's nodes (not an internal copy), model files braid
 * cannot read are named, paths and counts read right, and dot -o says
 * what it wrote. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <unistd.h>

#include "braid/braid.h"
#include "support/cli.h"
#include "support/support.h"
#include "tmpfiles.h"

#define EX(name) BRAID_SOURCE_DIR "/examples/graphs/" name

#define CLI(...)                                                               \
    ts_run_cli(BRAID_CLI_PATH, ts_tmpdir, NULL,                                \
               (const char *const[]){__VA_ARGS__, NULL})

TestSuite(cli_messages, .init = ts_tmpdir_setup, .fini = ts_tmpdir_teardown);

Test(cli_messages, wrong_input_name_lists_inputs) {
    ts_cli_result r =
        CLI("run", EX("elementwise_chain.graph"), "--input", "q=nothing.npy");
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "--input q: the graph has no input of that name; "
                            "its inputs: x f32[1048576], y f32[1048576], z "
                            "f32[1048576]\n"),
              "%s", r.err);
    ts_cli_result_free(&r);
}

Test(cli_messages, did_you_mean) {
    static const struct {
        const char *cmd, *typo, *want;
    } cases[] = {
        {"run", "--iteratons", "did you mean --iterations?"},
        {"run", "--chek", "did you mean --check?"},
        {"run", "--devics=cpu", "did you mean --devices?"},
        {"info", "--jsn", "did you mean --json?"},
        {"compile", "--reprot", "did you mean --report?"},
        {"dot", "--pln", "did you mean --plan?"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ts_cli_result r = CLI(cases[k].cmd, EX("mlp.graph"), cases[k].typo);
        TS_EXPECT_STATUS(r, 2);
        cr_assert(strstr(r.err, cases[k].want), "%s %s: %s", cases[k].cmd,
                  cases[k].typo, r.err);
        ts_cli_result_free(&r);
    }
    ts_cli_result r = CLI("run", EX("mlp.graph"), "--frobnicate");
    TS_EXPECT_STATUS(r, 2); /* nothing near: no suggestion */
    cr_assert_null(strstr(r.err, "did you mean"), "%s", r.err);
    ts_cli_result_free(&r);
}

static bool no_driver(void) {
    return braid_cuda_device_count() == 0 &&
           strstr(braid_cuda_status(), "(error 35)") &&
           access("/proc/driver/nvidia/version", F_OK) != 0;
}

Test(cli_messages, no_driver_said_so) {
    if (!no_driver()) cr_skip_test("an NVIDIA driver (or no CUDA build)");
    ts_cli_result r = CLI("version");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "no NVIDIA driver is installed"), "%s", r.out);
    cr_assert_null(strstr(r.out, "insufficient"), "%s", r.out);
    ts_cli_result_free(&r);
}

Test(cli_messages, missing_gpu_names_a_user_node) {
    if (braid_cuda_device_count() > 7) cr_skip_test("cuda:7 exists");
    ts_cli_result r = CLI("run", EX("mlp.graph"), "--devices", "cpu,cuda:7");
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "the plan runs 13 nodes on cuda:7 (the first: %"),
              "%s", r.err);
    cr_assert_null(strstr(r.err, "copy"), "%s", r.err);
    ts_cli_result_free(&r);
}

/* ONNX files are imported (docs/onnx.md): one without a graph says so;
 * other model formats are named as unsupported. */
Test(cli_messages, foreign_model_formats) {
    const char *names[] = {"model.onnx", "model.ONNX", "w.safetensors"};
    const char *wants[] = {"not an ONNX model: 0 graph fields",
                           "not an ONNX model: 0 graph fields",
                           "safetensors files are not supported"};
    for (int k = 0; k < 3; k++) {
        char *path = tf_path(ts_tmpdir, names[k]);
        cr_assert(tf_write_str(path, "\x08\x07\x12\x04onnx"));
        ts_cli_result r = CLI("run", path);
        TS_EXPECT_STATUS(r, 1);
        cr_assert(strstr(r.err, wants[k]), "%s", r.err);
        ts_cli_result_free(&r);
        free(path);
    }
}

Test(cli_messages, paths_and_plurals) {
    char *dir = tf_path(ts_tmpdir, "out/");
    char *trace = tf_path(ts_tmpdir, "t.json");
    char *graph = tf_path(ts_tmpdir, "one.graph");
    cr_assert(tf_write_str(graph, "braid-graph 1\n"
                                  "%x = input f32[4] name=\"x\"\n"
                                  "%y = neg %x : f32[4]\n"
                                  "output \"y\" = %y\n"));
    ts_cli_result r = CLI("run", graph, "--output-dir", dir, "--trace", trace,
                          "--threads", "1");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "out/y.npy\n") && !strstr(r.out, "//"), "%s",
              r.out);
    cr_assert(strstr(r.out, "(1 span on 1 track)"), "%s", r.out);
    ts_cli_result_free(&r);
    /* the library's plan summary */
    braid_graph *g = braid_graph_load(graph, NULL);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    braid_plan_print(p, f);
    fclose(f);
    cr_assert(strstr(text, " 1 queue, 0 events,"), "%s", text);
    free(text);
    braid_plan_free(p);
    braid_graph_free(g);
    free(dir);
    free(trace);
    free(graph);
}

Test(cli_messages, dot_says_what_it_wrote) {
    char *out = tf_path(ts_tmpdir, "g.dot");
    ts_cli_result r = CLI("dot", EX("mlp.graph"), "-o", out);
    TS_EXPECT_STATUS(r, 0);
    char want[512];
    snprintf(want, sizeof want, "wrote %s: the graph of ", out);
    cr_assert(strstr(r.out, want), "%s", r.out);
    ts_cli_result_free(&r);
    r = CLI("dot", EX("mlp.graph"), "--plan", "-o", out);
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, ": the plan of "), "%s", r.out);
    ts_cli_result_free(&r);
    free(out);
}
