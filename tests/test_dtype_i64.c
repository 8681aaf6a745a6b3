/* tests/test_dtype_i64.c — the i64 storage dtype (docs/ops.md, "Integer
 * dtypes"): what the builder accepts, bit-exact data movement, eq/ne and
 * where beyond 2^53 (where the reference's doubles cannot follow, so the
 * expected values are computed here), range-checked narrowing casts on the
 * CPU executor and the reference, the text format, .npy files, plan files
 * and placement. Random-shape differential tests of i64 against the
 * reference are in test_ops.c and test_ops_structural.c (TS_ALL). */
#define _POSIX_C_SOURCE 200809L

#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "braid/braid.h"
#include "graph/graph.h"
#include "runtime/npy/npy.h"
#include "tests/support/support.h"
#include "tests/tmpfiles.h"

#define BIG ((int64_t)1 << 60)

/* Compiles g for devices (archs none), runs it on the cpu executor with one
 * i64 input "x" and writes output "y" (ybytes) to y. */
static braid_status run_cpu(const braid_graph *g, const char *devices,
                            const void *x, size_t xbytes, void *y,
                            size_t ybytes) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.archs = "none";
    braid_plan *p = NULL;
    braid_status s = braid_compile(g, &o, &p);
    if (s != BRAID_OK) return s;
    braid_exec *e = NULL;
    s = braid_exec_new(p, &e);
    if (s == BRAID_OK) {
        braid_input_binding in = {"x", x, xbytes};
        braid_output_binding out = {"y", y, ybytes};
        s = braid_run(e, &in, 1, &out, 1);
    }
    braid_exec_free(e);
    braid_plan_free(p);
    return s;
}

Test(dtype_i64, table) {
    cr_assert_eq(braid_dtype_size(BRAID_I64), 8);
    cr_assert_str_eq(braid_dtype_name(BRAID_I64), "i64");
    cr_assert(!braid_dtype_is_float(BRAID_I64));
    cr_assert(bg_dtype_is_int(BRAID_I64) && bg_dtype_is_int(BRAID_I32));
    cr_assert(!bg_dtype_f64_exact(BRAID_I64) && bg_dtype_f64_exact(BRAID_I32));
    cr_assert(bg_cast_checked(BRAID_I64, BRAID_I32));
    cr_assert(!bg_cast_checked(BRAID_I32, BRAID_I64));
    cr_assert(!bg_cast_checked(BRAID_I64, BRAID_F32));
    cr_assert(!bg_cast_checked(BRAID_I64, BRAID_BOOL));
}

/* Arithmetic stays in i32: the builder refuses it on i64 with a message. */
Test(dtype_i64, builder_refuses_arithmetic) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_I64, 1, (int64_t[]){4});
    cr_assert(braid_tensor_valid(braid_eq(g, x, x)));
    cr_assert(braid_tensor_valid(braid_ne(g, x, x)));
    cr_assert(braid_tensor_valid(braid_cast(g, x, BRAID_I32)));
    braid_tensor bad = braid_add(g, x, x);
    cr_assert(!braid_tensor_valid(bad));
    cr_assert_eq(braid_graph_status(g), BRAID_ERR_DTYPE);
    cr_assert(strstr(braid_graph_error(g), "i64"), "%s", braid_graph_error(g));
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_I64, 1, (int64_t[]){4});
    cr_assert(!braid_tensor_valid(braid_lt(g, x, x)));
    braid_graph_free(g);
    g = braid_graph_new(NULL);
    x = braid_input(g, "x", BRAID_I64, 1, (int64_t[]){4});
    cr_assert(!braid_tensor_valid(braid_sum(g, x, 0, NULL, false)));
    cr_assert(strstr(braid_graph_error(g), "i64"), "%s", braid_graph_error(g));
    braid_graph_free(g);
}

/* permute, slice, concat with a constant, reshape, broadcast_to and where
 * on values beyond 2^53 (which a double would round): exact on the cpu. */
Test(dtype_i64, data_movement_exact) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_I64, 2, (int64_t[]){2, 3});
    int64_t kv[3] = {INT64_MIN, INT64_MAX, BIG + 1};
    braid_tensor k = braid_constant(g, BRAID_I64, 2, (int64_t[]){1, 3}, kv);
    braid_tensor c = braid_concat(g, 2, (braid_tensor[]){x, k}, 0); /* [3,3] */
    braid_tensor t = braid_permute(g, c, (int[]){1, 0});             /* [3,3] */
    braid_tensor s = braid_slice(g, t, (int64_t[]){0, 1}, (int64_t[]){3, 3},
                                 (int64_t[]){1, 1}); /* [3,2] */
    braid_tensor r = braid_reshape(g, s, 1, (int64_t[]){6});
    braid_tensor b = braid_broadcast_to(g, r, 2, (int64_t[]){2, 6});
    braid_tensor m = braid_eq(g, b, braid_broadcast_to(g, r, 2,
                                                       (int64_t[]){2, 6}));
    braid_tensor y = braid_where(g, m, b, b);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    int64_t xv[6] = {BIG + 3, -BIG - 5, 7, BIG + 9, -1, BIG + 11};
    int64_t out[12];
    cr_assert_eq(run_cpu(g, "cpu", xv, sizeof xv, out, sizeof out), BRAID_OK,
                 "%s", braid_last_error());
    /* c = [[x0 x1 x2], [x3 x4 x5], [k0 k1 k2]]; t = c^T; s = t[:, 1:3] */
    int64_t want[6] = {xv[3], kv[0], xv[4], kv[1], xv[5], kv[2]};
    for (int i = 0; i < 12; i++)
        cr_expect_eq(out[i], want[i % 6], "element %d: %lld, want %lld", i,
                     (long long)out[i], (long long)want[i % 6]);
    braid_graph_free(g);
}

/* eq/ne tell apart values a double cannot (2^60 + 1 vs 2^60). */
Test(dtype_i64, compare_exact) {
    int64_t kv[4] = {BIG, BIG, -BIG - 1, INT64_MIN};
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_I64, 1, (int64_t[]){4});
    braid_tensor k = braid_constant(g, BRAID_I64, 1, (int64_t[]){4}, kv);
    braid_tensor ne = braid_ne(g, x, k);
    cr_assert_eq(braid_output(g, "y", ne), BRAID_OK);
    int64_t xv[4] = {BIG + 1, BIG, -BIG, INT64_MIN};
    bool out[4];
    cr_assert_eq(run_cpu(g, "cpu", xv, sizeof xv, out, sizeof out), BRAID_OK,
                 "%s", braid_last_error());
    cr_expect(out[0] && !out[1] && out[2] && !out[3]);
    braid_graph_free(g);
}

/* A graph: input x (from[n]) cast to `to`, output y. */
static braid_graph *cast_graph(int64_t n, braid_dtype from, braid_dtype to) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", from, 1, (int64_t[]){n});
    braid_tensor y = braid_cast(g, x, to);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    return g;
}

/* i64 -> i32 with every value in range: exact; one out of range: the run
 * fails naming the node, the element and the value, on the cpu executor
 * and the reference alike. */
Test(dtype_i64, narrowing_cast_checked) {
    braid_graph *g = cast_graph(5, BRAID_I64, BRAID_I32);
    int64_t ok[5] = {INT32_MIN, INT32_MAX, 0, -1, 12345};
    int32_t out[5];
    cr_assert_eq(run_cpu(g, "cpu", ok, sizeof ok, out, sizeof out), BRAID_OK,
                 "%s", braid_last_error());
    for (int i = 0; i < 5; i++)
        cr_expect_eq(out[i], (int32_t)ok[i]);
    int64_t bad[5] = {1, 2, (int64_t)INT32_MAX + 1, 4, -BIG};
    cr_assert_eq(run_cpu(g, "cpu", bad, sizeof bad, out, sizeof out),
                 BRAID_ERR_INVALID_ARGUMENT);
    const char *m = braid_last_error();
    cr_expect(strstr(m, "cast i64 -> i32") && strstr(m, "element 2") &&
                  strstr(m, "2147483648"),
              "%s", m);
    braid_input_binding in = {"x", bad, sizeof bad};
    braid_output_binding ob = {"y", out, sizeof out};
    cr_assert_eq(braid_reference_run(g, &in, 1, &ob, 1),
                 BRAID_ERR_INVALID_ARGUMENT);
    m = braid_last_error();
    cr_expect(strstr(m, "element 2") && strstr(m, "2147483648"), "%s", m);
    int64_t low[5] = {0, 0, 0, 0, (int64_t)INT32_MIN - 1};
    cr_assert_eq(run_cpu(g, "cpu", low, sizeof low, out, sizeof out),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(braid_last_error(), "element 4"), "%s",
              braid_last_error());
    braid_graph_free(g);
}

/* The cpu kernel reports through the executor's run check record: the
 * run fails, and the same executor then runs good data. */
Test(dtype_i64, narrowing_cast_executor_recovers) {
    braid_graph *g = cast_graph(4, BRAID_I64, BRAID_I32);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    braid_plan *p = NULL;
    braid_exec *e = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    cr_assert_eq(braid_exec_new(p, &e), BRAID_OK, "%s", braid_last_error());
    int64_t x[4] = {1, -BIG, 3, BIG};
    int32_t y[4];
    braid_input_binding in = {"x", x, sizeof x};
    braid_output_binding ob = {"y", y, sizeof y};
    cr_assert_eq(braid_run(e, &in, 1, &ob, 1), BRAID_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(braid_last_error(), "element 1 is"), "%s",
              braid_last_error());
    x[1] = -2, x[3] = 4;
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(braid_run(e, &in, 1, &ob, 1), BRAID_OK, "%s",
                     braid_last_error());
        for (int k = 0; k < 4; k++)
            cr_expect_eq(y[k], (int32_t)x[k]);
    }
    braid_exec_free(e);
    braid_plan_free(p);
    braid_graph_free(g);
}

/* Many elements, several out of range: the first one is reported, whatever
 * the threads' order. */
Test(dtype_i64, narrowing_cast_first_bad_parallel) {
    int64_t n = 1 << 18;
    braid_graph *g = cast_graph(n, BRAID_I64, BRAID_I32);
    int64_t *x = calloc((size_t)n, sizeof *x);
    int32_t *y = malloc((size_t)n * sizeof *y);
    cr_assert(x && y);
    x[100001] = BIG;
    x[200000] = -BIG;
    x[n - 1] = BIG;
    cr_assert_eq(run_cpu(g, "cpu", x, (size_t)n * 8, y, (size_t)n * 4),
                 BRAID_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(braid_last_error(), "element 100001"), "%s",
              braid_last_error());
    free(x);
    free(y);
    braid_graph_free(g);
}

/* Widening and float casts: i32 -> i64 exact, f64 -> i64 truncating and
 * saturating (NaN -> 0), i64 -> f64 and bool. */
Test(dtype_i64, other_casts) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_F64, 1, (int64_t[]){6});
    cr_assert_eq(braid_output(g, "y", braid_cast(g, x, BRAID_I64)), BRAID_OK);
    double xv[6] = {-2.7, 2.7, 1e300, -1e300, NAN, 9007199254740993.0};
    int64_t out[6];
    cr_assert_eq(run_cpu(g, "cpu", xv, sizeof xv, out, sizeof out), BRAID_OK,
                 "%s", braid_last_error());
    int64_t want[6] = {-2, 2, INT64_MAX, INT64_MIN, 0, 9007199254740992};
    for (int i = 0; i < 6; i++)
        cr_expect_eq(out[i], want[i], "element %d: %lld", i,
                     (long long)out[i]);
    braid_graph_free(g);

    g = cast_graph(4, BRAID_I32, BRAID_I64);
    int32_t iv[4] = {INT32_MIN, -1, 0, INT32_MAX};
    cr_assert_eq(run_cpu(g, "cpu", iv, sizeof iv, out, 4 * 8), BRAID_OK, "%s",
                 braid_last_error());
    for (int i = 0; i < 4; i++)
        cr_expect_eq(out[i], (int64_t)iv[i]);
    braid_graph_free(g);
}

/* Text: large values round-trip exactly; a value past int64 is refused. */
Test(dtype_i64, text_round_trip) {
    const char *text = "braid-graph 1\n"
                       "%x = input i64[2] name=\"x\"\n"
                       "%k = constant i64[3] [-9223372036854775808, "
                       "9223372036854775807, 1152921504606846977]\n"
                       "%c = concat %x, %k axis=0 : i64[5]\n"
                       "%n = cast %c to=i32 : i32[5]\n"
                       "output \"y\" = %c\n"
                       "output \"z\" = %n\n";
    braid_graph *g = braid_graph_parse(text, strlen(text), "t.graph", NULL);
    cr_assert_eq(braid_graph_status(g), BRAID_OK, "%s", braid_graph_error(g));
    char *printed = NULL;
    cr_assert_eq(braid_graph_print(g, &printed, NULL), BRAID_OK);
    cr_expect(strstr(printed, "1152921504606846977"), "%s", printed);
    cr_expect(strstr(printed, "-9223372036854775808"), "%s", printed);
    braid_graph *h =
        braid_graph_parse(printed, strlen(printed), "printed", NULL);
    cr_assert_eq(braid_graph_status(h), BRAID_OK, "%s", braid_graph_error(h));
    cr_expect(bg_graph_equal(g, h));
    free(printed);
    braid_graph_free(g);
    braid_graph_free(h);
    const char *bad = "braid-graph 1\n"
                      "%k = constant i64[1] [9223372036854775808]\n"
                      "output \"y\" = %k\n";
    g = braid_graph_parse(bad, strlen(bad), "bad.graph", NULL);
    cr_expect_eq(braid_graph_status(g), BRAID_ERR_PARSE);
    cr_expect(strstr(braid_graph_error(g), "i64"), "%s", braid_graph_error(g));
    braid_graph_free(g);
}

Test(dtype_i64, npy_round_trip) {
    char *dir = tf_mkdtemp();
    cr_assert(dir);
    char *path = tf_path(dir, "ids.npy");
    int64_t v[3] = {INT64_MIN, BIG + 1, -7};
    cr_assert_eq(br_npy_write(path, BRAID_I64, 1, (int64_t[]){3}, v),
                 BRAID_OK);
    br_npy_array a;
    cr_assert_eq(br_npy_read(path, BRAID_DTYPE_COUNT_, &a), BRAID_OK, "%s",
                 braid_last_error());
    cr_expect_eq(a.dtype, BRAID_I64);
    cr_expect_eq(a.bytes, sizeof v);
    cr_expect(memcmp(a.data, v, sizeof v) == 0);
    cr_expect_str_eq(br_npy_descr(BRAID_I64), "<i8");
    br_npy_array_free(&a);
    tf_rmtree(dir);
    free(path);
    free(dir);
}

/* A plan file keeps i64 constants and the checked cast. */
Test(dtype_i64, plan_file) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_I64, 1, (int64_t[]){2});
    int64_t kv[2] = {BIG + 1, -3};
    braid_tensor k = braid_constant(g, BRAID_I64, 1, (int64_t[]){2}, kv);
    braid_tensor y = braid_where(g, braid_eq(g, x, k), k, x);
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK);
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = "cpu";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    void *buf = NULL;
    size_t size = 0;
    cr_assert_eq(braid_plan_save_memory(p, &buf, &size), BRAID_OK);
    braid_plan *q = NULL;
    cr_assert_eq(braid_plan_load_memory(buf, size, NULL, &q), BRAID_OK, "%s",
                 braid_last_error());
    braid_exec *e = NULL;
    cr_assert_eq(braid_exec_new(q, &e), BRAID_OK, "%s", braid_last_error());
    int64_t xv[2] = {BIG + 1, BIG}, out[2];
    braid_input_binding in = {"x", xv, sizeof xv};
    braid_output_binding ob = {"y", out, sizeof out};
    cr_assert_eq(braid_run(e, &in, 1, &ob, 1), BRAID_OK, "%s",
                 braid_last_error());
    cr_expect_eq(out[0], BIG + 1);
    cr_expect_eq(out[1], BIG);
    braid_exec_free(e);
    braid_plan_free(q);
    braid_plan_free(p);
    free(buf);
    braid_graph_free(g);
}

/* The placement of user node 1 (the cast) compiled for `devices`. */
static void cast_placement(braid_graph *g, const char *devices,
                           braid_node_placement *out) {
    braid_compile_options o;
    braid_compile_options_init(&o);
    o.devices = devices;
    o.archs = "none";
    braid_plan *p = NULL;
    cr_assert_eq(braid_compile(g, &o, &p), BRAID_OK, "%s", braid_last_error());
    bool seen = false;
    for (uint32_t i = 0; i < braid_plan_placement_count(p); i++) {
        braid_node_placement pl;
        cr_assert_eq(braid_plan_placement_get(p, i, &pl), BRAID_OK);
        if (pl.node != 1) continue;
        seen = true;
        *out = pl;
    }
    cr_assert(seen);
    /* the verifier passed it (braid_compile runs it) */
    braid_plan_free(p);
}

/* A checked cast is placed like any elementwise op: it reports a value out
 * of range through the run check record on every device. Hinted to a GPU
 * it goes there; with only a GPU listed, the GPU; with the cpu listed and
 * no hint, the cost model decides. */
Test(dtype_i64, checked_cast_placed_like_elementwise) {
    braid_graph *g = braid_graph_new(NULL);
    braid_tensor x = braid_input(g, "x", BRAID_I64, 1, (int64_t[]){1 << 20});
    braid_tensor c = braid_cast(g, x, BRAID_I32);
    braid_tensor y = braid_exp(g, braid_cast(g, c, BRAID_F32));
    cr_assert_eq(braid_output(g, "y", y), BRAID_OK, "%s", braid_graph_error(g));
    braid_node_placement pl;
    cast_placement(g, "cuda:0", &pl);
    cr_expect_str_eq(pl.device, "cuda:0");
    cr_expect_eq(pl.reason, BRAID_PLACE_PREFER_GPU);
    cast_placement(g, "cpu,cuda:0", &pl);
    cr_expect_eq(pl.reason, BRAID_PLACE_COST_MODEL);
    cr_assert_eq(braid_set_device(g, c, "cuda:0"), BRAID_OK);
    cast_placement(g, "cpu,cuda:0", &pl);
    cr_expect_str_eq(pl.device, "cuda:0");
    cr_expect_eq(pl.reason, BRAID_PLACE_HINT);
    cr_assert_eq(braid_set_device(g, c, "cpu"), BRAID_OK);
    cast_placement(g, "cpu,cuda:0", &pl);
    cr_expect_str_eq(pl.device, "cpu");
    cr_expect_eq(pl.reason, BRAID_PLACE_HINT);
    braid_graph_free(g);
}
