/* tests/onnx_support.h — what the ONNX suites share: the models
 * tests/onnx/make_models.py writes (with ONNX's reference outputs), running
 * an imported graph on .pb inputs and comparing with stored .pb outputs.
 * Static functions: each including test file gets its own copy. Needs
 * _POSIX_C_SOURCE 200809L defined before any include. */
#ifndef BRAID_TESTS_ONNX_SUPPORT_H
#define BRAID_TESTS_ONNX_SUPPORT_H

#include "braid/onnx.h"
#include "graph/graph.h"
#include "tests/support/golden.h"
#include "tests/tmpfiles.h"

#include <criterion/criterion.h>
#include <math.h>

/* A decoded .pb tensor. */
typedef struct os_tensor {
    braid_dtype dtype;
    int rank;
    int64_t dims[BRAID_MAX_RANK];
    void *data;
    size_t bytes;
} os_tensor;

static inline bool os_read_pb(const char *path, os_tensor *t) {
    size_t len = 0;
    char *buf = ts_read_file_len(path, &len);
    if (!buf) return false;
    braid_status s = braid_onnx_tensor_decode(buf, len, path, &t->dtype,
                                              &t->rank, t->dims, &t->data,
                                              NULL);
    free(buf);
    if (s != BRAID_OK) return false;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) n *= t->dims[i];
    t->bytes = (size_t)n * braid_dtype_size(t->dtype);
    return true;
}

/* Runs the graph's plan (p) on DIR/NAME.in<k>.pb and compares output k with
 * DIR/NAME.out<k>.pb: |got - want| <= atol + rtol |want| elementwise. */
static inline void os_check_plan(const braid_graph *g, const braid_plan *p,
                                 const char *dir, const char *name,
                                 double rtol, double atol) {
    uint32_t nin = braid_graph_input_count(g), nout = braid_graph_output_count(g);
    os_tensor in[8] = {{0}}, want[8] = {{0}};
    braid_input_binding ib[8];
    braid_output_binding ob[8];
    void *got[8] = {0};
    cr_assert(nin <= 8 && nout <= 8);
    char path[1024];
    for (uint32_t k = 0; k < nin; k++) {
        snprintf(path, sizeof path, "%s/%s.in%u.pb", dir, name, (unsigned)k);
        cr_assert(os_read_pb(path, &in[k]), "%s: %s", path, braid_last_error());
        braid_tensor t;
        braid_graph_input(g, k, &ib[k].name, &t);
        ib[k].data = in[k].data;
        ib[k].bytes = in[k].bytes;
    }
    for (uint32_t k = 0; k < nout; k++) {
        snprintf(path, sizeof path, "%s/%s.out%u.pb", dir, name, (unsigned)k);
        cr_assert(os_read_pb(path, &want[k]), "%s: %s", path, braid_last_error());
        braid_tensor t;
        braid_graph_output(g, k, &ob[k].name, &t);
        cr_assert_eq(braid_tensor_numel(g, t) * (int64_t)braid_dtype_size(want[k].dtype),
                     (int64_t)want[k].bytes, "%s: output %s size", name, ob[k].name);
        got[k] = calloc(1, want[k].bytes + 1);
        ob[k].data = got[k];
        ob[k].bytes = want[k].bytes;
    }
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_run(e, ib, nin, ob, nout), BRAID_OK, "%s: %s", name,
                 braid_last_error());
    braid_exec_free(e);
    for (uint32_t k = 0; k < nout; k++) {
        int64_t n = (int64_t)(want[k].bytes / braid_dtype_size(want[k].dtype));
        for (int64_t i = 0; i < n; i++) {
            double a = bg_load(want[k].dtype, got[k], i);
            double b = bg_load(want[k].dtype, want[k].data, i);
            cr_assert(fabs(a - b) <= atol + rtol * fabs(b) || (a != a && b != b),
                      "%s: output %s[%lld] = %.9g, ONNX's reference %.9g", name,
                      ob[k].name, (long long)i, a, b);
        }
        free(got[k]);
        free(want[k].data);
    }
    for (uint32_t k = 0; k < nin; k++) free(in[k].data);
}

/* Compiles g for the cpu and checks it (above). */
static inline void os_check_graph(const braid_graph *g, const char *dir,
                                  const char *name, double rtol, double atol) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s: %s", name,
                 braid_last_error());
    os_check_plan(g, p, dir, name, rtol, atol);
    braid_plan_free(p);
}

/* Copies tests/models/tiny/<name>.onnx and its ONNX test data
 * (test_data_set_0/{input,output}_0.pb) into dir as <name>.onnx,
 * <name>.in0.pb and <name>.out0.pb, the names os_check_plan reads. */
static inline void os_stage_fixture(const char *dir, const char *name) {
    const char *src_names[] = {"%s/tests/models/tiny/%s.onnx",
                               "%s/tests/models/tiny/%s/test_data_set_0/input_0.pb",
                               "%s/tests/models/tiny/%s/test_data_set_0/output_0.pb"};
    const char *dst_names[] = {"%s/%s.onnx", "%s/%s.in0.pb", "%s/%s.out0.pb"};
    for (int k = 0; k < 3; k++) {
        char src[1024], dst[1024];
        snprintf(src, sizeof src, src_names[k], BRAID_SOURCE_DIR, name);
        snprintf(dst, sizeof dst, dst_names[k], dir, name);
        size_t len = 0;
        char *buf = ts_read_file_len(src, &len);
        cr_assert(buf, "%s", src);
        FILE *f = fopen(dst, "wb");
        cr_assert(f && fwrite(buf, 1, len, f) == len);
        fclose(f);
        free(buf);
    }
}

/* Writes tests/onnx/make_models.py's models into dir (seed: its random
 * shapes and values); skips the test when python3 lacks onnx, fails it
 * (with the script's last output) when the script itself fails. */
static inline void os_make_models(const char *dir, unsigned seed) {
    if (system("python3 -c 'import onnx, numpy' >/dev/null 2>&1") != 0)
        cr_skip_test("python3 with onnx and numpy is needed (pip install "
                     "onnx numpy)");
    char cmd[2048], log[1024];
    snprintf(log, sizeof log, "%s/make_models.log", dir);
    snprintf(cmd, sizeof cmd, "python3 %s/tests/onnx/make_models.py %s %u >%s 2>&1",
             BRAID_SOURCE_DIR, dir, seed, log);
    if (system(cmd) == 0) return;
    size_t len = 0;
    char *out = ts_read_file_len(log, &len);
    const char *tail = out ? out : "(no output)";
    if (len > 1500) tail = out + len - 1500;
    cr_assert_fail("tests/onnx/make_models.py failed (seed %u): ...%s", seed,
                   tail);
}

/* In a build without protobuf-c (BRAID_NO_ONNX) each ONNX suite is this
 * one test: the importer says what it needs. */
#define OS_STUB_TEST(suite)                                                    \
    Test(suite, import_says_what_is_missing) {                                 \
        braid_graph *g = (braid_graph *)1;                                     \
        cr_assert_eq(braid_onnx_import("m.onnx", NULL, &g),                    \
                     BRAID_ERR_UNSUPPORTED);                                   \
        cr_assert_null(g);                                                     \
        cr_assert(strstr(braid_last_error(), "protobuf-c"), "%s",              \
                  braid_last_error());                                         \
    }

#endif /* BRAID_TESTS_ONNX_SUPPORT_H */
