/* tests/test_cli.c — the braid command-line tool, run as a program
 * (BRAID_CLI_PATH) in a temporary directory. */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include "runtime/npy/npy.h"
#include "support/cli.h"
#include "support/golden.h"
#include "support/support.h"
#include "tmpfiles.h"

/* Runs BRAID_CLI_PATH with args (NULL-terminated), capturing stdout and
 * stderr through files in dir. */
static ts_cli_result run_cli(const char *dir, const char *const *args) {
    return ts_run_cli(BRAID_CLI_PATH, dir, NULL, args);
}

#define CLI(dir, ...) run_cli(dir, (const char *const[]){__VA_ARGS__, NULL})

TestSuite(cli, .init = ts_tmpdir_setup, .fini = ts_tmpdir_teardown);

/* Writes text to ts_tmpdir/name and returns the path (caller frees). */
static char *put(const char *name, const char *text) {
    char *p = tf_path(ts_tmpdir, name);
    cr_assert(tf_write_str(p, text));
    return p;
}

static const char g_affine[] = "braid-graph 1\n"
                               "%x = input f32[4,3] name=\"x\"\n"
                               "%two = fill f32[4,3] value=2\n"
                               "%one = fill f32[4,3] value=1\n"
                               "%m = mul %x, %two : f32[4,3]\n"
                               "%y = add %m, %one : f32[4,3]\n"
                               "output \"y\" = %y\n";

/* One input of each kind braid fills at random. */
static const char g_mixed[] = "braid-graph 1\n"
                              "%x = input f32[64] name=\"x\"\n"
                              "%j = input i32[64] name=\"j\"\n"
                              "%b = input bool[64] name=\"b\"\n"
                              "%ax = abs %x : f32[64]\n"
                              "%nj = neg %j : i32[64]\n"
                              "%one = fill f32[64] value=1\n"
                              "%zero = fill f32[64] value=0\n"
                              "%w = where %b, %one, %zero : f32[64]\n"
                              "output \"ax\" = %ax\n"
                              "output \"nj\" = %nj\n"
                              "output \"w\" = %w\n";

Test(cli, version_names_braid_and_cuda) {
    ts_cli_result r = CLI(ts_tmpdir, "version");
    TS_EXPECT_STATUS(r, 0);
    char want[64];
    snprintf(want, sizeof want, "braid %d.%d.%d", BRAID_VERSION_MAJOR,
             BRAID_VERSION_MINOR, BRAID_VERSION_PATCH);
    cr_assert(strstr(r.out, want), "%s", r.out);
    cr_assert(strstr(r.out, "cuda:"), "%s", r.out);
    if (braid_cuda_device_count() == 0)
        cr_assert(strstr(r.out, "runs on the CPU"), "%s", r.out);
    ts_cli_result_free(&r);
}

Test(cli, help_in_every_spelling) {
    static const char *const spellings[][3] = {{"help", NULL},
                                               {"--help", NULL},
                                               {"-h", NULL},
                                               {"run", "--help"},
                                               {"check", "-h"}};
    for (size_t k = 0; k < 5; k++) {
        ts_cli_result r = run_cli(ts_tmpdir, spellings[k]);
        TS_EXPECT_STATUS(r, 0);
        cr_assert(strstr(r.out, "usage: braid"), "%s", r.out);
        cr_assert(strstr(r.out, "--output-dir"));
        ts_cli_result_free(&r);
    }
}

Test(cli, usage_errors_exit_2) {
    char *g = put("a.graph", g_affine);
    const char *const cases[][6] = {
        {NULL},
        {"frobnicate", NULL},
        {"--frobnicate", NULL},
        {"check", NULL},
        {"check", g, g, NULL},
        {"check", "--strict", g, NULL},
        {"version", "extra", NULL},
        {"run", NULL},
        {"run", g, g, NULL},
        {"run", g, "--bogus", NULL},
        {"run", g, "--seed", NULL},
        {"run", g, "--seed", "abc", NULL},
        {"run", g, "--seed=-1", NULL},
        {"run", g, "--repeat", "0", NULL},
        {"run", g, "--threads", "x", NULL},
        {"run", g, "--input", "x", NULL},
        {"run", g, "--input", "=x.npy", NULL},
        {"run", g, "--input", "x=a.npy", "--input=x=b.npy", NULL},
        {"run", g, "--check=yes", NULL},
        {"run", g, "--output-dir=", NULL},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ts_cli_result r = run_cli(ts_tmpdir, cases[k]);
        cr_assert_eq(r.status, 2, "case %zu: exit %d\n%s", k, r.status, r.err);
        cr_assert(strstr(r.err, "braid: "), "case %zu: %s", k, r.err);
        cr_assert(strstr(r.err, "--help"), "case %zu: %s", k, r.err);
        ts_cli_result_free(&r);
    }
    free(g);
}

Test(cli, check_lists_inputs_and_outputs) {
    char *g = put("a.graph", g_affine);
    ts_cli_result r = CLI(ts_tmpdir, "check", g);
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "ok: 5 nodes, inputs: x f32[4,3]; outputs: "
                            "y f32[4,3]"),
              "%s", r.out);
    ts_cli_result_free(&r);
    free(g);
}

Test(cli, check_reports_file_line_col) {
    char *g = put("bad.graph", "braid-graph 1\n"
                               "%x = input f32[2] name=\"x\"\n"
                               "%y = exp %nope\n"
                               "output \"y\" = %y\n");
    ts_cli_result r = CLI(ts_tmpdir, "check", g);
    TS_EXPECT_STATUS(r, 1);
    char want[512];
    snprintf(want, sizeof want, "%s:3:", g);
    cr_assert(strncmp(r.err, want, strlen(want)) == 0, "stderr: %s", r.err);
    const char *col = r.err + strlen(want);
    cr_assert(*col >= '1' && *col <= '9', "no column: %s", r.err);
    while (*col >= '0' && *col <= '9')
        col++;
    cr_assert_eq(*col, ':', "%s", r.err);
    cr_assert_str_empty(r.out);
    ts_cli_result_free(&r);
    free(g);
}

Test(cli, check_rejects_bad_shapes_and_missing_files) {
    char *g = put("shape.graph", "braid-graph 1\n"
                                 "%a = input f32[2,3] name=\"a\"\n"
                                 "%b = input f32[4,5] name=\"b\"\n"
                                 "%c = add %a, %b\n"
                                 "output \"c\" = %c\n");
    ts_cli_result r = CLI(ts_tmpdir, "check", g);
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "add"), "%s", r.err);
    ts_cli_result_free(&r);
    r = CLI(ts_tmpdir, "check", "/nonexistent/x.graph");
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "/nonexistent/x.graph"), "%s", r.err);
    ts_cli_result_free(&r);
    r = CLI(ts_tmpdir, "run", g);
    TS_EXPECT_STATUS(r, 1);
    ts_cli_result_free(&r);
    free(g);
}

Test(cli, run_prints_stats_and_times) {
    char *g = put("a.graph", g_affine);
    ts_cli_result r = CLI(ts_tmpdir, "run", g, "--seed", "3", "--repeat", "3",
                          "--threads=1", "--devices", "cpu");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "input x f32[4,3]: random (seed 3)"), "%s", r.out);
    cr_assert(strstr(r.out, "compile: "), "%s", r.out);
    cr_assert(strstr(r.out, "median"), "%s", r.out);
    cr_assert(strstr(r.out, "output y f32[4,3]: min "), "%s", r.out);
    ts_cli_result_free(&r);
    free(g);
}

/* Reads ts_tmpdir/dir/name.npy as dtype t (must exist). */
static br_npy_array load(const char *dir, const char *name, braid_dtype t) {
    char rel[256];
    snprintf(rel, sizeof rel, "%s/%s.npy", dir, name);
    char *p = tf_path(ts_tmpdir, rel);
    br_npy_array a;
    cr_assert_eq(br_npy_read(p, t, &a), BRAID_OK, "%s", braid_last_error());
    free(p);
    return a;
}

static bool same_file_bytes(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    char *x = ts_read_file_len(a, &na), *y = ts_read_file_len(b, &nb);
    bool same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

Test(cli, same_seed_same_outputs) {
    char *g = put("m.graph", g_mixed);
    char *d1 = tf_path(ts_tmpdir, "s1"), *d2 = tf_path(ts_tmpdir, "s2"),
         *d3 = tf_path(ts_tmpdir, "s3");
    ts_cli_result r =
        CLI(ts_tmpdir, "run", g, "--seed", "7", "--output-dir", d1);
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    r = CLI(ts_tmpdir, "run", g, "--seed=7", "--output-dir", d2, "--check");
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    r = CLI(ts_tmpdir, "run", g, "--seed", "8", "--output-dir", d3);
    TS_EXPECT_STATUS(r, 0);
    ts_cli_result_free(&r);
    static const char *const outs[] = {"ax", "nj", "w"};
    for (int k = 0; k < 3; k++) {
        char n[16];
        snprintf(n, sizeof n, "%s.npy", outs[k]);
        char *p1 = tf_path(d1, n), *p2 = tf_path(d2, n), *p3 = tf_path(d3, n);
        cr_assert(same_file_bytes(p1, p2), "%s differs for one seed", n);
        cr_assert(!same_file_bytes(p1, p3), "%s equal for two seeds", n);
        free(p1);
        free(p2);
        free(p3);
    }
    /* The random inputs cover their documented ranges. */
    br_npy_array ax = load("s1", "ax", BRAID_F32);
    br_npy_array nj = load("s1", "nj", BRAID_I32);
    br_npy_array w = load("s1", "w", BRAID_F32);
    int ones = 0, big = 0;
    for (int i = 0; i < 64; i++) {
        float v = ((float *)ax.data)[i];
        int32_t j = ((int32_t *)nj.data)[i];
        cr_assert(v >= 0.0f && v <= 1.0f, "x out of [-1,1]: %g", v);
        cr_assert(j >= -100 && j <= 100, "j out of range: %d", j);
        big += j > 50 || j < -50;
        float b = ((float *)w.data)[i];
        cr_assert(b == 0.0f || b == 1.0f);
        ones += b == 1.0f;
    }
    cr_assert(ones > 10 && ones < 54, "bool inputs not mixed: %d", ones);
    cr_assert(big > 5, "i32 inputs do not spread over [-100,100]");
    br_npy_array_free(&ax);
    br_npy_array_free(&nj);
    br_npy_array_free(&w);
    free(d1);
    free(d2);
    free(d3);
    free(g);
}

Test(cli, run_with_npy_input) {
    char *g = put("a.graph", g_affine);
    char *x = tf_path(ts_tmpdir, "x.npy"),
         *out = tf_path(ts_tmpdir, "out/deeper");
    float v[12];
    for (int i = 0; i < 12; i++)
        v[i] = (float)(i - 6) * 0.25f;
    int64_t dims[2] = {4, 3};
    cr_assert_eq(br_npy_write(x, BRAID_F32, 2, dims, v), BRAID_OK);
    char bind[600];
    snprintf(bind, sizeof bind, "x=%s", x);
    ts_cli_result r = CLI(ts_tmpdir, "run", g, "--input", bind, "--output-dir",
                          out, "--check");
    TS_EXPECT_STATUS(r, 0);
    cr_assert(strstr(r.out, "from "), "%s", r.out);
    cr_assert(strstr(r.out, "check y: max abs err"), "%s", r.out);
    cr_assert(strstr(r.out, "ok"), "%s", r.out);
    br_npy_array y = load("out/deeper", "y", BRAID_F32);
    cr_assert(y.rank == 2 && y.dims[0] == 4 && y.dims[1] == 3);
    for (int i = 0; i < 12; i++)
        cr_assert_eq(((float *)y.data)[i], 2 * v[i] + 1, "y[%d]", i);
    br_npy_array_free(&y);
    ts_cli_result_free(&r);
    free(x);
    free(out);
    free(g);
}

/* Runs the affine graph with --input x=FILE and expects exit 1 with each
 * needle in stderr. */
static void expect_input_error(const char *file, const char *n1,
                               const char *n2) {
    char *g = put("a.graph", g_affine);
    char bind[600];
    snprintf(bind, sizeof bind, "x=%s", file);
    ts_cli_result r = CLI(ts_tmpdir, "run", g, "--input", bind);
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, n1), "'%s' not in: %s", n1, r.err);
    cr_assert(strstr(r.err, n2), "'%s' not in: %s", n2, r.err);
    ts_cli_result_free(&r);
    free(g);
}

Test(cli, input_errors_name_the_input) {
    char *p = tf_path(ts_tmpdir, "wrong.npy");
    float v[12] = {0};
    int64_t d43[2] = {4, 3}, d34[2] = {3, 4};
    cr_assert_eq(br_npy_write(p, BRAID_F32, 2, d34, v), BRAID_OK);
    expect_input_error(p, "input 'x'",
                       "f32[3,4] but the graph expects "
                       "f32[4,3]");
    double dv[12] = {0};
    cr_assert_eq(br_npy_write(p, BRAID_F64, 2, d43, dv), BRAID_OK);
    expect_input_error(p, "input 'x'", "f64[4,3]");
    cr_assert(tf_write_str(p, "not a numpy file at all"));
    expect_input_error(p, "input 'x'", "wrong.npy");
    expect_input_error("/nonexistent/q.npy", "input 'x'", "/nonexistent/q.npy");
    free(p);

    char *g = put("a.graph", g_affine);
    ts_cli_result r = CLI(ts_tmpdir, "run", g, "--input", "nosuch=/dev/null");
    TS_EXPECT_STATUS(r, 1);
    cr_assert(strstr(r.err, "nosuch"), "%s", r.err);
    ts_cli_result_free(&r);
    free(g);
}

Test(cli, never_overwrites_an_input_file) {
    char *g = put("a.graph", g_affine);
    char *y = tf_path(ts_tmpdir, "y.npy"),
         *link = tf_path(ts_tmpdir, "link.npy");
    float v[12] = {1, 2, 3};
    int64_t dims[2] = {4, 3};
    cr_assert_eq(br_npy_write(y, BRAID_F32, 2, dims, v), BRAID_OK);
    size_t n0 = 0;
    char *before = ts_read_file_len(y, &n0);
    cr_assert_eq(symlink(y, link), 0);
    const char *binds[2] = {"x=", "x="};
    const char *files[2] = {y, link};
    for (int k = 0; k < 2; k++) {
        char bind[600];
        snprintf(bind, sizeof bind, "%s%s", binds[k], files[k]);
        ts_cli_result r = CLI(ts_tmpdir, "run", g, "--input", bind,
                              "--output-dir", ts_tmpdir);
        TS_EXPECT_STATUS(r, 1);
        cr_assert(strstr(r.err, "refusing to overwrite"), "%s", r.err);
        ts_cli_result_free(&r);
        size_t n1 = 0;
        char *after = ts_read_file_len(y, &n1);
        cr_assert(n0 == n1 && !memcmp(before, after, n0), "input changed");
        free(after);
    }
    free(before);
    free(y);
    free(link);
    free(g);
}

/* Every example graph passes --check against the reference evaluator. */
Test(cli, check_passes_on_example_graphs, .timeout = 600) {
    const char *dir = BRAID_SOURCE_DIR "/examples/graphs";
    DIR *d = opendir(dir);
    cr_assert(d, "cannot list %s", dir);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 7 || strcmp(e->d_name + len - 6, ".graph") != 0) continue;
        char *g = tf_path(dir, e->d_name);
        ts_cli_result r = CLI(ts_tmpdir, "run", g, "--check", "--seed", "1");
        TS_EXPECT_STATUS(r, 0);
        cr_assert(strstr(r.out, "check "), "%s", r.out);
        cr_assert(!strstr(r.out, "FAIL"), "%s", r.out);
        cr_log_info("%s:\n%s", e->d_name, r.out);
        ts_cli_result_free(&r);
        free(g);
        n++;
    }
    closedir(d);
    cr_assert_geq(n, 2, "expected the example graphs in %s", dir);
}
