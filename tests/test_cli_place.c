/* tests/test_cli_place.c — where nodes go and what a plan needs (issue 16
 * items 1-3): the placement record (braid_plan_placement_get) and its
 * `--verbose` views; `--devices cuda:0` (no cpu listed) putting every node
 * a GPU can run on the GPU; the note when a listed GPU gets nothing; a
 * plan file needing only the devices it uses; `run PLAN --devices cpu`
 * compiling the embedded graph again without a device check; `--arch`
 * warnings and refusals. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <math.h>

#include "braid/braid.h"
#include "support/cli.h"
#include "support/json.h"
#include "support/support.h"
#include "tmpfiles.h"

#define EX(name) BRAID_SOURCE_DIR "/examples/graphs/" name

#define CLI(...)                                                               \
    ts_run_cli(BRAID_CLI_PATH, ts_tmpdir, NULL,                                \
               (const char *const[]){__VA_ARGS__, NULL})

static void setup(void) {
    ts_tmpdir_setup();
    char *cache = tf_path(ts_tmpdir, "kernel-cache");
    setenv("BRAID_CACHE_DIR", cache, 1);
    free(cache);
}

static void teardown(void) {
    unsetenv("BRAID_CACHE_DIR");
    ts_tmpdir_teardown();
}

TestSuite(cli_place, .init = setup, .fini = teardown);

/* `braid info FILE --json --verbose ARGS...`, parsed. */
static ts_json *info_json(const char *file, const char *devices) {
    ts_cli_result r = CLI("info", file, "--json", "--verbose", "--devices",
                          devices, "--arch", "none");
    TS_EXPECT_STATUS(r, 0);
    char err[128];
    ts_json *j = ts_json_parse(r.out, strlen(r.out), err, sizeof err);
    cr_assert_not_null(j, "%s\n%s", err, r.out);
    ts_cli_result_free(&r);
    return j;
}

static const char *str(const ts_json *o, const char *key) {
    const ts_json *v = ts_json_get(o, key);
    cr_assert(v && v->kind == TS_JSON_STRING, "no string %s", key);
    return v->string;
}

/* Every cost-model decision took the cheapest device of its own record. */
Test(cli_place, cost_model_choices_are_the_cheapest) {
    const char *files[] = {EX("mlp.graph"), EX("attention_block.graph")};
    for (size_t f = 0; f < 2; f++) {
        ts_json *j = info_json(files[f], "cpu,cuda:0");
        const ts_json *pl = ts_json_get(j, "placement");
        cr_assert(pl && pl->kind == TS_JSON_ARRAY && pl->n > 0);
        size_t costed = 0;
        for (size_t i = 0; i < pl->n; i++) {
            const ts_json *e = &pl->items[i];
            const ts_json *cost = ts_json_get(e, "cost_s");
            if (strcmp(str(e, "reason"), "cost model: cheapest device"))
                continue;
            cr_assert(cost && cost->n == 2, "%s", files[f]);
            const ts_json *mine = ts_json_get(cost, str(e, "device"));
            for (size_t d = 0; d < cost->n; d++)
                cr_assert(mine->number <= cost->items[d].number * (1 + 1e-6),
                          "%s node %g on %s costs %g, %s %g", files[f],
                          ts_json_get(e, "node")->number, str(e, "device"),
                          mine->number, cost->keys[d], cost->items[d].number);
            costed++;
        }
        cr_assert_gt(costed, 3, "%s", files[f]);
        ts_json_free(j);
    }
}

/* attention_block is small: the cost model keeps it on the cpu, and info
 * says so and how to change it, per node with --verbose. */
Test(cli_place, idle_gpu_is_explained) {
    ts_cli_result r = CLI("info", EX("attention_block.graph"), "--devices",
                          "cpu,cuda:0", "--verbose");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "cuda:0 (0 nodes"), "%s", r.out);
    cr_assert(strstr(r.out, "note: nothing runs on cuda:0: the cost model"),
              "%s", r.out);
    cr_assert(strstr(r.out, "--devices cuda:0"), "%s", r.out);
    cr_assert(strstr(r.out, "cost model: cheapest device; cpu "), "%s", r.out);
    cr_assert(strstr(r.out, "%0 input x"), "%s", r.out);
    ts_cli_result_free(&r);
    r = CLI("info", EX("mlp.graph"), "--devices", "cpu,cuda:0");
    TS_EXPECT_STATUS(r, 0); /* mlp's matmuls go to the GPU: no note */
    cr_assert_null(strstr(r.out, "note: nothing runs"), "%s", r.out);
    ts_cli_result_free(&r);
}

/* --devices cuda:0 (and --device 0): every node but host data on the GPU. */
Test(cli_place, gpu_without_cpu_takes_everything) {
    const char *lists[] = {"cuda:0", " cuda:0 "};
    for (size_t k = 0; k < 2; k++) {
        ts_json *j = info_json(EX("attention_block.graph"), lists[k]);
        const ts_json *pl = ts_json_get(j, "placement");
        size_t gpu = 0;
        for (size_t i = 0; i < pl->n; i++) {
            const ts_json *e = &pl->items[i];
            const char *op = str(e, "op"), *dev = str(e, "device");
            if (!strcmp(op, "input") || !strcmp(op, "constant")) {
                cr_assert_str_eq(dev, "cpu");
                continue;
            }
            cr_assert_str_eq(dev, "cuda:0", "node %g (%s)",
                             ts_json_get(e, "node")->number, op);
            gpu++;
        }
        cr_assert_gt(gpu, 20);
        ts_json_free(j);
    }
    ts_cli_result r = CLI("info", EX("attention_block.graph"), "--device", "0");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "cpu (3 nodes"), "%s", r.out);
    ts_cli_result_free(&r);
    r = CLI("info", EX("mlp.graph"), "--device", "0", "--devices", "cpu");
    TS_EXPECT_STATUS(r, 2);
    ts_cli_result_free(&r);
}

/* The library side: one record per node, reasons, ranges, plan files. */
Test(cli_place, placement_accessor) {
    braid_graph *g = braid_graph_load(EX("mlp.graph"), NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_OK);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu,cuda:0";
    o.archs = "none";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    uint32_t n = braid_plan_placement_count(p);
    cr_assert_eq(n, braid_graph_node_count(g));
    braid_node_placement pl;
    cr_assert_eq(braid_plan_placement_get(p, 0, &pl), BRAID_OK);
    cr_assert_str_eq(pl.op, "input");
    cr_assert_str_eq(pl.name, "x");
    cr_assert_eq(pl.reason, BRAID_PLACE_HOST_DATA);
    cr_assert_eq(pl.ndevices, 0);
    cr_assert_eq(braid_plan_placement_get(p, 2, &pl), BRAID_OK);
    cr_assert_str_eq(pl.op, "matmul");
    cr_assert_eq(pl.reason, BRAID_PLACE_COST_MODEL);
    cr_assert_eq(pl.ndevices, 2);
    cr_assert(pl.cost_s[1] < pl.cost_s[0] && pl.transfer_s[0] > 0);
    cr_assert_str_eq(pl.device, "cuda:0");
    cr_assert_eq(braid_plan_placement_get(p, n, &pl),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_assert(strstr(braid_last_error(), "out of range"));
    /* a loaded plan keeps no record */
    char *path = tf_path(ts_tmpdir, "m.plan");
    cr_assert_eq(braid_plan_save(p, path), BRAID_OK);
    braid_load_options lo;
    braid_load_options_init(&lo);
    lo.cpu_fallback = true;
    braid_plan *q = NULL;
    cr_assert_eq(braid_plan_load(path, &lo, &q), BRAID_OK);
    if (!braid_plan_placement_count(q)) /* loaded as it is (a GPU here) */
        cr_assert_eq(braid_plan_placement_get(q, 0, &pl),
                     BRAID_ERR_INVALID_ARGUMENT);
    braid_plan_free(q);
    free(path);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* A plan compiled for cpu,cuda:0 whose nodes all went to the cpu runs
 * without a GPU, and checks out. */
Test(cli_place, unused_gpu_not_required) {
    char *plan = tf_path(ts_tmpdir, "a.plan");
    ts_cli_result r = CLI("compile", EX("attention_block.graph"), "-o", plan,
                          "--devices", "cpu,cuda:0", "--arch", "none");
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    r = CLI("run", plan, "--check");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "load: "), "loaded as it is: %s", r.out);
    cr_assert(strstr(r.out, "check y: ") && strstr(r.out, ": ok"), "%s", r.out);
    cr_assert_null(strstr(r.err, "cpu-fallback"), "%s", r.err);
    ts_cli_result_free(&r);
    free(plan);
}

/* run PLAN with compile options compiles its graph again, as the docs
 * say: no device check of the stored plan, one note, also with
 * --cpu-fallback. */
Test(cli_place, run_plan_with_compile_options) {
    if (braid_cuda_device_count() > 0) cr_skip_test("a GPU is present");
    char *plan = tf_path(ts_tmpdir, "g.plan");
    ts_cli_result r = CLI("compile", EX("mlp.graph"), "-o", plan, "--devices",
                          "cuda:0", "--arch", "none");
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    r = CLI("run", plan); /* needs the GPU it was compiled for */
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "cuda:0"), "%s", r.err);
    ts_cli_result_free(&r);
    const char *fallback[] = {NULL, "--cpu-fallback"};
    for (int k = 0; k < 2; k++) {
        r = fallback[k]
                ? CLI("run", plan, "--devices", "cpu", "--check", fallback[k])
                : CLI("run", plan, "--devices", "cpu", "--check");
        TS_EXPECT_STATUS(r, 0);
        const char *note = strstr(r.err, "compiling its graph again");
        cr_assert(note, "%s", r.err);
        cr_assert_null(strstr(note + 1, "compiling its graph again"), "%s",
                       r.err);
        cr_assert_null(strstr(r.err, "no usable GPU here"), "%s", r.err);
        cr_assert(strstr(r.out, "check y: "), "%s", r.out);
        ts_cli_result_free(&r);
    }
    free(plan);
}

/* --arch: unused without a GPU device (warned), unknown (refused). */
Test(cli_place, arch_warnings) {
    char *plan = tf_path(ts_tmpdir, "m.plan");
    ts_cli_result r = CLI("compile", EX("mlp.graph"), "-o", plan, "--devices",
                          "cpu", "--arch", "sm_75");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.err, "warning: --arch sm_75 has no effect"), "%s",
              r.err);
    ts_cli_result_free(&r);
    r = CLI("compile", EX("mlp.graph"), "-o", plan, "--devices", "cpu,cuda:0",
            "--arch", "none");
    TS_EXPECT_STATUS(r, 0);
    cr_assert_null(strstr(r.err, "warning"), "%s", r.err);
    ts_cli_result_free(&r);
    const char *bad[] = {"sm_200", "sm_91", "sm_80,sm_99"};
    for (size_t k = 0; k < 3; k++) {
        r = CLI("compile", EX("mlp.graph"), "-o", plan, "--arch", bad[k]);
        TS_EXPECT_STATUS(r, 2);
        cr_assert(strstr(r.err, "is not a CUDA architecture (known: sm_50"),
                  "%s", r.err);
        ts_cli_result_free(&r);
    }
    free(plan);
}
