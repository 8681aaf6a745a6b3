/* tests/test_cli_plan.c — plan files through the command-line tool
 * (BRAID_CLI_PATH), in a temporary directory per test: `braid compile`
 * writes a plan file with one summary line; `braid info`, `braid run` and
 * `braid dot` take it (told from a .graph file by its magic bytes, not its
 * name), info showing where it came from; compile options given with a
 * plan file compile its graph again. Error cases: a missing file, a
 * corrupt or truncated plan, an output that is the input, a bad --arch.
 * GPU plans (cpu,cuda:0) are compiled, inspected and drawn here, not run. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include "support/cli.h"
#include "support/golden.h"
#include "support/support.h"
#include "tmpfiles.h"

#define EX(name) BRAID_SOURCE_DIR "/examples/graphs/" name

static const char *const examples[] = {
    EX("mlp.graph"), EX("attention_block.graph"), EX("elementwise_chain.graph"),
    EX("softmax_layernorm.graph")};
#define NEXAMPLES (sizeof examples / sizeof examples[0])

#define CLI(...)                                                               \
    ts_run_cli(BRAID_CLI_PATH, ts_tmpdir, NULL,                                \
               (const char *const[]){__VA_ARGS__, NULL})

/* Each test: a fresh folder, and a kernel cache inside it (so what NVRTC
 * compiles here never depends on, nor fills, the user's cache). */
static void setup(void) {
    ts_tmpdir_setup();
    char *cache = tf_path(ts_tmpdir, "kernel-cache");
    cr_assert_not_null(cache);
    setenv("BRAID_CACHE_DIR", cache, 1);
    free(cache);
}

static void teardown(void) {
    unsetenv("BRAID_CACHE_DIR");
    ts_tmpdir_teardown();
}

TestSuite(cli_plan, .init = setup, .fini = teardown);

/* Compiles graph into tmpdir/name for devices and arch; checks the one
 * summary line and the magic; returns the path. */
static char *compile_to(const char *graph, const char *name,
                        const char *devices, const char *arch) {
    char *out = tf_path(ts_tmpdir, name);
    ts_cli_result r =
        CLI("compile", graph, "-o", out, "--devices", devices, "--arch", arch);
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strncmp(r.out, "wrote ", 6) == 0, "%s", r.out);
    cr_assert(strstr(r.out, out), "%s", r.out);
    cr_assert(strstr(r.out, " nodes, ") && strstr(r.out, " bytes ("), "%s",
              r.out);
    /* one line, then only the note for a listed GPU that got no work */
    const char *nl = strchr(r.out, '\n');
    cr_assert(nl && (nl[1] == '\0' ||
                     strncmp(nl + 1, "note: nothing runs on cuda:", 27) == 0),
              "not one line:\n%s", r.out);
    ts_cli_result_free(&r);
    size_t len = 0;
    char *data = ts_read_file_len(out, &len);
    cr_assert(data && len > 64 && memcmp(data, "BRAIDPLN", 8) == 0,
              "%s is no plan file", out);
    free(data);
    return out;
}

/* The number after `"key": ` in JSON text (first occurrence). */
static long long json_int(const char *json, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    const char *s = strstr(json, pat);
    cr_assert_not_null(s, "no %s in\n%s", key, json);
    return strtoll(s + strlen(pat), NULL, 10);
}

/* ---- cpu plans: compile → info → run --check ----------------------------- */

Test(cli_plan, compile_info_run_every_example_cpu) {
    for (size_t i = 0; i < NEXAMPLES; i++) {
        char *plan = compile_to(examples[i], "cpu.plan", "cpu", "none");
        cr_log_info("%s", examples[i]);

        ts_cli_result r = CLI("info", plan);
        TS_EXPECT_STATUS(r, 0);
        cr_assert(strstr(r.out, "plan file: "), "%s", r.out);
        cr_assert(strstr(r.out, "compiled by braid "), "%s", r.out);
        cr_assert(strstr(r.out, "kernels: none"), "%s", r.out);
        ts_cli_result_free(&r);

        /* The loaded plan is the one the graph compiles to. */
        ts_cli_result a = CLI("info", plan, "--json");
        ts_cli_result b =
            CLI("info", examples[i], "--json", "--devices", "cpu");
        TS_EXPECT_STATUS(a, 0);
        TS_EXPECT_STATUS(b, 0);
        static const char *const keys[] = {"graph_nodes", "nodes",
                                           "fused_kernels", "arena_bytes"};
        for (size_t k = 0; k < 4; k++)
            cr_assert_eq(json_int(a.out, keys[k]), json_int(b.out, keys[k]),
                         "%s: %s", examples[i], keys[k]);
        cr_assert(strstr(a.out, "\"plan_file\": {\"bytes\": "), "%s", a.out);
        cr_assert_null(strstr(b.out, "\"plan_file\""), "%s", b.out);
        ts_cli_result_free(&a);
        ts_cli_result_free(&b);

        r = CLI("run", plan, "--check", "--seed", "3");
        TS_EXPECT_STATUS(r, 0);
        cr_assert(strstr(r.out, "check "), "%s", r.out);
        cr_assert_null(strstr(r.out, "FAIL"), "%s", r.out);
        ts_cli_result_free(&r);
        free(plan);
    }
}

/* A plan file is told by its contents: any name works, and a .graph text
 * named *.plan is still a graph. */
Test(cli_plan, detected_by_magic_not_name) {
    char *plan = compile_to(EX("mlp.graph"), "model.bin", "cpu", "none");
    ts_cli_result r = CLI("info", plan);
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "plan file: "), "%s", r.out);
    ts_cli_result_free(&r);

    char *text = ts_read_file(EX("mlp.graph"));
    char *fake = tf_path(ts_tmpdir, "text.plan");
    cr_assert(tf_write_str(fake, text));
    r = CLI("info", fake, "--devices", "cpu");
    TS_EXPECT_STATUS(r, 0);
    cr_assert_null(strstr(r.out, "plan file: "), "%s", r.out);
    ts_cli_result_free(&r);
    free(fake);
    free(text);
    free(plan);
}

/* Compile options with a plan file: its embedded graph is compiled again,
 * and stderr says so. */
Test(cli_plan, compile_options_recompile_the_graph) {
    char *plan = compile_to(EX("mlp.graph"), "mlp.plan", "cpu", "none");
    ts_cli_result r = CLI("info", plan, "--no-fuse", "--json");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.err, "compiling its graph again"), "%s", r.err);
    cr_assert_eq(json_int(r.out, "fused_kernels"), 0, "%s", r.out);
    cr_assert(strstr(r.out, "\"recompiled\": true"), "%s", r.out);
    ts_cli_result_free(&r);

    r = CLI("info", plan);
    TS_EXPECT_STATUS(r, 0);
    cr_assert_eq(r.err[0], '\0', "%s", r.err);
    ts_cli_result_free(&r);
    free(plan);
}

/* `braid compile` on a plan file compiles its graph again. */
Test(cli_plan, compile_a_plan_file) {
    char *plan = compile_to(EX("mlp.graph"), "a.plan", "cpu", "none");
    char *again = compile_to(plan, "b.plan", "cpu", "none");
    ts_cli_result r = CLI("run", again, "--check");
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    free(again);
    free(plan);
}

/* ---- GPU plans: compile, info, dot (no GPU needed) ------------------------
 */

Test(cli_plan, gpu_plans_info_and_dot) {
    for (size_t i = 0; i < NEXAMPLES; i++) {
        char *plan = compile_to(examples[i], "gpu.plan", "cpu,cuda:0", "none");
        ts_cli_result r = CLI("info", plan);
        TS_EXPECT_STATUS(r, 0);
        cr_assert(strstr(r.out, "cuda:0"), "%s", r.out);
        cr_assert(strstr(r.out, "plan file: "), "%s", r.out);
        ts_cli_result_free(&r);

        r = CLI("dot", plan);
        TS_EXPECT_STATUS(r, 0);
        cr_assert(strstr(r.out, "digraph"), "%s", r.out);
        cr_assert_null(strstr(r.out, "cluster_q"), "graph view: %s", r.out);
        ts_cli_result_free(&r);

        r = CLI("dot", plan, "--plan");
        TS_EXPECT_STATUS(r, 0);
        cr_assert(strstr(r.out, "cluster_q"), "%s", r.out);
        cr_assert(strstr(r.out, "cuda:0"), "%s", r.out);
        ts_cli_result_free(&r);
        free(plan);
    }
}

/* A graph whose work is hinted to cuda:0 (generated kernels). */
static char *hinted_graph(void) {
    static const char text[] =
        "braid-graph 1\n"
        "%x = input f32[4096] name=\"x\"\n"
        "%y = input f32[4096] name=\"y\"\n"
        "%a = mul %x, %y device=\"cuda:0\" : f32[4096]\n"
        "%b = exp %a device=\"cuda:0\" : f32[4096]\n"
        "%s = sum %b axes=[0] device=\"cuda:0\" : f32[]\n"
        "output \"out\" = %b\n"
        "output \"total\" = %s\n";
    char *path = tf_path(ts_tmpdir, "hinted.graph");
    cr_assert(tf_write_str(path, text));
    return path;
}

/* --arch none: the plan keeps the kernels' source only. */
Test(cli_plan, gpu_plan_source_only) {
    char *graph = hinted_graph();
    char *plan = compile_to(graph, "src.plan", "cpu,cuda:0", "none");
    ts_cli_result r = CLI("info", plan);
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "kernels: ") && strstr(r.out, ", CUDA source "),
              "%s", r.out);
    cr_assert(strstr(r.out, "no binaries (compiled when run)"), "%s", r.out);
    ts_cli_result_free(&r);
    r = CLI("info", plan, "--json");
    TS_EXPECT_STATUS(r, 0);
    cr_assert_geq(json_int(r.out, "kernels"), 1, "%s", r.out);
    cr_assert(strstr(r.out, "\"archs\": []"), "%s", r.out);
    ts_cli_result_free(&r);
    free(plan);
    free(graph);
}

/* One NVRTC build for sm_90: info lists the stored CUBIN and PTX. */
Test(cli_plan, gpu_plan_with_sm90_binaries) {
    char *out = tf_path(ts_tmpdir, "mlp90.plan");
    char *graph = hinted_graph();
    ts_cli_result r = CLI("compile", graph, "-o", out, "--devices",
                          "cpu,cuda:0", "--arch=sm_90", "--report");
    TS_EXPECT_STATUS(r, 0);
#ifdef BRAID_HAVE_CUDA
    cr_assert(strstr(r.out, "GPU kernels for sm_90"), "%s", r.out);
#else
    cr_assert(strstr(r.out, "(source only)"), "%s", r.out);
#endif
    ts_cli_result_free(&r);
    r = CLI("info", out);
    TS_EXPECT_STATUS(r, 0);
#ifdef BRAID_HAVE_CUDA
    cr_assert(strstr(r.out, "sm_90: cubin "), "%s", r.out);
    cr_assert_null(strstr(r.out, "cubin none"), "%s", r.out);
#endif
    ts_cli_result_free(&r);
    r = CLI("info", out, "--json");
    TS_EXPECT_STATUS(r, 0);
#ifdef BRAID_HAVE_CUDA
    cr_assert(strstr(r.out, "\"archs\": [{\"sm\": 90, \"cubin_bytes\": "), "%s",
              r.out);
#endif
    ts_cli_result_free(&r);
    free(graph);
    free(out);
}

/* Running a GPU plan on a machine without the GPU fails with a message
 * naming the device (exit 1), like running the graph compiled for it. */
Test(cli_plan, run_gpu_plan_without_gpu) {
    if (braid_cuda_device_count() > 0) cr_skip_test("a GPU is present");
    char *graph = hinted_graph();
    char *plan = compile_to(graph, "g.plan", "cpu,cuda:0", "none");
    ts_cli_result r = CLI("run", plan);
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "cuda"), "%s", r.err);
    cr_assert(strstr(r.err, "--cpu-fallback"), "no hint: %s", r.err);
    ts_cli_result_free(&r);
    /* with --cpu-fallback the embedded graph runs on the cpu, checked
       against the reference, and the user is told */
    r = CLI("run", plan, "--cpu-fallback", "--check");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.err, "compiled again for the cpu"), "%s", r.err);
    cr_assert(strstr(r.out, ": ok"), "%s", r.out);
    ts_cli_result_free(&r);
    free(plan);
    free(graph);
}

/* ---- errors ----------------------------------------------------------------
 */

Test(cli_plan, missing_file) {
    char *missing = tf_path(ts_tmpdir, "nope.plan");
    static const char *const cmds[] = {"info", "run", "dot", "compile"};
    for (size_t i = 0; i < 4; i++) {
        ts_cli_result r = CLI(cmds[i], missing);
        TS_EXPECT_STATUS(r, 1);
        cr_assert(strstr(r.err, "nope.plan"), "%s: %s", cmds[i], r.err);
        ts_cli_result_free(&r);
    }
    free(missing);
}

/* A real plan cut short, and one with a byte flipped: exit 1 with the
 * loader's message, never a crash. */
Test(cli_plan, corrupt_and_truncated_plans) {
    char *plan = compile_to(EX("mlp.graph"), "good.plan", "cpu", "none");
    size_t len = 0;
    char *data = ts_read_file_len(plan, &len);
    cr_assert_not_null(data);
    char *bad = tf_path(ts_tmpdir, "bad.plan");
    static const size_t cuts[] = {8, 64, 100};
    for (size_t i = 0; i < 4; i++) {
        if (i < 3) {
            cr_assert(tf_write(bad, data, cuts[i] < len ? cuts[i] : len / 2));
        } else { /* whole, one byte flipped in the middle */
            data[len / 2] ^= 0x5a;
            cr_assert(tf_write(bad, data, len));
        }
        static const char *const cmds[] = {"info", "run", "dot"};
        for (size_t c = 0; c < 3; c++) {
            ts_cli_result r = CLI(cmds[c], bad);
            TS_EXPECT_STATUS(r, 1);
            cr_assert(strstr(r.err, "plan file"), "%s: %s", cmds[c], r.err);
            ts_cli_result_free(&r);
        }
    }
    free(bad);
    free(data);
    free(plan);
}

Test(cli_plan, output_equal_to_input_refused) {
    char *graph = tf_path(ts_tmpdir, "m.graph");
    char *text = ts_read_file(EX("mlp.graph"));
    cr_assert(tf_write_str(graph, text));
    ts_cli_result r = CLI("compile", graph, "-o", graph, "--devices", "cpu");
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "refusing to overwrite"), "%s", r.err);
    ts_cli_result_free(&r);
    char *after = ts_read_file(graph);
    cr_assert_str_eq(after, text, "the graph file was changed");
    free(after);

    char *plan = compile_to(graph, "m.plan", "cpu", "none");
    r = CLI("compile", plan, "--output", plan);
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "refusing to overwrite"), "%s", r.err);
    ts_cli_result_free(&r);
    free(plan);
    free(text);
    free(graph);
}

/* Without -o, FILE.graph gives FILE.plan next to it. */
Test(cli_plan, default_output_name) {
    char *graph = tf_path(ts_tmpdir, "net.graph");
    char *text = ts_read_file(EX("elementwise_chain.graph"));
    cr_assert(tf_write_str(graph, text));
    ts_cli_result r = CLI("compile", graph, "--devices", "cpu");
    TS_EXPECT_STATUS(r, 0);
    char *plan = tf_path(ts_tmpdir, "net.plan");
    cr_assert(strstr(r.out, plan), "%s", r.out);
    struct stat st;
    cr_assert_eq(stat(plan, &st), 0);
    ts_cli_result_free(&r);
    free(plan);
    free(text);
    free(graph);
}

Test(cli_plan, bad_arch_is_a_usage_error) {
    static const char *const bad[] = {"sm_9x", "", "sm_90,", "compute_90"};
    for (size_t i = 0; i < 4; i++) {
        char *out = tf_path(ts_tmpdir, "x.plan");
        ts_cli_result r =
            CLI("compile", EX("mlp.graph"), "-o", out, "--arch", bad[i]);
        TS_EXPECT_STATUS(r, 2);
        cr_assert(strstr(r.err, "--arch"), "%s", r.err);
        struct stat st;
        cr_assert_neq(stat(out, &st), 0, "%s written for --arch '%s'", out,
                      bad[i]);
        ts_cli_result_free(&r);
        r = CLI("info", EX("mlp.graph"), "--arch", bad[i]);
        TS_EXPECT_STATUS(r, 2);
        ts_cli_result_free(&r);
        free(out);
    }
}

/* `braid run --save-plan`: the plan as it ran goes to a file that runs
 * again to the same outputs; a file that cannot be written is an error
 * naming it, and nothing is left behind. */
Test(cli_plan, run_save_plan) {
    char *plan = tf_path(ts_tmpdir, "ran.plan");
    ts_cli_result r =
        CLI("run", EX("mlp.graph"), "--devices", "cpu", "--save-plan", plan);
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "saved the plan to "), "%s", r.out);
    const char *a = strstr(r.out, "output y ");
    cr_assert(a, "%s", r.out);
    char first[256];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(a, "\n"), a);
    ts_cli_result_free(&r);
    r = CLI("run", plan);
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, first), "the saved plan's run: %s\nfirst: %s",
              r.out, first);
    ts_cli_result_free(&r);
    char *bad = tf_path(ts_tmpdir, "no-such-dir/x.plan");
    r = CLI("run", EX("mlp.graph"), "--devices", "cpu", "--save-plan", bad);
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "no-such-dir/x.plan"), "%s", r.err);
    ts_cli_result_free(&r);
    r = CLI("run", EX("mlp.graph"), "--save-plan", "");
    TS_EXPECT_STATUS(r, 2);
    ts_cli_result_free(&r);
    free(bad);
    free(plan);
}
