/* tests/test_cli_onnx.c — the tool on ONNX models: run with .pb inputs
 * and --output-dir (names made file names), --shape, --const, import,
 * compile and a plan file; values against ONNX's reference evaluator
 * (models from tests/onnx/make_models.py). */
#define _POSIX_C_SOURCE 200809L
#include "runtime/npy/npy.h"
#include "tests/onnx_support.h"
#include "tests/support/cli.h"

#ifdef BRAID_NO_ONNX
OS_STUB_TEST(cli_onnx)
#else

static char *dir;

static void setup(void) {
    ts_tmpdir_setup();
    dir = ts_tmpdir;
    os_make_models(dir, 7);
}

TestSuite(cli_onnx, .init = setup, .fini = ts_tmpdir_teardown);

static ts_cli_result braid(const char *const *args) {
    return ts_run_cli(BRAID_CLI_PATH, dir, NULL, args);
}

static char *at(const char *name) { return tf_path(dir, name); }

/* DIR/out/<file> (a .npy) equals DIR/<pb> (ONNX's reference) within tol. */
static void same_values(const char *file, const char *pb, double tol) {
    char *npy = tf_path(dir, file), *ref = at(pb);
    br_npy_array a;
    os_tensor want;
    cr_assert_eq(br_npy_read(npy, BRAID_DTYPE_COUNT_, &a), BRAID_OK, "%s",
                 braid_last_error());
    cr_assert(os_read_pb(ref, &want));
    cr_assert_eq(a.bytes, want.bytes);
    for (size_t i = 0; i < a.bytes / braid_dtype_size(a.dtype); i++) {
        double x = bg_load(a.dtype, a.data, (int64_t)i);
        double y = bg_load(want.dtype, want.data, (int64_t)i);
        cr_assert(fabs(x - y) <= tol * (1 + fabs(y)), "%s[%zu] %g vs %g", file,
                  i, x, y);
    }
    br_npy_array_free(&a);
    free(want.data);
    free(npy);
    free(ref);
}

Test(cli_onnx, run_with_pb_inputs_writes_npy_outputs) {
    char *model = at("mlp.onnx"), *in = at("mlp.in0.pb"), *out = at("out");
    char arg[1100];
    snprintf(arg, sizeof arg, "x=%s", in);
    ts_cli_result r = braid((const char *const[]){"run", model, "--input", arg,
                                                 "--output-dir", out, NULL});
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    same_values("out/probs.npy", "mlp.out0.pb", 1e-5);
    free(model);
    free(in);
    free(out);
}

Test(cli_onnx, onnx_names_become_braid_and_file_names) {
    char *model = at("names.onnx"), *in = at("names.in0.pb"), *out = at("out");
    char arg[1100];
    snprintf(arg, sizeof arg, "in:put=%s", in); /* the ONNX spelling */
    ts_cli_result r = braid((const char *const[]){"run", model, "--input", arg,
                                                 "--output-dir", out, NULL});
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    same_values("out/out__y_z.npy", "names.out0.pb", 0);
    free(model);
    free(in);
    free(out);
}

Test(cli_onnx, shapes_and_frozen_inputs) {
    char *unbound = at("unbound.onnx"), *dyn = at("reshape_dynamic.onnx");
    ts_cli_result r = braid((const char *const[]){"run", unbound, NULL});
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "input \"x\" dim 0 (n) is not fixed"), "%s", r.err);
    ts_cli_result_free(&r);
    r = braid((const char *const[]){"run", unbound, "--shape", "x=5x3", NULL});
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "f32[5,3]"), "%s", r.out);
    ts_cli_result_free(&r);
    /* s = [3] as an int64 .pb, frozen at import */
    static const unsigned char pb[] = {0x08, 0x01, 0x10, 0x07, 0x3a, 0x01, 0x03};
    char *s = at("s.pb");
    FILE *f = fopen(s, "wb");
    cr_assert(f && fwrite(pb, 1, sizeof pb, f) == sizeof pb);
    fclose(f);
    char arg[1100];
    snprintf(arg, sizeof arg, "s=%s", s);
    r = braid((const char *const[]){"run", dyn, NULL});
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "must be known at import time"), "%s", r.err);
    ts_cli_result_free(&r);
    r = braid((const char *const[]){"run", dyn, "--const", arg, NULL});
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    free(unbound);
    free(dyn);
    free(s);
}

Test(cli_onnx, import_writes_the_text_form) {
    char *model = at("mlp.onnx"), *text = at("mlp.graph");
    ts_cli_result r = braid((const char *const[]){"import", model, "-o", text, NULL});
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    braid_graph *g = braid_graph_load(text, NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    braid_graph *h = NULL;
    cr_assert_eq(braid_onnx_import(model, NULL, &h), BRAID_OK);
    cr_assert(bg_graph_equal(g, h), "the text form differs from the import");
    braid_graph_free(g);
    braid_graph_free(h);
    free(model);
    free(text);
}

Test(cli_onnx, compile_then_run_the_plan_file) {
    char *model = at("mlp.onnx"), *plan = at("mlp.plan"), *in = at("mlp.in0.pb");
    char *out = at("out");
    ts_cli_result r = braid((const char *const[]){"compile", model, "-o", plan,
                                                 "--devices", "cpu", NULL});
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    char arg[1100];
    snprintf(arg, sizeof arg, "x=%s", in);
    r = braid((const char *const[]){"run", plan, "--input", arg, "--output-dir",
                                   out, NULL});
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    same_values("out/probs.npy", "mlp.out0.pb", 1e-5);
    r = braid((const char *const[]){"info", model, NULL});
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    r = braid((const char *const[]){"dot", model, NULL});
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "probs"), "%s", r.out);
    ts_cli_result_free(&r);
    free(model);
    free(plan);
    free(in);
    free(out);
}

#endif /* BRAID_NO_ONNX */
